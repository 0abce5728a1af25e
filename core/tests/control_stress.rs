//! Operator controls racing many threads' admits and settles: no control leaks a permit or a
//! slot, no cap is passed, and a reset always ends in the clean state.
//!
//! * breaker: resets and forced opens while calls (and half-open probes) run: once every
//!   permit has settled or dropped, no probe is held and a final reset admits at once;
//! * limiter: resets while calls run: in-flight never passes the limit at admission and is
//!   zero at the end, the limit stays within its bounds;
//! * rate limiter: at one instant, R resets give at most `burst × (R + 1)` cells, and a
//!   reset after the storm leaves exactly the burst;
//! * token bucket: resets while spends and deposits run: the balance stays within capacity
//!   and a reset after the storm leaves exactly the initial balance.
#![cfg(not(loom))]

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;

use core::time::Duration;
use resilix::Verdict;
use resilix::VerdictKind;
use resilix::breaker::{Breaker, CircuitState, Config};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RetryBudget, TokenBucket, Tokens};
use resilix::time::Instant;

const THREADS: u64 = 4;
const ROUNDS: u32 = 20_000;

fn verdict(rng: &mut SeededRandom) -> Verdict {
    match rng.below(3) {
        0 => Verdict::Success,
        1 => Verdict::Transient,
        _ => Verdict::Timeout,
    }
}

#[test]
fn breaker_controls_racing_calls_leak_no_probe() {
    let config = Config {
        minimum_calls: 2,
        open_jitter_percent: 0,
        open_wait: Duration::from_micros(1),
        half_open_probes: 3,
        probes_to_close: 2,
        ..Config::DEFAULT
    };
    let breaker = Breaker::new(config).unwrap();
    let barrier = Barrier::new(THREADS as usize + 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (breaker, barrier) = (&breaker, &barrier);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                barrier.wait();
                for i in 0..ROUNDS {
                    let mut env = Env::new(Instant::from_micros(i as u64), &mut rng);
                    if let Ok(p) = breaker.admit(&mut env) {
                        if env.rng.below(4) == 0 {
                            drop(p); // cancelled: a probe's slot comes back
                        } else {
                            let v = verdict(env.rng);
                            env.now = Instant::from_micros(i as u64 + 1);
                            p.settle(&v, &mut env);
                        }
                    }
                }
            });
        }
        let (breaker, barrier) = (&breaker, &barrier);
        s.spawn(move || {
            let mut rng = SeededRandom::new(99);
            barrier.wait();
            for i in 0..3_000u64 {
                let mut env = Env::new(Instant::from_micros(i * 7), &mut rng);
                match i % 3 {
                    0 => breaker.force_open(&mut env),
                    _ => breaker.reset(&mut env),
                }
                thread::yield_now();
            }
        });
    });
    assert_eq!(
        breaker.probes_in_flight(),
        0,
        "every probe settled or dropped"
    );
    let mut rng = SeededRandom::new(7);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    breaker.reset(&mut env);
    assert_eq!(breaker.state(), CircuitState::Closed);
    let p = breaker.admit(&mut env).expect("a reset breaker admits");
    assert!(!p.is_probe());
    p.settle(&Verdict::Success, &mut env);
}

