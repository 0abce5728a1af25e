//! The bulkhead's wait protocol, driven by a synchronous simulated adapter on the manual
//! clock: FIFO and LIFO waiters, the maximum number of waiters, the maximum wait, a release
//! that races a waiter's registration, and a caller that barges in ahead of a woken waiter.
#![cfg(not(loom))]

use std::cell::RefCell;
use std::time::Duration;

use resilix::bulkhead::wait::{Ticket, WaitConfig, WaitOrder, WaitQueue};
use resilix::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit, ReleaseHook};
use resilix::time::{Clock, ManualClock};

/// What the adapter keeps in the bulkhead's hook: its waiter queue, and who it has woken (a
/// real adapter calls `Waker::wake`).
struct Adapter {
    queue: RefCell<WaitQueue<u32, 8>>,
    woken: RefCell<Vec<u32>>,
    config: WaitConfig,
}

impl ReleaseHook for Adapter {
    fn on_release(&self) {
        if let Some(id) = self.queue.borrow_mut().pop(self.config.order()) {
            self.woken.borrow_mut().push(id);
        }
    }
}

enum Arrival<'b> {
    Admitted(BulkheadPermit<'b, Adapter>),
    Waiting(Ticket),
    Refused,
}

/// Steps 1–4 of the protocol. `between` runs once, between the first refusal and the
/// registration: the window in which a release could otherwise be lost.
fn arrive<'b>(
    bulkhead: &'b Bulkhead<Adapter>,
    id: u32,
    clock: &ManualClock,
    between: impl FnOnce(),
) -> Arrival<'b> {
    let adapter = bulkhead.hook();
    let mut between = Some(between);
    loop {
        let full = match bulkhead.try_admit() {
            Ok(p) => return Arrival::Admitted(p),
            Err(full) => full,
        };
        if !adapter.config.allows_waiting() {
            return Arrival::Refused;
        }
        if let Some(f) = between.take() {
            f();
        }
        let pushed = adapter
            .queue
            .borrow_mut()
            .push(id, clock.now(), &adapter.config);
        let Ok(ticket) = pushed else {
            return Arrival::Refused;
        };
        if !bulkhead.released_since(&full) {
            return Arrival::Waiting(ticket);
        }
        // A slot came back after step 1, perhaps before we were in the queue for the hook to
        // find: leave the queue and try again.
        adapter.queue.borrow_mut().remove(ticket);
    }
}

fn bulkhead(cap: u32, waiters: u32, order: WaitOrder) -> Bulkhead<Adapter> {
    Bulkhead::with_hook(
        BulkheadConfig::new(cap).unwrap(),
        Adapter {
            queue: RefCell::new(WaitQueue::new()),
            woken: RefCell::new(Vec::new()),
            config: WaitConfig::new(waiters, Duration::from_millis(100), order).unwrap(),
        },
    )
}

fn waiting(a: Arrival<'_>) -> Ticket {
    match a {
        Arrival::Waiting(t) => t,
        Arrival::Admitted(_) => panic!("expected to wait, was admitted"),
        Arrival::Refused => panic!("expected to wait, was refused"),
    }
}

/// Three waiters arrive at 0, 10 and 20 ms behind one holder; the holder's slot then cycles
/// through them. Returns the order in which they were served.
fn serve_three(order: WaitOrder) -> Vec<u32> {
    let clock = ManualClock::new(Default::default());
    let b = bulkhead(1, 3, order);
    let Arrival::Admitted(holder) = arrive(&b, 0, &clock, || {}) else {
        panic!("the first caller is admitted");
    };
    for id in 1..=3 {
        waiting(arrive(&b, id, &clock, || {}));
        clock.advance(Duration::from_millis(10));
    }
    assert!(
        matches!(arrive(&b, 4, &clock, || {}), Arrival::Refused),
        "a fourth waiter is over max_waiters"
    );
    let mut served = Vec::new();
    let mut current = holder;
    for _ in 0..3 {
        clock.advance(Duration::from_millis(5));
        drop(current); // the release hook wakes one waiter
        let id = *b.hook().woken.borrow().last().unwrap();
        served.push(id);
        // The woken waiter retries step 1 and takes the slot.
        current = b.try_admit().expect("the woken waiter finds the slot free");
    }
    drop(current);
    assert!(b.hook().queue.borrow().is_empty());
    assert_eq!(b.held(), 0);
    served
}

