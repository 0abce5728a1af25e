//! A bounded wait for a bulkhead slot on embassy: max waiters, max wait, FIFO by default or
//! LIFO, no heap (the waiter queue is the core's fixed-capacity `WaitQueue`, kept in the
//! bulkhead's release hook behind a critical section, so the bulkhead can live in a `static`).
//!
//! Semantics as in `resilix-tokio`'s `wait` module: a caller that finds waiters queued joins
//! the queue; a release wakes one waiter (it does not hand it the slot); a waiter whose
//! `max_wait` or call deadline passes, or that finds `max_waiters` already waiting, is
//! refused with `bulkhead-full`; a woken waiter that is dropped passes its wake-up on.
//!
//! ```no_run
//! use core::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix_embassy::{Resilience, SlotWaiters};
//!
//! static RADIO: Bulkhead<SlotWaiters<4>> = Bulkhead::with_hook(
//!     match BulkheadConfig::new(1) { Ok(c) => c, Err(_) => panic!() },
//!     SlotWaiters::new(match WaitConfig::new(4, Duration::from_millis(50), WaitOrder::Fifo) {
//!         Ok(c) => c,
//!         Err(_) => panic!(),
//!     }),
//! );
//!
//! async fn send(frame: &[u8]) -> Result<(), ()> { Ok(()) }
//!
//! async fn task(serial: u64) {
//!     let pipeline = Pipeline::new().bulkhead(&RADIO);
//!     let resilience = Resilience::new(&pipeline);
//!     let mut rng = SeededRandom::new(serial);
//!     let sent = resilience
//!         .execute_waiting(&RADIO, &mut rng, CallOptions::default(), || send(b"hello"))
//!         .await;
//! }
//! ```

use core::cell::RefCell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use critical_section::Mutex;
use resilix::bulkhead::wait::{Ticket, WaitConfig, WaitQueue};
use resilix::bulkhead::{Bulkhead, ReleaseHook};
use resilix::execute::Gate;
use resilix::time::{Clock, Deadline, Instant};
use resilix::{RejectReason, Rejection};

use crate::{EmbassyClock, to_embassy};

/// The waiters of one bulkhead: pass it to [`Bulkhead::with_hook`]. Holds at most
/// `min(N, max_waiters)` waiters. `const`, so the bulkhead can be a `static`.
#[derive(Debug)]
pub struct SlotWaiters<const N: usize> {
    config: WaitConfig,
    state: Mutex<RefCell<Waiters<N>>>,
}

#[derive(Debug)]
struct Waiters<const N: usize> {
    queue: WaitQueue<(Waker, u32), N>,
    // Ids popped by a release and not yet seen by their waiter: "you were woken".
    woken: [Option<u32>; N],
    next_id: u32,
}

impl<const N: usize> Waiters<N> {
    fn mark_woken(&mut self, id: u32) {
        if let Some(free) = self.woken.iter_mut().find(|w| w.is_none()) {
            *free = Some(id);
        }
    }

    fn take_woken(&mut self, id: u32) -> bool {
        match self.woken.iter_mut().find(|w| **w == Some(id)) {
            Some(w) => {
                *w = None;
                true
            }
            None => false,
        }
    }

    fn wake_next(&mut self, config: &WaitConfig) -> Option<Waker> {
        let (waker, id) = self.queue.pop(config.order())?;
        self.mark_woken(id);
        Some(waker)
    }

    fn leave(&mut self, ticket: Ticket, id: u32) {
        if self.queue.remove(ticket).is_none() {
            self.take_woken(id);
        }
    }
}

impl<const N: usize> SlotWaiters<N> {
    /// Waiters as `config` allows.
    pub const fn new(config: WaitConfig) -> Self {
        SlotWaiters {
            config,
            state: Mutex::new(RefCell::new(Waiters {
                queue: WaitQueue::new(),
                woken: [None; N],
                next_id: 0,
            })),
        }
    }

    /// The wait settings.
    pub const fn config(&self) -> &WaitConfig {
        &self.config
    }

    /// How many callers are waiting now.
    pub fn waiting(&self) -> usize {
        self.with(|s| s.queue.len())
    }

    fn with<R>(&self, f: impl FnOnce(&mut Waiters<N>) -> R) -> R {
        critical_section::with(|cs| f(&mut self.state.borrow_ref_mut(cs)))
    }
}

