//! HTTP status codes as verdicts, per RFC 9110 §15 (and each code's own RFC).
//!
//! The column that decides whether a POST runs twice is "may have acted": whether the server
//! may have carried out the request before answering with this status. A failure where it
//! cannot have acted is [`Verdict::Transient`], retried for any call. One where it may have
//! is [`Verdict::Uncertain`] (500, 502, other 5xx) or [`Verdict::Timeout`] (504). A timeout
//! is retried only for a call declared idempotent
//! ([`CallOptions::idempotent`](crate::call::CallOptions::idempotent)). An `Uncertain`
//! failure is, by default, retried for any call, as docs/design/spec.md §3.2 retries every transient
//! failure: **a POST answered 500 or 502 is sent again and may run twice** (two orders, two
//! charges), unless it carries an idempotency key the server deduplicates on, which makes the
//! retry safe. One setting retries those only for idempotent calls:
//! [`RetryConfig::with_uncertain_retry`](crate::retry::RetryConfig::with_uncertain_retry)`(`[`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly)`)`,
//! following RFC 9110 §9.2.2: a client "SHOULD NOT automatically retry a request with a
//! non-idempotent method unless it has some means to know that the request semantics are
//! actually idempotent". A POST then gives up with `NotRetryable(Uncertain)`.
//!
//! | status | verdict | may have acted | source, and why |
//! |---|---|---|---|
//! | 1xx | `Success` | — | RFC 9110 §15.2: informational; the server is alive (101 completes an upgrade) |
//! | 2xx | `Success` | yes | §15.3 |
//! | 3xx | `Success` | — | §15.4: the upstream did its job; following the redirect is the HTTP client's business. A `Retry-After` on a 3xx is the wait before following it (§10.2.3): see [`HttpOutcome::redirect_wait`] |
//! | 4xx | `Answered` | no | §15.5: the request was wrong; a retry cannot change that |
//! | 408 Request Timeout | `Transient` | no | §15.5.9: the server did not receive the whole request and closes the connection; "the client MAY repeat that request". Safe for any method |
//! | 413 Content Too Large | `Answered`; `Overload` with its Retry-After | no | §15.5.14: permanent, unless the server sends Retry-After to say the condition is temporary and when to try again |
//! | 421 Misdirected Request | `Transient` | no | §15.5.20: not processed; "the client MAY retry the request over a different connection" (which connection is the HTTP client's pool's choice) |
//! | 425 Too Early | `Transient` | no | RFC 8470 §5.2: the server refused to process early data; retry once the handshake is complete |
//! | 429 Too Many Requests | `Overload`, with Retry-After | no | RFC 6585 §4: slow down |
//! | 500 Internal Server Error | `Uncertain` | yes | §15.6.1: the server failed, perhaps after acting; retried for a POST unless `UncertainRetry::IdempotentOnly` |
//! | 501 Not Implemented | `Answered` | no | §15.6.2: the server does not support the method; no retry changes that, and it is not the upstream failing |
//! | 502 Bad Gateway | `Uncertain` | yes | §15.6.3: an invalid response from the next server, which may have acted; not "send less", so not an overload |
//! | 503 Service Unavailable | `Overload`, with Retry-After | no | §15.6.4: cannot handle the request now, "likely to be alleviated after some delay" |
//! | 504 Gateway Timeout | `Timeout` | yes | §15.6.5: a proxy gave up waiting; the upstream may still be doing the work |
//! | 505 HTTP Version Not Supported | `Answered` | no | §15.6.6: no retry changes the version |
//! | 511 Network Authentication Required | `Answered` | no | RFC 6585 §6: a captive portal wants a login; no retry changes it, and it is not the upstream failing |
//! | other 5xx (506–510, 512–599) | `Uncertain` | yes | §15: an unrecognised code is read as the x00 of its class, here 500 |
//! | below 100, above 599 | `Uncertain` | yes | §15: not HTTP; "SHOULD process the response as if it had a 5xx (Server Error) status code" |
//!
//! `Retry-After` is read where RFC 9110 §10.2.3 and the codes' RFCs let a server send it: 3xx,
//! 413, 429 and 503 ([`carries_retry_after`]); an adapter need parse the header for no other
//! status. On a 429 or 503 it is the floor under the next attempt's delay; on a 413 it is what
//! makes the condition temporary; on a 3xx it belongs to the redirect.
//!
//! **Differences from the v0.4 spec.** Its table read 408 as a timeout (retried only for
//! idempotent calls) and every other 5xx as transient (retried for any call). RFC 9110 wins
//! where it is clear: 408 is the one failure the RFC says is always safe to repeat; 501, 505
//! and 511 are answers, neither retried nor counted against the upstream's health. 500 and 502
//! keep the spec's retry (§3.2) but are told apart as `Uncertain`, so that
//! `UncertainRetry::IdempotentOnly` can withhold it from non-idempotent calls.
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
//! assert_eq!(HttpStatus.classify(&408u16), Verdict::Transient); // safe to repeat, even a POST
//! assert_eq!(HttpStatus.classify(&500u16), Verdict::Uncertain); // a POST is repeated, by default
//! ```
//!
//! Design notes: docs/design/classify.md

