//! resilix on the HTTP crates users have: a reqwest client against an axum server on
//! loopback (issue 14, point 9). Paused time: every backoff and Retry-After wait is virtual,
//! the sockets are real.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use reqwest::Method;
use resilix::Error;
use resilix::Verdict;
use resilix::VerdictKind;
use resilix::classify::http::classify_status;
use resilix::classify::{Classify, ResultClassifier};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig};
use resilix_tokio::Resilience;
use resilix_tokio::http::{HttpResponse, IdempotencyKey, call_options};
use resilix_tokio::reqwest::{RequestBuilderExt, classify_error};
use tokio::net::TcpListener;
use tokio::time::Instant;

/// One request as the server saw it: its arrival (virtual) time and idempotency key.
type Request = (Instant, Option<String>);

/// What the server saw, in arrival order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Request>>>);

impl Seen {
    fn record(&self, headers: &HeaderMap) -> usize {
        let key = headers
            .get("idempotency-key")
            .map(|v| v.to_str().unwrap().to_owned());
        let mut seen = self.0.lock().unwrap();
        seen.push((Instant::now(), key));
        seen.len()
    }
    fn requests(&self) -> Vec<Request> {
        self.0.lock().unwrap().clone()
    }
}

/// A body whose first poll fails: hyper aborts the connection after the request was read,
/// which the client sees as a failure after sending (not a connect error).
struct Broken;

impl futures_core::Stream for Broken {
    type Item = Result<Bytes, io::Error>;
    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(Some(Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "the server died mid-response",
        ))))
    }
}

fn broken() -> Response {
    Response::new(Body::from_stream(Broken))
}

/// `GET /busy`: 503 with `Retry-After` (the header value in the state) on the first request,
/// 200 after. `POST /charge`: broken on every request up to the state's `fail` count, then
/// 200 `charged`.
#[derive(Clone)]
struct App {
    seen: Seen,
    retry_after: Arc<dyn Fn() -> String + Send + Sync>,
    fail: usize,
}

async fn busy(State(app): State<App>, headers: HeaderMap) -> Response {
    if app.seen.record(&headers) == 1 {
        let wait = (app.retry_after)();
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", wait)],
            "busy",
        )
            .into_response()
    } else {
        "ok".into_response()
    }
}

async fn charge(State(app): State<App>, headers: HeaderMap) -> Response {
    if app.seen.record(&headers) <= app.fail {
        broken()
    } else {
        "charged".into_response()
    }
}

async fn serve_on(listener: TcpListener, app: App) {
    let router = Router::new()
        .route("/busy", get(busy))
        .route("/charge", post(charge))
        .with_state(app);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
}

async fn server(app: App) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    serve_on(listener, app).await;
    addr
}

fn app(fail: usize, retry_after: impl Fn() -> String + Send + Sync + 'static) -> App {
    App {
        seen: Seen::default(),
        retry_after: Arc::new(retry_after),
        fail,
    }
}

/// A fresh connection per request: no pooled connection the server may close under us, so
/// every failure the tests see is the one the server made.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

fn retry(attempts: u32) -> Retry {
    // No backoff of our own, so a wait between attempts can only be the server's Retry-After.
    Retry::unbudgeted(RetryConfig::new(attempts, Backoff::NONE).unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_503_retry_after_in_seconds_is_honoured() {
    let app = app(0, || "2".to_owned());
    let seen = app.seen.clone();
    let addr = server(app).await;
    let client = client();
    let pipeline = Pipeline::new().retry(retry(3));
    let resilience = Resilience::new(&pipeline).classifier(HttpResponse);

    let response = resilience
        .execute(call_options(&Method::GET, None), || {
            client.get(format!("http://{addr}/busy")).send()
        })
        .await
        .expect("the second attempt is answered");
    assert_eq!(response.status(), 200);
    let requests = seen.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].0 - requests[0].0 >= Duration::from_secs(2),
        "retried after {:?}, before the server's Retry-After",
        requests[1].0 - requests[0].0
    );
}

