//! The gauges against a real `metrics` recorder (metrics-util's debugging recorder): names,
//! labels and values, the initial sample, the on-change updates and the sampling task.
//!
//! The sleeps run on paused tokio time: exact, whatever the machine's load.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use resilix::breaker::{Breaker, Config};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::Limiter;
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RatioBudget, RetryBudget, TokenBucket};
use resilix::throttler::Throttler;
use resilix::time::Instant;
use resilix::{Verdict, VerdictKind};
use resilix_tokio::metrics::MetricsObserver;

/// "name{label=value,...}" → value, for every counter and gauge recorded.
fn values(snapshotter: &Snapshotter) -> BTreeMap<String, f64> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let key = key.key();
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let name = format!("{}{{{}}}", key.name(), labels.join(","));
            match value {
                DebugValue::Gauge(v) => Some((name, v.into_inner())),
                DebugValue::Counter(n) => Some((name, n as f64)),
                DebugValue::Histogram(_) => None,
            }
        })
        .collect()
}

fn recorded<T>(f: impl FnOnce() -> T) -> (T, BTreeMap<String, f64>) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let out = metrics::with_local_recorder(&recorder, f);
    (out, values(&snapshotter))
}

#[test]
fn the_first_sample_gives_every_gauge_of_a_pipeline_its_initial_value() {
    let pipeline = Pipeline::new()
        .throttler(Throttler::with_defaults())
        .breaker(Breaker::default())
        .limiter(Limiter::default())
        .bulkhead(Bulkhead::default())
        .rate_limit(RateLimiter::new(RateLimitConfig::new(Rate::per_second(50))).unwrap());
    let budget = TokenBucket::aws_sdk_standard();
    let ((), got) = recorded(|| {
        let observer = MetricsObserver::new("inventory");
        observer.sample(&pipeline, Instant::from_secs(1));
        observer.sample(&budget, Instant::from_secs(1));
    });
    let want: BTreeMap<String, f64> = [
        ("resilix_throttle_probability{upstream=inventory}", 0.0),
        ("resilix_circuit_state{upstream=inventory}", 0.0),
        ("resilix_concurrency_limit{upstream=inventory}", 20.0),
        ("resilix_limiter_in_flight{upstream=inventory}", 0.0),
        ("resilix_bulkhead_in_use{upstream=inventory}", 0.0),
        ("resilix_rate_limit_available{upstream=inventory}", 50.0),
        ("resilix_retry_budget_balance{upstream=inventory}", 500.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(got, want, "a closed breaker is reported before any event");
}

#[test]
fn a_sample_reads_what_is_held_now() {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(5).unwrap());
    let limiter = Limiter::default();
    let throttler = Throttler::with_defaults();
    let ratio = RatioBudget::with_defaults();
    let now = Instant::from_secs(10);
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(now, &mut rng);
    let a = bulkhead.admit(&mut env).unwrap();
    let b = bulkhead.admit(&mut env).unwrap();
    let c = limiter.admit(&mut env).unwrap();
    for _ in 0..40 {
        if let Ok(p) = throttler.admit(&mut env) {
            p.settle(&Verdict::Transient, &mut env);
        }
    }
    for _ in 0..100 {
        ratio.record_first_attempt(now);
    }
    assert!(ratio.try_spend(now, VerdictKind::Transient));
    let ((), got) = recorded(|| {
        let observer = MetricsObserver::new("db");
        observer.sample(&bulkhead, now);
        observer.sample(&limiter, now);
        observer.sample(&throttler, now);
        observer.sample(&ratio, now);
    });
    assert_eq!(got["resilix_bulkhead_in_use{upstream=db}"], 2.0);
    assert_eq!(got["resilix_limiter_in_flight{upstream=db}"], 1.0);
    let p = got["resilix_throttle_probability{upstream=db}"];
    assert_eq!(p, throttler.rejection_probability(now).as_f64());
    assert!(p > 0.5, "{p}");
    // 100 first attempts allow 10 retries; one is spent.
    assert_eq!(got["resilix_retry_budget_balance{upstream=db}"], 9.0);
    drop((a, b, c));
}

#[test]
fn every_transition_sets_the_state_gauge_without_a_sample() {
    let config = Config {
        minimum_calls: 2,
        ..Config::DEFAULT
    };
    let breaker = Breaker::new(config).unwrap();
    let observer = MetricsObserver::new("api");
    let mut rng = SeededRandom::new(1);
    let states = recorded(|| {
        let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&observer);
        for _ in 0..2 {
            let p = breaker.admit(&mut env).unwrap();
            p.settle(&Verdict::Transient, &mut env);
        }
        let opened = breaker.state();
        breaker.force_open(&mut env);
        breaker.disable(&mut env);
        opened
    });
    assert_eq!(states.0, resilix::breaker::CircuitState::Open);
    let got = states.1;
    assert_eq!(
        got["resilix_circuit_state{upstream=api}"], 4.0,
        "disabled, last"
    );
    assert_eq!(
        got["resilix_circuit_transitions_total{upstream=api,from=closed,to=open,cause=failure-rate}"],
        1.0
    );
    assert_eq!(
        got["resilix_circuit_transitions_total{upstream=api,from=forced-open,to=disabled,cause=operator}"],
        1.0
    );
    let ((), got) = recorded(|| {
        let mut env = Env::new(Instant::from_secs(2), &mut rng).with_observer(&observer);
        breaker.reset(&mut env);
    });
    assert_eq!(got["resilix_circuit_state{upstream=api}"], 0.0);
}

