//! The waiting gate, polled by hand: deterministic orderings no executor guarantees.

use core::cell::{Cell, RefCell};
use core::future::{Future, Pending, pending};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::rc::Rc;

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

// ---- Every way out of a wait passes an unused wake-up on (issue 13, point 6). ----
//
// A gate's future is dropped right after the admission it let through (`execute_gated`
// does so); these tests do by hand what that loop does: poll to `Ok`, admit or not, drop.

/// A woken waiter that another policy then refuses (the breaker, say: nothing of the
/// bulkhead is taken) leaves the slot free; dropping its future passes the wake-up on.
#[test]
fn a_woken_waiter_refused_elsewhere_passes_its_wake_up_on() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());
    drop(holder); // wakes `a`
    assert_eq!(poll(&mut a), Poll::Ready(Ok(())));
    assert_eq!(
        bulkhead.hook().waiting(),
        1,
        "`b` still queued while `a` is out"
    );
    drop(a); // the pipeline refused `a` before the bulkhead: the slot is still free
    assert_eq!(bulkhead.hook().waiting(), 0, "`b` was woken in `a`'s place");
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
    assert_eq!(bulkhead.available(), 1);
}

/// A woken waiter that takes the slot uses its wake-up: the next one is not woken for a
/// slot that is not free, but by the release of that slot.
#[test]
fn a_woken_waiter_admitted_uses_its_wake_up() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());
    drop(holder);
    assert_eq!(poll(&mut a), Poll::Ready(Ok(())));
    let slot = bulkhead.try_admit().expect("the woken waiter's slot");
    drop(a);
    assert_eq!(
        bulkhead.hook().waiting(),
        1,
        "no wake-up for a slot that is taken"
    );
    assert!(poll(&mut b).is_pending());
    drop(slot); // its release wakes `b`
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
}

/// The unresolved wake-ups, counted: one per woken waiter until it is back from the
/// pipeline, passed on with the waiter's turn.
#[test]
fn a_wake_up_is_claimed_until_resolved() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());
    assert_eq!(bulkhead.hook().claims(), 0);
    drop(holder);
    assert_eq!(bulkhead.hook().claims(), 1, "`a` woken");
    assert_eq!(poll(&mut a), Poll::Ready(Ok(())));
    assert_eq!(
        bulkhead.hook().claims(),
        1,
        "`a` out, on its way to the slot"
    );
    drop(a);
    assert_eq!(bulkhead.hook().claims(), 1, "passed on to `b`");
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
    let slot = bulkhead.try_admit().unwrap();
    drop(b);
    assert_eq!(bulkhead.hook().claims(), 0, "`b` used it");
    drop(slot);
    assert_eq!(
        bulkhead.hook().claims(),
        0,
        "nobody waiting: a release claims nothing"
    );
}

/// With the only waiter woken and not yet back, the queue is empty and the slot free, but
/// the slot is claimed: a newcomer queues instead of taking it (which would leave the woken
/// waiter to be refused by the bulkhead, or queued again).
#[test]
fn a_newcomer_does_not_take_the_slot_a_woken_waiter_claims() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending());
    drop(holder); // wakes `a`: the queue is empty now
    let mut c = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut c).is_pending(), "the newcomer queues");
    assert_eq!(poll(&mut a), Poll::Ready(Ok(())));
    let slot = bulkhead.try_admit().expect("`a` finds its slot");
    drop(a);
    drop(slot);
    assert_eq!(poll(&mut c), Poll::Ready(Ok(())));
}

/// A caller that skips the gate takes the freed slot before the woken waiter polls: the
/// waiter queues again at its place, so it is still served before those behind it.
#[test]
fn a_woken_waiter_that_finds_the_slot_taken_keeps_its_place() {
    let bulkhead = one_slot();
    let gate = WaitGate::new(&bulkhead, Still);
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());
    drop(holder); // wakes `a`
    let barger = bulkhead.try_admit().expect("no gate, no queue");
    assert!(poll(&mut a).is_pending(), "no slot: `a` queues again");
    assert_eq!(bulkhead.hook().waiting(), 2);
    drop(barger); // wakes the head: `a`, at its old place
    assert!(poll(&mut b).is_pending());
    assert_eq!(poll(&mut a), Poll::Ready(Ok(())));
}

