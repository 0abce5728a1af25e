//! Placement, eviction and overflow of the keyed bulkhead.

use super::*;
use crate::random::SeededRandom;
use crate::time::Instant;

extern crate std;
use std::vec::Vec;

/// Keys whose candidate entries are all the same single entry of a one-entry table.
const A: u64 = 1;
const B: u64 = 2;
const C: u64 = 3;

fn cap(n: u32) -> BulkheadConfig {
    BulkheadConfig::new(n).unwrap()
}

#[test]
fn memory_per_key_is_a_tag_and_a_count() {
    use core::mem::size_of;
    assert_eq!(size_of::<Entry>(), 16);
    assert_eq!(size_of::<Entry>(), size_of::<Tag>() + size_of::<Slots>());
    // The table is its entries, the cap, the overflow bulkhead and the writer flag: nothing
    // per key but the entry, however many keys pass through.
    let overhead = size_of::<KeyedBulkhead<64>>() - 64 * size_of::<Entry>();
    assert!(overhead <= size_of::<Bulkhead>() + 8, "{overhead}");
}

#[test]
fn each_key_has_its_own_cap() {
    let t: KeyedBulkhead<8> = KeyedBulkhead::new(cap(2));
    let a: Vec<_> = (0..2).map(|_| t.try_admit(A).unwrap()).collect();
    assert_eq!(
        t.try_admit(A).unwrap_err().reason(),
        RejectReason::BulkheadFull
    );
    let b = t.try_admit(B).expect("B's cap is its own");
    assert!(!b.is_overflow() && !a[0].is_overflow());
    assert_eq!((a[0].held_at_admission(), a[1].held_at_admission()), (1, 2));
    assert_eq!((t.held(A), t.held(B), t.held(C)), (Some(2), Some(1), None));
    assert_eq!(t.len(), 2);
    drop(a);
    assert_eq!(t.held(A), Some(0));
    assert!(t.try_admit(A).is_ok(), "a freed slot is A's again");
}

#[test]
fn any_verdict_and_a_drop_give_the_slot_back() {
    let t: KeyedBulkhead<4> = KeyedBulkhead::new(cap(1));
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    for v in [
        Verdict::Success,
        Verdict::Transient,
        Verdict::Rejected(RejectReason::RateLimited),
    ] {
        let p = t.try_admit(A).unwrap();
        p.settle(&v, &mut env);
        assert_eq!(t.held(A), Some(0), "{v:?}");
    }
    drop(t.try_admit(A).unwrap());
    assert_eq!(t.held(A), Some(0));
}

#[test]
fn only_entries_with_nothing_in_flight_are_evicted() {
    let t: KeyedBulkhead<8> = KeyedBulkhead::new(cap(3));
    let busy = t.try_admit(A).unwrap();
    drop(t.try_admit(B).unwrap());
    assert_eq!(t.len(), 2);
    assert!(!t.is_empty());
    assert_eq!(t.evict_idle(), 1, "B had nothing in flight");
    assert!(t.placed(A) && !t.placed(B));
    assert_eq!(t.evict_idle(), 0, "A's call is in flight");
    drop(busy);
    assert_eq!(t.evict_idle(), 1);
    assert!(t.is_empty());
}

#[test]
fn a_call_in_flight_pins_its_entry_against_a_new_key() {
    let t: KeyedBulkhead<1> = KeyedBulkhead::new(cap(2));
    let a = t.try_admit(A).unwrap();
    let b = t.try_admit(B).unwrap();
    assert!(b.is_overflow(), "A's entry is pinned: B overflows");
    assert!(t.placed(A) && !t.placed(B));
    drop(a);
    // A is idle now: C takes its entry.
    let c = t.try_admit(C).unwrap();
    assert!(!c.is_overflow());
    assert!(t.placed(C) && !t.placed(A));
    drop(b);
    assert_eq!(t.overflow().held(), 0, "B's slot went back to the overflow");
    assert_eq!(t.held(C), Some(1), "and not to C's entry");
}

#[test]
fn a_permit_releases_its_own_entry_after_eviction_attempts() {
    let t: KeyedBulkhead<1> = KeyedBulkhead::new(cap(1));
    let a = t.try_admit(A).unwrap();
    let b = t.try_admit(B).unwrap();
    assert!(b.is_overflow());
    for _ in 0..3 {
        assert_eq!(t.evict_idle(), 0);
        assert!(t.try_admit(B).is_err(), "the overflow's one slot is B's");
    }
    // None of it touched A's entry.
    assert_eq!(t.held(A), Some(1));
    drop(a);
    assert_eq!(t.held(A), Some(0));
    assert_eq!(t.overflow().held(), 1, "A's release went to A's entry");
    assert_eq!(t.evict_idle(), 1);
    drop(b);
    assert_eq!(t.overflow().held(), 0);
}

#[test]
fn a_re_placed_key_starts_clean() {
    let t: KeyedBulkhead<1> = KeyedBulkhead::new(cap(2));
    drop(t.try_admit(A).unwrap());
    let b = t.try_admit(B).unwrap();
    assert!(!b.is_overflow(), "B took idle A's entry");
    drop(b);
    let a = t.try_admit(A).unwrap();
    assert!(!a.is_overflow());
    assert_eq!(a.held_at_admission(), 1, "A's new entry counts from zero");
    assert_eq!(t.held(A), Some(1));
}

#[test]
fn a_full_table_shares_the_overflow_cap() {
    let t: KeyedBulkhead<1> = KeyedBulkhead::new(cap(2));
    let a = t.try_admit(A).unwrap();
    // B and C have no entry: together they get the overflow's one cap of 2, not 2 each.
    let b = t.try_admit(B).unwrap();
    let c = t.try_admit(C).unwrap();
    assert!(b.is_overflow() && c.is_overflow());
    assert_eq!(t.overflow().held(), 2);
    assert!(t.try_admit(B).is_err() && t.try_admit(C).is_err());
    assert!(t.try_admit(A).is_ok(), "the placed key keeps its own cap");
    drop((a, b, c));
    assert_eq!(t.overflow().held(), 0);
    assert_eq!(t.overflow().releases(), 2);
}

#[test]
fn probes_cover_eight_entries_from_home() {
    let t: KeyedBulkhead<64> = KeyedBulkhead::new(cap(1));
    // Every key keeps a call in flight, so none is idle: at most 64 are placed, the rest
    // share the overflow's one slot.
    let held: Vec<_> = (0..200).filter_map(|k| t.try_admit(k).ok()).collect();
    let placed = (0..200).filter(|&k| t.placed(k)).count();
    assert_eq!(placed, t.len());
    assert!((8..=64).contains(&placed), "{placed}");
    assert_eq!(held.iter().filter(|p| p.is_overflow()).count(), 1);
    assert_eq!(held.len(), placed + 1);
}

#[test]
fn for_key_is_a_policy() {
    let t: KeyedBulkhead<4> = KeyedBulkhead::new(cap(1));
    let p = t.for_key(9);
    assert_eq!(p.key(), 9);
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let permit = Policy::admit(&p, &mut env).unwrap();
    assert!(Policy::admit(&p, &mut env).is_err());
    permit.settle(&Verdict::Success, &mut env);
    assert_eq!(t.held(9), Some(0));
}

#[test]
fn new_is_const() {
    static T: KeyedBulkhead<4> = KeyedBulkhead::new(BulkheadConfig::DEFAULT);
    assert_eq!(T.max_concurrent(), BulkheadConfig::DEFAULT_MAX_CONCURRENT);
    assert_eq!(T.capacity(), 4);
}