#[tokio::test(start_paused = true)]
async fn a_503_retry_after_as_an_http_date_is_honoured() {
    // The date is read against the system clock (an HTTP-date is wall time); whole seconds,
    // so the wait is between 2 and 3 s of the 3 s asked.
    let app = app(0, || {
        httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3))
    });
    let seen = app.seen.clone();
    let addr = server(app).await;
    let client = client();
    let pipeline = Pipeline::new().retry(retry(3));
    let resilience = Resilience::new(&pipeline).classifier(HttpResponse);

    let response = resilience
        .execute(call_options(&Method::GET, None), || {
            client.get(format!("http://{addr}/busy")).send()
        })
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let requests = seen.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].0 - requests[0].0 >= Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_deadline_gives_up_at_once() {
    let app = app(0, || "60".to_owned());
    let seen = app.seen.clone();
    let addr = server(app).await;
    let client = client();
    let pipeline = Pipeline::new().retry(retry(3));
    let resilience = Resilience::new(&pipeline).classifier(HttpResponse);
    let options =
        call_options(&Method::GET, None).deadline(resilience.deadline_in(Duration::from_secs(5)));

    let outcome = resilience
        .execute(options, || client.get(format!("http://{addr}/busy")).send())
        .await;
    assert!(
        matches!(
            outcome,
            Err(Error::Failed {
                reason: GiveUpReason::RetryAfterBeyondDeadline,
                attempts: 1,
                ..
            })
        ),
        "{outcome:?}"
    );
    assert_eq!(seen.requests().len(), 1);
}

/// The operation reads the body, so a body broken after the headers is an error too.
async fn post_charge(
    client: &reqwest::Client,
    addr: SocketAddr,
    key: Option<&IdempotencyKey>,
) -> Result<String, reqwest::Error> {
    let mut request = client.post(format!("http://{addr}/charge"));
    if let Some(key) = key {
        request = request.idempotency_key(key);
    }
    request.send().await?.error_for_status()?.text().await
}

#[tokio::test(start_paused = true)]
async fn a_post_broken_after_sending_is_not_retried_without_a_key() {
    let app = app(usize::MAX, || unreachable!());
    let seen = app.seen.clone();
    let addr = server(app).await;
    let client = client();
    let pipeline = Pipeline::new().retry(retry(3));
    let resilience =
        Resilience::new(&pipeline).classifier(ResultClassifier::with_errors(classify_error));

    let outcome = resilience
        .execute(call_options(&Method::POST, None), || {
            post_charge(&client, addr, None)
        })
        .await;
    assert!(
        matches!(
            outcome,
            Err(Error::Upstream {
                gave_up: Some(GiveUpReason::NotRetryable(VerdictKind::Timeout)),
                ..
            })
        ),
        "{outcome:?}"
    );
    // The server saw the charge once: it may have run it, so it must not run twice.
    assert_eq!(seen.requests().len(), 1);
    assert_eq!(seen.requests()[0].1, None);
}

#[tokio::test(start_paused = true)]
async fn a_post_with_a_key_is_retried_and_every_attempt_carries_the_same_key() {
    let app = app(2, || unreachable!());
    let seen = app.seen.clone();
    let addr = server(app).await;
    let client = client();
    let pipeline = Pipeline::new().retry(retry(3));
    let resilience = Resilience::new(&pipeline)
        .classifier(ResultClassifier::with_errors(classify_error))
        .seed(14);

    let key = IdempotencyKey::for_call(&resilience);
    let answer = resilience
        .execute(call_options(&Method::POST, Some(&key)), || {
            post_charge(&client, addr, Some(&key))
        })
        .await
        .expect("the third attempt is answered");
    assert_eq!(answer, "charged");
    let requests = seen.requests();
    assert_eq!(requests.len(), 3, "two broken attempts, then the answer");
    let sent = key.value().to_str().unwrap();
    for (_, seen_key) in &requests {
        assert_eq!(
            seen_key.as_deref(),
            Some(sent),
            "one key for the logical call"
        );
    }
    // A second logical call gets a key of its own.
    assert_ne!(IdempotencyKey::for_call(&resilience), key);
}

