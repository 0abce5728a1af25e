//! Counters, a gauge and the duration histogram in `metrics` (feature `metrics`).
//!
//! Every label value is a stable code from the core, so a dashboard written today keeps
//! working: rejection reasons are [`RejectReason::code`](resilix::RejectReason::code) (spec §7),
//! verdicts [`VerdictKind::as_str`](resilix::VerdictKind::as_str), give-up reasons
//! [`GiveUpReason::as_str`]. Nothing an event carries is dropped on the way to a label: a retry
//! budget's refusal (`budget-exceeded`) and a call out of attempts (`attempts-exhausted`) are
//! two series, not one (spec §7: "collapsing those makes a retry budget impossible to debug").
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `resilix_rejections_total` | counter | `upstream`, `reason`: `throttled`, `circuit-open`, `limiter-full`, `bulkhead-full`, `rate-limited`, `budget-exceeded` |
//! | `resilix_attempts_total` | counter | `upstream`, `verdict`: `success`, `answered`, `overload`, `transient`, `timeout`, `rejected` |
//! | `resilix_attempt_duration_seconds` | histogram | `upstream` (settled attempts only: shed calls never pollute it) |
//! | `resilix_retries_total` | counter | `upstream`, `after` (the verdict that is retried, as `verdict` above) |
//! | `resilix_retry_give_ups_total` | counter | `upstream`, `reason`: `not-retryable`, `attempts-exhausted`, `budget-exceeded`, `deadline-would-pass`, `retry-after-beyond-deadline`, `retry-after-too-long`; `after` (the last attempt's verdict) |
//! | `resilix_circuit_transitions_total` | counter | `upstream`, `from`, `to`: `closed`, `open`, `half-open`, `forced-open`, `disabled`; `cause`: `failure-rate`, `slow-call-rate`, `consecutive-failures`, `wait-elapsed`, `probes-succeeded`, `probes-failed`, `operator` |
//! | `resilix_concurrency_limit` | gauge | `upstream` (the adaptive limiter's concurrency limit, set at every change) |
//! | `resilix_fallbacks_total` | counter | `upstream`, `cause`: `refused`, `gave-up`, `deadline`; `reason`: the rejection's reason code, the give-up reason, or `deadline-passed` |
//!
//! The give-up `reason` list is [`GiveUpReason::as_str`]'s: a reason added there appears here
//! with no change to this observer.
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

use resilix::observe::{CircuitState, Degradation, Event, Observer, TransitionCause};
use resilix::retry::GiveUpReason;

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

// No wildcard arms below: a state or cause added in the core fails to compile here until it
// has its label, so no event is ever counted under a wrong or missing one.
fn state_name(s: CircuitState) -> &'static str {
    match s {
        CircuitState::Closed => "closed",
        CircuitState::Open => "open",
        CircuitState::HalfOpen => "half-open",
        CircuitState::ForcedOpen => "forced-open",
        CircuitState::Disabled => "disabled",
    }
}

fn cause_name(c: TransitionCause) -> &'static str {
    match c {
        TransitionCause::FailureRate => "failure-rate",
        TransitionCause::SlowCallRate => "slow-call-rate",
        TransitionCause::ConsecutiveFailures => "consecutive-failures",
        TransitionCause::WaitElapsed => "wait-elapsed",
        TransitionCause::ProbesSucceeded => "probes-succeeded",
        TransitionCause::ProbesFailed => "probes-failed",
        TransitionCause::Operator => "operator",
    }
}

/// The `cause` and `reason` labels of a fallback: why the upstream's answer was missing, and
/// the precise reason within that cause.
fn degradation_labels(d: &Degradation) -> (&'static str, &'static str) {
    match d {
        Degradation::Refused(rejection) => ("refused", rejection.reason().code()),
        Degradation::GaveUp(reason) => ("gave-up", GiveUpReason::as_str(reason)),
        Degradation::DeadlinePassed => ("deadline", "deadline-passed"),
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
            Event::RetryScheduled { after, .. } => metrics::counter!(
                "resilix_retries_total",
                "upstream" => upstream,
                "after" => after.kind().as_str()
            )
            .increment(1),
            Event::RetryRefused { reason, after } => metrics::counter!(
                "resilix_retry_give_ups_total",
                "upstream" => upstream,
                "reason" => reason.as_str(),
                "after" => after.kind().as_str()
            )
            .increment(1),
            Event::CircuitTransition {
                from, to, cause, ..
            } => metrics::counter!(
                "resilix_circuit_transitions_total",
                "upstream" => upstream,
                "from" => state_name(*from),
                "to" => state_name(*to),
                "cause" => cause_name(*cause)
            )
            .increment(1),
            Event::LimitChanged { to, .. } => {
                metrics::gauge!("resilix_concurrency_limit", "upstream" => upstream)
                    .set(f64::from(*to))
            }
            Event::FallbackServed { cause } => {
                let (cause, reason) = degradation_labels(cause);
                metrics::counter!(
                    "resilix_fallbacks_total",
                    "upstream" => upstream,
                    "cause" => cause,
                    "reason" => reason
                )
                .increment(1)
            }
            // `Event` is non-exhaustive: an event added in the core is not a metric until it
            // is given one here.
            _ => {}
        }
    }
}