use core::time::Duration;

use super::Classify;
use crate::verdict::Verdict;

/// The verdict for an HTTP response `status`, with `retry_after` where the status carries one
/// (see the [module table](self) for every row and its source).
///
/// Choices beyond the RFC's words, with their reasons:
///
/// * **502 is uncertain, not overload.** A gateway got no valid response: the upstream crashed,
///   reset the connection or is being redeployed. None of that says "send less", and an
///   `Overload` would make an adaptive limiter cut its limit for a fault that load does not
///   cause.
/// * **504 is a timeout.** A proxy timed out waiting, so the upstream may still be doing the
///   work, and it is the limiter's drop signal, as a slow upstream should be.
/// * **413 without Retry-After is an answer**, with one an overload: the server said when the
///   condition ends, and an overload is the verdict that waits for it.
///
/// `retry_after` is dropped for every status that is not an overload (a 3xx's belongs to its
/// redirect: [`HttpOutcome::redirect_wait`]).
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
/// assert_eq!(classify_status(500, Some(Duration::from_secs(1))), Verdict::Uncertain);
/// assert_eq!(classify_status(413, None), Verdict::Answered);
/// assert_eq!(classify_status(413, Some(Duration::from_secs(9))).retry_after(), Some(Duration::from_secs(9)));
/// ```
pub const fn classify_status(status: u16, retry_after: Option<Duration>) -> Verdict {
    match status {
        429 | 503 => Verdict::Overload { retry_after },
        413 => match retry_after {
            Some(_) => Verdict::Overload { retry_after },
            None => Verdict::Answered,
        },
        // The server cannot have acted: safe to repeat for any method.
        408 | 421 | 425 => Verdict::Transient,
        504 => Verdict::Timeout,
        // Answers no retry can change, and not the upstream failing.
        501 | 505 | 511 => Verdict::Answered,
        100..=399 => Verdict::Success,
        400..=499 => Verdict::Answered,
        // 500, 502, every other 5xx, and what is not HTTP at all (RFC 9110 §15: "SHOULD
        // process the response as if it had a 5xx (Server Error) status code"): the server
        // may have acted.
        _ => Verdict::Uncertain,
    }
}

