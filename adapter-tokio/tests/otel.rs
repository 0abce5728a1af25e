//! The OpenTelemetry observer through the SDK's in-memory exporter: for each policy, the
//! instrument names, units and attributes the module table and the guide's mapping promise.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use resilix::observe::{CircuitState, Event, Observer, TransitionCause};
use resilix::retry::GiveUpReason;
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, Verdict, VerdictKind};
use resilix_tokio::otel::OtelObserver;

/// One data point: its attributes and its value (a histogram's: count and sum).
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Count(u64),
    Gauge(f64),
    Histogram { count: u64, sum: f64 },
}

type Points = Vec<(BTreeMap<String, String>, Value)>;

/// What the exporter received: instrument name → (unit, points).
struct Exported(BTreeMap<String, (String, Points)>);

impl Exported {
    fn unit(&self, name: &str) -> &str {
        &self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("{name} in {:?}", self.0.keys()))
            .0
    }

    /// The value of `name`'s point whose attributes include every one of `with`.
    fn value(&self, name: &str, with: &[(&str, &str)]) -> Value {
        let (_, points) = self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("{name} in {:?}", self.0.keys()));
        let found: Vec<_> = points
            .iter()
            .filter(|(attrs, _)| {
                with.iter()
                    .all(|(k, v)| attrs.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(found.len(), 1, "{name} {with:?} in {points:?}");
        found[0].1.clone()
    }
}

/// Runs `feed` against an observer on a fresh provider, flushes, and reads what was exported.
fn export(feed: impl FnOnce(&OtelObserver)) -> Exported {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let observer = OtelObserver::new(&provider.meter("resilix-test"), "inventory");
    feed(&observer);
    provider.force_flush().unwrap();
    let mut out = BTreeMap::new();
    for resource in exporter.get_finished_metrics().unwrap() {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                let attrs = |it: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                    it.map(|kv| (kv.key.to_string(), kv.value.to_string()))
                        .collect::<BTreeMap<_, _>>()
                };
                let points: Points = match metric.data() {
                    AggregatedMetrics::U64(MetricData::Sum(sum)) => sum
                        .data_points()
                        .map(|p| (attrs(&mut p.attributes()), Value::Count(p.value())))
                        .collect(),
                    AggregatedMetrics::F64(MetricData::Gauge(g)) => g
                        .data_points()
                        .map(|p| (attrs(&mut p.attributes()), Value::Gauge(p.value())))
                        .collect(),
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => h
                        .data_points()
                        .map(|p| {
                            let v = Value::Histogram {
                                count: p.count(),
                                sum: p.sum(),
                            };
                            (attrs(&mut p.attributes()), v)
                        })
                        .collect(),
                    other => panic!("unexpected data for {}: {other:?}", metric.name()),
                };
                out.insert(metric.name().to_owned(), (metric.unit().to_owned(), points));
            }
        }
    }
    Exported(out)
}

fn refused(reason: RejectReason) -> Event {
    Event::Rejected {
        rejection: Rejection::new(reason),
    }
}

#[test]
fn circuit_breaker_transitions_refusals_and_state() {
    let breaker = resilix::breaker::Breaker::default();
    let m = export(|o| {
        o.on_event(&Event::CircuitTransition {
            from: CircuitState::Closed,
            to: CircuitState::Open,
            cause: TransitionCause::FailureRate,
            at: Instant::ZERO,
        });
        o.on_event(&refused(RejectReason::CircuitOpen));
        o.on_event(&refused(RejectReason::CircuitOpen));
        o.sample(&breaker, Instant::ZERO);
    });
    assert_eq!(m.unit("resilience.events"), "{event}");
    assert_eq!(
        m.value(
            "resilience.events",
            &[
                ("pipeline.name", "inventory"),
                ("policy.name", "circuit_breaker"),
                ("event.name", "transition"),
                ("from", "closed"),
                ("to", "open"),
                ("cause", "failure-rate")
            ]
        ),
        Value::Count(1)
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[
                ("policy.name", "circuit_breaker"),
                ("event.name", "rejected"),
                ("reason", "circuit-open")
            ]
        ),
        Value::Count(2)
    );
    // The sample after the transition reads the real breaker: closed.
    assert_eq!(m.unit("resilience.circuit_breaker.state"), "1");
    assert_eq!(
        m.value(
            "resilience.circuit_breaker.state",
            &[("pipeline.name", "inventory")]
        ),
        Value::Gauge(0.0)
    );
}

#[test]
fn concurrency_limiter_limit_and_refusals() {
    let m = export(|o| {
        o.on_event(&Event::LimitChanged { from: 20, to: 14 });
        o.on_event(&refused(RejectReason::LimiterFull));
    });
    assert_eq!(m.unit("resilience.concurrency_limiter.limit"), "{call}");
    assert_eq!(
        m.value("resilience.concurrency_limiter.limit", &[]),
        Value::Gauge(14.0)
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[
                ("policy.name", "concurrency_limiter"),
                ("event.name", "rejected"),
                ("reason", "limiter-full")
            ]
        ),
        Value::Count(1)
    );
}