#[tokio::test(start_paused = true)]
async fn a_refused_connection_is_retried_for_a_post() {
    // A port nobody listens on, until the second attempt starts the server there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let app = app(0, || unreachable!());
    let seen = app.seen.clone();
    let client = client();
    let pipeline = Pipeline::new().retry(retry(3));
    let resilience = Resilience::new(&pipeline).classifier(HttpResponse);
    let mut attempts = 0;

    let response = resilience
        .execute(call_options(&Method::POST, None), || {
            attempts += 1;
            let (app, client) = (app.clone(), client.clone());
            let start_server = attempts == 2;
            async move {
                if start_server {
                    serve_on(TcpListener::bind(addr).await.unwrap(), app).await;
                }
                client.post(format!("http://{addr}/charge")).send().await
            }
        })
        .await
        .expect("the refused attempt never reached a server, so the POST was retried");
    assert_eq!(response.status(), 200);
    assert_eq!(attempts, 2);
    assert_eq!(seen.requests().len(), 1, "the server saw the POST once");
}

#[tokio::test]
async fn reqwest_errors_classify_by_where_they_happened() {
    let refused_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = reqwest::get(format!("http://127.0.0.1:{refused_port}/"))
        .await
        .unwrap_err();
    assert!(refused.is_connect());
    assert_eq!(classify_error(&refused), Verdict::Transient);

    let unbuildable = client().get("not a url").build().unwrap_err();
    assert_eq!(classify_error(&unbuildable), Verdict::Answered);

    let app = app(usize::MAX, || "1".to_owned());
    let addr = server(app).await;
    let client = client();
    let after_send = post_charge(&client, addr, None).await.unwrap_err();
    assert!(!after_send.is_connect());
    assert_eq!(classify_error(&after_send), Verdict::Timeout);
    assert_eq!(HttpResponse.classify(&after_send), Verdict::Timeout);

    // error_for_status keeps the status: a 503 is still an overload (its Retry-After is gone).
    let addr = server(app_busy()).await;
    let busy = client
        .get(format!("http://{addr}/busy"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        HttpResponse.classify(&busy),
        Verdict::Overload {
            retry_after: Some(Duration::from_secs(1))
        }
    );
    let status = busy.error_for_status().unwrap_err();
    assert_eq!(classify_error(&status), classify_status(503, None));
}

fn app_busy() -> App {
    app(0, || "1".to_owned())
}

#[test]
fn reqwest_responses_follow_the_core_table() {
    for status in [
        200u16, 204, 304, 400, 404, 408, 429, 500, 501, 502, 503, 504, 505, 511,
    ] {
        for retry_after in [None, Some("7")] {
            let mut b = http::Response::builder().status(status);
            if let Some(v) = retry_after {
                b = b.header("retry-after", v);
            }
            let response = reqwest::Response::from(b.body("").unwrap());
            let want = classify_status(status, retry_after.map(|_| Duration::from_secs(7)));
            assert_eq!(HttpResponse.classify(&response), want, "{status}");
            let outcome: Result<reqwest::Response, reqwest::Error> = Ok(response);
            assert_eq!(HttpResponse.classify(&outcome), want, "{status}");
        }
    }
}

#[test]
fn a_key_is_a_uuid_v4_from_the_callers_randomness() {
    let mut rng = SeededRandom::new(77);
    let a = IdempotencyKey::generate(&mut rng);
    let b = IdempotencyKey::generate(&mut rng);
    assert_ne!(a, b, "each draw is a new key");
    for key in [&a, &b] {
        let text = key.value().to_str().unwrap();
        let bytes = text.as_bytes();
        assert_eq!(text.len(), 36);
        for i in [8, 13, 18, 23] {
            assert_eq!(bytes[i], b'-', "{text}");
        }
        assert_eq!(bytes[14], b'4', "version 4: {text}");
        assert!(b"89ab".contains(&bytes[19]), "RFC 9562 variant: {text}");
        assert!(
            text.chars()
                .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        );
    }
    let renamed = a
        .clone()
        .with_header(http::HeaderName::from_static("x-request-id"));
    assert_eq!(renamed.name(), "x-request-id");
    assert_eq!(renamed.value(), a.value());
}

mod hyper_client {
    //! The same rules through hyper's own client (`hyper_util::client::legacy`).

    use super::*;
    use hyper_util::client::legacy::{Client, Error as ClientError, connect::HttpConnector};
    use hyper_util::rt::TokioExecutor;

    /// Where a hyper call failed: in the client (it says whether it connected), or reading the
    /// body (after the request was sent).
    #[derive(Debug)]
    enum Failure {
        Client(ClientError),
        // Read only by `Debug`, in a failed assertion's message.
        #[allow(dead_code)]
        Body(axum::Error),
    }

    fn classify(failure: &Failure) -> Verdict {
        match failure {
            Failure::Client(e) => resilix_tokio::hyper::classify_error(e),
            Failure::Body(_) => Verdict::Timeout,
        }
    }

    fn hyper_client() -> Client<HttpConnector, Body> {
        Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build_http()
    }

    async fn post(
        client: &Client<HttpConnector, Body>,
        addr: SocketAddr,
        key: Option<&IdempotencyKey>,
    ) -> Result<http::Response<Bytes>, Failure> {
        let mut request = http::Request::post(format!("http://{addr}/charge"))
            .body(Body::empty())
            .unwrap();
        if let Some(key) = key {
            key.insert_into(request.headers_mut());
        }
        let response = client.request(request).await.map_err(Failure::Client)?;
        let (head, body) = response.into_parts();
        let body = axum::body::to_bytes(Body::new(body), usize::MAX)
            .await
            .map_err(Failure::Body)?;
        Ok(http::Response::from_parts(head, body))
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_connection_is_retried_for_a_post() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let app = app(0, || unreachable!());
        let seen = app.seen.clone();
        let client = hyper_client();
        let pipeline = Pipeline::new().retry(retry(3));
        let resilience = Resilience::new(&pipeline).classifier(HttpResponse::with_errors(classify));
        let mut attempts = 0;

        let response = resilience
            .execute(call_options(&Method::POST, None), || {
                attempts += 1;
                let (app, client) = (app.clone(), client.clone());
                let start_server = attempts == 2;
                async move {
                    if start_server {
                        serve_on(TcpListener::bind(addr).await.unwrap(), app).await;
                    }
                    post(&client, addr, None).await
                }
            })
            .await
            .unwrap();
        assert_eq!(response.body().as_ref(), b"charged");
        assert_eq!(attempts, 2);
        assert_eq!(seen.requests().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_post_broken_after_sending_is_retried_only_with_a_key() {
        let pipeline = Pipeline::new().retry(retry(3));
        let resilience = Resilience::new(&pipeline)
            .classifier(HttpResponse::with_errors(classify))
            .seed(23);
        let client = hyper_client();

        // Without a key: one attempt, then give up.
        let app_a = app(usize::MAX, || unreachable!());
        let seen_a = app_a.seen.clone();
        let addr = server(app_a).await;
        let outcome = resilience
            .execute(call_options(&Method::POST, None), || {
                post(&client, addr, None)
            })
            .await;
        assert!(
            matches!(
                outcome,
                Err(Error::Upstream {
                    gave_up: Some(GiveUpReason::NotRetryable(VerdictKind::Timeout)),
                    ..
                })
            ),
            "{outcome:?}"
        );
        assert_eq!(seen_a.requests().len(), 1);

        // With a key: retried until answered, the same key every time.
        let app_b = app(2, || unreachable!());
        let seen_b = app_b.seen.clone();
        let addr = server(app_b).await;
        let key = IdempotencyKey::for_call(&resilience);
        let response = resilience
            .execute(call_options(&Method::POST, Some(&key)), || {
                post(&client, addr, Some(&key))
            })
            .await
            .unwrap();
        assert_eq!(response.body().as_ref(), b"charged");
        let keys: Vec<_> = seen_b.requests().into_iter().map(|(_, k)| k).collect();
        let sent = key.value().to_str().unwrap().to_owned();
        assert_eq!(
            keys,
            vec![Some(sent.clone()), Some(sent.clone()), Some(sent)]
        );
    }
}
