//! Every event through the OpenTelemetry metrics API (feature `opentelemetry`).
//!
//! OpenTelemetry has no settled convention for resilience yet; the names follow the open
//! proposal (semantic-conventions #2355: `resilience.<policy>.…`) and Polly's meter (one
//! counter of events with `event.name`, `pipeline.name`, `policy.name`; attempt durations in
//! seconds), so dashboards built for Polly carry over with a rename of the prefix:
//!
//! | instrument | kind, unit | attributes | when |
//! |---|---|---|---|
//! | `resilience.events` | counter, `{event}` | `pipeline.name`, `policy.name`, `event.name`, and `reason` (refusals, give-ups), `attempt.outcome` (attempts), `from`/`to`/`cause` (transitions), `cause` (fallbacks, resets) | every event |
//! | `resilience.attempt.duration` | histogram, `s` | `pipeline.name`, `attempt.outcome` | each settled attempt (refused calls never) |
//! | `resilience.retry.delay` | histogram, `s` | `pipeline.name`, `attempt.outcome` (the one retried) | each retry scheduled |
//! | `resilience.circuit_breaker.state` | gauge, `1` | `pipeline.name`; 0 closed, 1 open, 2 half-open, 3 forced open, 4 disabled | each transition, each [`OtelObserver::sample`] |
//! | `resilience.concurrency_limiter.limit`, `….in_flight` | gauge, `{call}` | `pipeline.name` | each change / each sample |
//! | `resilience.bulkhead.in_use` | gauge, `{call}` | `pipeline.name` | each sample |
//! | `resilience.throttler.rejection_probability` | gauge, `1` | `pipeline.name` | each sample |
//! | `resilience.retry_budget.balance` | gauge, `{retry}` | `pipeline.name` | each sample |
//! | `resilience.rate_limiter.available` | gauge, `{cell}` | `pipeline.name` | each sample |
//! | `resilience.attempt.suggested_timeout` | gauge, `s` | `pipeline.name` | each sample of a `DurationHistogram` |
//!
//! `policy.name` is `circuit_breaker`, `concurrency_limiter`, `throttler`, `bulkhead`,
//! `rate_limiter`, `retry`, `retry_budget`, `fallback`, `chaos`, `hedge` or `pipeline` (an
//! attempt); `event.name` is `rejected`, `shadow_rejected`, `attempt`, `retry_scheduled`,
//! `gave_up`, `transition`, `limit_changed`, `fallback`, `chaos_injected`, `hedge_sent`,
//! `hedge_refused`, `hedge_won`, `reset` or `reconfigured`. The guide's operating chapter maps
//! each to its resilience4j, Polly and tower-resilience counterpart.
//!
//! ```
//! use opentelemetry::metrics::MeterProvider as _;
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::Resilience;
//! use resilix_tokio::otel::OtelObserver;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let meter = opentelemetry::global::meter("my-service"); // or your SdkMeterProvider's
//! let observer = OtelObserver::new(&meter, "inventory");
//! let pipeline = Pipeline::new();
//! let resilience = Resilience::new(&pipeline).observer(&observer);
//! let answer = resilience.execute(CallOptions::default(), || async { Ok::<_, ()>(1) }).await;
//! assert_eq!(answer, Ok(1));
//! # });
//! ```

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge as OtelGauge, Histogram, Meter};
use resilix::RejectReason;
use resilix::observe::{Event, Observer, PolicyKind};
use resilix::time::Instant;

use crate::gauges::{Gauge, Gauged, circuit_state_value};

/// Reports every event to OpenTelemetry instruments on one meter, tagged with the pipeline's
/// name (see the [module table](self)).
#[derive(Debug)]
pub struct OtelObserver {
    pipeline: KeyValue,
    events: Counter<u64>,
    attempt_duration: Histogram<f64>,
    retry_delay: Histogram<f64>,
    circuit_state: OtelGauge<f64>,
    limit: OtelGauge<f64>,
    in_flight: OtelGauge<f64>,
    bulkhead_in_use: OtelGauge<f64>,
    throttle: OtelGauge<f64>,
    balance: OtelGauge<f64>,
    available: OtelGauge<f64>,
    suggested: OtelGauge<f64>,
}

