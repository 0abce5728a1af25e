//! HTTP status codes as verdicts.
//!
//! | status | verdict | why |
//! |---|---|---|
//! | 1xx | `Success` | informational; the server is alive and speaking HTTP (101 completes an upgrade) |
//! | 2xx | `Success` | |
//! | 3xx | `Success` | the upstream did its job; following a redirect or using a 304 is the HTTP client's business, and a retry would get the same answer |
//! | 4xx | `Answered` | the upstream worked and the request was wrong; a retry cannot change that |
//! | 408 Request Timeout | `Timeout` | as the spec settles it (see [`classify_status`]) |
//! | 429 Too Many Requests | `Overload`, with Retry-After | the upstream asks us to slow down |
//! | 500, 501, 505–599 | `Transient` | a server error a retry may not repeat |
//! | 502 Bad Gateway | `Transient` | the upstream broke (crashed, reset, mid-deploy), it did not say it was busy |
//! | 503 Service Unavailable | `Overload`, with Retry-After | the upstream says it cannot take the load |
//! | 504 Gateway Timeout | `Timeout` | a proxy gave up waiting; the upstream may still be doing the work |
//! | below 100, above 599 | `Transient` | not HTTP; RFC 9110 §15 says to treat it as a 5xx |
//!
//! ```
//! use core::time::Duration;
//! use resilix::classify::http::{HttpOutcome, HttpStatus};
//! use resilix::classify::retry_after::parse_delay;
//! use resilix::classify::Classify;
//! use resilix::Verdict;
//!
//! let now_unix_secs = 1_700_000_000;
//! let outcome = HttpOutcome {
//!     status: 503,
//!     retry_after: parse_delay(b"30", now_unix_secs),
//! };
//! assert_eq!(
//!     HttpStatus.classify(&outcome),
//!     Verdict::Overload { retry_after: Some(Duration::from_secs(30)) }
//! );
//! assert_eq!(HttpStatus.classify(&404u16), Verdict::Answered);
//! ```

use core::time::Duration;

use super::Classify;
use crate::verdict::Verdict;

/// The verdict for an HTTP response `status`, carrying `retry_after` when the status is an
/// overload (429, 503). See the [module table](self) for every class.
///
/// Two choices deserve their reasons:
///
/// * **502 is transient, not overload.** A gateway got no valid response: the upstream crashed,
///   reset the connection or is being redeployed. None of that says "send less", and an
///   `Overload` would make an adaptive limiter cut its limit for a fault that load does not
///   cause. The breaker and throttler count both the same way.
/// * **504 is a timeout, not transient.** A proxy timed out waiting, so the upstream may still
///   be doing the work: a retry is safe only for an idempotent call, which is exactly what
///   [`Verdict::Timeout`] means (a `Transient` would be retried regardless, and a POST could
///   be executed twice). It is also the limiter's drop signal, as a slow upstream should be.
/// * **408 is a timeout**, as the spec settles it. (RFC 9110 §15.5.9 says the server did not
///   receive the whole request, so it did not act on it; treating it as `Timeout` is the
///   conservative reading, retrying it only for idempotent calls.)
///
/// `retry_after` is dropped for every other status: only an overload carries a wait.
///
/// ```
/// use core::time::Duration;
/// use resilix::classify::http::classify_status;
/// use resilix::Verdict;
///
/// const LIMITED: Verdict = classify_status(429, Some(Duration::from_secs(1)));
/// assert_eq!(LIMITED.retry_after(), Some(Duration::from_secs(1)));
/// assert_eq!(classify_status(200, None), Verdict::Success);
/// assert_eq!(classify_status(504, None), Verdict::Timeout);
/// assert_eq!(classify_status(500, Some(Duration::from_secs(1))), Verdict::Transient);
/// ```
pub const fn classify_status(status: u16, retry_after: Option<Duration>) -> Verdict {
    match status {
        408 | 504 => Verdict::Timeout,
        429 | 503 => Verdict::Overload { retry_after },
        100..=399 => Verdict::Success,
        400..=499 => Verdict::Answered,
        // 5xx, and what is not HTTP at all (RFC 9110 §15: "SHOULD process the response as if
        // it had a 5xx (Server Error) status code").
        _ => Verdict::Transient,
    }
}

/// What an HTTP call returned, as far as resilience cares: the status and the delay parsed
/// from `Retry-After` (see [`parse_delay`](super::retry_after::parse_delay)).
///
/// ```
/// use resilix::classify::http::{HttpOutcome, HttpStatus};
/// use resilix::classify::Classify;
/// use resilix::Verdict;
///
/// assert_eq!(HttpStatus.classify(&HttpOutcome::status(204)), Verdict::Success);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HttpOutcome {
    /// The response status code.
    pub status: u16,
    /// The response's `Retry-After`, already turned into a delay from now.
    pub retry_after: Option<Duration>,
}

