//! Model-checks the retry budgets: every interleaving of two threads' withdrawals and
//! deposits keeps the token bucket's books exact and never overspends either budget.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_budget`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;

use core::time::Duration;
use resilix::VerdictKind;

use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig, Tokens,
};
use resilix::time::Instant;

fn bucket(initial: u32) -> TokenBucket {
    TokenBucket::new(TokenBucketConfig {
        capacity: Tokens::whole(20),
        initial: Tokens::whole(initial),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap()
}

/// Enough for exactly one retry: two racing withdrawals, one wins, one is refused, nothing lost.
#[test]
fn two_withdrawals_one_retry_left() {
    loom::model(|| {
        let b = Arc::new(bucket(5));
        let b2 = b.clone();
        let t = thread::spawn(move || b2.try_spend(Instant::ZERO, VerdictKind::Transient));
        let mine = b.try_spend(Instant::ZERO, VerdictKind::Transient);
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs, "exactly one granted: {mine} {theirs}");
        assert_eq!(b.balance(), Tokens::ZERO);
    });
}

/// A deposit racing two withdrawals: the balance is exact whatever the order.
#[test]
fn deposit_races_withdrawals() {
    loom::model(|| {
        let b = Arc::new(bucket(6));
        let b2 = b.clone();
        let t = thread::spawn(move || {
            b2.record_success(Instant::ZERO, None); // +1
            b2.try_spend(Instant::ZERO, VerdictKind::Transient) as u32
        });
        let mine = b.try_spend(Instant::ZERO, VerdictKind::Transient) as u32;
        let granted = mine + t.join().unwrap();
        assert!(granted >= 1);
        assert_eq!(b.balance().as_milli(), 7_000 - granted * 5_000);
    });
}

/// gRPC mode: every failure is charged, a grant needs the balance after the charge above half.
#[test]
fn grpc_charges_race_exactly() {
    loom::model(|| {
        let b = Arc::new(TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap());
        let b2 = b.clone();
        let t = thread::spawn(move || {
            b2.record_unretried_failure(Instant::ZERO, VerdictKind::Transient);
            b2.try_spend(Instant::ZERO, VerdictKind::Transient) as u32
        });
        let mine = b.try_spend(Instant::ZERO, VerdictKind::Transient) as u32;
        let granted = mine + t.join().unwrap();
        assert_eq!(b.balance(), Tokens::whole(7));
        assert_eq!(
            granted, 2,
            "10 → 9 → 8 → 7: each spend sees at least 7 left"
        );
    });
}

/// The ratio budget's bounded increment: with room for one retry, two racing spends grant one.
/// (One bucket keeps the model small; the compare-and-swap is the same for any bucket count.)
#[test]
fn ratio_budget_two_spends_one_allowed() {
    loom::model(|| {
        let b: Arc<RatioBudget<1>> = Arc::new(
            RatioBudget::with_buckets(RatioBudgetConfig {
                max_retry_permille: 100,
                min_retries_per_window: 1,
                window: Duration::from_secs(10),
            })
            .unwrap(),
        );
        let b2 = b.clone();
        let now = Instant::from_secs(1);
        let t = thread::spawn(move || b2.try_spend(now, VerdictKind::Transient));
        let mine = b.try_spend(now, VerdictKind::Transient);
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs, "exactly one granted: {mine} {theirs}");
        assert_eq!(b.counts(now), (0, 1));
    });
}

/// The same across a bucket boundary: two spends in adjacent periods (each may move the
/// window into its own), with room for one retry in a window that holds both periods. Every
/// spender compare-and-swaps the one running sum of retries, so exactly one is granted
/// whichever moves first, and both periods' windows count that one.
#[test]
fn ratio_budget_two_spends_in_adjacent_periods_one_allowed() {
    loom::model(|| {
        let b: Arc<RatioBudget<2>> = Arc::new(
            RatioBudget::with_buckets(RatioBudgetConfig {
                max_retry_permille: 100,
                min_retries_per_window: 1,
                window: Duration::from_secs(2),
            })
            .unwrap(),
        );
        let b2 = b.clone();
        let (early, late) = (Instant::from_millis(1_500), Instant::from_millis(2_500));
        let t = thread::spawn(move || b2.try_spend(late, VerdictKind::Transient));
        let mine = b.try_spend(early, VerdictKind::Transient);
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs, "exactly one granted: {mine} {theirs}");
        assert_eq!(b.counts(late), (0, 1));
    });
}
