//! The classifier a tokio [`Resilience`](crate::Resilience) starts with: it reads what each
//! attempt returned by its type, so an HTTP response is never a success because it arrived.
//!
//! | the attempt returned | verdict |
//! |---|---|
//! | `Ok(reqwest::Response)` (feature `reqwest`) | by status and `Retry-After`: the table of [`resilix::classify::http`] (a 503 is `Overload`) |
//! | `Ok(http::Response<B>)` (feature `http`) for `B` = `String`, `Vec<u8>`, `Bytes`, `()`, or `hyper::body::Incoming` (feature `hyper`) | the same |
//! | any other `Ok` | `Success` |
//! | any `Err` | `Transient` |
//!
//! The `Ok` type is recognised when the call runs (a type-id comparison, about a nanosecond), so
//! any `Ok` type works as long as it owns its data (`'static`). Errors are all transient, as
//! with [`ResultClassifier`]: to tell a reqwest or hyper error that happened before the request
//! left from one after (which only an idempotent call may retry), use
//! [`HttpResponse`](crate::http::HttpResponse), which reads both.
//!
//! A response type this table does not list (an `http::Response` with another body, or one of
//! the HTTP crates while its feature is off) cannot be read: the first one is reported once on
//! standard error, naming the type and the fix, and counts as a success. Give such calls a
//! classifier: [`HttpResponse`](crate::http::HttpResponse), a closure, or
//! [`ResultClassifier`] for "every `Ok` is a success", which also takes borrowed values.
//!
//! ```
//! use resilix::classify::Classify;
//! use resilix::Verdict;
//! use resilix_tokio::classify::AutoClassifier;
//!
//! let answered: Result<u32, std::io::Error> = Ok(7);
//! assert_eq!(AutoClassifier.classify(&answered), Verdict::Success);
//! let failed: Result<u32, std::io::Error> = Err(std::io::ErrorKind::ConnectionReset.into());
//! assert_eq!(AutoClassifier.classify(&failed), Verdict::Transient);
//! ```

use core::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};

use resilix::Verdict;
use resilix::classify::Classify;
#[cfg(doc)]
use resilix::classify::ResultClassifier;
use resilix::resilience::DefaultClassifier;

use crate::TokioTimer;

/// Classifies an attempt's `Result` by the types inside it (see the [module table](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoClassifier;

impl DefaultClassifier for TokioTimer {
    type Classifier = AutoClassifier;
}

impl<T: 'static, E> Classify<Result<T, E>> for AutoClassifier {
    #[inline]
    fn classify(&self, outcome: &Result<T, E>) -> Verdict {
        match outcome {
            Ok(value) => ok_verdict(value).unwrap_or_else(|| {
                let name = core::any::type_name::<T>();
                if looks_like_http(name) {
                    warn_unread(name);
                }
                Verdict::Success
            }),
            Err(_) => Verdict::Transient,
        }
    }
}

/// The verdict for an `Ok` value this classifier can read (an HTTP response, by its status);
/// `None` for anything else.
fn ok_verdict(value: &dyn Any) -> Option<Verdict> {
    #[cfg(feature = "reqwest")]
    if let Some(response) = value.downcast_ref::<::reqwest::Response>() {
        return Some(crate::http::classify_head(
            response.status().as_u16(),
            response.headers(),
        ));
    }
    #[cfg(feature = "http")]
    if let Some(verdict) = http_response(value) {
        return Some(verdict);
    }
    let _ = value;
    None
}

#[cfg(feature = "http")]
fn http_response(value: &dyn Any) -> Option<Verdict> {
    use ::http::Response;
    fn head<B>(response: &Response<B>) -> Verdict {
        crate::http::classify_head(response.status().as_u16(), response.headers())
    }
    if let Some(r) = value.downcast_ref::<Response<String>>() {
        return Some(head(r));
    }
    if let Some(r) = value.downcast_ref::<Response<Vec<u8>>>() {
        return Some(head(r));
    }
    if let Some(r) = value.downcast_ref::<Response<::bytes::Bytes>>() {
        return Some(head(r));
    }
    if let Some(r) = value.downcast_ref::<Response<()>>() {
        return Some(head(r));
    }
    #[cfg(feature = "hyper")]
    if let Some(r) = value.downcast_ref::<Response<::hyper::body::Incoming>>() {
        return Some(head(r));
    }
    None
}

/// Whether a type this classifier cannot read is an HTTP response, by its name. A type's name
/// is for diagnostics only, and this is one: it decides a warning, never a verdict.
fn looks_like_http(type_name: &str) -> bool {
    type_name.starts_with("http::response::Response<") || type_name.starts_with("reqwest::")
}

/// Says once per process, on standard error, that a response was counted as a success unread.
fn warn_unread(type_name: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "resilix: a `{type_name}` counted as a success without reading its status: \
             enable resilix-tokio's `http`/`reqwest`/`hyper` feature for it, or give the \
             Resilience a classifier (`.classifier(resilix_tokio::http::HttpResponse)`)"
        );
    }
}
