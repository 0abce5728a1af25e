//! Model-checks a running bulkhead's reconfiguration (`core/src/bulkhead/reconfigure.rs`).
//!
//! * A raise is a wake-up path: a waiter queued behind a full bulkhead, through the real
//!   waiter list ([`SlotWaiters`] behind loom's mutex) and gate, is woken by a raise racing
//!   its wait, whatever the interleaving. A lost wake-up parks its thread for ever, which loom
//!   reports as a deadlock. Two waiters and a raise by two: both are admitted.
//! * The bare protocol (a hook with only `on_slots_added` to wake from): a waiter that
//!   registers and re-checks the release count is admitted, sees the count move, or is found
//!   by the raise's hook.
//! * A lowered cap: an admission that happens after the reconfiguration is refused while the
//!   calls in flight are at or above the new cap, and no admission ever exceeds the larger cap.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_bulkhead_reconfigure`
#![cfg(loom)]

use std::time::Duration;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig, ReleaseHook};
use resilix::execute::Gate;
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::waiters::{SlotWaiters, WaitGate};

#[path = "support/loom_wait.rs"]
mod loom_wait;
use loom_wait::{Slot, Still, Task};

fn cap(n: u32) -> BulkheadConfig {
    BulkheadConfig::new(n).unwrap()
}

fn reconfigure<H: ReleaseHook>(b: &Bulkhead<H>, n: u32) {
    let mut rng = SeededRandom::new(1);
    b.reconfigure(cap(n), &mut Env::new(Instant::ZERO, &mut rng));
}

/// Cap 1, held for the whole run (no release ever comes); `waiters` wait through the gate,
/// the first on the main thread, while another thread raises the cap to `1 + waiters`. Every
/// waiter is let through and admitted.
fn raise_wakes(waiters: usize) {
    // One waiter: exhaustive (seconds). Two: four threads, bounded to three preemptions (a
    // lost wake-up needs two: the raise between a waiter's room check and its join, and the
    // other waiter between them), which keeps it to minutes.
    let mut builder = loom::model::Builder::new();
    if waiters > 1 {
        builder.preemption_bound = Some(3);
    }
    builder.check(move || {
        let wait = WaitConfig::new(4, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
        let bulkhead: &'static Slot = Box::leak(Box::new(Bulkhead::with_hook(
            cap(1),
            SlotWaiters::new(wait),
        )));
        let holder = bulkhead.try_admit().unwrap();
        let raise = thread::spawn(move || reconfigure(bulkhead, 1 + waiters as u32));
        let others: Vec<_> = (1..waiters)
            .map(|_| {
                thread::spawn(move || {
                    let task = Task::new();
                    let mut gate = WaitGate::new(bulkhead, Still).ready(Instant::ZERO, None);
                    assert_eq!(task.run(&mut gate), Ok(()));
                    let slot = bulkhead.try_admit().expect("woken for a free slot");
                    drop(gate);
                    slot
                })
            })
            .collect();
        let task = Task::new();
        let mut gate = WaitGate::new(bulkhead, Still).ready(Instant::ZERO, None);
        assert_eq!(
            task.run(&mut gate),
            Ok(()),
            "no waiter stays behind a raised cap"
        );
        let slot = bulkhead.try_admit().expect("woken for a free slot");
        drop(gate);
        raise.join().unwrap();
        let slots: Vec<_> = others.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(bulkhead.held(), 1 + waiters as u32);
        drop((slot, slots, holder));
        assert_eq!(
            (bulkhead.hook().waiting(), bulkhead.hook().claims()),
            (0, 0),
            "nobody waits, no wake-up left claimed"
        );
    });
}

#[test]
fn a_raise_wakes_the_waiter_behind_it() {
    raise_wakes(1);
}

#[test]
fn a_raise_by_two_wakes_both_waiters() {
    raise_wakes(2);
}

/// The bare protocol's hook: wakes the registered waiter on a raise. It has no release path
/// to take: nothing is released in the model.
struct Wake2 {
    registered: AtomicBool,
    woken: AtomicBool,
}

impl ReleaseHook for Wake2 {
    fn on_release(&self) {
        unreachable!("nothing is released in this model");
    }
    fn on_slots_added(&self, _: u32) {
        if self.registered.load(Ordering::Acquire) {
            self.woken.store(true, Ordering::Release);
        }
    }
}

#[test]
fn the_bare_wait_protocol_loses_no_raise() {
    loom::model(|| {
        let hook = Wake2 {
            registered: AtomicBool::new(false),
            woken: AtomicBool::new(false),
        };
        let bulkhead = loom::sync::Arc::new(Bulkhead::with_hook(cap(1), hook));
        let _holder = bulkhead.try_admit().unwrap();
        let b2 = bulkhead.clone();
        let raise = thread::spawn(move || reconfigure(&*b2, 2));
        let slept = match bulkhead.try_admit() {
            Ok(p) => {
                // Admitted under the new cap: kept, so no release runs the other hook path.
                std::mem::forget(p);
                false
            }
            Err(full) => {
                bulkhead.hook().registered.store(true, Ordering::Release);
                !bulkhead.released_since(&full)
            }
        };
        raise.join().unwrap();
        if slept {
            assert!(
                bulkhead.hook().woken.load(Ordering::Acquire),
                "the waiter slept and the raise did not wake it"
            );
        }
        std::mem::forget(_holder);
    });
}

/// Cap 3 with two calls in flight; one thread lowers the cap to 1 and then says so, another
/// admits racing it, a third admits after hearing it. The late admission is refused (two in
/// flight, cap 1); the racing one may use either cap, so never more than three are held.
#[test]
fn an_admission_after_a_lowering_sees_the_new_cap() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let bulkhead = loom::sync::Arc::new(Bulkhead::new(cap(3)));
        let a = bulkhead.try_admit().unwrap();
        let b = bulkhead.try_admit().unwrap();
        let lowered = loom::sync::Arc::new(AtomicBool::new(false));
        let lower = {
            let (bulkhead, lowered) = (bulkhead.clone(), lowered.clone());
            thread::spawn(move || {
                reconfigure(&*bulkhead, 1);
                lowered.store(true, Ordering::Release);
            })
        };
        let racing = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                if let Ok(p) = bulkhead.try_admit() {
                    assert!(p.held_at_admission() <= 3);
                    assert!(bulkhead.held() <= 3);
                }
            })
        };
        if lowered.load(Ordering::Acquire) {
            let late = bulkhead.try_admit();
            assert!(late.is_err(), "admitted past a cap lowered before it");
        }
        lower.join().unwrap();
        racing.join().unwrap();
        assert!(bulkhead.try_admit().is_err(), "two in flight, cap one");
        drop((a, b));
        assert!(bulkhead.try_admit().is_ok(), "drained below the new cap");
    });
}