/// `policy.name` of the policy a refusal names.
const fn refusing_policy(reason: RejectReason) -> &'static str {
    match reason {
        RejectReason::CircuitOpen => "circuit_breaker",
        RejectReason::LimiterFull => "concurrency_limiter",
        RejectReason::Throttled => "throttler",
        RejectReason::BulkheadFull => "bulkhead",
        RejectReason::RateLimited => "rate_limiter",
        RejectReason::BudgetExceeded => "retry_budget",
    }
}

/// `policy.name` of a policy kind (resets, reconfigurations).
fn policy_name(kind: PolicyKind) -> &'static str {
    match kind.as_str() {
        "limiter" => "concurrency_limiter",
        "rate-limiter" => "rate_limiter",
        "retry-budget" => "retry_budget",
        other => other,
    }
}

impl OtelObserver {
    /// The instruments on `meter`, every measurement tagged `pipeline.name = pipeline`.
    pub fn new(meter: &Meter, pipeline: impl Into<String>) -> Self {
        let gauge = |name: &'static str, unit: &'static str, what: &'static str| {
            meter
                .f64_gauge(name)
                .with_unit(unit)
                .with_description(what)
                .build()
        };
        OtelObserver {
            pipeline: KeyValue::new("pipeline.name", pipeline.into()),
            events: meter
                .u64_counter("resilience.events")
                .with_unit("{event}")
                .with_description("What the resilience policies did, by policy and event")
                .build(),
            attempt_duration: meter
                .f64_histogram("resilience.attempt.duration")
                .with_unit("s")
                .with_description("How long each settled attempt took")
                .build(),
            retry_delay: meter
                .f64_histogram("resilience.retry.delay")
                .with_unit("s")
                .with_description("The wait before each retry")
                .build(),
            circuit_state: gauge(
                "resilience.circuit_breaker.state",
                "1",
                "0 closed, 1 open, 2 half-open, 3 forced open, 4 disabled",
            ),
            limit: gauge(
                "resilience.concurrency_limiter.limit",
                "{call}",
                "The adaptive concurrency limit",
            ),
            in_flight: gauge(
                "resilience.concurrency_limiter.in_flight",
                "{call}",
                "Calls in flight through the adaptive limiter",
            ),
            bulkhead_in_use: gauge(
                "resilience.bulkhead.in_use",
                "{call}",
                "Bulkhead slots held",
            ),
            throttle: gauge(
                "resilience.throttler.rejection_probability",
                "1",
                "The share of calls the throttler sheds now",
            ),
            balance: gauge(
                "resilience.retry_budget.balance",
                "{retry}",
                "Retries the budget would grant now",
            ),
            available: gauge(
                "resilience.rate_limiter.available",
                "{cell}",
                "Cells the rate limiter would admit now",
            ),
            suggested: gauge(
                "resilience.attempt.suggested_timeout",
                "s",
                "The attempt timeout the latency suggests (p99 + 25 %)",
            ),
        }
    }

    /// Records every gauge `policy` has (a policy, a whole pipeline, a shared budget, a
    /// duration histogram) as it reads at `now`. Call it at start, then as often as the
    /// exporter reads (see [`crate::gauges`]).
    pub fn sample<P: Gauged + ?Sized>(&self, policy: &P, now: Instant) {
        policy.gauges(now, &mut |g| self.set(g));
    }

    fn set(&self, gauge: Gauge) {
        let instrument = match gauge {
            Gauge::CircuitState(_) => &self.circuit_state,
            Gauge::ConcurrencyLimit(_) => &self.limit,
            Gauge::LimiterInFlight(_) => &self.in_flight,
            Gauge::BulkheadInUse(_) => &self.bulkhead_in_use,
            Gauge::ThrottleProbability(_) => &self.throttle,
            Gauge::BudgetBalance(_) => &self.balance,
            Gauge::RateLimitAvailable(_) => &self.available,
            Gauge::SuggestedTimeout(_) => &self.suggested,
        };
        instrument.record(gauge.value(), core::slice::from_ref(&self.pipeline));
    }

    fn count(&self, policy: &'static str, event: &'static str, more: &[KeyValue]) {
        let mut attributes = Vec::with_capacity(3 + more.len());
        attributes.push(self.pipeline.clone());
        attributes.push(KeyValue::new("policy.name", policy));
        attributes.push(KeyValue::new("event.name", event));
        attributes.extend_from_slice(more);
        self.events.add(1, &attributes);
    }
}