impl<const N: usize> ReleaseHook for SlotWaiters<N> {
    fn on_release(&self) {
        if let Some(w) = self.with(|s| s.wake_next(&self.config)) {
            w.wake();
        }
    }
}

/// Holds an attempt until its bulkhead has a free slot.
#[derive(Debug)]
pub struct BulkheadGate<'b, const N: usize> {
    bulkhead: &'b Bulkhead<SlotWaiters<N>>,
}

impl<'b, const N: usize> BulkheadGate<'b, N> {
    /// A gate on `bulkhead`.
    pub const fn new(bulkhead: &'b Bulkhead<SlotWaiters<N>>) -> Self {
        BulkheadGate { bulkhead }
    }
}

impl<'b, const N: usize> Gate for BulkheadGate<'b, N> {
    type Wait = SlotWait<'b, N>;

    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> SlotWait<'b, N> {
        let max_wait = self.bulkhead.hook().config.max_wait();
        SlotWait {
            bulkhead: self.bulkhead,
            until: Deadline::after(now, max_wait).min_opt(deadline),
            registered: None,
            sleep: None,
        }
    }
}

/// Waiting for a slot: the future of [`BulkheadGate`]. Dropping it leaves the queue (and passes
/// a wake-up it received on to the next waiter).
#[derive(Debug)]
pub struct SlotWait<'a, const N: usize> {
    bulkhead: &'a Bulkhead<SlotWaiters<N>>,
    until: Deadline,
    registered: Option<(Ticket, u32)>,
    sleep: Option<embassy_time::Timer>,
}

fn full() -> Rejection {
    Rejection::new(RejectReason::BulkheadFull)
}

impl<const N: usize> Future for SlotWait<'_, N> {
    type Output = Result<(), Rejection>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = &mut *self;
        let waiters = me.bulkhead.hook();
        if !waiters.config.allows_waiting() {
            return Poll::Ready(Ok(()));
        }
        let mut woken = false;
        if let Some((ticket, id)) = me.registered {
            if waiters.with(|s| s.take_woken(id)) {
                me.registered = None;
                woken = true;
            } else if me
                .sleep
                .as_mut()
                .is_some_and(|s| Pin::new(s).poll(cx).is_ready())
            {
                waiters.with(|s| s.leave(ticket, id));
                me.registered = None;
                return Poll::Ready(Err(full()));
            } else {
                return Poll::Pending;
            }
        }
        let now = EmbassyClock.now();
        let bulkhead = me.bulkhead;
        let until = me.until;
        // Decide and join in one critical section.
        let joined = waiters.with(|s| {
            if (woken || s.queue.is_empty()) && bulkhead.available() > 0 {
                return Ok(None);
            }
            if until.has_passed(now) {
                return Err(full());
            }
            let id = s.next_id;
            s.next_id = s.next_id.wrapping_add(1);
            match s.queue.push((cx.waker().clone(), id), now, &waiters.config) {
                Ok(ticket) => Ok(Some((ticket, id))),
                Err(_) => Err(full()),
            }
        });
        let (ticket, id) = match joined {
            Ok(None) => return Poll::Ready(Ok(())),
            Ok(Some(place)) => place,
            Err(refused) => return Poll::Ready(Err(refused)),
        };
        me.registered = Some((ticket, id));
        // A release just before joining found nobody to wake: look again now.
        if bulkhead.available() > 0 {
            waiters.with(|s| s.leave(ticket, id));
            me.registered = None;
            return Poll::Ready(Ok(()));
        }
        let sleep = me
            .sleep
            .get_or_insert_with(|| embassy_time::Timer::at(to_embassy(until.instant())));
        if Pin::new(sleep).poll(cx).is_ready() {
            waiters.with(|s| s.leave(ticket, id));
            me.registered = None;
            return Poll::Ready(Err(full()));
        }
        Poll::Pending
    }
}

impl<const N: usize> Drop for SlotWait<'_, N> {
    fn drop(&mut self) {
        let Some((ticket, id)) = self.registered.take() else {
            return;
        };
        let waiters = self.bulkhead.hook();
        let next = waiters.with(|s| {
            if s.queue.remove(ticket).is_some() {
                return None;
            }
            // Woken but leaving: the wake-up was meant for a slot; pass it on.
            if s.take_woken(id) {
                s.wake_next(&waiters.config)
            } else {
                None
            }
        });
        if let Some(w) = next {
            w.wake();
        }
    }
}