/// Whether RFC 9110 lets a server send `Retry-After` with `status` in a way the verdict or the
/// caller uses: 3xx (§10.2.3: the wait before following the redirect), 413 (§15.5.14), 429
/// (RFC 6585 §4) and 503 (§15.6.4). An adapter parses the header only for these.
///
/// ```
/// use resilix::classify::http::carries_retry_after;
/// assert!(carries_retry_after(503) && carries_retry_after(429) && carries_retry_after(413));
/// assert!(carries_retry_after(307));
/// assert!(!carries_retry_after(500));
/// ```
pub const fn carries_retry_after(status: u16) -> bool {
    matches!(status, 300..=399 | 413 | 429 | 503)
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

    /// For a redirect (3xx), the `Retry-After`: "the minimum time that the user agent is asked
    /// to wait before issuing the redirected request" (RFC 9110 §10.2.3). The verdict of a
    /// redirect is `Success` and carries no wait, because the redirected request is not a
    /// retry of this one; whoever follows the redirect waits this long first. `None` for
    /// every other status.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::classify::http::HttpOutcome;
    ///
    /// let moved = HttpOutcome { status: 307, retry_after: Some(Duration::from_secs(5)) };
    /// assert_eq!(moved.redirect_wait(), Some(Duration::from_secs(5)));
    /// let busy = HttpOutcome { status: 503, retry_after: Some(Duration::from_secs(5)) };
    /// assert_eq!(busy.redirect_wait(), None); // the verdict carries that one
    /// ```
    pub const fn redirect_wait(&self) -> Option<Duration> {
        match self.status {
            300..=399 => self.retry_after,
            _ => None,
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
/// assert_eq!(HttpStatus.classify(&502u16), Verdict::Uncertain);
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
            (0, Verdict::Uncertain),
            (99, Verdict::Uncertain),
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
            (408, Verdict::Transient),
            (409, Verdict::Answered),
            (412, Verdict::Answered),
            (413, overload(RA)),
            (414, Verdict::Answered),
            (420, Verdict::Answered),
            (421, Verdict::Transient),
            (422, Verdict::Answered),
            (424, Verdict::Answered),
            (425, Verdict::Transient),
            (426, Verdict::Answered),
            (428, Verdict::Answered),
            (429, overload(RA)),
            (430, Verdict::Answered),
            (499, Verdict::Answered),
            (500, Verdict::Uncertain),
            (501, Verdict::Answered),
            (502, Verdict::Uncertain),
            (503, overload(RA)),
            (504, Verdict::Timeout),
            (505, Verdict::Answered),
            (506, Verdict::Uncertain),
            (510, Verdict::Uncertain),
            (511, Verdict::Answered),
            (512, Verdict::Uncertain),
            (599, Verdict::Uncertain),
            (600, Verdict::Uncertain),
            (999, Verdict::Uncertain),
            (u16::MAX, Verdict::Uncertain),
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
            let special = [408, 413, 421, 425, 429, 501, 503, 504, 505, 511].contains(&status);
            if !special {
                let want = match status / 100 {
                    1..=3 => Verdict::Success,
                    4 => Verdict::Answered,
                    _ => Verdict::Uncertain,
                };
                assert_eq!(v, want, "{status}");
            }
            // Only an overload may carry a wait, and nothing we classify is our own refusal.
            assert_eq!(v.retry_after().is_some(), matches!(status, 413 | 429 | 503));
            assert!(v.is_counted());
            // Every status whose verdict reads a Retry-After is one an adapter parses it for.
            if v.retry_after().is_some() {
                assert!(carries_retry_after(status), "{status}");
            }
        }
    }

    #[test]
    fn may_have_acted_decides_idempotent_only_retries() {
        use crate::retry::{UncertainRetry, retryable, retryable_with};
        // (status, retried for a POST by default, for a POST under IdempotentOnly, for an
        // idempotent call under either, breaker failure)
        for (status, post, careful_post, idempotent, failure) in [
            (408, true, true, true, true),
            (421, true, true, true, true),
            (425, true, true, true, true),
            (429, true, true, true, true),
            (503, true, true, true, true),
            (500, true, false, true, true),
            (502, true, false, true, true),
            (507, true, false, true, true),
            (504, false, false, true, true),
            (501, false, false, false, false),
            (505, false, false, false, false),
            (511, false, false, false, false),
            (404, false, false, false, false),
        ] {
            let v = classify_status(status, None);
            let always = UncertainRetry::Always;
            let careful = UncertainRetry::IdempotentOnly;
            assert_eq!(retryable(&v, false).is_ok(), post, "{status} for a POST");
            assert_eq!(retryable_with(&v, false, always), retryable(&v, false));
            assert_eq!(
                retryable_with(&v, false, careful).is_ok(),
                careful_post,
                "{status} for a POST, idempotent-only"
            );
            for setting in [always, careful] {
                assert_eq!(
                    retryable_with(&v, true, setting).is_ok(),
                    idempotent,
                    "{status} idempotent, {setting:?}"
                );
            }
            // Where the server may have acted, only the setting or the flag separates a retry
            // from a give-up; where it cannot have, neither matters.
            assert_eq!(post != careful_post, v == Verdict::Uncertain, "{status}");
            assert_eq!(v.is_failure(), failure, "{status} breaker failure");
        }
    }

    #[test]
    fn retry_after_where_the_rfc_allows_it() {
        // 413: temporary with a Retry-After, permanent without.
        assert_eq!(classify_status(413, RA), overload(RA));
        assert_eq!(classify_status(413, None), Verdict::Answered);
        // 3xx: the verdict is a success; the wait belongs to the redirect.
        for status in [300, 301, 302, 303, 304, 307, 308, 399] {
            assert!(carries_retry_after(status));
            let outcome = HttpOutcome {
                status,
                retry_after: RA,
            };
            assert_eq!(HttpStatus.classify(&outcome), Verdict::Success);
            assert_eq!(outcome.redirect_wait(), RA);
        }
        for status in [200, 299, 400, 413, 429, 500, 503] {
            let outcome = HttpOutcome {
                status,
                retry_after: RA,
            };
            assert_eq!(outcome.redirect_wait(), None, "{status}");
        }
        let parsed: usize = (0..=u16::MAX).filter(|s| carries_retry_after(*s)).count();
        assert_eq!(parsed, 100 + 3);
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
        assert_eq!(HttpStatus.classify(&408u16), Verdict::Transient);
        assert_eq!(HttpStatus.classify(&418u16), Verdict::Answered);
        assert_eq!(HttpStatus.classify(&502u16), Verdict::Uncertain);
        for status in 0..=u16::MAX {
            assert_eq!(
                HttpStatus.classify(&status),
                HttpStatus.classify(&HttpOutcome::status(status))
            );
        }
    }
}
