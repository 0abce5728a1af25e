//! `reqwest` through resilix (feature `reqwest`): responses classified by the core's status
//! table with `Retry-After`, errors by where they happened, and idempotency keys on requests.
//!
//! [`HttpResponse`] classifies `reqwest::Response` and `Result<reqwest::Response,
//! reqwest::Error>`, so `send()` can be the whole operation; [`classify_error`] is the error
//! rule on its own, for an operation that also reads the body
//! (`ResultClassifier::with_errors(classify_error)`).
//!
//! | where it failed | verdict | retried for |
//! |---|---|---|
//! | connecting (refused, DNS, TLS, connect timeout): the request never left | `Transient` | any call |
//! | after the request was sent (timeout, reset, body, decode) | `Timeout` | idempotent calls (method or key, see [`call_options`](crate::http::call_options)) |
//! | building the request, following redirects | `Answered` | never: a retry sends the same thing |
//! | `error_for_status()` | the status's verdict ([`classify_status`]) | as the status says |
//!
//! ```no_run
//! use reqwest::Method;
//! use resilix::pipeline::Pipeline;
//! use resilix::retry::{Retry, RetryConfig};
//! use resilix_tokio::http::{call_options, HttpResponse, IdempotencyKey};
//! use resilix_tokio::reqwest::RequestBuilderExt;
//! use resilix_tokio::Resilience;
//!
//! # async fn charge(client: reqwest::Client) {
//! let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::DEFAULT));
//! let resilience = Resilience::new(&pipeline).classifier(HttpResponse);
//! // One key for the logical call: every attempt sends the same one, so the server charges once.
//! let key = IdempotencyKey::for_call(&resilience);
//! let paid = resilience
//!     .execute(call_options(&Method::POST, Some(&key)), || {
//!         client.post("https://pay.example/charges").idempotency_key(&key).send()
//!     })
//!     .await;
//! # let _ = paid;
//! # }
//! ```

use resilix::Verdict;
use resilix::classify::Classify;
use resilix::classify::http::classify_status;

use crate::http::{HttpResponse, IdempotencyKey, classify_head};

/// The verdict for a `reqwest` error, by where it happened (see the [module table](self)).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use resilix::Verdict;
/// use resilix_tokio::reqwest::classify_error;
///
/// // A port nothing listens on: the connection is refused, nothing was sent.
/// let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
/// let refused = reqwest::get(format!("http://127.0.0.1:{port}/")).await.unwrap_err();
/// assert_eq!(classify_error(&refused), Verdict::Transient);
/// # });
/// ```
pub fn classify_error(error: &::reqwest::Error) -> Verdict {
    if error.is_connect() {
        // Checked first: a connect timeout is also `is_timeout`, but nothing was sent.
        Verdict::Transient
    } else if let Some(status) = error.status() {
        // `error_for_status()`: the response's headers are gone, so no Retry-After.
        classify_status(status.as_u16(), None)
    } else if error.is_builder() || error.is_redirect() {
        // The request as written cannot succeed (a bad URL, a redirect loop); sending it
        // again sends the same thing.
        Verdict::Answered
    } else {
        // Sent, and then it broke: the server may have acted on it.
        Verdict::Timeout
    }
}

impl Classify<::reqwest::Response> for HttpResponse {
    fn classify(&self, response: &::reqwest::Response) -> Verdict {
        classify_head(response.status().as_u16(), response.headers())
    }
}

impl Classify<::reqwest::Error> for HttpResponse {
    fn classify(&self, error: &::reqwest::Error) -> Verdict {
        classify_error(error)
    }
}

impl Classify<Result<::reqwest::Response, ::reqwest::Error>> for HttpResponse {
    fn classify(&self, outcome: &Result<::reqwest::Response, ::reqwest::Error>) -> Verdict {
        match outcome {
            Ok(response) => self.classify(response),
            Err(error) => classify_error(error),
        }
    }
}

/// Idempotency keys on `reqwest` requests.
pub trait RequestBuilderExt {
    /// Sends `key` as its header (`Idempotency-Key` unless renamed).
    fn idempotency_key(self, key: &IdempotencyKey) -> Self;

    /// Sends `attempt`'s context to the next hop under the default headers
    /// ([`Propagation::default`](crate::propagate::Propagation)): the call's criticality, the
    /// time left, the attempt's number. Use it inside
    /// [`run_attempts`](resilix::resilience::CallBuilder::run_attempts).
    fn propagate(self, attempt: &resilix::execute::AttemptInfo) -> Self;

    /// [`Self::propagate`] under the headers `propagation` names.
    fn propagate_with(
        self,
        propagation: &crate::propagate::Propagation,
        attempt: &resilix::execute::AttemptInfo,
    ) -> Self;
}

impl RequestBuilderExt for ::reqwest::RequestBuilder {
    fn idempotency_key(self, key: &IdempotencyKey) -> Self {
        self.header(key.name().clone(), key.value().clone())
    }

    fn propagate(self, attempt: &resilix::execute::AttemptInfo) -> Self {
        self.propagate_with(&crate::propagate::Propagation::default(), attempt)
    }

    fn propagate_with(
        self,
        propagation: &crate::propagate::Propagation,
        attempt: &resilix::execute::AttemptInfo,
    ) -> Self {
        let mut headers = http::HeaderMap::new();
        propagation.insert_into(&mut headers, attempt, crate::now());
        self.headers(headers)
    }
}
