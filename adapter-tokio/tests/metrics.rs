//! The metrics observer against a recording `metrics` recorder: what each event becomes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use resilix::observe::{CircuitState, Degradation, Event, Observer, TransitionCause};
use resilix::retry::GiveUpReason;
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, Verdict, VerdictKind};
use resilix_tokio::metrics::MetricsObserver;

type Store = Arc<Mutex<BTreeMap<String, f64>>>;

/// Records counters (summed), gauges (last value) and histograms (count and sum) under
/// "name{label=value,...}".
#[derive(Default)]
struct Recording(Store);

struct Cell(Store, String);

impl CounterFn for Cell {
    fn increment(&self, value: u64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() += value as f64;
    }
    fn absolute(&self, value: u64) {
        self.0.lock().unwrap().insert(self.1.clone(), value as f64);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, value: f64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }
    fn decrement(&self, value: f64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() -= value;
    }
    fn set(&self, value: f64) {
        self.0.lock().unwrap().insert(self.1.clone(), value);
    }
}

impl HistogramFn for Cell {
    fn record(&self, value: f64) {
        let mut m = self.0.lock().unwrap();
        *m.entry(format!("{}#count", self.1)).or_default() += 1.0;
        *m.entry(format!("{}#sum", self.1)).or_default() += value;
    }
}

fn name(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Cell(self.0.clone(), name(key))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Cell(self.0.clone(), name(key))))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Cell(self.0.clone(), name(key))))
    }
}

#[test]
fn each_event_becomes_its_metric() {
    let recording = Recording::default();
    let observer = MetricsObserver::new("inventory");
    let rejection = Rejection::new(RejectReason::CircuitOpen);
    metrics::with_local_recorder(&recording, || {
        observer.on_event(&Event::Rejected { rejection });
        observer.on_event(&Event::Rejected { rejection });
        observer.on_event(&Event::Rejected {
            rejection: Rejection::new(RejectReason::BulkheadFull),
        });
        observer.on_event(&Event::Executed {
            verdict: Verdict::Success,
            duration: Duration::from_millis(250),
        });
        observer.on_event(&Event::Executed {
            verdict: Verdict::Overload { retry_after: None },
            duration: Duration::from_millis(750),
        });
        observer.on_event(&Event::RetryScheduled {
            attempt: 2,
            delay: Duration::from_millis(10),
            after: Verdict::Transient,
        });
        observer.on_event(&Event::RetryRefused {
            reason: GiveUpReason::BudgetExceeded,
            after: Verdict::Transient,
        });
        observer.on_event(&Event::CircuitTransition {
            from: CircuitState::Closed,
            to: CircuitState::Open,
            cause: TransitionCause::FailureRate,
            at: Instant::ZERO,
        });
        observer.on_event(&Event::FallbackServed {
            cause: Degradation::Refused(rejection),
        });
    });
    let m = recording.0.lock().unwrap().clone();
    let get = |k: &str| {
        m.get(k)
            .copied()
            .unwrap_or_else(|| panic!("no {k} in {m:?}"))
    };
    assert_eq!(
        get("resilix_rejections_total{upstream=inventory,reason=circuit-open}"),
        2.0
    );
    assert_eq!(
        get("resilix_rejections_total{upstream=inventory,reason=bulkhead-full}"),
        1.0
    );
    assert_eq!(
        get("resilix_attempts_total{upstream=inventory,verdict=success}"),
        1.0
    );
    assert_eq!(
        get("resilix_attempts_total{upstream=inventory,verdict=overload}"),
        1.0
    );
    // Only executed attempts reach the duration histogram: 2 of them, 1 s in all.
    assert_eq!(
        get("resilix_attempt_duration_seconds{upstream=inventory}#count"),
        2.0
    );
    assert_eq!(
        get("resilix_attempt_duration_seconds{upstream=inventory}#sum"),
        1.0
    );
    assert_eq!(
        get("resilix_retries_total{upstream=inventory,after=transient}"),
        1.0
    );
    assert_eq!(
        get(
            "resilix_retry_give_ups_total{upstream=inventory,reason=budget-exceeded,after=transient}"
        ),
        1.0
    );
    assert_eq!(
        get(
            "resilix_circuit_transitions_total{upstream=inventory,from=closed,to=open,cause=failure-rate}"
        ),
        1.0
    );
    assert_eq!(
        get("resilix_fallbacks_total{upstream=inventory,cause=refused,reason=circuit-open}"),
        1.0
    );
}

