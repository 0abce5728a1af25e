//! Operator controls on a manual clock: every reset gives the state of a policy built afresh
//! (not the old counts), keeps what is true (calls in flight), and is reported as one event.
#![cfg(not(loom))]

use core::time::Duration;
use std::cell::RefCell;

use resilix::breaker::{Breaker, CallRing, CircuitState, Config, TimeBuckets};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::{Event, Observer, PolicyKind, TransitionCause};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBreaker, RetryBreakerConfig, RetryBudget, TokenBucket,
    TokenBucketConfig, Tokens,
};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::{RejectReason, Verdict, VerdictKind};

#[derive(Default)]
struct Log(RefCell<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

impl Log {
    fn take(&self) -> Vec<Event> {
        self.0.take()
    }
}

const T0: Instant = Instant::from_secs(100);

fn fail_n<W: resilix::breaker::OutcomeWindow>(
    b: &Breaker<W>,
    env: &mut Env<'_, SeededRandom, Log>,
    n: u32,
) {
    for _ in 0..n {
        b.admit(env).unwrap().settle(&Verdict::Transient, env);
    }
}

/// Three failures of four needed, reset, then one more: with the old counts restored (the
/// couchbase bug) the fourth would trip; after a real reset it takes four new ones.
fn breaker_reset_is_a_clean_window<W: resilix::breaker::OutcomeWindow>(b: &Breaker<W>) {
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    fail_n(b, &mut env, 3);
    b.reset(&mut env);
    assert_eq!(
        log.take(),
        [Event::CircuitTransition {
            from: CircuitState::Closed,
            to: CircuitState::Closed,
            cause: TransitionCause::Operator,
            at: T0,
        }]
    );
    fail_n(b, &mut env, 3);
    assert_eq!(
        b.state(),
        CircuitState::Closed,
        "the three old failures are gone"
    );
    fail_n(b, &mut env, 1);
    assert_eq!(b.state(), CircuitState::Open, "four new failures trip it");
}

#[test]
fn breaker_reset_forgets_the_time_window() {
    let config = Config {
        minimum_calls: 4,
        ..Config::DEFAULT
    };
    let b: Breaker<TimeBuckets<10>> = Breaker::time_based(config, Duration::from_secs(10)).unwrap();
    breaker_reset_is_a_clean_window(&b);
}

#[test]
fn breaker_reset_forgets_the_call_ring() {
    let config = Config {
        minimum_calls: 4,
        ..Config::DEFAULT
    };
    let b: Breaker<CallRing<1>> = Breaker::count_based(config, 8).unwrap();
    breaker_reset_is_a_clean_window(&b);
}

#[test]
fn breaker_reset_forgets_the_failure_streak() {
    let config = Config {
        consecutive_failures: Some(3),
        failure_rate_above_percent: None,
        ..Config::DEFAULT
    };
    let b = Breaker::new(config).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    fail_n(&b, &mut env, 2);
    b.reset(&mut env);
    fail_n(&b, &mut env, 2);
    assert_eq!(b.state(), CircuitState::Closed);
    fail_n(&b, &mut env, 1);
    assert_eq!(b.state(), CircuitState::Open);
}

#[test]
fn breaker_reset_of_an_open_circuit_admits_at_once_and_frees_probes() {
    let config = Config {
        minimum_calls: 1,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    let b = Breaker::new(config).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    fail_n(&b, &mut env, 1);
    env.now = T0 + Duration::from_secs(5);
    let probe = b.admit(&mut env).unwrap();
    assert!(probe.is_probe());
    assert_eq!(b.probes_in_flight(), 1);
    log.take();
    b.reset(&mut env);
    assert_eq!(b.probes_in_flight(), 0);
    assert_eq!(
        log.take(),
        [Event::CircuitTransition {
            from: CircuitState::HalfOpen,
            to: CircuitState::Closed,
            cause: TransitionCause::Operator,
            at: env.now,
        }]
    );
    // The probe's failure is late: it cannot re-open the fresh circuit.
    probe.settle(&Verdict::Transient, &mut env);
    assert_eq!(b.state(), CircuitState::Closed);
}

#[test]
fn throttler_reset_clears_the_probability_and_reports_it() {
    let t = Throttler::new(ThrottlerConfig::default()).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(4);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    for _ in 0..100 {
        if let Ok(p) = t.admit(&mut env) {
            p.settle(&Verdict::Transient, &mut env);
        }
    }
    assert!(!t.rejection_probability(T0).is_zero());
    log.take();
    t.reset(&mut env);
    assert_eq!(t.counts(T0), (0, 0));
    assert!(t.rejection_probability(T0).is_zero());
    assert_eq!(
        log.take(),
        [Event::PolicyReset {
            policy: PolicyKind::Throttler,
            at: T0
        }]
    );
    // The window fills again from the reset.
    for _ in 0..5 {
        t.admit(&mut env)
            .unwrap()
            .settle(&Verdict::Success, &mut env);
    }
    assert_eq!(t.counts(T0), (5, 5));
}

#[test]
fn token_bucket_reset_restores_the_initial_balance_not_the_capacity() {
    let config = TokenBucketConfig {
        initial: Tokens::whole(3),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    };
    let b = TokenBucket::new(config).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    for _ in 0..50 {
        b.record_success(T0, None);
    }
    assert!(b.balance() > Tokens::whole(3));
    b.reset(&mut env);
    assert_eq!(b.balance(), Tokens::whole(3));
    assert_eq!(
        log.take(),
        [Event::PolicyReset {
            policy: PolicyKind::RetryBudget,
            at: T0
        }]
    );
    assert!(
        !b.try_spend(T0, VerdictKind::Transient),
        "3 tokens, a retry costs 5"
    );
}

#[test]
fn ratio_budget_reset_forgets_retries_spent() {
    let config = RatioBudgetConfig {
        min_retries_per_window: 1,
        ..RatioBudgetConfig::default()
    };
    let b = RatioBudget::new(config).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    for _ in 0..10 {
        b.record_first_attempt(T0);
    }
    let granted = (0..10)
        .filter(|_| b.try_spend(T0, VerdictKind::Transient))
        .count();
    assert!(!b.try_spend(T0, VerdictKind::Transient));
    b.reset(&mut env);
    assert_eq!(b.counts(T0), (0, 0));
    assert_eq!(
        log.take(),
        [Event::PolicyReset {
            policy: PolicyKind::RetryBudget,
            at: T0
        }]
    );
    // Only the floor: the first attempts that earned `granted` retries are forgotten too.
    assert!(b.try_spend(T0, VerdictKind::Transient));
    assert!(
        !b.try_spend(T0, VerdictKind::Transient),
        "after {granted} before the reset"
    );
}

#[test]
fn retry_breaker_reset_retries_again() {
    let b: RetryBreaker = RetryBreaker::new(RetryBreakerConfig::DEFAULT).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    for _ in 0..20 {
        b.record_first_attempt(T0);
        b.record_unretried_failure(T0, VerdictKind::Transient);
    }
    assert!(!b.try_spend(T0, VerdictKind::Transient));
    b.reset(&mut env);
    assert!(b.try_spend(T0, VerdictKind::Transient));
    assert_eq!(
        log.take(),
        [Event::PolicyReset {
            policy: PolicyKind::RetryBudget,
            at: T0
        }]
    );
}

#[test]
fn rate_limiter_reset_fills_the_bucket_exactly() {
    let l = RateLimiter::new(RateLimitConfig::new(Rate::per_second(4))).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    for now in [
        T0,
        Instant::from_secs(3 * 365 * 86_400),
        Instant::from_nanos(1 << 40),
    ] {
        let mut env = Env::new(now, &mut rng).with_observer(&log);
        while l.try_acquire(now).is_ok() {}
        assert_eq!(
            l.try_acquire(now).unwrap_err().reason(),
            RejectReason::RateLimited
        );
        l.reset(&mut env);
        assert_eq!(l.available(now), 4, "at {now:?}");
        for _ in 0..4 {
            l.try_acquire(now).unwrap();
        }
        assert!(l.try_acquire(now).is_err(), "the burst, not more");
        assert_eq!(
            log.take(),
            [Event::PolicyReset {
                policy: PolicyKind::RateLimiter,
                at: now
            }]
        );
    }
}

#[test]
fn rate_limiter_reset_keeps_the_reconfigured_rate() {
    let l = RateLimiter::new(RateLimitConfig::new(Rate::per_second(4))).unwrap();
    let mut rng = SeededRandom::new(1);
    l.reconfigure(
        RateLimitConfig::new(Rate::per_second(10)),
        &mut Env::new(T0, &mut rng),
    )
    .unwrap();
    while l.try_acquire(T0).is_ok() {}
    l.reset(&mut Env::new(T0, &mut rng));
    assert_eq!(l.available(T0), 10);
    assert_eq!(l.burst(), 10);
}

/// AIMD backs off on drops; a reset puts the initial limit back and reports both the limit's
/// change and the reset, and keeps the call in flight counted.
#[test]
fn limiter_reset_returns_to_the_initial_limit_and_keeps_calls_in_flight() {
    let l = Limiter::new(LimiterConfig {
        initial_limit: 20,
        min_limit: 1,
        ..LimiterConfig::aimd()
    })
    .unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    let mut now = T0;
    while l.limit() == 20 {
        env.now = now;
        let p = l.admit(&mut env).unwrap();
        now = now + Duration::from_millis(200);
        env.now = now;
        p.settle(&Verdict::Timeout, &mut env);
        assert!(now < T0 + Duration::from_secs(60), "AIMD never backed off");
    }
    let learned = l.limit();
    assert!(learned < 20);
    let held = l.admit(&mut env).unwrap();
    log.take();
    l.reset(&mut env).unwrap();
    assert_eq!(l.limit(), 20);
    assert_eq!(
        l.baseline().as_micros(),
        0,
        "the baseline is measured again"
    );
    assert_eq!(l.in_flight(), 1);
    assert_eq!(
        log.take(),
        [
            Event::LimitChanged {
                from: learned,
                to: 20
            },
            Event::PolicyReset {
                policy: PolicyKind::Limiter,
                at: now
            }
        ]
    );
    // The held call settles into the new window, and gives its slot back.
    held.settle(&Verdict::Success, &mut env);
    assert_eq!(l.in_flight(), 0);
    // A reset at the initial limit reports only the reset.
    l.reset(&mut env).unwrap();
    assert_eq!(
        log.take(),
        [Event::PolicyReset {
            policy: PolicyKind::Limiter,
            at: now
        }]
    );
}