impl Observer for OtelObserver {
    fn on_event(&self, event: &Event) {
        match event {
            Event::Rejected { rejection } => {
                let reason = rejection.reason();
                self.count(
                    refusing_policy(reason),
                    "rejected",
                    &[KeyValue::new("reason", reason.code())],
                );
            }
            Event::ShadowRejected { rejection } => {
                let reason = rejection.reason();
                self.count(
                    refusing_policy(reason),
                    "shadow_rejected",
                    &[KeyValue::new("reason", reason.code())],
                );
            }
            Event::Executed { verdict, duration } => {
                let outcome = KeyValue::new("attempt.outcome", verdict.kind().as_str());
                self.count("pipeline", "attempt", core::slice::from_ref(&outcome));
                self.attempt_duration
                    .record(duration.as_secs_f64(), &[self.pipeline.clone(), outcome]);
            }
            Event::RetryScheduled { delay, after, .. } => {
                let outcome = KeyValue::new("attempt.outcome", after.kind().as_str());
                self.count("retry", "retry_scheduled", core::slice::from_ref(&outcome));
                self.retry_delay
                    .record(delay.as_secs_f64(), &[self.pipeline.clone(), outcome]);
            }
            Event::RetryRefused { reason, after } => self.count(
                "retry",
                "gave_up",
                &[
                    KeyValue::new("reason", reason.as_str()),
                    KeyValue::new("attempt.outcome", after.kind().as_str()),
                ],
            ),
            Event::CircuitTransition {
                from, to, cause, ..
            } => {
                let state = |s| crate::gauges::circuit_state_name(s);
                self.count(
                    "circuit_breaker",
                    "transition",
                    &[
                        KeyValue::new("from", state(*from)),
                        KeyValue::new("to", state(*to)),
                        KeyValue::new("cause", cause.as_str()),
                    ],
                );
                self.circuit_state.record(
                    circuit_state_value(*to),
                    core::slice::from_ref(&self.pipeline),
                );
            }
            Event::LimitChanged { to, .. } => {
                self.count("concurrency_limiter", "limit_changed", &[]);
                self.limit
                    .record(f64::from(*to), core::slice::from_ref(&self.pipeline));
            }
            Event::FallbackServed { cause } => {
                let (cause, reason) = cause.codes();
                self.count(
                    "fallback",
                    "fallback",
                    &[
                        KeyValue::new("cause", cause),
                        KeyValue::new("reason", reason),
                    ],
                );
            }
            Event::ChaosInjected { .. } => self.count("chaos", "chaos_injected", &[]),
            Event::HedgeSent { .. } => self.count("hedge", "hedge_sent", &[]),
            Event::HedgeRefused { .. } => self.count("hedge", "hedge_refused", &[]),
            Event::HedgeWon { .. } => self.count("hedge", "hedge_won", &[]),
            Event::PolicyReset { policy, .. } => self.count(policy_name(*policy), "reset", &[]),
            Event::PolicyReconfigured { policy, .. } => {
                self.count(policy_name(*policy), "reconfigured", &[])
            }
            _ => self.count("pipeline", "other", &[]),
        }
    }
}
