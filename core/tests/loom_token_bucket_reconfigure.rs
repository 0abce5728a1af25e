//! Model-checks `TokenBucket::reconfigure` (two settings slots, the slot in force named by
//! the balance word's top bit, switched with the carried-over balance in one compare-and-swap)
//! against spends and deposits.
//!
//! What must hold in every interleaving: a spend or deposit racing a change runs wholly under
//! the old settings or wholly under the new ones; the balance is neither created nor lost
//! across a change (only a lowered capacity clamps it, and then it ends exactly at the new
//! capacity, never above it); of two reconfigurations racing, each applies or is refused
//! `Busy`, at least one applies, and what is in force is one that applied.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_token_bucket_reconfigure`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;

use resilix::VerdictKind;
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::retry::budget::{
    RetryBudget, TokenBucket, TokenBucketConfig, TokenBucketReconfigureError, Tokens,
};
use resilix::time::Instant;

/// Every interleaving with up to three preemptions (as `loom_settings`).
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

const NOW: Instant = Instant::ZERO;
const T: VerdictKind = VerdictKind::Transient;

/// Capacity 20, starting at `initial`, a retry costing `cost`, a first-try success
/// depositing one token.
fn config(capacity: u32, initial: u32, cost: u32) -> TokenBucketConfig {
    TokenBucketConfig {
        capacity: Tokens::whole(capacity),
        initial: Tokens::whole(initial),
        retry_cost: Tokens::whole(cost),
        timeout_retry_cost: Tokens::whole(cost),
        first_try_success: Tokens::whole(1),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    }
}

fn reconfigure(b: &TokenBucket, c: TokenBucketConfig) -> Result<(), TokenBucketReconfigureError> {
    let mut rng = SeededRandom::new(1);
    b.reconfigure(c, &mut Env::new(NOW, &mut rng))
}

/// 10 tokens; a spend at cost 5 races a change to cost 3: it is granted and pays one of the
/// two costs, whole: 5 or 7 left, nothing else.
#[test]
fn a_spend_racing_a_change_pays_one_config_cost() {
    model(|| {
        let b = Arc::new(TokenBucket::new(config(20, 10, 5)).unwrap());
        let spender = {
            let b = b.clone();
            thread::spawn(move || b.try_spend(NOW, T))
        };
        reconfigure(&b, config(20, 10, 3)).unwrap();
        assert!(spender.join().unwrap(), "10 tokens pay either cost");
        let left = b.balance();
        assert!(
            left == Tokens::whole(5) || left == Tokens::whole(7),
            "{left:?}"
        );
        assert_eq!(b.config(), config(20, 10, 3));
    });
}

/// 8 tokens, capacity 20 lowered to 8 while a success deposits one: before the change the
/// deposit lands (9) and is clamped; after it, there is no room. Either way exactly 8: a
/// deposit computed under the old capacity never lands after the change.
#[test]
fn a_deposit_racing_a_lowered_capacity_never_ends_above_it() {
    model(|| {
        let b = Arc::new(TokenBucket::new(config(20, 8, 5)).unwrap());
        let depositor = {
            let b = b.clone();
            thread::spawn(move || b.record_success(NOW, None))
        };
        reconfigure(&b, config(8, 8, 5)).unwrap();
        depositor.join().unwrap();
        assert_eq!(b.balance(), Tokens::whole(8));
    });
}

/// 10 tokens, a spend (cost 5) and a deposit (1) on two threads while the main thread raises
/// the capacity: nothing is clamped, so the books are exact: 10 − 5 + 1.
#[test]
fn spends_and_deposits_across_a_raise_keep_the_books() {
    model(|| {
        let b = Arc::new(TokenBucket::new(config(10, 10, 5)).unwrap());
        let spender = {
            let b = b.clone();
            thread::spawn(move || assert!(b.try_spend(NOW, T)))
        };
        let depositor = {
            let b = b.clone();
            thread::spawn(move || b.record_success(NOW, None))
        };
        reconfigure(&b, config(20, 10, 5)).unwrap();
        spender.join().unwrap();
        depositor.join().unwrap();
        // The deposit may land before the spend, on a full bucket of capacity 10 (nothing
        // added) or after the raise: 5 or 6, never more, never less.
        let left = b.balance();
        assert!(
            left == Tokens::whole(6) || left == Tokens::whole(5),
            "{left:?}"
        );
    });
}

#[test]
fn two_racing_reconfigurations_apply_or_are_refused_busy() {
    model(|| {
        let b = Arc::new(TokenBucket::new(config(20, 20, 5)).unwrap());
        let other = {
            let b = b.clone();
            thread::spawn(move || reconfigure(&b, config(12, 12, 5)))
        };
        let mine = reconfigure(&b, config(15, 15, 3));
        let theirs = other.join().unwrap();
        for r in [mine, theirs] {
            assert!(
                matches!(r, Ok(()) | Err(TokenBucketReconfigureError::Busy)),
                "{r:?}"
            );
        }
        assert!(mine.is_ok() || theirs.is_ok(), "both refused");
        let c = b.config();
        assert!(
            (c == config(15, 15, 3) && mine.is_ok()) || (c == config(12, 12, 5) && theirs.is_ok()),
            "in force {c:?}"
        );
        assert!(b.balance() <= c.capacity);
        if mine.is_ok() && theirs.is_ok() {
            assert_eq!(b.balance(), Tokens::whole(12), "both clamps applied");
        }
    });
}
