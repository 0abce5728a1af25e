//! The public test kit on the project's own policies: the synchronous driver (a manual clock
//! shared by the pipeline and the test), a scripted upstream, scripted randomness, the event
//! recorder and the pipeline description — each assertion one a user would write about their
//! own settings.

use std::time::Duration;

use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::chaos::{Chaos, ChaosClassifier, ChaosConfig, Chaotic, Injection};
use resilix::classify::ResultClassifier;
use resilix::execute::{Timer, execute};
use resilix::observe::CircuitState;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig, Strategy};
use resilix::time::{Clock, Instant, ManualClock};
use resilix::{RejectReason, Verdict, VerdictKind};
use resilix_testkit::assert_events;
use resilix_testkit::clock::{VirtualTimer, block_on};
use resilix_testkit::describe::Description;
use resilix_testkit::random::FakeRandom;
use resilix_testkit::recorder::{Kind, Recorder};
use resilix_testkit::upstream::{ScriptedUpstream, WhenDone};

const MS: Duration = Duration::from_millis(1);
const CLASSIFIER: ResultClassifier = ResultClassifier::new();

/// Full jitter pinned by scripted randomness: the delays are exactly the fractions scripted,
/// on the test's clock, and the events tell the story in order.
#[test]
fn scripted_randomness_pins_full_jitter() {
    let clock = ManualClock::new(Instant::from_secs(1));
    let timer = VirtualTimer::new(&clock);
    let backoff = Backoff::new(Strategy::FullJitter, 100 * MS, Duration::from_secs(10)).unwrap();
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::new(3, backoff).unwrap()));
    let upstream = ScriptedUpstream::new()
        .then(10 * MS, Err("reset"))
        .then(10 * MS, Err("reset"))
        .then(10 * MS, Ok("body"));
    // Full jitter draws uniform in [0, ceiling]: a half, then a quarter.
    let mut rng = FakeRandom::units([0.5, 0.25]);
    let recorder = Recorder::new();
    let out = block_on(execute(
        &pipeline,
        &timer,
        &mut rng,
        &recorder,
        CallOptions::default(),
        &CLASSIFIER,
        || upstream.call(&timer),
    ));
    assert_eq!(out.unwrap(), Ok("body"));
    assert!(rng.is_done(), "exactly two jitter draws");
    // 3 × 10 ms of calls, then ½ · 200 ms and ¼ · 400 ms of backoff (±1 ns of rounding).
    let took = clock.now().saturating_duration_since(Instant::from_secs(1));
    assert!(
        took.abs_diff(Duration::from_millis(230)) <= Duration::from_nanos(2),
        "{took:?}"
    );
    assert_events!(
        recorder,
        [
            Executed(Transient),
            RetryScheduled(2),
            Executed(Transient),
            RetryScheduled(3),
            Executed(Success)
        ]
    );
}

/// The retry circuit breaker, shared by every call, stops retries once a scripted outage
/// pushes the failure rate above 10%, and the recorder shows which calls were retried.
#[test]
fn a_retry_breaker_stops_retrying_an_outage() {
    let clock = ManualClock::new(Instant::from_secs(100));
    let timer = VirtualTimer::new(&clock);
    let breaker = RetryBreaker::<10>::new(RetryBreakerConfig {
        min_attempts: 0,
        ..RetryBreakerConfig::DEFAULT
    })
    .unwrap();
    let pipeline = Pipeline::new().retry(Retry::new(
        RetryConfig::new(2, Backoff::NONE).unwrap(),
        &breaker,
    ));
    // 20 healthy calls, then an outage that never ends.
    let upstream = ScriptedUpstream::new()
        .then_n(20, MS, Ok(()))
        .then(MS, Err(()))
        .when_done(WhenDone::RepeatLast);
    let recorder = Recorder::new();
    let mut rng = FakeRandom::new([]);
    for _ in 0..25 {
        let _ = block_on(execute(
            &pipeline,
            &timer,
            &mut rng,
            &recorder,
            CallOptions::default(),
            &CLASSIFIER,
            || upstream.call(&timer),
        ));
    }
    // Call 21 fails: 1 failure in 21 attempts (4.8%), retried; the retry fails too and is
    // the last attempt (2 failures in 22). Call 22 fails: 3 in 23 (13%), refused, and so on.
    assert_eq!(recorder.count(Kind::RetryScheduled(2)), 1);
    assert_eq!(
        recorder.count(Kind::RetryRefused(GiveUpReason::BudgetExceeded)),
        4
    );
    assert_eq!(upstream.calls(), 20 + 2 + 4);
    assert!(breaker.is_tripped(clock.now()));
    assert_eq!(rng.drawn(), 0, "no backoff, no randomness");
}

