//! The metrics observer against a recording `metrics` recorder: each event becomes its series,
//! and a limiter failing open against a port nobody listens on counts under `failed-open`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use redis::{ErrorKind, RedisError};
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::{FleetConfig, FleetEvent, FleetRateLimiter};

type Store = Arc<Mutex<BTreeMap<String, u64>>>;

/// Sums counters under "name{label=value,...}".
#[derive(Default)]
struct Recording(Store);

struct Cell(Store, String);

impl CounterFn for Cell {
    fn increment(&self, value: u64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }
    fn absolute(&self, value: u64) {
        self.0.lock().unwrap().insert(self.1.clone(), value);
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
        panic!("the observer records no gauges")
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        panic!("the observer records no histograms")
    }
}

#[test]
fn each_event_becomes_its_series() {
    let recording = Recording::default();
    let store = recording.0.clone();
    let err = RedisError::from((ErrorKind::Io, "connection refused"));
    let events = [
        FleetEvent::Decided {
            admitted: true,
            remaining: 3,
        },
        FleetEvent::Decided {
            admitted: true,
            remaining: 2,
        },
        FleetEvent::Decided {
            admitted: false,
            remaining: 0,
        },
        FleetEvent::FailedOpen,
        FleetEvent::FailedClosed,
        FleetEvent::LocalDecision { admitted: true },
        FleetEvent::LocalDecision { admitted: false },
        FleetEvent::BackendError(&err),
        FleetEvent::BackendTimeout(Duration::from_millis(20)),
        FleetEvent::ScriptLoaded,
        FleetEvent::LeaseRenewed {
            cells: 10,
            period: Duration::from_secs(1),
        },
        FleetEvent::LeaseRefused {
            wait: Duration::from_millis(5),
        },
        FleetEvent::LeaseExpired { cells: 4 },
        FleetEvent::BudgetSettled {
            deposited_milli: 2_000,
            withdrawn_milli: 0,
        },
    ];
    metrics::with_local_recorder(&recording, || {
        let observe = resilix_redis::metrics::observer("api");
        for e in &events {
            observe(e);
        }
    });
    let got = store.lock().unwrap().clone();
    let want: BTreeMap<String, u64> = [
        (
            "resilix_redis_decisions_total{limiter=api,outcome=fleet-admitted}",
            2,
        ),
        (
            "resilix_redis_decisions_total{limiter=api,outcome=fleet-refused}",
            1,
        ),
        (
            "resilix_redis_decisions_total{limiter=api,outcome=failed-open}",
            1,
        ),
        (
            "resilix_redis_decisions_total{limiter=api,outcome=failed-closed}",
            1,
        ),
        (
            "resilix_redis_decisions_total{limiter=api,outcome=local-admitted}",
            1,
        ),
        (
            "resilix_redis_decisions_total{limiter=api,outcome=local-refused}",
            1,
        ),
        (
            "resilix_redis_backend_errors_total{limiter=api,kind=error}",
            1,
        ),
        (
            "resilix_redis_backend_errors_total{limiter=api,kind=timeout}",
            1,
        ),
        ("resilix_redis_script_loads_total{limiter=api}", 1),
        (
            "resilix_redis_lease_renewals_total{limiter=api,outcome=granted}",
            1,
        ),
        (
            "resilix_redis_lease_renewals_total{limiter=api,outcome=refused}",
            1,
        ),
        (
            "resilix_redis_leased_cells_total{limiter=api,fate=granted}",
            10,
        ),
        (
            "resilix_redis_leased_cells_total{limiter=api,fate=expired}",
            4,
        ),
        ("resilix_redis_budget_settlements_total{limiter=api}", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(got, want);
}

/// No Redis at all (port 1): every call fails open, and the series says so, once per call.
#[test]
fn a_limiter_without_redis_counts_failed_open() {
    let recording = Recording::default();
    let store = recording.0.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recording, || {
        rt.block_on(async {
            let config = FleetConfig::new("nowhere", RateLimitConfig::new(Rate::per_second(10)))
                .with_backend_timeout(Duration::from_millis(50));
            let l = FleetRateLimiter::connect("redis://127.0.0.1:1/0", config)
                .unwrap()
                .with_observer(resilix_redis::metrics::observer("nowhere"));
            for _ in 0..3 {
                assert!(l.acquire().await.is_ok());
            }
            assert_eq!(l.stats().failed_open, 3);
        })
    });
    let got = store.lock().unwrap().clone();
    assert_eq!(
        got["resilix_redis_decisions_total{limiter=nowhere,outcome=failed-open}"],
        3
    );
    let errors: u64 = got
        .iter()
        .filter(|(k, _)| k.starts_with("resilix_redis_backend_errors_total"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(errors, 3, "{got:?}");
}