impl HttpOutcome {
    /// A response with no `Retry-After`.
    pub const fn status(status: u16) -> Self {
        HttpOutcome {
            status,
            retry_after: None,
        }
    }
}

/// The built-in HTTP classifier: [`classify_status`] as a [`Classify`] for an [`HttpOutcome`]
/// or a bare `u16` status.
///
/// ```
/// use core::time::Duration;
/// use resilix::classify::http::{HttpOutcome, HttpStatus};
/// use resilix::classify::Classify;
/// use resilix::Verdict;
///
/// let busy = HttpOutcome { status: 429, retry_after: Some(Duration::from_secs(2)) };
/// assert_eq!(HttpStatus.classify(&busy).retry_after(), Some(Duration::from_secs(2)));
/// assert_eq!(HttpStatus.classify(&502u16), Verdict::Transient);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpStatus;

impl Classify<HttpOutcome> for HttpStatus {
    fn classify(&self, outcome: &HttpOutcome) -> Verdict {
        classify_status(outcome.status, outcome.retry_after)
    }
}

impl Classify<u16> for HttpStatus {
    fn classify(&self, status: &u16) -> Verdict {
        classify_status(*status, None)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const RA: Option<Duration> = Some(Duration::from_secs(7));

    fn overload(retry_after: Option<Duration>) -> Verdict {
        Verdict::Overload { retry_after }
    }

    #[test]
    fn the_table() {
        let table = [
            // Edges of every class, then each special code and its neighbours.
            (0, Verdict::Transient),
            (99, Verdict::Transient),
            (100, Verdict::Success),
            (101, Verdict::Success),
            (199, Verdict::Success),
            (200, Verdict::Success),
            (204, Verdict::Success),
            (299, Verdict::Success),
            (300, Verdict::Success),
            (304, Verdict::Success),
            (399, Verdict::Success),
            (400, Verdict::Answered),
            (404, Verdict::Answered),
            (407, Verdict::Answered),
            (408, Verdict::Timeout),
            (409, Verdict::Answered),
            (428, Verdict::Answered),
            (429, overload(RA)),
            (430, Verdict::Answered),
            (499, Verdict::Answered),
            (500, Verdict::Transient),
            (501, Verdict::Transient),
            (502, Verdict::Transient),
            (503, overload(RA)),
            (504, Verdict::Timeout),
            (505, Verdict::Transient),
            (599, Verdict::Transient),
            (600, Verdict::Transient),
            (999, Verdict::Transient),
            (u16::MAX, Verdict::Transient),
        ];
        for (status, want) in table {
            assert_eq!(classify_status(status, RA), want, "{status}");
            let outcome = HttpOutcome {
                status,
                retry_after: RA,
            };
            assert_eq!(HttpStatus.classify(&outcome), want, "{status}");
        }
    }

    #[test]
    fn every_code_lands_in_its_class() {
        for status in 0..=u16::MAX {
            let v = classify_status(status, RA);
            let special = [408, 429, 503, 504].contains(&status);
            if !special {
                let want = match status / 100 {
                    1..=3 => Verdict::Success,
                    4 => Verdict::Answered,
                    _ => Verdict::Transient,
                };
                assert_eq!(v, want, "{status}");
            }
            // Only an overload may carry a wait, and nothing we classify is our own refusal.
            assert_eq!(v.retry_after().is_some(), matches!(status, 429 | 503));
            assert!(v.is_counted());
        }
    }

    #[test]
    fn overload_without_retry_after() {
        assert_eq!(classify_status(429, None), overload(None));
        assert_eq!(HttpStatus.classify(&503u16), overload(None));
        assert_eq!(
            HttpStatus.classify(&HttpOutcome::status(503)),
            overload(None)
        );
    }

    #[test]
    fn a_bare_status_is_an_outcome_without_retry_after() {
        assert_eq!(HttpStatus.classify(&200u16), Verdict::Success);
        assert_eq!(HttpStatus.classify(&408u16), Verdict::Timeout);
        assert_eq!(HttpStatus.classify(&418u16), Verdict::Answered);
        assert_eq!(HttpStatus.classify(&502u16), Verdict::Transient);
        for status in 0..=u16::MAX {
            assert_eq!(
                HttpStatus.classify(&status),
                HttpStatus.classify(&HttpOutcome::status(status))
            );
        }
    }
}
