//! hyper's client through resilix (feature `hyper`): the errors of
//! `hyper_util::client::legacy::Client` classified by where they happened, the same rule as
//! for `reqwest` (which is built on it).
//!
//! Responses are `http::Response`s, so [`HttpResponse`] classifies
//! them; put the two together with [`HttpResponse::with_errors`]:
//!
//! ```
//! use resilix::Verdict;
//! use resilix::classify::Classify;
//! use resilix_tokio::http::HttpResponse;
//!
//! let classifier = HttpResponse::with_errors(resilix_tokio::hyper::classify_error);
//! let busy = http::Response::builder().status(429).body(()).unwrap();
//! let outcome: Result<_, hyper_util::client::legacy::Error> = Ok(busy);
//! assert_eq!(classifier.classify(&outcome), Verdict::Overload { retry_after: None });
//! ```

use hyper_util::client::legacy::Error;
use resilix::Verdict;

#[cfg(doc)]
use crate::http::HttpResponse;

/// The verdict for an error of hyper's client: a connect error (refused, DNS, connect timeout:
/// the request never left) is [`Verdict::Transient`], retried for any call; anything else
/// happened after the request was handed to the connection and may have been acted on, so it
/// is [`Verdict::Timeout`], retried only for an idempotent call (RFC 9110 §9.2.2, or one
/// carrying an [`IdempotencyKey`](crate::http::IdempotencyKey)).
pub fn classify_error(error: &Error) -> Verdict {
    if error.is_connect() {
        Verdict::Transient
    } else {
        Verdict::Timeout
    }
}
