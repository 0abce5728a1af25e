//! HTTP classification: `http::Response` status and `Retry-After`, through the core's
//! classifier and parser (feature `http`).
//!
//! ```
//! use resilix::classify::Classify;
//! use resilix::Verdict;
//! use resilix_tokio::http::HttpResponse;
//! use std::time::Duration;
//!
//! let busy = http::Response::builder()
//!     .status(503)
//!     .header("retry-after", "7")
//!     .body(())
//!     .unwrap();
//! assert_eq!(
//!     HttpResponse.classify(&busy),
//!     Verdict::Overload { retry_after: Some(Duration::from_secs(7)) }
//! );
//! let missing = http::Response::builder().status(404).body(()).unwrap();
//! assert_eq!(HttpResponse.classify(&missing), Verdict::Answered);
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderValue, Response};
use resilix::Rejection;
use resilix::Verdict;
use resilix::classify::Classify;
use resilix::classify::http::{carries_retry_after, classify_status};
use resilix::classify::retry_after::parse_delay;
use resilix::time::Instant;

/// Classifies responses by status with the core's RFC 9110 table
/// ([`classify_status`]: 408/421/425 transient, 500/502 uncertain, 504 timeout, 429/503 and a
/// 413 with `Retry-After` overload, 501/505/511 and other 4xx answered), and `Result`s of
/// responses with every transport error transient.
///
/// An uncertain 500/502 is retried for any call by default, so a POST may be sent twice;
/// `RetryConfig::with_uncertain_retry(UncertainRetry::IdempotentOnly)` retries it only for
/// calls declared idempotent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpResponse;

/// The `Retry-After` of `headers` as a delay from now (delta-seconds or an HTTP-date, read
/// against the system clock). `None` when absent or malformed.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    parse_delay(value.as_bytes(), now)
}

impl<B> Classify<Response<B>> for HttpResponse {
    fn classify(&self, response: &Response<B>) -> Verdict {
        let status = response.status().as_u16();
        // Parse the header only where RFC 9110 lets a server send it.
        let retry_after = if carries_retry_after(status) {
            retry_after(response.headers())
        } else {
            None
        };
        classify_status(status, retry_after)
    }
}

impl<B, E> Classify<Result<Response<B>, E>> for HttpResponse {
    fn classify(&self, outcome: &Result<Response<B>, E>) -> Verdict {
        match outcome {
            Ok(response) => self.classify(response),
            Err(_) => Verdict::Transient,
        }
    }
}

/// The `Retry-After` value (whole seconds, rounded up, at least 1) to send with a 503 when a
/// policy refused at `now`: when the rejection says when it admits again, that; else
/// `default`.
///
/// ```
/// use std::time::Duration;
/// use resilix::{RejectReason, Rejection};
/// use resilix::time::Instant;
/// use resilix_tokio::http::retry_after_value;
///
/// let r = Rejection::until(RejectReason::CircuitOpen, Instant::from_millis(2_300));
/// assert_eq!(retry_after_value(&r, Instant::ZERO, Duration::from_secs(1)), "3");
/// let r = Rejection::new(RejectReason::BulkheadFull);
/// assert_eq!(retry_after_value(&r, Instant::ZERO, Duration::from_secs(1)), "1");
/// ```
pub fn retry_after_value(rejection: &Rejection, now: Instant, default: Duration) -> HeaderValue {
    let wait = rejection.retry_at().map_or(default, |at| at - now);
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    HeaderValue::from(secs.max(1))
}
