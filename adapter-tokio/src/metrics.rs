//! Counters, gauges and the duration histogram in `metrics` (feature `metrics`).
//!
//! Every label value is a stable code from the core, so a dashboard written today keeps
//! working: rejection reasons are [`RejectReason::code`](resilix::RejectReason::code) (docs/design/spec.md §7),
//! verdicts [`VerdictKind::as_str`](resilix::VerdictKind::as_str), give-up reasons
//! [`GiveUpReason::as_str`](resilix::retry::GiveUpReason::as_str). Nothing an event carries is dropped on the way to a label: a retry
//! budget's refusal (`budget-exceeded`) and a call out of attempts (`attempts-exhausted`) are
//! two series, not one (docs/design/spec.md §7: "collapsing those makes a retry budget impossible to debug").
//!
//! | metric | kind | labels | when |
//! |---|---|---|---|
//! | `resilix_rejections_total` | counter | `upstream`, `reason`: `throttled`, `circuit-open`, `limiter-full`, `bulkhead-full`, `rate-limited`, `budget-exceeded` | each refusal |
//! | `resilix_shadow_rejections_total` | counter | `upstream`, `reason` (as above) | each call a policy in shadow mode would have refused and let through (`resilix::shadow`) |
//! | `resilix_attempts_total` | counter | `upstream`, `verdict`: `success`, `answered`, `overload`, `transient`, `uncertain`, `timeout`, `rejected` | each settled attempt |
//! | `resilix_attempt_duration_seconds` | histogram | `upstream` (settled attempts only: shed calls never pollute it) | each settled attempt |
//! | `resilix_retries_total` | counter | `upstream`, `after` (the verdict that is retried, as `verdict` above) | each retry scheduled |
//! | `resilix_retry_give_ups_total` | counter | `upstream`, `reason`: `not-retryable`, `attempts-exhausted`, `budget-exceeded`, `deadline-would-pass`, `retry-after-beyond-deadline`, `retry-after-too-long`; `after` (the last attempt's verdict) | each call that gives up |
//! | `resilix_circuit_transitions_total` | counter | `upstream`, `from`, `to`: `closed`, `open`, `half-open`, `forced-open`, `disabled`; `cause`: `failure-rate`, `slow-call-rate`, `consecutive-failures`, `wait-elapsed`, `probes-succeeded`, `probes-failed`, `operator` | each transition |
//! | `resilix_fallbacks_total` | counter | `upstream`, `cause`: `refused`, `gave-up`, `deadline`; `reason`: the rejection's reason code, the give-up reason, or `deadline-passed` | each fallback served |
//! | `resilix_policy_resets_total` | counter | `upstream`, `policy`: `limiter`, `throttler`, `retry-budget`, `rate-limiter` | each operator reset (a breaker's is a transition with cause `operator`) |
//! | `resilix_circuit_state` | gauge | `upstream`; value 0 closed, 1 open, 2 half-open, 3 forced open, 4 disabled | each transition, and each `sample` |
//! | `resilix_concurrency_limit` | gauge | `upstream`; the adaptive limit in whole calls | each change, and each `sample` |
//! | `resilix_limiter_in_flight` | gauge | `upstream`; calls the limiter admitted and has not seen end | each `sample` |
//! | `resilix_bulkhead_in_use` | gauge | `upstream`; bulkhead slots held | each `sample` |
//! | `resilix_throttle_probability` | gauge | `upstream`; the throttler's shed probability, 0 to its cap | each `sample` |
//! | `resilix_retry_budget_balance` | gauge | `upstream`; tokens in a token bucket, retries left in a ratio budget's window | each `sample` |
//! | `resilix_rate_limit_available` | gauge | `upstream`; whole cells the rate limiter could admit now | each `sample` |
//! | `resilix_suggested_attempt_timeout_seconds` | gauge | `upstream`; the p99 of settled attempts plus 25 % ([`TimeoutAdvice`](resilix::observe::TimeoutAdvice)), once 100 are recorded | each `sample` of the upstream's `DurationHistogram` |
//!
//! Gauges that change at every call are read by [`MetricsObserver::sample`], not per call
//! (see [`crate::gauges`] for why): call it once at start, so a dashboard has every initial
//! value (a breaker's `closed` included: failsafe-go #46), then on a timer
//! ([`MetricsObserver::sample_every`]) or at each scrape.
//!
//! The give-up `reason` list is [`GiveUpReason::as_str`](resilix::retry::GiveUpReason::as_str)'s: a reason added there appears here
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

