//! Model-checks the hedge's local cap, the one counter that must be exact: racing polls never
//! send more hedges than it holds, a hedge the shared budget refuses goes back in full, and
//! the books balance whatever the interleaving.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_hedge`
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use resilix::call::CallOptions;
use resilix::hedge::{BudgetAccounting, Hedge, HedgeConfig, HedgeRefusal, NextCopy};
use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig, Tokens, Unlimited};
use resilix::time::Instant;

const T0: Instant = Instant::from_secs(1);
const DUE: Instant = Instant::from_millis(1_001);

fn config(burst: u32) -> HedgeConfig {
    HedgeConfig {
        fixed_delay: Some(Duration::from_millis(1)),
        burst,
        accounting: BudgetAccounting::SpendOnly,
        ..HedgeConfig::DEFAULT
    }
}

/// A bucket with room for `hedges` hedges (each charged as a retry after a timeout: 10).
fn bucket(hedges: u32) -> TokenBucket {
    TokenBucket::new(TokenBucketConfig {
        initial: Tokens::whole(10 * hedges),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap()
}

fn idem() -> CallOptions {
    CallOptions::default().idempotent(true)
}

/// One hedge in the local cap, two calls due at once: exactly one copy leaves.
#[test]
fn two_polls_one_local_hedge() {
    loom::model(|| {
        let h = Arc::new(Hedge::new(config(1), Unlimited).unwrap());
        let (mut a, mut b) = (h.begin(T0, idem()), h.begin(T0, idem()));
        let h2 = h.clone();
        let t = thread::spawn(move || b.poll(&h2, DUE, &()));
        let mine = a.poll(&h, DUE, &());
        let theirs = t.join().unwrap();
        let sent = [mine, theirs]
            .iter()
            .filter(|n| matches!(n, NextCopy::Send { .. }))
            .count();
        assert_eq!(sent, 1, "{mine:?} {theirs:?}");
        assert!(
            [mine, theirs].contains(&NextCopy::Refused(HedgeRefusal::LocalCap)),
            "{mine:?} {theirs:?}"
        );
        assert_eq!(h.local_balance_milli(), 0);
    });
}

/// The shared budget refuses; the refund races another call's earning: the cap ends full,
/// never above it, never short.
#[test]
fn refund_races_an_earning() {
    loom::model(|| {
        let budget: &'static TokenBucket = Box::leak(Box::new(bucket(0)));
        let h = Arc::new(Hedge::new(config(2), budget).unwrap());
        let mut a = h.begin(T0, idem());
        let h2 = h.clone();
        let t = thread::spawn(move || {
            let _b = h2.begin(T0, idem());
        });
        assert_eq!(
            a.poll(&h, DUE, &()),
            NextCopy::Refused(HedgeRefusal::Budget)
        );
        t.join().unwrap();
        assert_eq!(h.local_balance_milli(), 2_000);
    });
}

/// Two local hedges, one in the shared budget: one copy leaves, the other is refused by the
/// budget and its local hedge comes back.
#[test]
fn local_and_shared_limits_together() {
    loom::model(|| {
        let budget: &'static TokenBucket = Box::leak(Box::new(bucket(1)));
        let h = Arc::new(Hedge::new(config(2), budget).unwrap());
        let (mut a, mut b) = (h.begin(T0, idem()), h.begin(T0, idem()));
        let h2 = h.clone();
        let t = thread::spawn(move || b.poll(&h2, DUE, &()));
        let mine = a.poll(&h, DUE, &());
        let theirs = t.join().unwrap();
        let mut got = [mine, theirs];
        got.sort_by_key(|n| matches!(n, NextCopy::Send { .. }));
        assert_eq!(
            got,
            [
                NextCopy::Refused(HedgeRefusal::Budget),
                NextCopy::Send { copy: 2 }
            ]
        );
        assert_eq!(h.local_balance_milli(), 1_000);
        assert!(!budget.try_spend(DUE, resilix::VerdictKind::Timeout));
    });
}
