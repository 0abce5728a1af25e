//! Every event as a `tracing` event, and a span per call (feature `tracing`).
//!
//! Refusals and fallbacks are `warn` (someone was turned away or got a degraded answer),
//! breaker transitions `info`, retries and executions `debug`.
//!
//! ```
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::Resilience;
//! use resilix_tokio::tracing::{call_span, TracingObserver};
//! use tracing::Instrument;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let pipeline = Pipeline::new();
//! let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("inventory"));
//! let out = resilience
//!     .execute(CallOptions::default(), || async { Ok::<_, ()>(1) })
//!     .instrument(call_span("inventory"))
//!     .await;
//! assert!(out.is_ok());
//! # });
//! ```

use resilix::observe::{Event, Observer};
use resilix::time::Instant;

use crate::gauges::{Gauge, Gauged};

/// Reports each event to `tracing`, tagged with the upstream's name.
#[derive(Clone, Copy, Debug)]
pub struct TracingObserver {
    upstream: &'static str,
}

impl TracingObserver {
    /// Events are tagged `upstream = name`.
    pub const fn new(upstream: &'static str) -> Self {
        TracingObserver { upstream }
    }

    /// Reports every gauge `policy` has (a policy, a whole pipeline, a shared budget) as it
    /// reads at `now`: one `info` event per gauge with target `resilix::gauge`, fields
    /// `upstream`, `gauge` (the metric name in [`crate::metrics`]) and `value`. Call it at
    /// start for the initial values, then as often as the logs need (see [`crate::gauges`]).
    ///
    /// ```
    /// use resilix::breaker::Breaker;
    /// use resilix_tokio::tracing::TracingObserver;
    ///
    /// let breaker = Breaker::default();
    /// // resilix::gauge: upstream="inventory" gauge="resilix_circuit_state" value=0.0
    /// TracingObserver::new("inventory").sample(&breaker, resilix_tokio::now());
    /// ```
    pub fn sample<P: Gauged + ?Sized>(&self, policy: &P, now: Instant) {
        let upstream = self.upstream;
        policy.gauges(now, &mut |g: Gauge| {
            tracing::info!(
                target: "resilix::gauge",
                upstream,
                gauge = g.name(),
                value = g.value(),
                "gauge"
            )
        });
    }
}

/// A span for one call to `upstream`: instrument the `execute` future with it so the
/// policies' events nest under the call.
pub fn call_span(upstream: &'static str) -> tracing::Span {
    tracing::info_span!("resilix.call", upstream)
}

impl Observer for TracingObserver {
    fn on_event(&self, event: &Event) {
        let upstream = self.upstream;
        match event {
            Event::Rejected { rejection } => tracing::warn!(
                upstream,
                reason = rejection.reason().code(),
                retry_at = ?rejection.retry_at(),
                "refused: {}",
                rejection.reason()
            ),
            Event::Executed { verdict, duration } => tracing::debug!(
                upstream,
                verdict = verdict.kind().as_str(),
                duration_us = duration.as_micros() as u64,
                "attempt settled"
            ),
            Event::CircuitTransition {
                from,
                to,
                cause,
                at,
            } => tracing::info!(
                upstream,
                ?from,
                ?to,
                ?cause,
                ?at,
                "circuit breaker transition"
            ),
            Event::LimitChanged { from, to } => {
                tracing::debug!(upstream, from, to, "concurrency limit changed")
            }
            Event::RetryScheduled {
                attempt,
                delay,
                after,
            } => tracing::debug!(
                upstream,
                attempt,
                delay_us = delay.as_micros() as u64,
                after = after.kind().as_str(),
                "retry scheduled"
            ),
            Event::RetryRefused { reason, after } => tracing::info!(
                upstream,
                after = after.kind().as_str(),
                "not retried: {reason}"
            ),
            Event::PolicyReset { policy, at } => tracing::info!(
                upstream,
                policy = policy.as_str(),
                ?at,
                "policy reset by the operator"
            ),
            Event::PolicyReconfigured { policy, at } => tracing::info!(
                upstream,
                policy = policy.as_str(),
                ?at,
                "policy reconfigured in place"
            ),
            Event::FallbackServed { cause } => {
                tracing::warn!(upstream, ?cause, "degraded: the fallback answered")
            }
            other => tracing::debug!(upstream, event = ?other, "resilix event"),
        }
    }
}