/// A timer on a shared manual instant. Its sleeps are ready once the instant reaches them;
/// `on_poll` runs inside the next sleep poll, to land a release inside a waiter's poll.
#[derive(Clone)]
struct Manual<'a>(Rc<ManualState<'a>>);

struct ManualState<'a> {
    now: Cell<Instant>,
    on_poll: RefCell<Option<Box<dyn FnOnce() + 'a>>>,
}

impl<'a> Manual<'a> {
    fn new() -> Self {
        Manual(Rc::new(ManualState {
            now: Cell::new(Instant::ZERO),
            on_poll: RefCell::new(None),
        }))
    }
    fn set(&self, at: Instant) {
        self.0.now.set(at);
    }
    fn on_next_sleep_poll(&self, f: impl FnOnce() + 'a) {
        *self.0.on_poll.borrow_mut() = Some(Box::new(f));
    }
}

struct ManualSleep<'a> {
    state: Rc<ManualState<'a>>,
    at: Instant,
}

impl Future for ManualSleep<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        let hook = self.state.on_poll.borrow_mut().take();
        if let Some(f) = hook {
            f();
        }
        if self.state.now.get() >= self.at {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl<'a> Timer for Manual<'a> {
    type Sleep<'s>
        = ManualSleep<'a>
    where
        Self: 's;
    fn now(&self) -> Instant {
        self.0.now.get()
    }
    fn sleep_until(&self, at: Instant) -> ManualSleep<'a> {
        self.sleep_owned(at)
    }
}

impl<'a> WaitTimer for Manual<'a> {
    type OwnedSleep = ManualSleep<'a>;
    fn sleep_owned(&self, at: Instant) -> ManualSleep<'a> {
        ManualSleep {
            state: self.0.clone(),
            at,
        }
    }
}

/// The timeout path: `a`'s wait is over (max wait 1 s, now 2 s), and in the very poll that
/// finds it over, a release pops `a` and wakes it. `a` is refused, and must pass that
/// wake-up on: `b` (who may still wait) is woken for the free slot.
#[test]
fn a_wake_up_that_lands_as_the_wait_times_out_is_passed_on() {
    let bulkhead = one_slot();
    let timer = Manual::new();
    let gate = WaitGate::new(&bulkhead, timer.clone());
    let holder = bulkhead.try_admit().unwrap();
    let mut a = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending());
    timer.set(Instant::from_millis(1500));
    let mut b = gate.ready(Instant::from_millis(1500), None); // waits until 2.5 s
    assert!(poll(&mut b).is_pending());
    timer.set(Instant::from_secs(2));
    timer.on_next_sleep_poll(move || drop(holder)); // the release, inside `a`'s poll
    assert!(
        matches!(poll(&mut a), Poll::Ready(Err(_))),
        "`a` waited out its max wait"
    );
    assert_eq!(bulkhead.hook().waiting(), 0, "`a`'s wake-up went to `b`");
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
}

/// The deadline path: `a` is woken after its call deadline passed. It goes (the pipeline
/// refuses it, `deadline-passed`, taking nothing), and its drop passes the wake-up on.
#[test]
fn a_woken_waiter_whose_deadline_passed_passes_its_wake_up_on() {
    let bulkhead = one_slot();
    let timer = Manual::new();
    let gate = WaitGate::new(&bulkhead, timer.clone());
    let holder = bulkhead.try_admit().unwrap();
    let deadline = resilix::time::Deadline::at(Instant::from_millis(10));
    let mut a = gate.ready(Instant::ZERO, Some(deadline));
    let mut b = gate.ready(Instant::ZERO, None);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());
    drop(holder); // wakes `a`
    timer.set(Instant::from_millis(20)); // before `a` polls, its deadline passes
    let out = poll(&mut a);
    drop(a); // whatever it returned, the call ends here without a slot
    assert!(out.is_ready());
    assert_eq!(bulkhead.hook().waiting(), 0, "`b` woken in `a`'s place");
    assert_eq!(poll(&mut b), Poll::Ready(Ok(())));
}
