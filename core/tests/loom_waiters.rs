//! Model-checks bounded waiting: every way out of a wait passes an unused wake-up on.
//!
//! One slot, held by `H`; waiters `B` then `C` queued behind it (FIFO). `H` releases on its
//! own thread while `B` takes one way out of its wait on another: admitted, refused by another
//! policy, woken after its deadline passed, its max wait over (racing the wake-up), dropped.
//! `C`, on the main thread, can only be woken: its timer never fires, so a wake-up lost on
//! the way is a thread parked forever, which loom reports as a deadlock. Under every
//! interleaving loom explores, `C` is woken and finds the slot free, the cap holds, and at the
//! end nobody waits and no wake-up is left claimed.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release
//! --test loom_waiters`.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use loom::thread;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::execute::{Gate, Timer};
use resilix::time::{Deadline, Instant};
use resilix::waiters::{SlotWaiters, WaitGate, WaitTimer};

#[path = "support/loom_wait.rs"]
mod loom_wait;
use loom_wait::{Slot, Still, Task};

/// Time `B`'s thread moves by hand (only it reads it): its sleeps are ready once reached.
#[derive(Clone)]
struct Hand(Arc<AtomicU64>);

impl Hand {
    fn set(&self, at: Instant) {
        self.0.store(at.as_nanos(), Ordering::Relaxed);
    }
}

struct HandSleep(Hand, Instant);

impl Future for HandSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.now() >= self.1 {
            Poll::Ready(())
        } else {
            // Only `B`'s own thread moves this time, and it polls again after moving it.
            Poll::Pending
        }
    }
}

impl Timer for Hand {
    type Sleep<'a> = HandSleep;
    fn now(&self) -> Instant {
        Instant::from_nanos(self.0.load(Ordering::Relaxed))
    }
    fn sleep_until(&self, at: Instant) -> HandSleep {
        HandSleep(self.clone(), at)
    }
}

impl WaitTimer for Hand {
    type OwnedSleep = HandSleep;
    fn sleep_owned(&self, at: Instant) -> HandSleep {
        HandSleep(self.clone(), at)
    }
}

/// How `B` leaves its wait.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// Woken, let through, takes the slot (and later gives it back).
    Admitted,
    /// Woken, let through, refused by a policy ahead of the bulkhead: takes nothing.
    RefusedElsewhere,
    /// Woken; by the time it polls, its call deadline has passed.
    DeadlinePassed,
    /// Its max wait is over as the release lands: whichever comes first.
    MaxWait,
    /// Its future is dropped as the release lands.
    Cancelled,
}

const MAX_WAIT: Duration = Duration::from_secs(1);

fn model(way: Way) {
    // Exhaustive: no preemption bound (three threads, a few lock sections each: seconds).
    let builder = loom::model::Builder::new();
    builder.check(move || {
        let wait = WaitConfig::new(4, MAX_WAIT, WaitOrder::Fifo).unwrap();
        // Loom has no scoped threads, and the waiting futures borrow the bulkhead: leak one
        // small bulkhead per explored execution.
        let bulkhead: &'static Slot = Box::leak(Box::new(Bulkhead::with_hook(
            BulkheadConfig::new(1).unwrap(),
            SlotWaiters::new(wait),
        )));
        let holder = bulkhead.try_admit().unwrap();

        let hand = Hand(Arc::new(AtomicU64::new(0)));
        let b_task = Task::new();
        let deadline = Deadline::at(Instant::from_millis(10));
        let mut b = WaitGate::new(bulkhead, hand.clone()).ready(Instant::ZERO, Some(deadline));
        assert!(b_task.poll(&mut b).is_pending(), "B queues behind H");
        let c_task = Task::new();
        let mut c = WaitGate::new(bulkhead, Still).ready(Instant::ZERO, None);
        assert!(c_task.poll(&mut c).is_pending(), "C queues behind B");
        assert_eq!(bulkhead.hook().waiting(), 2);

        let h = thread::spawn(move || drop(holder));
        let b_thread = thread::spawn(move || match way {
            Way::Admitted => {
                assert_eq!(b_task.run(&mut b), Ok(()), "B's timer does not move");
                let slot = bulkhead.try_admit().expect("woken B finds its slot");
                drop(b); // as `execute_gated` does, right after the admission
                drop(slot);
            }
            Way::RefusedElsewhere => {
                assert_eq!(b_task.run(&mut b), Ok(()));
                drop(b); // the breaker refused: the slot was never taken
            }
            Way::DeadlinePassed => {
                // Woken by H's release (it pops B, then wakes it; loom's parking may also
                // return spuriously, so look at the queue)...
                while bulkhead.hook().waiting() == 2 {
                    b_task.park();
                }
                hand.set(Instant::from_millis(20)); // ...and only polled past its deadline
                let out = b_task.poll(&mut b);
                assert_eq!(out, Poll::Ready(Ok(())), "woken with a free slot: it goes");
                drop(b); // and the pipeline refuses it, `deadline-passed`, taking nothing
            }
            Way::MaxWait => {
                hand.set(Instant::ZERO + MAX_WAIT * 2);
                // Past its wait and its deadline: refused, or let through if already woken
                // (then refused by the pipeline as past its deadline). Either way, no slot.
                assert!(b_task.poll(&mut b).is_ready(), "the wait is over");
                drop(b);
            }
            Way::Cancelled => drop(b),
        });

        // C: woken by a release or by B's unused wake-up, whatever B did.
        assert_eq!(c_task.run(&mut c), Ok(()), "C is refused only by max wait");
        let slot = bulkhead.try_admit();
        h.join().unwrap();
        b_thread.join().unwrap();
        assert!(slot.is_ok(), "C was woken for a slot that is free");
        drop(c);
        assert_eq!(bulkhead.hook().claims(), 0, "C used its wake-up");
        drop(slot);
        assert_eq!(
            (
                bulkhead.held(),
                bulkhead.hook().waiting(),
                bulkhead.hook().claims()
            ),
            (0, 0, 0),
            "every slot back, nobody waiting, no wake-up claimed"
        );
    });
}

#[test]
fn admitted_uses_the_wake_up() {
    model(Way::Admitted);
}

#[test]
fn refused_by_another_policy_passes_it_on() {
    model(Way::RefusedElsewhere);
}

#[test]
fn deadline_passed_passes_it_on() {
    model(Way::DeadlinePassed);
}

#[test]
fn max_wait_racing_the_wake_up_passes_it_on() {
    model(Way::MaxWait);
}

#[test]
fn cancelled_passes_it_on() {
    model(Way::Cancelled);
}
