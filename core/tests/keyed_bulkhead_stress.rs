//! Many threads, one small keyed bulkhead, many keys, placing, holding, churning and evicting
//! at once: per key, the calls in flight through its own entry never exceed the cap (counted
//! beside the table, per key, around every permit), nor do the overflow's; a key with a call
//! in flight stays placed; and once every call has ended every slot is back where it came from.
#![cfg(not(loom))]

#[path = "support/alongside.rs"]
mod alongside;
// Its calls outlive a round, so it runs its own rounds and leaves `Churn::evicting` unused.
#[allow(dead_code)]
#[path = "support/churn.rs"]
mod churn;

use std::sync::atomic::{AtomicU32, Ordering};

use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead, KeyedPermit};
use resilix::random::Random;

use alongside::alongside;
use churn::Churn;

const ROUNDS: u32 = 30_000;
const KEYS: u64 = 24;
const CAP: u32 = 2;

#[test]
fn no_key_exceeds_its_cap_and_no_live_entry_is_evicted() {
    let table: KeyedBulkhead<8> = KeyedBulkhead::new(BulkheadConfig::new(CAP).unwrap());
    // Calls in flight per key through its own entry, and through the overflow.
    let own: Vec<AtomicU32> = (0..KEYS).map(|_| AtomicU32::new(0)).collect();
    let overflow = AtomicU32::new(0);
    let count = |key: u64, p: &KeyedPermit<'_>| {
        if p.is_overflow() {
            &overflow
        } else {
            &own[key as usize]
        }
    };
    let churn = Churn::default();
    alongside(
        || churn.evicted(table.evict_idle()),
        |_, mut rng| {
            // Up to three calls held at once by this thread, ended in random order.
            let mut held: Vec<(u64, KeyedPermit<'_>)> = Vec::new();
            for round in 0..ROUNDS {
                churn.now_and_then(round, || table.evict_idle());
                if held.len() == 3 || (!held.is_empty() && rng.below(2) == 0) {
                    let (key, p) = held.swap_remove(rng.below(held.len() as u64) as usize);
                    count(key, &p).fetch_sub(1, Ordering::SeqCst);
                    drop(p);
                    continue;
                }
                let key = rng.below(KEYS);
                let Ok(p) = table.try_admit(key) else {
                    continue;
                };
                churn.admitted(key, p.is_overflow(), |k| table.placed(k));
                let now_held = count(key, &p).fetch_add(1, Ordering::SeqCst) + 1;
                assert!(
                    now_held <= CAP,
                    "key {key}: {now_held} in flight, cap {CAP}"
                );
                if !p.is_overflow() {
                    let h = table.held(key).expect("placed");
                    assert!((1..=CAP).contains(&h), "key {key}: held {h}");
                }
                held.push((key, p));
            }
            for (key, p) in held {
                count(key, &p).fetch_sub(1, Ordering::SeqCst);
                drop(p);
            }
        },
    );
    churn.assert_churned();
    // Every call has ended: every slot is back, and every entry is idle.
    assert_eq!(table.overflow().held(), 0);
    for key in 0..KEYS {
        assert!(matches!(table.held(key), None | Some(0)), "key {key}");
    }
    table.evict_idle();
    assert!(table.is_empty());
}
