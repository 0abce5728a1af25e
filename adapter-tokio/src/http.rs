//! HTTP done the way the RFCs say (feature `http`): responses classified by status and
//! `Retry-After` through the core's table and parser, which calls may be retried after the
//! request was sent (RFC 9110 §9.2.2 idempotent methods, or an [`IdempotencyKey`]), and the
//! key itself. Feature `reqwest` adds the same for `reqwest` ([`crate::reqwest`]).
//!
//! **Which failures are retried for which calls.** A failure before the request left (a
//! refused connection) is retried for any method: the server never saw it. A failure after
//! it was sent (a timeout, a reset, a broken body) may have been acted on, so it classifies as
//! [`Verdict::Timeout`], the core's "may still have run upstream" verdict, which the retry
//! policy retries only for a call declared idempotent. [`call_options`] declares it from the
//! method, or from the key that makes a POST safe to send twice.
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

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response};
use resilix::Rejection;
use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::classify::Classify;
use resilix::classify::http::{carries_retry_after, classify_status};
use resilix::classify::retry_after::parse_delay;
use resilix::random::Random;
use resilix::resilience::SeedSource;
use resilix::time::Instant;

/// Classifies responses by status with the core's RFC 9110 table
/// ([`classify_status`]: 408/421/425 transient, 500/502 uncertain, 504 timeout, 429/503 and a
/// 413 with `Retry-After` overload, 501/505/511 and other 4xx answered), and `Result`s of
/// `http::Response` with every error a [`Verdict::Timeout`] (a generic error does not say
/// whether the request was sent, so only an idempotent call is retried after it; `reqwest`'s
/// and hyper's errors do say, see `resilix_tokio::reqwest` and `resilix_tokio::hyper`).
///
/// An uncertain 500/502 is retried for any call by default, so a POST may be sent twice;
/// `RetryConfig::with_uncertain_retry(UncertainRetry::IdempotentOnly)` retries it only for
/// calls declared idempotent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpResponse;

/// Whether `method` is idempotent (RFC 9110 §9.2.2): GET, HEAD, OPTIONS, TRACE, PUT, DELETE.
/// Sending such a request twice has the effect of sending it once, so a failure after it was
/// sent may be retried.
///
/// ```
/// use http::Method;
/// use resilix_tokio::http::is_idempotent;
///
/// assert!(is_idempotent(&Method::PUT));
/// assert!(!is_idempotent(&Method::POST));
/// assert!(!is_idempotent(&Method::PATCH));
/// ```
pub fn is_idempotent(method: &Method) -> bool {
    // Spelled out rather than `Method::is_idempotent`, so the list is the RFC's, here.
    [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::TRACE,
        Method::PUT,
        Method::DELETE,
    ]
    .contains(method)
}

/// The call options for one HTTP call: idempotent when the method is (RFC 9110 §9.2.2) or the
/// call carries an idempotency key, which tells the server to run it at most once.
///
/// ```
/// use http::Method;
/// use resilix::random::SeededRandom;
/// use resilix_tokio::http::{call_options, IdempotencyKey};
///
/// assert!(call_options(&Method::GET, None).is_idempotent());
/// assert!(!call_options(&Method::POST, None).is_idempotent());
/// let key = IdempotencyKey::generate(&mut SeededRandom::new(1));
/// assert!(call_options(&Method::POST, Some(&key)).is_idempotent());
/// ```
pub fn call_options(method: &Method, key: Option<&IdempotencyKey>) -> CallOptions {
    CallOptions::default().idempotent(is_idempotent(method) || key.is_some())
}

/// One logical call's idempotency key: generated once, before the first attempt, and sent
/// unchanged on every attempt and hedge, so the server can run a non-idempotent request at
/// most once however many times it arrives (the IETF `Idempotency-Key` header draft,
/// draft-ietf-httpapi-idempotency-key-header; Stripe and AWS APIs work the same way).
///
/// The key is 122 random bits in UUID v4 form, drawn from the caller's randomness: a seeded
/// generator, or [`Self::for_call`] from a `Resilience`'s seeds (per-thread entropy by default,
/// reproducible under `Resilience::seed`). There is no hidden global generator.
///
/// ```
/// use http::Method;
/// use resilix::random::SeededRandom;
/// use resilix_tokio::http::IdempotencyKey;
///
/// let key = IdempotencyKey::generate(&mut SeededRandom::new(9));
/// assert_eq!(key.name(), "idempotency-key");
/// assert_eq!(key.value().len(), 36);
/// // The same seed, the same key: a test can predict it.
/// assert_eq!(key, IdempotencyKey::generate(&mut SeededRandom::new(9)));
///
/// let mut request = http::Request::builder().method(Method::POST).body(()).unwrap();
/// key.insert_into(request.headers_mut());
/// assert_eq!(request.headers()["idempotency-key"], *key.value());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    name: HeaderName,
    value: HeaderValue,
}

impl IdempotencyKey {
    /// The default header, `Idempotency-Key` (the IETF draft's name).
    pub const DEFAULT_HEADER: HeaderName = HeaderName::from_static("idempotency-key");