/// Records `events` through a fresh observer and recorder; answers what was recorded.
fn record(events: &[Event]) -> BTreeMap<String, f64> {
    let recording = Recording::default();
    let observer = MetricsObserver::new("inventory");
    metrics::with_local_recorder(&recording, || {
        for e in events {
            observer.on_event(e);
        }
    });
    recording.0.lock().unwrap().clone()
}

/// Spec §7: "Retry must distinguish 'the call failed and we will not retry it' from 'we would
/// have retried but the budget said no'". On the base commit every give-up went to one
/// unlabelled series, so these five reasons were one number.
#[test]
fn give_ups_are_counted_per_reason() {
    let reasons = [
        (
            GiveUpReason::NotRetryable(VerdictKind::Answered),
            "not-retryable",
        ),
        (
            GiveUpReason::AttemptsExhausted { attempts: 3 },
            "attempts-exhausted",
        ),
        (GiveUpReason::BudgetExceeded, "budget-exceeded"),
        (GiveUpReason::DeadlineWouldPass, "deadline-would-pass"),
        (
            GiveUpReason::RetryAfterBeyondDeadline,
            "retry-after-beyond-deadline",
        ),
    ];
    // Reason i gives up i + 1 times, so a collapsed or swapped label cannot go unnoticed.
    let mut events = Vec::new();
    for (i, (reason, _)) in reasons.iter().enumerate() {
        for _ in 0..=i {
            events.push(Event::RetryRefused {
                reason: *reason,
                after: Verdict::Transient,
            });
        }
    }
    let m = record(&events);
    for (i, (reason, code)) in reasons.iter().enumerate() {
        assert_eq!(reason.as_str(), *code);
        let key = format!(
            "resilix_retry_give_ups_total{{upstream=inventory,reason={code},after=transient}}"
        );
        assert_eq!(m.get(&key), Some(&((i + 1) as f64)), "{key} in {m:?}");
    }
    assert_eq!(m.len(), reasons.len(), "one series per reason: {m:?}");
}

