//! Each policy in shadow mode: where it would refuse, the call goes through and the refusal is
//! reported as shadow (never as a refusal); enforcing, it refuses as the bare policy does.

extern crate std;

use core::cell::RefCell;
use std::vec::Vec;

use core::time::Duration;

use super::Shadow;
use crate::breaker::Breaker;
use crate::bulkhead::{Bulkhead, BulkheadConfig};
use crate::call::CallOptions;
use crate::limiter::{Limiter, LimiterConfig};
use crate::observe::{Event, Observer};
use crate::permit::{Env, Permit, Policy};
use crate::pipeline::Pipeline;
use crate::random::SeededRandom;
use crate::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig, RateLimiter};
use crate::rejection::RejectReason;
use crate::throttler::{Throttler, ThrottlerConfig};
use crate::time::Instant;
use crate::verdict::Verdict;

#[derive(Default)]
struct Log(RefCell<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

impl Log {
    fn shadowed(&self) -> Vec<RejectReason> {
        self.0
            .borrow()
            .iter()
            .filter_map(|e| match e {
                Event::ShadowRejected { rejection } => Some(rejection.reason()),
                _ => None,
            })
            .collect()
    }
    fn refused(&self) -> usize {
        self.0
            .borrow()
            .iter()
            .filter(|e| matches!(e, Event::Rejected { .. }))
            .count()
    }
}

/// `policy` would refuse now (after `prime`): in shadow the call is admitted and reported;
/// enforcing, it is refused.
fn check<P: Policy>(
    policy: Shadow<P>,
    reason: RejectReason,
    prime: impl Fn(&P, &mut Env<'_, SeededRandom, Log>),
) {
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&log);
    prime(policy.policy(), &mut env);
    let through = policy.admit(&mut env).expect("shadow lets it through");
    assert!(through.would_have_refused());
    through.settle(&Verdict::Success, &mut env);
    assert_eq!(log.shadowed(), [reason]);
    policy.enforce();
    assert!(policy.is_enforcing());
    assert_eq!(
        policy.admit(&mut env).err().map(|r| r.reason()),
        Some(reason)
    );
    policy.shadow();
    assert!(policy.admit(&mut env).is_ok());
}

#[test]
fn a_breaker_forced_open_lets_calls_through_in_shadow() {
    check(
        Shadow::new(Breaker::default()),
        RejectReason::CircuitOpen,
        |b, env| {
            b.force_open(&mut env.reborrow());
        },
    );
}

#[test]
fn a_full_bulkhead_lets_calls_through_in_shadow() {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let held = bulkhead.try_admit().unwrap();
    check(
        Shadow::new(&bulkhead),
        RejectReason::BulkheadFull,
        |_, _| {},
    );
    drop(held);
}

#[test]
fn a_full_limiter_lets_calls_through_in_shadow() {
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let held: Vec<_> = (0..limiter.limit())
        .map(|_| limiter.admit(&mut env).unwrap())
        .collect();
    check(Shadow::new(&limiter), RejectReason::LimiterFull, |_, _| {});
    drop(held);
}

#[test]
fn an_empty_rate_limiter_lets_calls_through_in_shadow() {
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_hour(1)).with_burst(1)).unwrap();
    check(Shadow::new(limiter), RejectReason::RateLimited, |l, env| {
        l.try_acquire(env.now).unwrap();
    });
    let keyed: KeyedRateLimiter<4> =
        KeyedRateLimiter::new(RateLimitConfig::new(Rate::per_hour(1)).with_burst(1)).unwrap();
    check(
        Shadow::new(keyed.for_key(7)),
        RejectReason::RateLimited,
        |k, env| {
            let _ = k.admit(&mut env.reborrow()).unwrap();
        },
    );
}

#[test]
fn a_shedding_throttler_lets_calls_through_in_shadow() {
    let config = ThrottlerConfig {
        max_rejection_rate: 0.99,
        ..ThrottlerConfig::DEFAULT
    };
    let throttler: Throttler = Throttler::new(config).unwrap();
    // Nothing accepted: the throttler sheds nearly every call; find one it sheds.
    let log = Log::default();
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&log);
    for _ in 0..200 {
        if let Ok(p) = throttler.admit(&mut env) {
            p.settle(&Verdict::Overload { retry_after: None }, &mut env);
        }
    }
    let shadow = Shadow::new(&throttler);
    let mut through = 0;
    for _ in 0..50 {
        let p = shadow.admit(&mut env).expect("shadow refuses nothing");
        through += 1;
        p.settle(&Verdict::Overload { retry_after: None }, &mut env);
    }
    assert_eq!(through, 50);
    assert!(!log.shadowed().is_empty());
    assert!(log.shadowed().iter().all(|r| *r == RejectReason::Throttled));
}

#[test]
fn through_a_pipeline_a_shadow_refusal_is_no_refusal() {
    let breaker = Shadow::new(Breaker::default());
    let log = Log::default();
    let mut rng = SeededRandom::new(4);
    let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&log);
    breaker.policy().force_open(&mut env.reborrow());
    let pipeline = Pipeline::new().breaker(&breaker);
    let mut call = pipeline.call(
        env.now,
        CallOptions::default().timeout(Duration::from_secs(1)),
    );
    let attempt = call.admit(&mut env).expect("in shadow the call is made");
    let _ = call.settle(attempt, &Verdict::Success, &mut env);
    assert_eq!(log.refused(), 0, "no Event::Rejected");
    assert_eq!(log.shadowed(), [RejectReason::CircuitOpen]);
}
