//! The metrics observer against a recording `metrics` recorder: what each event becomes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use resilix::observe::{CircuitState, Degradation, Event, Observer, TransitionCause};
use resilix::retry::GiveUpReason;
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, Verdict};
use resilix_tokio::metrics::MetricsObserver;

type Store = Arc<Mutex<BTreeMap<String, f64>>>;

/// Records counters (summed) and histograms (count and sum) under "name{label=value,...}".
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
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
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
    assert_eq!(get("resilix_retries_total{upstream=inventory}"), 1.0);
    assert_eq!(get("resilix_retry_give_ups_total{upstream=inventory}"), 1.0);
    assert_eq!(
        get("resilix_circuit_transitions_total{upstream=inventory,to=open}"),
        1.0
    );
    assert_eq!(
        get("resilix_fallbacks_total{upstream=inventory,cause=refused}"),
        1.0
    );
}
