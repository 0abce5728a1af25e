//! An attempt's context reaches the next hop: a real axum server on loopback records the
//! headers of every request it gets, failing the first with a 503, and the client's call
//! (reqwest, then hyper's client) retries once. The server must see the call's criticality,
//! a time left no longer than the deadline's, and the attempt numbers 1 then 2.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use resilix::call::CallOptions;
use resilix::execute::AttemptInfo;
use resilix::inbound::Priority;
use resilix::pipeline::Pipeline;
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix_tokio::Resilience;
use resilix_tokio::propagate::Propagation;
use resilix_tokio::reqwest::RequestBuilderExt;

type Seen = Arc<Mutex<Vec<HeaderMap>>>;

/// A server that records each request's headers and answers 503 to the first.
async fn recording() -> (SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/",
        get(move |headers: HeaderMap| {
            let mut log = log.lock().unwrap();
            log.push(headers);
            let status = if log.len() == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            };
            async move { status }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

fn two_attempts() -> Pipeline<Retry<resilix::retry::budget::Unlimited>> {
    Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(2, Backoff::NONE).unwrap(),
    ))
}

fn check(seen: &Seen, timeout: Duration) {
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "a first try and one retry");
    for (i, headers) in seen.iter().enumerate() {
        assert_eq!(headers["x-criticality"], "CRITICAL_PLUS");
        assert_eq!(headers["x-attempt-count"], (i + 1).to_string().as_str());
        let left: u64 = headers["x-request-timeout-ms"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(left <= timeout.as_millis() as u64, "{left} ms left");
        assert!(left > 0, "time was left");
    }
}

#[tokio::test]
async fn reqwest_sends_criticality_time_left_and_attempt_number() {
    let (addr, seen) = recording().await;
    let pipeline = two_attempts();
    let resilience = Resilience::new(&pipeline);
    let client = reqwest::Client::new();
    let timeout = Duration::from_secs(5);
    let options = CallOptions::default()
        .timeout(timeout)
        .criticality(Priority::CriticalPlus);
    let response = resilience
        .call(options)
        .run_attempts(|attempt: &AttemptInfo| {
            client
                .get(format!("http://{addr}/"))
                .propagate(attempt)
                .send()
        })
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    check(&seen, timeout);
}

#[tokio::test]
async fn hyper_sends_them_through_insert_into() {
    use axum::body::Body;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let (addr, seen) = recording().await;
    let pipeline = two_attempts();
    let resilience = Resilience::new(&pipeline);
    let client: Client<_, Body> = Client::builder(TokioExecutor::new()).build_http();
    let propagation = Propagation::default();
    let timeout = Duration::from_secs(5);
    let options = CallOptions::default()
        .timeout(timeout)
        .criticality(Priority::CriticalPlus);
    let response = resilience
        .call(options)
        .run_attempts(|attempt: &AttemptInfo| {
            let mut request = http::Request::get(format!("http://{addr}/"))
                .body(Body::empty())
                .unwrap();
            propagation.insert_into(request.headers_mut(), attempt, resilix_tokio::now());
            client.request(request)
        })
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    check(&seen, timeout);
}

#[test]
fn grpc_gets_its_own_headers_and_nothing_is_sent_for_what_is_unset() {
    use resilix::time::Instant;

    let now = Instant::from_secs(1);
    let mut headers = http::HeaderMap::new();
    let first = AttemptInfo::new(1, now);
    Propagation::default().insert_into(&mut headers, &first, now);
    assert_eq!(
        headers.len(),
        1,
        "no criticality, no deadline: only the count"
    );
    assert_eq!(headers["x-attempt-count"], "1");

    let mut headers = http::HeaderMap::new();
    let third = AttemptInfo::new(3, now)
        .with_deadline(Instant::from_millis(1_500))
        .with_criticality(Priority::Sheddable);
    Propagation::grpc().insert_into(&mut headers, &third, now);
    assert_eq!(headers["grpc-timeout"], "500000u");
    assert_eq!(headers["grpc-previous-rpc-attempts"], "2");
    assert_eq!(headers["x-criticality"], "SHEDDABLE");
    assert!(!headers.contains_key("x-request-timeout-ms"));
}