/// Budget-exceeded and attempts-exhausted after the same verdict: two series, and the verdict
/// that ended the call is kept too.
#[test]
fn budget_refusal_and_exhaustion_are_two_series() {
    let m = record(&[
        Event::RetryRefused {
            reason: GiveUpReason::BudgetExceeded,
            after: Verdict::Overload { retry_after: None },
        },
        Event::RetryRefused {
            reason: GiveUpReason::AttemptsExhausted { attempts: 3 },
            after: Verdict::Overload { retry_after: None },
        },
        Event::RetryRefused {
            reason: GiveUpReason::AttemptsExhausted { attempts: 3 },
            after: Verdict::Timeout,
        },
    ]);
    let expected: BTreeMap<String, f64> = [
        (
            "resilix_retry_give_ups_total{upstream=inventory,reason=budget-exceeded,after=overload}",
            1.0,
        ),
        (
            "resilix_retry_give_ups_total{upstream=inventory,reason=attempts-exhausted,after=overload}",
            1.0,
        ),
        (
            "resilix_retry_give_ups_total{upstream=inventory,reason=attempts-exhausted,after=timeout}",
            1.0,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(m, expected);
}

/// Every rejection reason and every verdict kind has its own series.
#[test]
fn every_rejection_reason_and_verdict_has_its_series() {
    let mut events = Vec::new();
    for r in RejectReason::ALL {
        events.push(Event::Rejected {
            rejection: Rejection::new(r),
        });
    }
    let verdicts = [
        Verdict::Success,
        Verdict::Answered,
        Verdict::Overload { retry_after: None },
        Verdict::Transient,
        Verdict::Uncertain,
        Verdict::Timeout,
        Verdict::Rejected(RejectReason::RateLimited),
    ];
    for v in verdicts {
        events.push(Event::Executed {
            verdict: v,
            duration: Duration::from_millis(1),
        });
    }
    let m = record(&events);
    for r in RejectReason::ALL {
        let key = format!(
            "resilix_rejections_total{{upstream=inventory,reason={}}}",
            r.code()
        );
        assert_eq!(m.get(&key), Some(&1.0), "{key} in {m:?}");
    }
    for k in VerdictKind::ALL {
        let key = format!(
            "resilix_attempts_total{{upstream=inventory,verdict={}}}",
            k.as_str()
        );
        assert_eq!(m.get(&key), Some(&1.0), "{key} in {m:?}");
    }
}

/// Fallbacks keep the precise reason beside the cause; transitions keep where they came from
/// and why; the adaptive limit is a gauge holding its last value.
#[test]
fn fallbacks_transitions_and_limit_keep_their_detail() {
    let m = record(&[
        Event::FallbackServed {
            cause: Degradation::Refused(Rejection::new(RejectReason::BulkheadFull)),
        },
        Event::FallbackServed {
            cause: Degradation::GaveUp(GiveUpReason::BudgetExceeded),
        },
        Event::FallbackServed {
            cause: Degradation::GaveUp(GiveUpReason::AttemptsExhausted { attempts: 2 }),
        },
        Event::FallbackServed {
            cause: Degradation::DeadlinePassed,
        },
        Event::CircuitTransition {
            from: CircuitState::Open,
            to: CircuitState::HalfOpen,
            cause: TransitionCause::WaitElapsed,
            at: Instant::from_secs(5),
        },
        Event::CircuitTransition {
            from: CircuitState::HalfOpen,
            to: CircuitState::Open,
            cause: TransitionCause::ProbesFailed,
            at: Instant::from_secs(6),
        },
        Event::LimitChanged { from: 20, to: 30 },
        Event::LimitChanged { from: 30, to: 27 },
    ]);
    for key in [
        "resilix_fallbacks_total{upstream=inventory,cause=refused,reason=bulkhead-full}",
        "resilix_fallbacks_total{upstream=inventory,cause=gave-up,reason=budget-exceeded}",
        "resilix_fallbacks_total{upstream=inventory,cause=gave-up,reason=attempts-exhausted}",
        "resilix_fallbacks_total{upstream=inventory,cause=deadline,reason=deadline-passed}",
        "resilix_circuit_transitions_total{upstream=inventory,from=open,to=half-open,cause=wait-elapsed}",
        "resilix_circuit_transitions_total{upstream=inventory,from=half-open,to=open,cause=probes-failed}",
    ] {
        assert_eq!(m.get(key), Some(&1.0), "{key} in {m:?}");
    }
    assert_eq!(
        m.get("resilix_concurrency_limit{upstream=inventory}"),
        Some(&27.0)
    );
    assert_eq!(
        m.get("resilix_circuit_state{upstream=inventory}"),
        Some(&1.0),
        "every transition sets the state gauge: open, last"
    );
    assert_eq!(m.len(), 8, "{m:?}");
}

/// A policy in shadow mode: the call went through, so it is no refusal; what it would have
/// refused is its own series, by reason.
#[test]
fn a_shadow_refusal_is_its_own_series() {
    use resilix::{RejectReason, Rejection};
    let m = record(&[
        Event::ShadowRejected {
            rejection: Rejection::new(RejectReason::CircuitOpen),
        },
        Event::ShadowRejected {
            rejection: Rejection::new(RejectReason::CircuitOpen),
        },
    ]);
    assert_eq!(
        m.get("resilix_shadow_rejections_total{upstream=inventory,reason=circuit-open}"),
        Some(&2.0),
        "{m:?}"
    );
    assert!(
        !m.keys().any(|k| k.starts_with("resilix_rejections_total")),
        "not a refusal: {m:?}"
    );
}