#[test]
fn limiter_resets_racing_calls_keep_in_flight_exact() {
    let config = LimiterConfig {
        initial_limit: 8,
        min_limit: 1,
        max_limit: 16,
        window_samples: 4,
        min_window: Duration::from_micros(10),
        max_window: Duration::from_micros(10),
        min_rtt: Duration::ZERO,
        ..LimiterConfig::aimd()
    };
    let limiter = Limiter::new(config).unwrap();
    let barrier = Barrier::new(THREADS as usize + 1);
    let over = AtomicU32::new(0);
    let resets = AtomicU32::new(0);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (limiter, barrier, over) = (&limiter, &barrier, &over);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                barrier.wait();
                let mut held = Vec::new();
                for i in 0..ROUNDS {
                    let mut env = Env::new(Instant::from_micros(i as u64), &mut rng);
                    if let Ok(p) = limiter.admit(&mut env) {
                        if p.in_flight_at_admission() > p.limit_at_admission() {
                            over.fetch_add(1, Ordering::Relaxed);
                        }
                        held.push(p);
                    }
                    if held.len() > 2 || env.rng.below(2) == 0 {
                        while let Some(p) = held.pop() {
                            let v = verdict(env.rng);
                            env.now = Instant::from_micros(i as u64 + 3);
                            p.settle(&v, &mut env);
                        }
                    }
                }
            });
        }
        let (limiter, barrier, resets) = (&limiter, &barrier, &resets);
        s.spawn(move || {
            let mut rng = SeededRandom::new(99);
            barrier.wait();
            for i in 0..2_000u64 {
                let mut env = Env::new(Instant::from_micros(i * 10), &mut rng);
                if limiter.reset(&mut env).is_ok() {
                    resets.fetch_add(1, Ordering::Relaxed);
                }
                thread::yield_now();
            }
        });
    });
    assert_eq!(over.load(Ordering::Relaxed), 0, "never above the limit");
    assert_eq!(limiter.in_flight(), 0, "no reset leaked an in-flight slot");
    assert!((1..=16).contains(&limiter.limit()));
    assert!(resets.load(Ordering::Relaxed) > 0);
    let mut rng = SeededRandom::new(1);
    limiter
        .reset(&mut Env::new(Instant::from_secs(1), &mut rng))
        .unwrap();
    assert_eq!(limiter.limit(), 8);
}

#[test]
fn rate_limiter_resets_bound_the_cells_exactly() {
    const BURST: u32 = 16;
    const RESETS: u32 = 50;
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(BURST))).unwrap();
    let now = Instant::from_secs(1_000);
    let barrier = Barrier::new(THREADS as usize + 1);
    let granted = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            let (limiter, barrier, granted) = (&limiter, &barrier, &granted);
            s.spawn(move || {
                barrier.wait();
                for _ in 0..ROUNDS {
                    if limiter.try_acquire(now).is_ok() {
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        let (limiter, barrier) = (&limiter, &barrier);
        s.spawn(move || {
            let mut rng = SeededRandom::new(99);
            barrier.wait();
            for _ in 0..RESETS {
                limiter.reset(&mut Env::new(now, &mut rng));
                thread::yield_now();
            }
        });
    });
    let granted = granted.load(Ordering::Relaxed);
    assert!(granted >= BURST, "{granted}");
    assert!(
        granted <= BURST * (RESETS + 1),
        "{granted} cells from {RESETS} resets of a burst of {BURST}"
    );
    let mut rng = SeededRandom::new(1);
    limiter.reset(&mut Env::new(now, &mut rng));
    assert_eq!(limiter.available(now), BURST);
}

#[test]
fn token_bucket_resets_racing_spends_end_at_the_initial_balance() {
    let bucket = TokenBucket::aws_sdk_standard();
    let capacity = bucket.config().capacity;
    let barrier = Barrier::new(THREADS as usize + 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (bucket, barrier) = (&bucket, &barrier);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                barrier.wait();
                for _ in 0..ROUNDS {
                    if rng.below(2) == 0 {
                        bucket.try_spend(Instant::ZERO, VerdictKind::Transient);
                    } else {
                        bucket.record_success(Instant::ZERO, None);
                    }
                    assert!(bucket.balance() <= capacity);
                }
            });
        }
        let (bucket, barrier) = (&bucket, &barrier);
        s.spawn(move || {
            let mut rng = SeededRandom::new(99);
            barrier.wait();
            for _ in 0..1_000 {
                bucket.reset(&mut Env::new(Instant::ZERO, &mut rng));
                thread::yield_now();
            }
        });
    });
    let mut rng = SeededRandom::new(1);
    bucket.reset(&mut Env::new(Instant::ZERO, &mut rng));
    assert_eq!(bucket.balance(), Tokens::whole(500));
}
