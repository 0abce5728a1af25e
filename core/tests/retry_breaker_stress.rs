//! The retry breaker under contention: many threads on one instance in one bucket period.
//! Its counts are exact (every first attempt, failure and granted retry is in the window, none
//! lost or doubled); a breaker tripped before the race refuses every retry in it; an untripped
//! one with room to spare grants every retry.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;

use resilix::VerdictKind;
use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig, RetryBudget};
use resilix::time::Instant;

const THREADS: u32 = 8;
const TRIES: u32 = 5_000;
const NOW: Instant = Instant::from_secs(3);

fn breaker() -> RetryBreaker {
    RetryBreaker::new(RetryBreakerConfig::BROOKER_2022).unwrap()
}

#[test]
fn counts_are_exact_under_contention() {
    for round in 0..10 {
        let b = breaker();
        let granted = AtomicU32::new(0);
        let asked = AtomicU32::new(0);
        thread::scope(|s| {
            for t in 0..THREADS {
                let (b, granted, asked) = (&b, &granted, &asked);
                s.spawn(move || {
                    for i in 0..TRIES {
                        match (i + t) % 4 {
                            0 | 1 => b.record_first_attempt(NOW),
                            2 => b.record_unretried_failure(NOW, VerdictKind::Timeout),
                            _ => {
                                asked.fetch_add(1, Ordering::Relaxed);
                                if b.try_spend(NOW, VerdictKind::Transient) {
                                    granted.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                });
            }
        });
        let (granted, asked) = (granted.into_inner(), asked.into_inner());
        let quarter = THREADS * TRIES / 4;
        assert_eq!(asked, quarter);
        assert_eq!(
            b.counts(NOW),
            (2 * quarter + granted, 2 * quarter),
            "round {round}: every attempt and failure counted once ({granted} granted)"
        );
        // Failures are half of all recorded events and a quarter of them are asked to retry:
        // the rate sits far above 10% for most of the race, so most asks are refused.
        assert!(granted < asked / 2, "round {round}: {granted} of {asked}");
    }
}

#[test]
fn a_tripped_breaker_refuses_every_racing_retry() {
    let b = breaker();
    for _ in 0..100 {
        b.record_first_attempt(NOW);
        b.record_unretried_failure(NOW, VerdictKind::Transient);
    }
    let granted = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let mine = (0..TRIES)
                    .filter(|_| b.try_spend(NOW, VerdictKind::Transient))
                    .count() as u32;
                granted.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(granted.into_inner(), 0);
    assert_eq!(b.counts(NOW), (100, 100 + THREADS * TRIES));
}

#[test]
fn a_healthy_breaker_grants_every_racing_retry() {
    let b = breaker();
    // Ten first attempts for every retry to come.
    let healthy = 1_000 * THREADS * TRIES / 100;
    for _ in 0..healthy {
        b.record_first_attempt(NOW);
    }
    let granted = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let mine = (0..TRIES)
                    .filter(|_| b.try_spend(NOW, VerdictKind::Transient))
                    .count() as u32;
                granted.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    // At most 40,000 failures in at least 400,000 attempts: 10% at the very end.
    assert_eq!(granted.into_inner(), THREADS * TRIES);
    assert_eq!(b.counts(NOW), (healthy + THREADS * TRIES, THREADS * TRIES));
}
