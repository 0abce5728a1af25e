//! Counters and the duration histogram in `metrics` (feature `metrics`).
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `resilix_rejections_total` | counter | `upstream`, `reason` (`circuit-open`, `bulkhead-full`, ...) |
//! | `resilix_attempts_total` | counter | `upstream`, `verdict` (`success`, `overload`, ...) |
//! | `resilix_attempt_duration_seconds` | histogram | `upstream` (settled attempts only: shed calls never pollute it) |
//! | `resilix_retries_total` | counter | `upstream` |
//! | `resilix_retry_give_ups_total` | counter | `upstream` |
//! | `resilix_circuit_transitions_total` | counter | `upstream`, `to` |
//! | `resilix_fallbacks_total` | counter | `upstream`, `cause` (`refused`, `gave-up`, `deadline`) |
//!
//! ```
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::Resilience;
//! use resilix_tokio::metrics::MetricsObserver;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let pipeline = Pipeline::new();
//! let resilience = Resilience::new(&pipeline).observer(MetricsObserver::new("inventory"));
//! let out = resilience.execute(CallOptions::default(), || async { Ok::<_, ()>(1) }).await;
//! assert!(out.is_ok());
//! # });
//! ```

use resilix::observe::{CircuitState, Degradation, Event, Observer};

/// Records each event in the `metrics` facade, labelled with the upstream's name.
#[derive(Clone, Copy, Debug)]
pub struct MetricsObserver {
    upstream: &'static str,
}

impl MetricsObserver {
    /// Metrics are labelled `upstream = name`.
    pub const fn new(upstream: &'static str) -> Self {
        MetricsObserver { upstream }
    }
}

fn state_name(s: CircuitState) -> &'static str {
    match s {
        CircuitState::Closed => "closed",
        CircuitState::Open => "open",
        CircuitState::HalfOpen => "half-open",
        CircuitState::ForcedOpen => "forced-open",
        CircuitState::Disabled => "disabled",
    }
}

impl Observer for MetricsObserver {
    fn on_event(&self, event: &Event) {
        let upstream = self.upstream;
        match event {
            Event::Rejected { rejection } => metrics::counter!(
                "resilix_rejections_total",
                "upstream" => upstream,
                "reason" => rejection.reason().code()
            )
            .increment(1),
            Event::Executed { verdict, duration } => {
                metrics::counter!(
                    "resilix_attempts_total",
                    "upstream" => upstream,
                    "verdict" => verdict.kind().as_str()
                )
                .increment(1);
                metrics::histogram!("resilix_attempt_duration_seconds", "upstream" => upstream)
                    .record(duration.as_secs_f64());
            }
            Event::RetryScheduled { .. } => {
                metrics::counter!("resilix_retries_total", "upstream" => upstream).increment(1)
            }
            Event::RetryRefused { .. } => {
                metrics::counter!("resilix_retry_give_ups_total", "upstream" => upstream)
                    .increment(1)
            }
            Event::CircuitTransition { to, .. } => metrics::counter!(
                "resilix_circuit_transitions_total",
                "upstream" => upstream,
                "to" => state_name(*to)
            )
            .increment(1),
            Event::FallbackServed { cause } => {
                let cause = match cause {
                    Degradation::Refused(_) => "refused",
                    Degradation::GaveUp(_) => "gave-up",
                    Degradation::DeadlinePassed => "deadline",
                };
                metrics::counter!(
                    "resilix_fallbacks_total",
                    "upstream" => upstream,
                    "cause" => cause
                )
                .increment(1)
            }
            _ => {}
        }
    }
}