#[test]
fn fifo_serves_the_oldest_waiter_first() {
    assert_eq!(serve_three(WaitOrder::Fifo), [1, 2, 3]);
}

#[test]
fn lifo_serves_the_newest_waiter_first() {
    assert_eq!(serve_three(WaitOrder::Lifo), [3, 2, 1]);
}

#[test]
fn a_release_racing_the_registration_is_not_lost() {
    let clock = ManualClock::new(Default::default());
    let b = bulkhead(1, 2, WaitOrder::Fifo);
    let holder = b.try_admit().unwrap();
    // The holder releases after the waiter was refused and before it joined the queue: the
    // hook finds nobody to wake. Step 4 sees the release count move and retries.
    let mut holder = Some(holder);
    let arrival = arrive(&b, 1, &clock, || drop(holder.take()));
    assert!(b.hook().woken.borrow().is_empty(), "the hook woke nobody");
    assert!(
        matches!(arrival, Arrival::Admitted(_)),
        "the waiter noticed the release instead of sleeping on it"
    );
    assert!(b.hook().queue.borrow().is_empty(), "and left the queue");
}

#[test]
fn waiters_past_max_wait_are_refused_in_deadline_order() {
    let clock = ManualClock::new(Default::default());
    let b = bulkhead(1, 4, WaitOrder::Lifo);
    let _holder = b.try_admit().unwrap();
    for id in 1..=3 {
        waiting(arrive(&b, id, &clock, || {}));
        clock.advance(Duration::from_millis(40));
    }
    // Now 120 ms: waiter 1 (deadline 100) is over its wait; 2 (140) and 3 (180) are not.
    let next = b.hook().queue.borrow().next_deadline().unwrap();
    assert_eq!(next.remaining(clock.now()), Duration::ZERO);
    let mut q = b.hook().queue.borrow_mut();
    assert_eq!(q.pop_expired(clock.now()), Some(1));
    assert_eq!(q.pop_expired(clock.now()), None);
    assert_eq!(q.len(), 2);
    // A clock stepping backwards expires nobody; the end of time expires everybody.
    assert_eq!(q.pop_expired(Default::default()), None);
    clock.set(resilix::time::Instant::MAX);
    assert_eq!(q.pop_expired(clock.now()), Some(2));
    assert_eq!(q.pop_expired(clock.now()), Some(3));
}

#[test]
fn a_barging_caller_sends_the_woken_waiter_back_to_its_place() {
    let clock = ManualClock::new(Default::default());
    let b = bulkhead(1, 4, WaitOrder::Fifo);
    let holder = b.try_admit().unwrap();
    let t1 = waiting(arrive(&b, 1, &clock, || {}));
    waiting(arrive(&b, 2, &clock, || {}));
    drop(holder);
    assert_eq!(*b.hook().woken.borrow(), [1]);
    // A caller that skips the queue takes the slot before waiter 1 runs.
    let barger = b.try_admit().unwrap();
    // Waiter 1 retries and is refused again: it rejoins. (An adapter that keeps woken waiters
    // at their place, or routes every caller through the queue, stays strictly FIFO.)
    let _ = t1;
    waiting(arrive(&b, 1, &clock, || {}));
    drop(barger);
    assert_eq!(
        *b.hook().woken.borrow(),
        [1, 2],
        "waiter 2 was older in the queue"
    );
    let _two = b.try_admit().unwrap();
    assert_eq!(b.hook().queue.borrow().len(), 1);
}

#[test]
fn no_wait_config_refuses_at_once() {
    let clock = ManualClock::new(Default::default());
    let b = Bulkhead::with_hook(
        BulkheadConfig::new(1).unwrap(),
        Adapter {
            queue: RefCell::new(WaitQueue::new()),
            woken: RefCell::new(Vec::new()),
            config: WaitConfig::NO_WAIT,
        },
    );
    let _holder = b.try_admit().unwrap();
    assert!(matches!(arrive(&b, 1, &clock, || {}), Arrival::Refused));
    assert!(b.hook().queue.borrow().is_empty());
}
