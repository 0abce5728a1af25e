//! Chaos through the real tokio driver on paused time: injected latency counts against the
//! attempt timeout (the attempt times out and is retried), injected faults trip a real breaker
//! and are reported as chaos events beside the `Executed` failures the breaker counted, a
//! substituted verdict is retried while the caller keeps the call's output, and the same seed
//! injects into the same attempts.

use std::time::Duration;

use resilix::Verdict;
use resilix::VerdictKind;
use resilix::breaker::{Breaker, Config};
use resilix::call::CallOptions;
use resilix::chaos::{Chaos, ChaosClassifier, ChaosConfig, Chaotic, Injected, MILLION};
use resilix::classify::ResultClassifier;
use resilix::observe::{CircuitState, Event};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix_testkit::recorder::{Kind, Recorder};
use resilix_testkit::upstream::{ScriptedUpstream, WhenDone};
use resilix_tokio::{ExecuteError, Resilience, TokioTimer, chaos};

#[tokio::test(start_paused = true)]
async fn injected_latency_times_the_attempt_out_and_the_retry_succeeds() {
    let slow = Chaos::new(ChaosConfig::NONE.with_latency(MILLION, Duration::from_secs(2))).unwrap();
    slow.enable();
    let pipeline = Pipeline::new()
        .retry(Retry::unbudgeted(
            RetryConfig::new(2, Backoff::NONE).unwrap(),
        ))
        .attempt_timeout(Duration::from_millis(100));
    let log = Recorder::new();
    let resilience = Resilience::new(&pipeline)
        .observer(&log)
        .classifier(ChaosClassifier(ResultClassifier::new()))
        .seed(3);
    let mut rng = SeededRandom::new(1);
    let start = tokio::time::Instant::now();
    let out = resilience
        .call(CallOptions::default().idempotent(true))
        .run_output(|| {
            let injection = chaos::decide(&slow, &mut rng, &log);
            slow.disable(); // only the first attempt is slowed
            chaos::attempt(injection, || async { Ok::<_, ()>(5) })
        })
        .await
        .unwrap();
    assert_eq!(out, Chaotic::Upstream(Ok(5)));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "cut at the timeout, not after 2 s"
    );
    assert!(log.events().contains(&Event::ChaosInjected {
        injected: Injected::Latency(Duration::from_secs(2))
    }));
    log.assert_sequence(&[
        Kind::ChaosLatency,
        Kind::Executed(VerdictKind::Timeout),
        Kind::RetryScheduled(2),
        Kind::Executed(VerdictKind::Success),
    ]);
}

#[tokio::test(start_paused = true)]
async fn injected_faults_trip_a_real_breaker_and_are_told_apart() {
    let faults = Chaos::new(ChaosConfig::NONE.with_fault(MILLION, Verdict::Transient)).unwrap();
    faults.enable();
    let breaker = Breaker::new(Config {
        minimum_calls: 5,
        ..Config::DEFAULT
    })
    .unwrap();
    let pipeline = Pipeline::new().breaker(&breaker);
    let log = Recorder::new();
    let resilience = Resilience::new(&pipeline)
        .observer(&log)
        .classifier(ChaosClassifier(ResultClassifier::new()))
        .seed(3);
    let mut rng = SeededRandom::new(2);
    // The scripted upstream on tokio's timer: it would answer at once, if it were called.
    let timer = TokioTimer::new();
    let upstream = ScriptedUpstream::new()
        .then(Duration::ZERO, Ok::<_, ()>(()))
        .when_done(WhenDone::RepeatLast);
    let mut refused = 0u32;
    for _ in 0..10 {
        let out = resilience
            .call(CallOptions::default())
            .run_output(|| {
                let injection = chaos::decide(&faults, &mut rng, &log);
                chaos::attempt(injection, || upstream.call(&timer))
            })
            .await;
        if let Err(ExecuteError::Refused { .. }) = out {
            refused += 1;
        }
    }
    assert_eq!(upstream.calls(), 0, "a fault never calls the upstream");
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(refused, 5, "five faults counted, then open");
    assert_eq!(
        (
            log.count(Kind::ChaosFault(VerdictKind::Transient)),
            log.count(Kind::Executed(VerdictKind::Transient))
        ),
        (5, 5),
        "every counted failure has its chaos event"
    );
}

#[tokio::test(start_paused = true)]
async fn a_substituted_verdict_is_retried_and_the_caller_keeps_the_output() {
    let chaos_outcome =
        Chaos::new(ChaosConfig::NONE.with_outcome(MILLION / 2, Verdict::Uncertain)).unwrap();
    chaos_outcome.enable();
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(10, Backoff::NONE).unwrap(),
    ));
    let resilience = Resilience::new(&pipeline)
        .classifier(ChaosClassifier(ResultClassifier::new()))
        .seed(3);
    let run = |seed| {
        let mut rng = SeededRandom::new(seed);
        let mut calls = 0u32;
        let resilience = &resilience;
        let chaos_outcome = &chaos_outcome;
        async move {
            let out = resilience
                .call(CallOptions::default())
                .run_output(|| {
                    let injection = chaos::decide(chaos_outcome, &mut rng, &());
                    calls += 1;
                    chaos::attempt(injection, || async { Ok::<_, ()>("body") })
                })
                .await
                .unwrap();
            (out, calls)
        }
    };
    let mut all = Vec::new();
    for seed in 0..20 {
        let (out, calls) = run(seed).await;
        assert_eq!(
            out,
            Chaotic::Upstream(Ok("body")),
            "the last attempt was left alone"
        );
        all.push(calls);
    }
    assert!(
        all.iter().any(|&c| c > 1),
        "some calls were retried: {all:?}"
    );
    let again: Vec<u32> = {
        let mut v = Vec::new();
        for seed in 0..20 {
            v.push(run(seed).await.1);
        }
        v
    };
    assert_eq!(all, again, "the same seeds inject into the same attempts");
}
