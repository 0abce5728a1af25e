//! Loom models of the operator controls that must be exact under concurrency: every
//! interleaving of a reset with the policy's own hot path.
//!
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p resilix --release --test loom_control
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig, Tokens};
use resilix::time::Instant;
use resilix::{Verdict, VerdictKind};

/// A reset and an admission on an empty bucket of one: the admission lands wholly before the
/// reset (refused, and the bucket is full after) or wholly after (admitted, and the bucket is
/// empty after). Never both a cell admitted and a full bucket, never a half-written TAT.
#[test]
fn a_reset_racing_an_admission_is_one_or_the_other() {
    loom::model(|| {
        let config = RateLimitConfig::new(Rate::one_every(Duration::from_nanos(1 << 20)));
        let limiter = Arc::new(RateLimiter::new(config).unwrap());
        let now = Instant::from_secs(1);
        limiter.try_acquire(now).unwrap();
        let l = limiter.clone();
        let admit = loom::thread::spawn(move || l.try_acquire(now).is_ok());
        let mut rng = SeededRandom::new(1);
        limiter.reset(&mut Env::new(now, &mut rng));
        let admitted = admit.join().unwrap();
        assert_eq!(
            limiter.available(now),
            u32::from(!admitted),
            "admitted {admitted}"
        );
    });
}

/// A reset of a token bucket and a spend: the balance afterwards is the initial balance, or
/// the initial balance less one retry's cost (the spend landed after the reset).
#[test]
fn a_bucket_reset_racing_a_spend_is_one_or_the_other() {
    loom::model(|| {
        let config = TokenBucketConfig {
            initial: Tokens::whole(10),
            ..TokenBucketConfig::AWS_SDK_STANDARD
        };
        let bucket = Arc::new(TokenBucket::new(config).unwrap());
        let b = bucket.clone();
        let spend = loom::thread::spawn(move || b.try_spend(Instant::ZERO, VerdictKind::Transient));
        let mut rng = SeededRandom::new(1);
        bucket.reset(&mut Env::new(Instant::ZERO, &mut rng));
        let granted = spend.join().unwrap();
        let balance = bucket.balance();
        assert!(granted, "10 tokens always pay for a retry of 5");
        assert!(
            balance == Tokens::whole(10) || balance == Tokens::whole(5),
            "{balance:?}"
        );
    });
}

/// A limiter reset racing a settle that closes a window: the limit has one writer at a time
/// (the reset says Busy, or the closer skips), every slot comes back, and the limit ends at
/// the initial one or at one step from it.
#[test]
fn a_limiter_reset_racing_a_closing_settle_leaks_no_slot() {
    loom::model(|| {
        let config = LimiterConfig {
            initial_limit: 4,
            min_limit: 1,
            max_limit: 8,
            window_samples: 1,
            min_window: Duration::from_nanos(1),
            max_window: Duration::from_nanos(1),
            min_rtt: Duration::ZERO,
            ..LimiterConfig::aimd()
        };
        let limiter = Arc::new(Limiter::new(config).unwrap());
        let l = limiter.clone();
        let settle = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            let mut env = Env::new(Instant::from_secs(1), &mut rng);
            let p = l.admit(&mut env).unwrap();
            env.now = Instant::from_secs(2);
            p.settle(&Verdict::Timeout, &mut env);
        });
        let mut rng = SeededRandom::new(1);
        let reset = limiter.reset(&mut Env::new(Instant::from_secs(1), &mut rng));
        settle.join().unwrap();
        assert_eq!(limiter.in_flight(), 0);
        let limit = limiter.limit();
        assert!(limit == 4 || limit == 3, "limit {limit}, reset {reset:?}");
    });
}

/// A breaker reset racing a half-open probe's failure: whichever lands first, the breaker
/// ends closed with no probe held. A failure that lands after the reset is late (its epoch
/// is gone) and cannot re-open the fresh circuit.
#[test]
fn a_breaker_reset_racing_a_failing_probe_ends_closed() {
    use resilix::breaker::{Breaker, CircuitState, Config};

    loom::model(|| {
        let config = Config {
            minimum_calls: 1,
            open_jitter_percent: 0,
            ..Config::DEFAULT
        };
        let breaker = Arc::new(Breaker::new(config).unwrap());
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        breaker
            .admit(&mut env)
            .unwrap()
            .settle(&Verdict::Transient, &mut env);
        env.now = Instant::from_secs(6);
        let probe = breaker.admit(&mut env).unwrap();
        assert!(probe.is_probe());
        let b = breaker.clone();
        let reset = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            b.reset(&mut Env::new(Instant::from_secs(6), &mut rng));
        });
        probe.settle(&Verdict::Transient, &mut env);
        reset.join().unwrap();
        assert_eq!(breaker.state(), CircuitState::Closed);
        assert_eq!(breaker.probes_in_flight(), 0);
    });
}
