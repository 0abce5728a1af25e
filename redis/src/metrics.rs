//! Every [`FleetEvent`] as a counter in the `metrics` facade (feature `metrics`).
//!
//! | metric | labels |
//! |---|---|
//! | `resilix_redis_decisions_total` | `limiter`, `outcome`: `fleet-admitted`, `fleet-refused`, `failed-open`, `failed-closed`, `local-admitted`, `local-refused` |
//! | `resilix_redis_backend_errors_total` | `limiter`, `kind`: `error`, `timeout` |
//! | `resilix_redis_script_loads_total` | `limiter` |
//! | `resilix_redis_lease_renewals_total` | `limiter`, `outcome`: `granted`, `refused` (failed renewals are backend errors) |
//! | `resilix_redis_leased_cells_total` | `limiter`, `fate`: `granted`, `expired` |
//! | `resilix_redis_budget_settlements_total` | `limiter` (failed settlements are backend errors) |
//!
//! `failed-open` is the series to alert on: calls admitted with no fleet-wide check at all.
//!
//! ```
//! use resilix::rate_limit::{Rate, RateLimitConfig};
//! use resilix_redis::{FleetConfig, FleetRateLimiter};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let config = FleetConfig::new("api", RateLimitConfig::new(Rate::per_second(100)));
//! // Nothing listens on port 1: the call fails open, and `failed-open` counts it.
//! let limiter = FleetRateLimiter::connect("redis://127.0.0.1:1/0", config)
//!     .unwrap()
//!     .with_observer(resilix_redis::metrics::observer("api"));
//! assert!(limiter.acquire().await.is_ok());
//! assert_eq!(limiter.stats().failed_open, 1);
//! # });
//! ```

use crate::FleetEvent;

/// An observer for [`FleetRateLimiter::with_observer`](crate::FleetRateLimiter::with_observer),
/// [`LeasedRateLimiter::spawn_with_observer`](crate::LeasedRateLimiter::spawn_with_observer)
/// and [`FleetRetryBudget::spawn_with_observer`](crate::FleetRetryBudget::spawn_with_observer)
/// that records each event under `limiter = name`.
pub fn observer(name: &'static str) -> impl Fn(&FleetEvent<'_>) + Send + Sync + 'static {
    move |event| record(name, event)
}

/// Records one event under `limiter = name` (for an observer that also does other things).
pub fn record(name: &'static str, event: &FleetEvent<'_>) {
    let decision = |outcome: &'static str| {
        metrics::counter!("resilix_redis_decisions_total", "limiter" => name, "outcome" => outcome)
            .increment(1)
    };
    match event {
        FleetEvent::Decided { admitted: true, .. } => decision("fleet-admitted"),
        FleetEvent::Decided {
            admitted: false, ..
        } => decision("fleet-refused"),
        FleetEvent::FailedOpen => decision("failed-open"),
        FleetEvent::FailedClosed => decision("failed-closed"),
        FleetEvent::FailOpenCapped => decision("fail-open-capped"),
        FleetEvent::BreakerOpen => metrics::counter!(
            "resilix_redis_not_sent_total", "limiter" => name, "why" => "breaker-open"
        )
        .increment(1),
        FleetEvent::InFlightFull => metrics::counter!(
            "resilix_redis_not_sent_total", "limiter" => name, "why" => "in-flight-full"
        )
        .increment(1),
        FleetEvent::Expired => metrics::counter!(
            "resilix_redis_backend_errors_total", "limiter" => name, "kind" => "expired"
        )
        .increment(1),
        FleetEvent::LocalDecision { admitted: true } => decision("local-admitted"),
        FleetEvent::LocalDecision { admitted: false } => decision("local-refused"),
        FleetEvent::BackendError(_) => metrics::counter!(
            "resilix_redis_backend_errors_total", "limiter" => name, "kind" => "error"
        )
        .increment(1),
        FleetEvent::BackendTimeout(_) => metrics::counter!(
            "resilix_redis_backend_errors_total", "limiter" => name, "kind" => "timeout"
        )
        .increment(1),
        FleetEvent::ScriptLoaded => {
            metrics::counter!("resilix_redis_script_loads_total", "limiter" => name).increment(1)
        }
        FleetEvent::LeaseRenewed { cells, .. } => {
            metrics::counter!(
                "resilix_redis_lease_renewals_total", "limiter" => name, "outcome" => "granted"
            )
            .increment(1);
            metrics::counter!(
                "resilix_redis_leased_cells_total", "limiter" => name, "fate" => "granted"
            )
            .increment(u64::from(*cells));
        }
        FleetEvent::LeaseRefused { .. } => metrics::counter!(
            "resilix_redis_lease_renewals_total", "limiter" => name, "outcome" => "refused"
        )
        .increment(1),
        FleetEvent::LeaseExpired { cells } => metrics::counter!(
            "resilix_redis_leased_cells_total", "limiter" => name, "fate" => "expired"
        )
        .increment(u64::from(*cells)),
        FleetEvent::BudgetSettled { .. } => {
            metrics::counter!("resilix_redis_budget_settlements_total", "limiter" => name)
                .increment(1)
        }
    }
}
