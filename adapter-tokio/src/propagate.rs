//! What an outbound attempt tells the next hop (feature `http`): the call's criticality, the
//! time it has left, and which attempt it is, each under a header you can rename.
//!
//! | what | header (default) | value | why this one |
//! |---|---|---|---|
//! | criticality | `x-criticality` | `CRITICAL_PLUS`, `CRITICAL`, `SHEDDABLE_PLUS`, `SHEDDABLE` | what resilix's inbound layer reads (`resilix_tokio::inbound`); the SRE book's names; sent only when the call has one |
//! | time left | `x-request-timeout-ms` (HTTP) or `grpc-timeout` | whole milliseconds, or gRPC's encoding; rounded down | the inbound layer reads both; rounded down so the next hop never gets more time than is left |
//! | attempt | `x-attempt-count` | `1` on the first try, `2` on the first retry | the meaning of Envoy's `x-envoy-attempt-count` (a count that includes this try, so "is a retry" is `> 1`), under a name an Envoy in the path does not overwrite; with [`Propagation::grpc`], also gRPC's `grpc-previous-rpc-attempts` (`n − 1`, on retries only) |
//!
//! Make the call with [`CallBuilder::run_attempts`](resilix::resilience::CallBuilder::run_attempts),
//! whose operation is told each attempt's [`AttemptInfo`], and put the headers on the request:
//! [`Propagation::insert_into`] for any `http::HeaderMap`, or `.propagate(attempt)` on a
//! reqwest request (`resilix_tokio::reqwest::RequestBuilderExt`).
//!
//! ```
//! use http::HeaderMap;
//! use resilix::execute::AttemptInfo;
//! use resilix::inbound::Priority;
//! use resilix::time::Instant;
//! use resilix_tokio::propagate::Propagation;
//!
//! let now = Instant::from_secs(10);
//! let second = AttemptInfo::new(2, now)
//!     .with_criticality(Priority::Sheddable)
//!     .with_deadline(Instant::from_millis(10_250));
//! let mut headers = HeaderMap::new();
//! Propagation::default().insert_into(&mut headers, &second, now);
//! assert_eq!(headers["x-criticality"], "SHEDDABLE");
//! assert_eq!(headers["x-request-timeout-ms"], "250");
//! assert_eq!(headers["x-attempt-count"], "2");
//! ```

use http::{HeaderMap, HeaderName, HeaderValue};
use resilix::execute::AttemptInfo;
use resilix::time::{Deadline, DeadlinePropagation, Instant};

/// Which headers carry an attempt's context to the next hop, and how (see the
/// [module table](self)).
#[derive(Clone, Debug)]
pub struct Propagation {
    /// The criticality's header; `None` sends none.
    pub criticality: Option<HeaderName>,
    /// The attempt number's header; `None` sends none.
    pub attempt: Option<HeaderName>,
    /// The time left, in milliseconds, under this header; `None` sends none (see
    /// [`Self::grpc`] for `grpc-timeout`).
    pub timeout_millis: Option<HeaderName>,
    /// gRPC: the time left as `grpc-timeout` and retries as `grpc-previous-rpc-attempts`.
    pub grpc: bool,
    /// How the time left is passed on (a margin for transit; default none, as gRPC).
    pub deadline: DeadlinePropagation,
}

impl Default for Propagation {
    fn default() -> Self {
        Propagation {
            criticality: Some(HeaderName::from_static("x-criticality")),
            attempt: Some(HeaderName::from_static("x-attempt-count")),
            timeout_millis: Some(HeaderName::from_static("x-request-timeout-ms")),
            grpc: false,
            deadline: DeadlinePropagation::NO_MARGIN,
        }
    }
}

impl Propagation {
    /// For gRPC calls: `grpc-timeout` and `grpc-previous-rpc-attempts` as well.
    pub fn grpc() -> Self {
        Propagation {
            grpc: true,
            timeout_millis: None,
            ..Propagation::default()
        }
    }

    /// Inserts `attempt`'s context into `headers` at `now` (the driver's clock: under tokio,
    /// `resilix_tokio::now()`), replacing any value those headers had.
    pub fn insert_into(&self, headers: &mut HeaderMap, attempt: &AttemptInfo, now: Instant) {
        if let (Some(name), Some(criticality)) = (&self.criticality, attempt.criticality) {
            headers.insert(name.clone(), HeaderValue::from_static(criticality.name()));
        }
        if let Some(name) = &self.attempt {
            headers.insert(name.clone(), HeaderValue::from(attempt.number));
        }
        if let Some(at) = attempt.deadline {
            let deadline = Deadline::at(at);
            if let Some(name) = &self.timeout_millis {
                let value = self.deadline.millis(deadline, now);
                if let Ok(value) = HeaderValue::from_str(value.as_str()) {
                    headers.insert(name.clone(), value);
                }
            }
            if self.grpc {
                let value = self.deadline.grpc_timeout(deadline, now);
                if let Ok(value) = HeaderValue::from_str(value.as_str()) {
                    headers.insert(HeaderName::from_static("grpc-timeout"), value);
                }
            }
        }
        if self.grpc && attempt.number > 1 {
            headers.insert(
                HeaderName::from_static("grpc-previous-rpc-attempts"),
                HeaderValue::from(attempt.number - 1),
            );
        }
    }
}
