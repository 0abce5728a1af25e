use super::*;
use crate::breaker::{Breaker, CircuitState, Config};
use crate::bulkhead::{Bulkhead, BulkheadConfig};
use crate::random::SeededRandom;
use crate::rejection::RejectReason;

/// A detached permit still holds what it held; attached again, it settles or cancels as
/// the permit it was, and an attempt's deadline and admission instant come back with it.
#[test]
fn a_detached_permit_holds_until_it_is_attached_and_settled() {
    use crate::limiter::{Limiter, LimiterConfig};
    use crate::pipeline::Pipeline;
    use crate::throttler::{Throttler, ThrottlerConfig};
    use core::time::Duration;

    let mut rng = SeededRandom::new(4);
    let t0 = Instant::from_secs(10);
    let mut env = Env::new(t0, &mut rng);
    let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let pipeline = Pipeline::new()
        .throttler(&throttler)
        .limiter(&limiter)
        .bulkhead(&bulkhead)
        .attempt_timeout(Duration::from_secs(3));
    let detached = pipeline.admit(&mut env, None).unwrap().detach();
    assert_eq!(
        detached.deadline(),
        Some(crate::time::Deadline::after(t0, Duration::from_secs(3)))
    );
    assert_eq!((bulkhead.held(), limiter.in_flight()), (1, 1), "still held");
    env.now = t0 + Duration::from_secs(2);
    let attempt = pipeline.attach(detached);
    assert_eq!(
        attempt.admitted_at(),
        t0,
        "admitted when it was, not when attached"
    );
    assert_eq!(
        attempt.settle(&Verdict::Success, &mut env),
        Duration::from_secs(2)
    );
    assert_eq!((bulkhead.held(), limiter.in_flight()), (0, 0));
    assert_eq!(
        throttler.counts(env.now),
        (1, 1),
        "the throttler counted the answer"
    );
    // Attached and dropped: cancelled, every slot back, nothing counted.
    let detached = pipeline.admit(&mut env, None).unwrap().detach();
    drop(pipeline.attach(detached));
    assert_eq!((bulkhead.held(), limiter.in_flight()), (0, 0));
    assert_eq!(throttler.counts(env.now), (1, 1));
}

#[test]
fn a_detached_probe_keeps_its_slot_and_settles_the_circuit() {
    let mut rng = SeededRandom::new(6);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    let config = Config {
        minimum_calls: 2,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    let breaker = Breaker::new(config).unwrap();
    for _ in 0..2 {
        breaker
            .admit(&mut env)
            .unwrap()
            .settle(&Verdict::Transient, &mut env);
    }
    env.now = Instant::from_secs(100);
    let probe = Breaker::detach(breaker.admit(&mut env).unwrap());
    assert_eq!(
        breaker.probes_in_flight(),
        1,
        "the detached probe keeps its slot"
    );
    assert!(breaker.admit(&mut env).is_err(), "one probe at a time");
    let probe = breaker.attach(probe);
    assert!(probe.is_probe());
    probe.settle(&Verdict::Success, &mut env);
    assert_eq!(breaker.state(), CircuitState::Closed);
    // Attached and dropped, a closed breaker's permit records nothing.
    let permit = Breaker::detach(breaker.admit(&mut env).unwrap());
    drop(breaker.attach(permit));
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[test]
fn an_optional_policy_detaches_as_its_policy_does() {
    let mut rng = SeededRandom::new(7);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let one = Some(Bulkhead::new(BulkheadConfig::new(1).unwrap()));
    let detached = <Option<Bulkhead>>::detach(one.admit(&mut env).unwrap());
    assert!(detached.is_some());
    assert_eq!(one.as_ref().unwrap().held(), 1);
    assert!(one.attach(detached).is_some());
    assert_eq!(
        one.as_ref().unwrap().held(),
        0,
        "attached and dropped: given back"
    );
    let none: Option<Bulkhead> = None;
    assert!(none.attach(<Option<Bulkhead>>::detach(None)).is_none());
}

#[test]
fn none_admits_everything_and_holds_nothing() {
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let absent: Option<Bulkhead> = None;
    for _ in 0..3 {
        let permit = absent.admit(&mut env).unwrap();
        assert!(permit.is_none());
        permit.settle(&Verdict::Transient, &mut env);
    }
}

#[test]
fn some_refuses_as_the_inner_policy_and_drop_cancels() {
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let one = Some(Bulkhead::new(BulkheadConfig::new(1).unwrap()));
    let held = one.admit(&mut env).unwrap();
    assert_eq!(
        one.admit(&mut env).unwrap_err().reason(),
        RejectReason::BulkheadFull
    );
    drop(held);
    assert_eq!(
        one.as_ref().unwrap().held(),
        0,
        "dropping gives the slot back"
    );
    let held = one.admit(&mut env).unwrap();
    held.settle(&Verdict::Success, &mut env);
    assert_eq!(
        one.as_ref().unwrap().held(),
        0,
        "settling gives the slot back"
    );
}

#[test]
fn some_settles_the_inner_permit_with_the_verdict() {
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    let config = Config {
        minimum_calls: 2,
        ..Config::DEFAULT
    };
    let breaker = Some(Breaker::new(config).unwrap());
    for _ in 0..2 {
        breaker
            .admit(&mut env)
            .unwrap()
            .settle(&Verdict::Transient, &mut env);
    }
    assert_eq!(breaker.as_ref().unwrap().state(), CircuitState::Open);
    assert_eq!(
        breaker.admit(&mut env).unwrap_err().reason(),
        RejectReason::CircuitOpen
    );
    // A dropped (cancelled) permit records nothing.
    let fresh = Some(Breaker::new(config).unwrap());
    for _ in 0..4 {
        drop(fresh.admit(&mut env).unwrap());
    }
    assert_eq!(fresh.as_ref().unwrap().state(), CircuitState::Closed);
}
