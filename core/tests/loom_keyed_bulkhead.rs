//! Loom model of the keyed bulkhead's table: every interleaving of two callers of one key
//! against its cap, and of a call in flight with an evictor and a new key wanting the entry.
//! Per key, the calls in flight through its entry never exceed the cap; an entry with a permit
//! out is never evicted; every permit gives its slot back to the entry it came from.
//!
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p resilix --release --test loom_keyed_bulkhead
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};
use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};

const A: u64 = 1;
const B: u64 = 2;

fn table(cap: u32) -> KeyedBulkhead<1> {
    KeyedBulkhead::new(BulkheadConfig::new(cap).unwrap())
}

/// Calls in flight through A's own entry, counted beside the table around each permit.
fn enter(in_flight: &AtomicU32) {
    let n = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    assert!(n <= 1, "{n} calls in A's entry of cap 1");
}

#[test]
fn two_callers_of_one_key_never_exceed_its_cap() {
    loom::model(|| {
        let table = Arc::new(table(1));
        let in_flight = Arc::new(AtomicU32::new(0));
        let (t, f) = (table.clone(), in_flight.clone());
        let other = loom::thread::spawn(move || {
            if let Ok(p) = t.try_admit(A) {
                if !p.is_overflow() {
                    enter(&f);
                    assert_eq!(t.held(A), Some(1));
                    f.fetch_sub(1, Ordering::SeqCst);
                }
            }
        });
        if let Ok(p) = table.try_admit(A) {
            if !p.is_overflow() {
                enter(&in_flight);
                assert_eq!(table.held(A), Some(1));
                in_flight.fetch_sub(1, Ordering::SeqCst);
            }
        }
        other.join().unwrap();
        assert_eq!(table.held(A), Some(0));
        assert_eq!(table.overflow().held(), 0);
    });
}

#[test]
fn an_evictor_never_evicts_an_entry_with_a_permit_out() {
    loom::model(|| {
        let table = Arc::new(table(1));
        let t = table.clone();
        let other = loom::thread::spawn(move || {
            t.evict_idle();
            if let Ok(b) = t.try_admit(B) {
                if !b.is_overflow() {
                    // B holds the one entry: A cannot be in it.
                    assert!(t.placed(B) && !t.placed(A), "two keys in one entry");
                }
            }
        });
        let p = table.try_admit(A).unwrap();
        if !p.is_overflow() {
            assert!(table.placed(A), "evicted with a call in flight");
            assert_eq!(table.held(A), Some(1));
        }
        let a_own = !p.is_overflow();
        other.join().unwrap();
        if a_own {
            // A's permit is still out, whatever the evictor and B did.
            assert!(table.placed(A) && !table.placed(B));
            assert_eq!(table.held(A), Some(1));
        }
        drop(p);
        // Every slot went back where it came from.
        assert_eq!(table.overflow().held(), 0);
        assert!(table.held(A).unwrap_or(0) == 0 && table.held(B).unwrap_or(0) == 0);
        assert_eq!(table.len(), 1);
    });
}

/// Two first callers of one key, in a table with room for two entries: the key is placed
/// once. The table's writer flag is what stops the second caller from placing it again in
/// the other free entry while the first is still writing its own (it is served by the
/// overflow instead, or finds the first one's entry once written).
#[test]
fn two_first_callers_of_one_key_place_it_once() {
    loom::model(|| {
        let table: Arc<KeyedBulkhead<2>> =
            Arc::new(KeyedBulkhead::new(BulkheadConfig::new(2).unwrap()));
        let t = table.clone();
        let other = loom::thread::spawn(move || drop(t.try_admit(A)));
        drop(table.try_admit(A));
        other.join().unwrap();
        assert_eq!(table.len(), 1, "key A placed in more than one entry");
        assert_eq!(table.held(A), Some(0));
    });
}