#[test]
fn an_operator_reset_is_counted_per_policy() {
    let throttler = Throttler::with_defaults();
    let budget = TokenBucket::aws_sdk_standard();
    let observer = MetricsObserver::new("api");
    let mut rng = SeededRandom::new(1);
    let ((), got) = recorded(|| {
        let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&observer);
        throttler.reset(&mut env);
        throttler.reset(&mut env);
        budget.reset(&mut env);
    });
    assert_eq!(
        got["resilix_policy_resets_total{upstream=api,policy=throttler}"],
        2.0
    );
    assert_eq!(
        got["resilix_policy_resets_total{upstream=api,policy=retry-budget}"],
        1.0
    );
}

#[test]
fn a_reconfiguration_in_place_is_counted_per_policy() {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(3).unwrap());
    let observer = MetricsObserver::new("api");
    let mut rng = SeededRandom::new(1);
    let ((), got) = recorded(|| {
        let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&observer);
        bulkhead.reconfigure(BulkheadConfig::new(5).unwrap(), &mut env);
        bulkhead.reconfigure(BulkheadConfig::new(2).unwrap(), &mut env);
    });
    assert_eq!(bulkhead.max_concurrent(), 2);
    assert_eq!(
        got["resilix_policy_reconfigurations_total{upstream=api,policy=bulkhead}"],
        2.0
    );
}

/// On paused time: the task samples at once, then once per period, and follows the value.
#[test]
fn the_sampling_task_samples_at_start_and_every_period() {
    let bulkhead = Arc::new(Bulkhead::new(BulkheadConfig::new(3).unwrap()));
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let key = "resilix_bulkhead_in_use{upstream=pool}";
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let task = tokio::spawn(
                MetricsObserver::new("pool")
                    .sample_every(bulkhead.clone(), Duration::from_secs(10)),
            );
            tokio::task::yield_now().await;
            assert_eq!(
                values(&snapshotter).get(key),
                Some(&0.0),
                "sampled at start"
            );
            let mut rng = SeededRandom::new(1);
            let held = bulkhead
                .admit(&mut Env::new(Instant::ZERO, &mut rng))
                .unwrap();
            tokio::time::sleep(Duration::from_secs(9)).await;
            assert_eq!(
                values(&snapshotter).get(key),
                Some(&0.0),
                "not before the period"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
            tokio::task::yield_now().await;
            assert_eq!(
                values(&snapshotter).get(key),
                Some(&1.0),
                "sampled after 10 s"
            );
            drop(held);
            task.abort();
        })
    });
}

/// The timeout advice as a gauge: absent until the histogram holds 100 settled attempts, then
/// the p99 plus 25 %. The histogram is the upstream's observer, so only settled attempts
/// reach it.
#[tokio::test(start_paused = true)]
async fn the_suggested_timeout_appears_once_the_histogram_is_full_enough() {
    use resilix::call::CallOptions;
    use resilix::observe::DurationHistogram;
    use resilix_tokio::Resilience;

    let latency = DurationHistogram::new();
    let pipeline = Pipeline::new();
    let resilience = Resilience::new(&pipeline).observer(&latency);
    let key = "resilix_suggested_attempt_timeout_seconds{upstream=search}";
    for i in 0..100u64 {
        let out = resilience
            .execute(CallOptions::default(), || async move {
                // 99 calls of 10 ms and one of 2 s: the p99 is 10 ms, not the outlier.
                let took = if i == 50 { 2_000 } else { 10 };
                tokio::time::sleep(Duration::from_millis(took)).await;
                Ok::<_, ()>(())
            })
            .await;
        assert!(out.is_ok());
        let ((), got) = recorded(|| MetricsObserver::new("search").sample(&latency, Instant::ZERO));
        if i < 99 {
            assert_eq!(got.get(key), None, "{} samples are too few", i + 1);
        } else {
            let s = got[key];
            assert!((s - 0.0125).abs() <= 0.0125 / 16.0, "{s}");
        }
    }
}
