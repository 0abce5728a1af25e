//! The waiting gate, polled by hand: deterministic orderings no executor guarantees.

use core::cell::RefCell;
use core::future::{Future, Pending, pending};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::execute::{Gate, Timer};
use resilix::time::Instant;
use resilix::waiters::{SlotWaiters, WaitGate, WaitTimer, WaiterList, WaiterLock};

struct Solo<const N: usize>(RefCell<WaiterList<N>>);

impl<const N: usize> WaiterLock<N> for Solo<N> {
    #[allow(clippy::declare_interior_mutable_const)]
    const NEW: Self = Solo(RefCell::new(WaiterList::new()));
    fn with<R>(&self, f: impl FnOnce(&mut WaiterList<N>) -> R) -> R {
        f(&mut self.0.borrow_mut())
    }
}

/// Time stands still: only releases end a wait.
#[derive(Clone, Copy)]
struct Still;

impl Timer for Still {
    type Sleep<'a> = Pending<()>;
    fn now(&self) -> Instant {
        Instant::ZERO
    }
    fn sleep_until(&self, _: Instant) -> Pending<()> {
        pending()
    }
}

impl WaitTimer for Still {
    type OwnedSleep = Pending<()>;
    fn sleep_owned(&self, _: Instant) -> Pending<()> {
        pending()
    }
}

/// One slot, FIFO waiting for up to a second.
fn one_slot() -> Bulkhead<SlotWaiters<8, Solo<8>>> {
    let wait = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
    Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::new(wait))
}

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

/// Cap 1, a holder, waiters `a` and `b` queued. The holder releases: the release wakes `a`
/// (the queue's head) but does not hand it the slot. Before `a` runs, a newcomer `c` arrives
/// and finds the slot free. FIFO on arrival: `c` must queue behind `b`, not take the slot;
/// `a` then takes it, and `b` comes before `c`.
#[test]
fn a_newcomer_does_not_barge_past_queued_waiters() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();

    let mut a = gate.ready(Instant::ZERO, None);
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending());
    assert!(poll(&mut b).is_pending());
    assert_eq!(bulkhead.hook().waiting(), 2);

    drop(holder); // wakes `a`; the slot is free but not handed over
    assert_eq!(bulkhead.available(), 1);

    let mut c = gate.ready(Instant::ZERO, None);
    assert!(
        poll(&mut c).is_pending(),
        "the newcomer queues behind the waiters instead of taking the free slot"
    );
    assert_eq!(
        poll(&mut a),
        Poll::Ready(Ok(())),
        "the woken head goes first"
    );
    let a_slot = bulkhead.try_admit().unwrap(); // the pipeline admits `a`
    assert!(poll(&mut b).is_pending() && poll(&mut c).is_pending());

    drop(a_slot); // wakes `b`, the next in arrival order
    assert!(poll(&mut c).is_pending(), "`c` still waits its turn");
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
    let b_slot = bulkhead.try_admit().unwrap();
    drop(b_slot); // wakes `c`
    assert_eq!(poll(&mut c), Poll::Ready(Ok(())));
    assert_eq!(bulkhead.hook().waiting(), 0);
}

/// The newcomer with nobody queued takes a free slot at once (the rule is about the queue,
/// not a ban on the free path).
#[test]
fn with_nobody_queued_a_newcomer_goes_at_once() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let mut c = gate.ready(Instant::ZERO, None);
    assert_eq!(poll(&mut c), Poll::Ready(Ok(())));
}

/// A woken waiter dropped before using its wake-up passes it on to the next.
#[test]
fn a_dropped_woken_waiter_passes_the_wake_up_on() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());
    drop(holder); // wakes `a`
    drop(a); // `a` leaves without taking the slot: `b` is woken instead
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
    assert_eq!(bulkhead.hook().waiting(), 0);
}