#[test]
fn bulkhead_in_use_and_refusals() {
    let bulkhead = resilix::bulkhead::Bulkhead::default();
    let held = bulkhead.try_admit().unwrap();
    let m = export(|o| {
        o.on_event(&refused(RejectReason::BulkheadFull));
        o.sample(&bulkhead, Instant::ZERO);
    });
    drop(held);
    assert_eq!(
        m.value(
            "resilience.bulkhead.in_use",
            &[("pipeline.name", "inventory")]
        ),
        Value::Gauge(1.0)
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[("policy.name", "bulkhead"), ("reason", "bulkhead-full")]
        ),
        Value::Count(1)
    );
}

#[test]
fn throttler_probability_and_refusals() {
    let throttler = resilix::throttler::Throttler::with_defaults();
    let m = export(|o| {
        o.on_event(&refused(RejectReason::Throttled));
        o.sample(&throttler, Instant::ZERO);
    });
    assert_eq!(m.unit("resilience.throttler.rejection_probability"), "1");
    assert_eq!(
        m.value("resilience.throttler.rejection_probability", &[]),
        Value::Gauge(0.0)
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[("policy.name", "throttler"), ("reason", "throttled")]
        ),
        Value::Count(1)
    );
}

#[test]
fn rate_limiter_available_and_refusals() {
    use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(10))).unwrap();
    let m = export(|o| {
        o.on_event(&refused(RejectReason::RateLimited));
        o.on_event(&Event::ShadowRejected {
            rejection: Rejection::new(RejectReason::RateLimited),
        });
        o.sample(&limiter, Instant::from_secs(1));
    });
    assert_eq!(m.unit("resilience.rate_limiter.available"), "{cell}");
    assert_eq!(
        m.value("resilience.rate_limiter.available", &[]),
        Value::Gauge(10.0)
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[("policy.name", "rate_limiter"), ("event.name", "rejected")]
        ),
        Value::Count(1)
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[
                ("policy.name", "rate_limiter"),
                ("event.name", "shadow_rejected")
            ]
        ),
        Value::Count(1)
    );
}

#[test]
fn retry_attempts_delays_and_give_ups_in_seconds() {
    let budget = resilix::retry::budget::TokenBucket::default();
    let m = export(|o| {
        o.on_event(&Event::Executed {
            verdict: Verdict::Transient,
            duration: Duration::from_millis(250),
        });
        o.on_event(&Event::RetryScheduled {
            attempt: 2,
            delay: Duration::from_millis(500),
            after: Verdict::Transient,
        });
        o.on_event(&Event::Executed {
            verdict: Verdict::Success,
            duration: Duration::from_millis(100),
        });
        o.on_event(&Event::RetryRefused {
            reason: GiveUpReason::BudgetExceeded,
            after: Verdict::Transient,
        });
        o.sample(&budget, Instant::ZERO);
    });
    assert_eq!(m.unit("resilience.attempt.duration"), "s");
    assert_eq!(
        m.value(
            "resilience.attempt.duration",
            &[("attempt.outcome", "transient")]
        ),
        Value::Histogram {
            count: 1,
            sum: 0.25
        }
    );
    assert_eq!(
        m.value(
            "resilience.attempt.duration",
            &[("attempt.outcome", VerdictKind::Success.as_str())]
        ),
        Value::Histogram { count: 1, sum: 0.1 }
    );
    assert_eq!(m.unit("resilience.retry.delay"), "s");
    assert_eq!(
        m.value("resilience.retry.delay", &[]),
        Value::Histogram { count: 1, sum: 0.5 }
    );
    assert_eq!(
        m.value(
            "resilience.events",
            &[
                ("policy.name", "retry"),
                ("event.name", "gave_up"),
                ("reason", "budget-exceeded")
            ]
        ),
        Value::Count(1)
    );
    assert_eq!(m.unit("resilience.retry_budget.balance"), "{retry}");
    assert!(matches!(m.value("resilience.retry_budget.balance", &[]), Value::Gauge(b) if b > 0.0));
}

#[test]
fn a_call_through_a_pipeline_is_measured_end_to_end() {
    use resilix::call::CallOptions;
    use resilix::pipeline::Pipeline;
    use resilix_tokio::Resilience;

    let m = export(|o| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let pipeline = Pipeline::new();
        let resilience = Resilience::new(&pipeline).observer(o);
        let out = runtime.block_on(resilience.execute(CallOptions::default(), || async {
            tokio::time::sleep(Duration::from_millis(40)).await;
            Ok::<_, ()>(1)
        }));
        assert_eq!(out, Ok(1));
    });
    match m.value(
        "resilience.attempt.duration",
        &[
            ("pipeline.name", "inventory"),
            ("attempt.outcome", "success"),
        ],
    ) {
        Value::Histogram { count: 1, sum } => assert!((sum - 0.04).abs() < 1e-6, "{sum}"),
        other => panic!("{other:?}"),
    }
}
