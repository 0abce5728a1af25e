//! Many threads, one small keyed bulkhead, many keys, placing, holding, churning and evicting
//! at once: per key, the calls in flight through its own entry never exceed the cap (counted
//! beside the table, per key, around every permit), nor do the overflow's; a key with a call
//! in flight stays placed; and once every call has ended every slot is back where it came from.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead, KeyedPermit};
use resilix::random::{Random, SeededRandom};

const THREADS: u64 = 4;
const ROUNDS: u32 = 30_000;
const KEYS: u64 = 24;
const CAP: u32 = 2;

#[test]
fn no_key_exceeds_its_cap_and_no_live_entry_is_evicted() {
    let table: KeyedBulkhead<8> = KeyedBulkhead::new(BulkheadConfig::new(CAP).unwrap());
    // Calls in flight per key through its own entry, and through the overflow.
    let own: Vec<AtomicU32> = (0..KEYS).map(|_| AtomicU32::new(0)).collect();
    let overflow = AtomicU32::new(0);
    let (placed_calls, overflow_calls, evicted) =
        (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let finished = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while finished.load(Ordering::Relaxed) < THREADS {
                evicted.fetch_add(table.evict_idle() as u64, Ordering::Relaxed);
                std::thread::yield_now();
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (table, own, overflow) = (&table, &own, &overflow);
                let (placed_calls, overflow_calls, evicted) =
                    (&placed_calls, &overflow_calls, &evicted);
                let finished = &finished;
                s.spawn(move || {
                    // Counts this worker out even if it panics, so the evictor stops.
                    let _out = Finished(finished);
                    let mut rng = SeededRandom::new(t);
                    // Up to three calls held at once by this thread, ended in random order.
                    let mut held: Vec<(u64, KeyedPermit<'_>)> = Vec::new();
                    for round in 0..ROUNDS {
                        if round % 64 == 0 {
                            evicted.fetch_add(table.evict_idle() as u64, Ordering::Relaxed);
                        }
                        if held.len() == 3 || (!held.is_empty() && rng.below(2) == 0) {
                            let (key, p) = held.swap_remove(rng.below(held.len() as u64) as usize);
                            let count = if p.is_overflow() {
                                overflow
                            } else {
                                &own[key as usize]
                            };
                            count.fetch_sub(1, Ordering::SeqCst);
                            drop(p);
                            continue;
                        }
                        let key = rng.below(KEYS);
                        let Ok(p) = table.try_admit(key) else {
                            continue;
                        };
                        let count = if p.is_overflow() {
                            overflow_calls.fetch_add(1, Ordering::Relaxed);
                            overflow
                        } else {
                            placed_calls.fetch_add(1, Ordering::Relaxed);
                            &own[key as usize]
                        };
                        let now_held = count.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(
                            now_held <= CAP,
                            "key {key}: {now_held} in flight, cap {CAP}"
                        );
                        if !p.is_overflow() {
                            assert!(table.placed(key), "key {key} evicted with a call in flight");
                            let h = table.held(key).expect("placed");
                            assert!((1..=CAP).contains(&h), "key {key}: held {h}");
                        }
                        held.push((key, p));
                    }
                    for (key, p) in held {
                        let count = if p.is_overflow() {
                            overflow
                        } else {
                            &own[key as usize]
                        };
                        count.fetch_sub(1, Ordering::SeqCst);
                        drop(p);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
    assert!(placed_calls.load(Ordering::Relaxed) > 0);
    assert!(
        overflow_calls.load(Ordering::Relaxed) > 0,
        "the table filled"
    );
    assert!(
        evicted.load(Ordering::Relaxed) > 0,
        "idle entries were evicted"
    );
    // Every call has ended: every slot is back, and every entry is idle.
    assert_eq!(table.overflow().held(), 0);
    for key in 0..KEYS {
        assert!(matches!(table.held(key), None | Some(0)), "key {key}");
    }
    table.evict_idle();
    assert!(table.is_empty());
}

/// Counts a worker out when it ends, by return or by panic.
struct Finished<'a>(&'a AtomicU64);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}
