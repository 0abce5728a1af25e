//! Loom model of the keyed retry budget: every interleaving of two retries asking a key's
//! budget and the shared one, and of a retry with `evict_idle`. A retry is granted only
//! within both budgets, and a reservation the shared budget refuses is always given back.
//!
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p resilix --release --test loom_keyed_budget
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use resilix::VerdictKind;
use resilix::retry::budget::{KeyedBudget, RatioBudget, RatioBudgetConfig, RetryBudget};
use resilix::time::Instant;

const T: VerdictKind = VerdictKind::Transient;

/// Only a floor of `floor` retries per window (one bucket keeps the model small; the
/// compare-and-swap is the same for any bucket count).
fn floor(floor: u32) -> RatioBudgetConfig {
    RatioBudgetConfig {
        max_retry_permille: 0,
        min_retries_per_window: floor,
        window: Duration::from_secs(10),
    }
}

type Table = KeyedBudget<2, RatioBudget<1>, 1>;

fn table(per_key: u32, shared: u32) -> Table {
    KeyedBudget::with_buckets(
        floor(per_key),
        RatioBudget::with_buckets(floor(shared)).unwrap(),
    )
    .unwrap()
}

/// One key with room for two, the shared budget for one: one retry is made, and the key's
/// books hold one, whichever reservation the shared budget refused and whenever it is given
/// back.
#[test]
fn a_shared_refusal_gives_the_reservation_back() {
    loom::model(|| {
        let t = Arc::new(table(2, 1));
        let now = Instant::from_secs(1);
        t.for_key(1).record_first_attempt(now); // placed before the race
        let t2 = t.clone();
        let other = loom::thread::spawn(move || t2.for_key(1).try_spend(now, T));
        let mine = t.for_key(1).try_spend(now, T);
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "exactly one granted: {mine} {theirs}");
        assert_eq!(
            t.counts(1, now),
            Some((1, 1)),
            "the refused reservation was given back"
        );
        assert_eq!(t.shared().counts(now), (1, 1));
    });
}

/// Two keys with room for one each, the shared budget for one: one retry in all.
#[test]
fn two_keys_share_one_shared_retry() {
    loom::model(|| {
        let t = Arc::new(table(1, 1));
        let now = Instant::from_secs(1);
        t.for_key(1).record_first_attempt(now);
        t.for_key(2).record_first_attempt(now);
        let t2 = t.clone();
        let other = loom::thread::spawn(move || t2.for_key(2).try_spend(now, T));
        let mine = t.for_key(1).try_spend(now, T);
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "exactly one granted: {mine} {theirs}");
        let books = |k| t.counts(k, now).unwrap().1;
        assert_eq!((books(1), books(2)), (u32::from(mine), u32::from(theirs)));
        assert_eq!(t.shared().counts(now).1, 1);
    });
}

/// A retry of a key with nothing in its window (idle) racing `evict_idle`: the retry is
/// granted, and its books are in the key's entry, or in the overflow if the evictor held the
/// table's writer flag when the key needed a new entry; an entry holding the retry is never
/// evicted.
#[test]
fn a_retry_racing_eviction_keeps_its_books() {
    loom::model(|| {
        let t = Arc::new(table(1, 1));
        let before = Instant::from_secs(100);
        assert!(t.for_key(1).try_spend(before, T)); // placed; idle again a window later
        assert_eq!(t.counts(1, before), Some((0, 1)));
        let later = Instant::from_secs(200);
        let t2 = t.clone();
        let evictor = loom::thread::spawn(move || t2.evict_idle(later));
        let granted = t.for_key(1).try_spend(later, T);
        let evicted = evictor.join().unwrap();
        assert!(granted, "a fresh window's floor");
        assert!(evicted <= 1);
        let books = t
            .counts(1, later)
            .unwrap_or_else(|| t.overflow().counts(later));
        assert_eq!(books, (0, 1), "evicted {evicted}, placed {}", t.placed(1));
        assert_eq!(t.evict_idle(later), 0, "the retry's entry is live");
    });
}
