//! The answer to a shed request, written before any handler runs.

use http::{HeaderValue, Response, StatusCode};
use resilix::inbound::{Shed, ShedCause};
use resilix::time::Instant;

/// gRPC's RESOURCE_EXHAUSTED.
const GRPC_RESOURCE_EXHAUSTED: &str = "8";
/// gRPC's DEADLINE_EXCEEDED.
const GRPC_DEADLINE_EXCEEDED: &str = "4";

/// `503 Service Unavailable` with `Retry-After` in whole seconds (rounded up, at least 1) for
/// an HTTP request; for gRPC, HTTP 200 with `grpc-status` 8 RESOURCE_EXHAUSTED (4
/// DEADLINE_EXCEEDED for a deadline that cannot be met) and `grpc-retry-pushback-ms` (gRPC A6,
/// which clients honour before retrying). Both carry `x-resilix-shed` with the cause's code.
pub(crate) fn shed_response<B: Default>(shed: &Shed, grpc: bool, now: Instant) -> Response<B> {
    let mut response = Response::new(B::default());
    let headers = response.headers_mut();
    headers.insert(
        "x-resilix-shed",
        HeaderValue::from_static(shed.cause().code()),
    );
    let wait = shed.retry_at().map(|at| at.saturating_duration_since(now));
    if grpc {
        *response.status_mut() = StatusCode::OK;
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        let status = match shed.cause() {
            ShedCause::Deadline => GRPC_DEADLINE_EXCEEDED,
            _ => GRPC_RESOURCE_EXHAUSTED,
        };
        headers.insert("grpc-status", HeaderValue::from_static(status));
        headers.insert(
            "grpc-message",
            HeaderValue::from_static(shed.cause().code()),
        );
        if let Some(wait) = wait {
            headers.insert(
                "grpc-retry-pushback-ms",
                HeaderValue::from(wait.as_millis().min(u64::MAX as u128) as u64),
            );
        }
    } else {
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        if let Some(wait) = wait {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
    }
    response
}
