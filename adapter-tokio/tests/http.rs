//! HTTP classification through the pipeline: 503 + Retry-After, 404 answered, 408 safe to
//! repeat, 500 uncertain (retried for any call unless `UncertainRetry::IdempotentOnly`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::classify::Classify;
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix_testkit::{FixedRetry, Log};
use resilix_tokio::Resilience;
use resilix_tokio::http::{HttpResponse, retry_after};

fn response(status: u16, retry_after: Option<&str>) -> http::Response<&'static str> {
    let mut b = http::Response::builder().status(status);
    if let Some(v) = retry_after {
        b = b.header("Retry-After", v);
    }
    b.body("").unwrap()
}

#[test]
fn statuses_and_retry_after_map_to_verdicts() {
    let c = HttpResponse;
    assert_eq!(c.classify(&response(200, None)), Verdict::Success);
    assert_eq!(c.classify(&response(404, None)), Verdict::Answered);
    assert_eq!(c.classify(&response(408, None)), Verdict::Transient);
    assert_eq!(c.classify(&response(500, Some("3"))), Verdict::Uncertain);
    assert_eq!(c.classify(&response(504, None)), Verdict::Timeout);
    assert_eq!(
        c.classify(&response(413, Some("3"))),
        Verdict::Overload {
            retry_after: Some(Duration::from_secs(3))
        },
        "a temporary 413 says when to try again"
    );
    assert_eq!(c.classify(&response(413, None)), Verdict::Answered);
    assert_eq!(
        c.classify(&response(429, Some("3"))),
        Verdict::Overload {
            retry_after: Some(Duration::from_secs(3))
        }
    );
    assert_eq!(
        c.classify(&response(503, Some("soon"))),
        Verdict::Overload { retry_after: None },
        "a malformed Retry-After is ignored, not an error"
    );
    // An error that does not say where it happened may have followed the request: retried
    // only for idempotent calls.
    let err: Result<http::Response<()>, &str> = Err("connection reset");
    assert_eq!(c.classify(&err), Verdict::Timeout);
    // An HTTP-date is read against the system clock: one in the past is no advice.
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "retry-after",
        "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap(),
    );
    assert_eq!(retry_after(&headers), None);
    headers.insert("retry-after", "120".parse().unwrap());
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
}

#[tokio::test(start_paused = true)]
async fn a_503_is_retried_and_the_verdict_carries_retry_after() {
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 3,
        delay: Duration::from_millis(100),
    });
    let log = Log::default();
    let resilience = Resilience::new(&pipeline)
        .classifier(HttpResponse)
        .observer(&log);
    let calls = Arc::new(AtomicU32::new(0));
    let out = resilience
        .execute(CallOptions::default(), || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                // The front end runs fallible operations: an infallible one says so.
                Ok::<_, std::convert::Infallible>(if n == 0 {
                    response(503, Some("2"))
                } else {
                    response(200, None)
                })
            }
        })
        .await
        .unwrap();
    assert_eq!(out.status(), 200);
    let first = log.events()[0];
    assert_eq!(
        first,
        Event::Executed {
            verdict: Verdict::Overload {
                retry_after: Some(Duration::from_secs(2))
            },
            duration: Duration::ZERO
        }
    );
}