use std::sync::Arc;
use std::time::Duration;

use resilix::observe::{Degradation, Event, Observer};
use resilix::time::Instant;

use crate::gauges::{Gauge, Gauged, circuit_state_value};

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

    /// Sets every gauge `policy` has (a policy, a whole pipeline, a shared budget) to its
    /// value at `now`. Call it once at start, so each gauge has an initial value, then as
    /// often as the dashboard needs.
    ///
    /// ```
    /// use resilix::breaker::Breaker;
    /// use resilix::bulkhead::Bulkhead;
    /// use resilix::pipeline::Pipeline;
    /// use resilix_tokio::metrics::MetricsObserver;
    ///
    /// let pipeline = Pipeline::new().breaker(Breaker::default()).bulkhead(Bulkhead::default());
    /// let observer = MetricsObserver::new("inventory");
    /// // resilix_circuit_state{upstream="inventory"} = 0, resilix_bulkhead_in_use = 0
    /// observer.sample(&pipeline, resilix_tokio::now());
    /// ```
    pub fn sample<P: Gauged + ?Sized>(&self, policy: &P, now: Instant) {
        policy.gauges(now, &mut |g| self.set(g));
    }

    /// Samples `policy` at once, then every `period`, for ever: spawn it on the runtime
    /// (`tokio::spawn(observer.sample_every(pipeline.clone(), period))`) and abort the task to
    /// stop. Missed ticks are skipped, not bunched.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use resilix::breaker::Breaker;
    /// use resilix_tokio::metrics::MetricsObserver;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let breaker = Arc::new(Breaker::default());
    /// let sampler = tokio::spawn(MetricsObserver::new("inventory").sample_every(breaker, Duration::from_secs(10)));
    /// sampler.abort();
    /// # });
    /// ```
    pub async fn sample_every<P: Gauged + ?Sized>(self, policy: Arc<P>, period: Duration) {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            ticks.tick().await;
            self.sample(&*policy, crate::now());
        }
    }

    fn set(&self, gauge: Gauge) {
        metrics::gauge!(gauge.name(), "upstream" => self.upstream).set(gauge.value());
    }
}

use crate::gauges::circuit_state_name as state_name;

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
            Event::ShadowRejected { rejection } => metrics::counter!(
                "resilix_shadow_rejections_total",
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
            } => {
                metrics::counter!(
                    "resilix_circuit_transitions_total",
                    "upstream" => upstream,
                    "from" => state_name(*from),
                    "to" => state_name(*to),
                    "cause" => cause.as_str()
                )
                .increment(1);
                metrics::gauge!("resilix_circuit_state", "upstream" => upstream)
                    .set(circuit_state_value(*to));
            }
            Event::LimitChanged { to, .. } => self.set(Gauge::ConcurrencyLimit(*to)),
            Event::PolicyReset { policy, .. } => metrics::counter!(
                "resilix_policy_resets_total",
                "upstream" => upstream,
                "policy" => policy.as_str()
            )
            .increment(1),
            Event::PolicyReconfigured { policy, .. } => metrics::counter!(
                "resilix_policy_reconfigurations_total",
                "upstream" => upstream,
                "policy" => policy.as_str()
            )
            .increment(1),
            Event::FallbackServed { cause } => {
                let (cause, reason) = Degradation::codes(cause);
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