/// Chaos through the synchronous driver with scripted randomness: the test says which
/// attempts get a fault, and a real breaker opens on them.
#[test]
fn scripted_chaos_opens_a_real_breaker() {
    let clock = ManualClock::new(Instant::from_secs(5));
    let timer = VirtualTimer::new(&clock);
    let chaos = Chaos::new(ChaosConfig::NONE.with_fault(500_000, Verdict::Transient)).unwrap();
    chaos.enable();
    let breaker = Breaker::new(BreakerConfig {
        minimum_calls: 4,
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    let pipeline = Pipeline::new().breaker(&breaker);
    let upstream = ScriptedUpstream::new()
        .then(MS, Ok::<_, ()>(1))
        .when_done(WhenDone::RepeatLast);
    let recorder = Recorder::new();
    // Below 0.5 injects: call 1 clean, then three faults (3 of 4 failed: above 50%).
    let mut chaos_rng = FakeRandom::units([0.9, 0.1, 0.2, 0.3]);
    let classifier = ChaosClassifier(CLASSIFIER);
    for _ in 0..5 {
        let _ = block_on(execute(
            &pipeline,
            &timer,
            &mut SeededRandom::new(9), // the breaker jitters its open wait
            &recorder,
            CallOptions::default(),
            &classifier,
            || {
                let injection: Injection = chaos
                    .decide(&mut Env::new(timer.now(), &mut chaos_rng).with_observer(&recorder));
                let call = upstream.call(&timer);
                async move {
                    match injection.fault {
                        Some(v) => Chaotic::Fault(v),
                        None => Chaotic::Upstream(call.await),
                    }
                }
            },
        ));
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(recorder.count(Kind::ChaosFault(VerdictKind::Transient)), 3);
    assert_eq!(recorder.count(Kind::Executed(VerdictKind::Transient)), 3);
    recorder.assert_in_order(&[
        Kind::Executed(VerdictKind::Success),
        Kind::ChaosFault(VerdictKind::Transient),
        Kind::Executed(VerdictKind::Transient),
        Kind::Circuit(CircuitState::Open),
        Kind::Rejected(RejectReason::CircuitOpen),
    ]);
    assert!(
        chaos_rng.is_done(),
        "the open breaker refused call 5 before chaos was asked"
    );
}

/// What a test can say about the pipeline it built.
#[test]
fn a_description_names_the_policies_and_their_settings() {
    let breaker = Breaker::new(BreakerConfig {
        minimum_calls: 7,
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    let bulkhead = Bulkhead::new(BulkheadConfig::new(16).unwrap());
    let budget = RetryBreaker::<10>::new(RetryBreakerConfig::DEFAULT).unwrap();
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .breaker(&breaker)
        .bulkhead(&bulkhead);
    let d = Description::of(&pipeline);
    assert_eq!(d.policies(), ["retry", "breaker", "bulkhead"]);
    assert!(d.setting("breaker", "minimum_calls: 7"));
    assert!(
        d.setting("retry", "max_failure_permille: 100"),
        "{:?}",
        d.slot("retry")
    );
    assert!(!d.has("throttler") && !d.has("rate_limit") && !d.has("attempt_timeout"));
    assert_eq!(
        d.slots().map(|(n, _)| n).collect::<Vec<_>>(),
        [
            "retry",
            "throttler",
            "breaker",
            "limiter",
            "bulkhead",
            "rate_limit",
            "attempt_timeout"
        ]
    );
}
