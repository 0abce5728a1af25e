//! Concurrent withdrawals never overspend a shared budget: many threads hammer one instance
//! and the grants are counted exactly.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use core::time::Duration;

use resilix::VerdictKind;
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig, Tokens,
};
use resilix::time::Instant;

const THREADS: usize = 8;
const TRIES: usize = 5_000;

fn hammer<B: RetryBudget + Sync>(budget: &B, now: Instant, kind: VerdictKind) -> u64 {
    let granted = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let mine = (0..TRIES).filter(|_| budget.try_spend(now, kind)).count();
                granted.fetch_add(mine as u64, Ordering::Relaxed);
            });
        }
    });
    granted.into_inner()
}

#[test]
fn aws_quota_grants_exactly_100_retries_under_contention() {
    for round in 0..20 {
        let b = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
        assert_eq!(
            hammer(&b, Instant::ZERO, VerdictKind::Transient),
            100,
            "round {round}"
        );
        assert_eq!(b.balance(), Tokens::ZERO);
    }
}

#[test]
fn grpc_bucket_grants_exactly_4_retries_under_contention() {
    for round in 0..20 {
        let b = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
        assert_eq!(
            hammer(&b, Instant::ZERO, VerdictKind::Overload),
            4,
            "round {round}"
        );
        assert_eq!(
            b.balance(),
            Tokens::ZERO,
            "every failure charged, down to zero"
        );
    }
}

/// Deposits and withdrawals interleaved: the books balance to the thousandth of a token.
#[test]
fn deposits_and_withdrawals_balance_exactly() {
    let b = TokenBucket::new(TokenBucketConfig {
        initial: Tokens::ZERO,
        capacity: Tokens::whole(1_000_000),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let granted = AtomicU64::new(0);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (b, granted) = (&b, &granted);
            s.spawn(move || {
                for i in 0..TRIES {
                    if (i + t) % 3 == 0 {
                        b.record_success(Instant::ZERO, None); // +1 token
                    } else if b.try_spend(Instant::ZERO, VerdictKind::Transient) {
                        granted.fetch_add(1, Ordering::Relaxed); // −5 tokens
                    }
                }
            });
        }
    });
    let deposits: u64 = (0..THREADS)
        .map(|t| (0..TRIES).filter(|i| (i + t) % 3 == 0).count() as u64)
        .sum();
    let granted = granted.into_inner();
    let balance = u64::from(b.balance().as_milli());
    assert_eq!(balance, deposits * 1_000 - granted * 5_000);
    assert!(
        granted * 5 <= deposits,
        "never spent more than was deposited"
    );
}

#[test]
fn the_ratio_budget_never_overspends_within_a_bucket() {
    for round in 0..20 {
        let b: RatioBudget = RatioBudget::new(RatioBudgetConfig {
            window: Duration::from_secs(10),
            ..RatioBudgetConfig::DEFAULT
        })
        .unwrap();
        let now = Instant::from_millis(1_500);
        for _ in 0..2_000 {
            b.record_first_attempt(now);
        }
        assert_eq!(
            hammer(&b, now, VerdictKind::Transient),
            200,
            "round {round}"
        );
        assert_eq!(b.counts(now), (2_000, 200));
    }
}

/// First attempts and retries racing: at every grant the retries stayed within 10% of the
/// first attempts recorded so far (checked at the end, when all first attempts are in).
#[test]
fn the_ratio_budget_with_first_attempts_racing_retries() {
    let b: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let now = Instant::from_millis(1_500);
    thread::scope(|s| {
        for t in 0..THREADS {
            let b = &b;
            s.spawn(move || {
                for i in 0..TRIES {
                    if (i + t) % 2 == 0 {
                        b.record_first_attempt(now);
                    } else {
                        let _ = b.try_spend(now, VerdictKind::Transient);
                    }
                }
            });
        }
    });
    let (firsts, retries) = b.counts(now);
    assert_eq!(firsts as usize, THREADS * TRIES / 2);
    assert!(
        retries <= b.allowance(firsts),
        "{retries} > 10% of {firsts}"
    );
}