    /// A fresh key drawn from `rng`, sent as [`Self::DEFAULT_HEADER`].
    pub fn generate<R: Random + ?Sized>(rng: &mut R) -> Self {
        let bits = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        // RFC 9562 §5.4: version 4 in the high nibble of octet 6, variant 0b10 in octet 8.
        let bits = (bits & !(0xF << 76) & !(0b11 << 62)) | (0x4 << 76) | (0b10 << 62);
        let mut text = String::with_capacity(36);
        for (i, byte) in bits.to_be_bytes().iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                text.push('-');
            }
            // Writing to a String cannot fail.
            let _ = write!(text, "{byte:02x}");
        }
        IdempotencyKey {
            name: Self::DEFAULT_HEADER,
            value: HeaderValue::try_from(text).expect("hex digits and dashes are a header value"),
        }
    }

    /// A fresh key from `resilience`'s seeds: per-thread entropy by default, or the
    /// reproducible sequence of [`Resilience::seed`](resilix::resilience::Resilience::seed).
    ///
    /// ```
    /// use resilix::pipeline::Pipeline;
    /// use resilix_tokio::http::IdempotencyKey;
    /// use resilix_tokio::Resilience;
    ///
    /// let pipeline = Pipeline::new();
    /// let a = IdempotencyKey::for_call(&Resilience::new(&pipeline).seed(5));
    /// let b = IdempotencyKey::for_call(&Resilience::new(&pipeline).seed(5));
    /// assert_eq!(a, b);
    /// let resilience = Resilience::new(&pipeline);
    /// assert_ne!(IdempotencyKey::for_call(&resilience), IdempotencyKey::for_call(&resilience));
    /// ```
    pub fn for_call<P, Tm, S: SeedSource, O, C>(
        resilience: &resilix::resilience::Resilience<P, Tm, S, O, C>,
    ) -> Self {
        Self::generate(&mut resilience.call_rng())
    }

    /// The same key, sent as header `name` instead (an API that names it `X-Request-Id`,
    /// say).
    pub fn with_header(mut self, name: HeaderName) -> Self {
        self.name = name;
        self
    }

    /// The header the key is sent as.
    pub fn name(&self) -> &HeaderName {
        &self.name
    }

    /// The key.
    pub fn value(&self) -> &HeaderValue {
        &self.value
    }

    /// Sets the key's header in `headers`, replacing a previous value.
    pub fn insert_into(&self, headers: &mut HeaderMap) {
        headers.insert(self.name.clone(), self.value.clone());
    }
}

/// The `Retry-After` of `headers` as a delay from now (delta-seconds or an HTTP-date, read
/// against the system clock). `None` when absent or malformed.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    parse_delay(value.as_bytes(), now)
}

/// The verdict for a response's status and headers: the core's table, with `Retry-After`
/// parsed when present (the table keeps it only where the verdict carries a wait).
pub(crate) fn classify_head(status: u16, headers: &HeaderMap) -> Verdict {
    // Parse the header only where RFC 9110 lets a server send it.
    let retry_after = if carries_retry_after(status) {
        retry_after(headers)
    } else {
        None
    };
    classify_status(status, retry_after)
}

impl<B> Classify<Response<B>> for HttpResponse {
    fn classify(&self, response: &Response<B>) -> Verdict {
        classify_head(response.status().as_u16(), response.headers())
    }
}

/// A response by its status; an error of unknown kind as [`Verdict::Timeout`]: it may have
/// happened after the request was sent, so only an idempotent call is retried after it. For
/// errors that say where they happened, use [`HttpResponse::with_errors`] (with
/// `resilix_tokio::hyper::classify_error`, say) or the `reqwest` impls.
impl<B, E> Classify<Result<Response<B>, E>> for HttpResponse {
    fn classify(&self, outcome: &Result<Response<B>, E>) -> Verdict {
        match outcome {
            Ok(response) => self.classify(response),
            Err(_) => Verdict::Timeout,
        }
    }
}

impl HttpResponse {
    /// Responses by status (as [`HttpResponse`]), errors by `errors`.
    ///
    /// ```
    /// use resilix::classify::Classify;
    /// use resilix::Verdict;
    /// use resilix_tokio::http::HttpResponse;
    ///
    /// #[derive(Debug)]
    /// enum Error { Refused, Reset }
    /// let c = HttpResponse::with_errors(|e: &Error| match e {
    ///     Error::Refused => Verdict::Transient, // never sent: retry any call
    ///     Error::Reset => Verdict::Timeout,     // maybe acted on: idempotent calls only
    /// });
    /// let busy = http::Response::builder().status(503).body(()).unwrap();
    /// assert_eq!(c.classify(&Ok::<_, Error>(busy)), Verdict::Overload { retry_after: None });
    /// assert_eq!(c.classify(&Err::<http::Response<()>, _>(Error::Refused)), Verdict::Transient);
    /// ```
    pub const fn with_errors<F>(errors: F) -> HttpWithErrors<F> {
        HttpWithErrors { errors }
    }
}

/// Classifies `Result<http::Response<B>, E>`: the response by the core's status table with
/// `Retry-After`, the error by a function. Made by [`HttpResponse::with_errors`].
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpWithErrors<F> {
    errors: F,
}

impl<B, E, F: Fn(&E) -> Verdict> Classify<Result<Response<B>, E>> for HttpWithErrors<F> {
    fn classify(&self, outcome: &Result<Response<B>, E>) -> Verdict {
        match outcome {
            Ok(response) => HttpResponse.classify(response),
            Err(error) => (self.errors)(error),
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
