//! What a request says about itself: its priority and its propagated deadline.

use std::time::Duration;

use http::{HeaderMap, HeaderName, Request};
use resilix::inbound::Priority;
use resilix::time::{decode_grpc_timeout, decode_millis};

/// How the layer learns a request's priority. Implemented by [`HeaderPriority`] and by any
/// `Fn(&Request<B>) -> Priority` closure (a route, a user tier, an API key's plan).
///
/// ```
/// use http::Request;
/// use resilix::inbound::Priority;
/// use resilix_tokio::inbound::PriorityOf;
///
/// let by_path = |req: &Request<()>| {
///     if req.uri().path().starts_with("/checkout") { Priority::CriticalPlus } else { Priority::Sheddable }
/// };
/// let req = Request::get("/checkout/pay").body(()).unwrap();
/// assert_eq!(by_path.priority(&req), Priority::CriticalPlus);
/// ```
pub trait PriorityOf<B> {
    /// The request's priority.
    fn priority(&self, req: &Request<B>) -> Priority;
}

impl<B, F: Fn(&Request<B>) -> Priority> PriorityOf<B> for F {
    fn priority(&self, req: &Request<B>) -> Priority {
        self(req)
    }
}

/// The priority from a header holding an SRE criticality (`CRITICAL_PLUS`, `critical`, `3`,
/// see [`Priority::parse`]); a missing or unknown value reads as `fallback` (CRITICAL by
/// default, as in the SRE book).
///
/// ```
/// use http::Request;
/// use resilix::inbound::Priority;
/// use resilix_tokio::inbound::{HeaderPriority, PriorityOf};
///
/// let from = HeaderPriority::default();
/// let req = Request::get("/").header("x-criticality", "SHEDDABLE").body(()).unwrap();
/// assert_eq!(from.priority(&req), Priority::Sheddable);
/// assert_eq!(from.priority(&Request::get("/").body(()).unwrap()), Priority::Critical);
/// ```
#[derive(Clone, Debug)]
pub struct HeaderPriority {
    /// The header. Default `x-criticality` (ours: the SRE book names the field, not a header).
    pub name: HeaderName,
    /// The priority of a request without a valid value. Default CRITICAL.
    pub fallback: Priority,
}

impl Default for HeaderPriority {
    fn default() -> Self {
        HeaderPriority {
            name: HeaderName::from_static("x-criticality"),
            fallback: Priority::Critical,
        }
    }
}

impl<B> PriorityOf<B> for HeaderPriority {
    fn priority(&self, req: &Request<B>) -> Priority {
        req.headers()
            .get(&self.name)
            .and_then(|v| Priority::parse(v.as_bytes()))
            .unwrap_or(self.fallback)
    }
}

/// The time left that the caller sent: `grpc-timeout` (gRPC's wire format), else a plain
/// milliseconds header. A malformed value is ignored (no deadline), never an error.
pub(crate) fn timeout(headers: &HeaderMap, millis_header: &HeaderName) -> Option<Duration> {
    if let Some(v) = headers.get("grpc-timeout")
        && let Ok(d) = decode_grpc_timeout(v.as_bytes())
    {
        return Some(d);
    }
    let v = headers.get(millis_header)?;
    decode_millis(v.as_bytes()).ok()
}

/// Whether the request is gRPC (its shed answer then is a gRPC status, not a 503).
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}
