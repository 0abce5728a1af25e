//! A 503 is not a success when nobody configured a classifier: `Resilience::new` on tokio
//! starts with `AutoClassifier`, which reads reqwest's, hyper's and `http`'s responses by their
//! status. Each case runs against a real axum server on loopback that answers 503 to every
//! request and counts them: two attempts reach it, and the call ends in `Error::Failed` with
//! the last response, never in `Ok`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::StatusCode;
use axum::routing::get;
use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig};
use resilix::{Verdict, VerdictKind};
use resilix_tokio::{Error, Resilience};
use tower::ServiceExt;

/// An upstream that answers every request `503 Service Unavailable` and counts them.
async fn unavailable() -> (SocketAddr, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let counter = hits.clone();
    let app = Router::new().route(
        "/",
        get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async { StatusCode::SERVICE_UNAVAILABLE }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, hits)
}

/// Two attempts, no wait between them: the test is about the verdict, not the backoff.
fn two_attempts() -> Pipeline<Retry<resilix::retry::budget::Unlimited>> {
    Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(2, Backoff::NONE).unwrap(),
    ))
}

fn assert_gave_up<T: std::fmt::Debug, E: std::fmt::Debug>(
    outcome: Result<T, Error<T, E>>,
    status: impl Fn(&T) -> u16,
) {
    match outcome {
        Err(Error::Failed {
            output,
            reason,
            attempts,
        }) => {
            assert_eq!(status(&output), 503);
            assert!(
                matches!(reason, GiveUpReason::AttemptsExhausted { .. }),
                "{reason:?}"
            );
            assert_eq!(attempts, 2);
        }
        Ok(output) => panic!("a {} was taken for a success", status(&output)),
        Err(other) => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reqwest_503_is_retried_and_fails_without_a_classifier() {
    let (addr, hits) = unavailable().await;
    let pipeline = two_attempts();
    let resilience = Resilience::new(&pipeline); // no .classifier(..)
    let client = reqwest::Client::new();
    let outcome = resilience
        .execute(CallOptions::default(), || {
            client.get(format!("http://{addr}/")).send()
        })
        .await;
    assert_gave_up(outcome, |r| r.status().as_u16());
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_hyper_503_is_retried_and_fails_without_a_classifier() {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let (addr, hits) = unavailable().await;
    let pipeline = two_attempts();
    let resilience = Resilience::new(&pipeline);
    let client: Client<_, Body> = Client::builder(TokioExecutor::new()).build_http();
    let outcome = resilience
        .execute(CallOptions::default(), || {
            client.get(format!("http://{addr}/").parse().unwrap())
        })
        .await;
    assert_gave_up(outcome, |r| r.status().as_u16());
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_http_response_503_is_retried_and_fails_without_a_classifier() {
    let pipeline = two_attempts();
    let resilience = Resilience::new(&pipeline);
    let calls = AtomicU32::new(0);
    let outcome = resilience
        .execute(CallOptions::default(), || {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                let response = http::Response::builder().status(503).body(String::new());
                Ok::<_, std::convert::Infallible>(response.unwrap())
            }
        })
        .await;
    assert_gave_up(outcome, |r| r.status().as_u16());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_tower_layer_reads_a_503_without_a_classifier() {
    use resilix_tokio::tower::ResilienceLayer;
    use tower::ServiceBuilder;

    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let svc = ServiceBuilder::new()
        .layer(ResilienceLayer::new(Resilience::new(Box::new(
            two_attempts(),
        ))))
        .service(tower::service_fn(move |_: ()| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { http::Response::builder().status(503).body(Vec::<u8>::new()) }
        }));
    // The Layer hands back the response its retry gave up on, as a tower service would.
    let response = svc.oneshot(()).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "a 503 is retried behind the Layer too"
    );
}

#[test]
fn other_values_are_successes_and_errors_transient() {
    use resilix::classify::Classify;
    use resilix_tokio::classify::AutoClassifier;

    let ok: Result<String, std::io::Error> = Ok("fine".into());
    assert_eq!(AutoClassifier.classify(&ok), Verdict::Success);
    let err: Result<String, std::io::Error> = Err(std::io::Error::other("reset"));
    assert_eq!(AutoClassifier.classify(&err), Verdict::Transient);
    let ok_200: Result<_, ()> = Ok(http::Response::new(bytes::Bytes::new()));
    assert_eq!(
        AutoClassifier.classify(&ok_200).kind(),
        VerdictKind::Success
    );
    let too_many: Result<_, ()> = Ok(http::Response::builder().status(429).body(()).unwrap());
    assert_eq!(
        AutoClassifier.classify(&too_many).kind(),
        VerdictKind::Overload
    );
    let server_error: Result<_, ()> = Ok(http::Response::builder()
        .status(500)
        .body(Vec::<u8>::new())
        .unwrap());
    assert_eq!(
        AutoClassifier.classify(&server_error).kind(),
        VerdictKind::Uncertain
    );
}
