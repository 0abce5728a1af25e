//! A bounded wait for a bulkhead slot: max waiters, max wait, FIFO by default or LIFO.
//!
//! The core's bulkhead never waits; it calls a [`ReleaseHook`] after every slot release. This
//! module is the hook ([`SlotWaiters`]: a queue of wakers under a mutex) and the
//! [`Gate`] that holds each attempt until a slot is free ([`Resilience::execute_waiting`]).
//!
//! Ordering: a caller that finds waiters queued joins the queue even if a slot is free, so
//! callers are served in the configured order. A release wakes one waiter; it does not hand
//! it the slot (the core keeps no per-waiter state), so a caller arriving between the wake-up
//! and the woken waiter's admission can take the slot first; the woken waiter then queues
//! again, behind those already waiting. A waiter whose `max_wait` (or call deadline) passes is
//! refused with `bulkhead-full`; so is a caller that finds `max_waiters` already waiting.
//!
//! Cost: nothing on the path where a slot is free; a caller that waits registers one
//! `async-io` timer.
//!
//! ```
//! use std::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_async_std::{Resilience, SlotWaiters};
//!
//! # smol::block_on(async {
//! let wait = WaitConfig::new(8, Duration::from_millis(100), WaitOrder::Fifo).unwrap();
//! let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::<8>::new(wait));
//! let pipeline = Pipeline::new().bulkhead(&bulkhead);
//! let resilience = Resilience::new(&pipeline);
//! let work = || async {
//!     async_io::Timer::after(Duration::from_millis(3)).await;
//!     Ok::<(), ()>(())
//! };
//! // Two calls, one slot: the second waits 3 ms for the first instead of being refused.
//! let (a, b) = smol::future::zip(
//!     resilience.execute_waiting(&bulkhead, CallOptions::default(), work),
//!     resilience.execute_waiting(&bulkhead, CallOptions::default(), work),
//! )
//! .await;
//! assert!(a.is_ok() && b.is_ok());
//! # });
//! ```
//!
//! [`Resilience::execute_waiting`]: crate::Resilience::execute_waiting

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use resilix::bulkhead::wait::{Ticket, WaitConfig, WaitQueue};
use resilix::bulkhead::{Bulkhead, ReleaseHook};
use resilix::execute::Gate;
use resilix::time::{Clock, Deadline, Instant};
use resilix::{RejectReason, Rejection};

use crate::AsyncIoClock;

/// The waiters of one bulkhead: pass it to [`Bulkhead::with_hook`]. Holds at most
/// `min(N, max_waiters)` waiters.
#[derive(Debug)]
pub struct SlotWaiters<const N: usize> {
    config: WaitConfig,
    state: Mutex<Waiters<N>>,
}

#[derive(Debug)]
struct Waiters<const N: usize> {
    queue: WaitQueue<(Waker, u64), N>,
    // Ids popped by a release and not yet seen by their waiter: "you were woken".
    woken: [Option<u64>; N],
    next_id: u64,
}

impl<const N: usize> Waiters<N> {
    fn mark_woken(&mut self, id: u64) {
        if let Some(free) = self.woken.iter_mut().find(|w| w.is_none()) {
            *free = Some(id);
        }
    }

    fn take_woken(&mut self, id: u64) -> bool {
        match self.woken.iter_mut().find(|w| **w == Some(id)) {
            Some(w) => {
                *w = None;
                true
            }
            None => false,
        }
    }

    /// Wakes the next waiter, if any: a release, or a woken waiter passing its turn on.
    fn wake_next(&mut self, config: &WaitConfig) -> Option<Waker> {
        let (waker, id) = self.queue.pop(config.order())?;
        self.mark_woken(id);
        Some(waker)
    }
}

impl<const N: usize> SlotWaiters<N> {
    /// Waiters as `config` allows (see [`WaitConfig`]: no waiting is its default).
    pub const fn new(config: WaitConfig) -> Self {
        SlotWaiters {
            config,
            state: Mutex::new(Waiters {
                queue: WaitQueue::new(),
                woken: [None; N],
                next_id: 0,
            }),
        }
    }

    /// The wait settings.
    pub const fn config(&self) -> &WaitConfig {
        &self.config
    }

    /// How many callers are waiting now.
    pub fn waiting(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> MutexGuard<'_, Waiters<N>> {
        // Nothing here panics while holding the lock except a waker's own code; the queue is
        // consistent between statements, so a poisoned lock is safe to keep using.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<const N: usize> ReleaseHook for SlotWaiters<N> {
    fn on_release(&self) {
        let waker = self.lock().wake_next(&self.config);
        // Wake outside the lock: the woken task may run at once on another thread.
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// Holds an attempt until its bulkhead has a free slot (see the [module docs](self)).
#[derive(Debug)]
pub struct BulkheadGate<'b, const N: usize> {
    bulkhead: &'b Bulkhead<SlotWaiters<N>>,
    clock: AsyncIoClock,
}

impl<'b, const N: usize> BulkheadGate<'b, N> {
    /// A gate on `bulkhead`, timing waits on `clock` (the timeline of the call's deadline).
    pub const fn new(bulkhead: &'b Bulkhead<SlotWaiters<N>>, clock: AsyncIoClock) -> Self {
        BulkheadGate { bulkhead, clock }
    }
}

impl<'b, const N: usize> Gate for BulkheadGate<'b, N> {
    type Wait = SlotWait<'b, N>;

    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> SlotWait<'b, N> {
        let waiters = self.bulkhead.hook();
        let until = Deadline::after(now, waiters.config.max_wait()).min_opt(deadline);
        SlotWait {
            bulkhead: self.bulkhead,
            clock: self.clock,
            until,
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
    clock: AsyncIoClock,
    until: Deadline,
    registered: Option<(Ticket, u64)>,
    sleep: Option<async_io::Timer>,
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
            // No waiting configured: the pipeline's own admission refuses at once.
            return Poll::Ready(Ok(()));
        }
        let mut state = waiters.lock();
        let mut woken = false;
        if let Some((ticket, id)) = me.registered {
            if state.take_woken(id) {
                me.registered = None;
                woken = true;
            } else if me
                .sleep
                .as_mut()
                .is_some_and(|s| Pin::new(s).poll(cx).is_ready())
            {
                // The wait is over: leave the queue, refused.
                state.queue.remove(ticket);
                me.registered = None;
                return Poll::Ready(Err(full()));
            } else {
                // Still queued (a spurious poll): keep the place. The waker of the first poll
                // stays in the queue (a task keeps its waker); the sleep just polled
                // holds the current one, so the wait ends by `max_wait` at the latest.
                return Poll::Pending;
            }
        }
        // Not queued: the first poll, or woken by a release.
        if (woken || state.queue.is_empty()) && me.bulkhead.available() > 0 {
            return Poll::Ready(Ok(()));
        }
        let now = me.clock.now();
        if me.until.has_passed(now) {
            return Poll::Ready(Err(full()));
        }
        let id = state.next_id;
        state.next_id += 1;
        let Ok(ticket) = state
            .queue
            .push((cx.waker().clone(), id), now, &waiters.config)
        else {
            return Poll::Ready(Err(full()));
        };
        me.registered = Some((ticket, id));
        drop(state);
        // A release between the check above and joining found nobody to wake: look again now
        // that we are queued (the queue's mutex orders the release's wake-up and this check).
        if me.bulkhead.available() > 0 {
            let mut state = waiters.lock();
            if state.queue.remove(ticket).is_none() {
                state.take_woken(id);
            }
            me.registered = None;
            return Poll::Ready(Ok(()));
        }
        let sleep = me
            .sleep
            .get_or_insert_with(|| match me.clock.to_std(me.until.instant()) {
                Some(at) => async_io::Timer::at(at),
                None => async_io::Timer::never(),
            });
        if Pin::new(sleep).poll(cx).is_ready() {
            let mut state = waiters.lock();
            if state.queue.remove(ticket).is_none() {
                state.take_woken(id);
            }
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
        let mut state = waiters.lock();
        if state.queue.remove(ticket).is_some() {
            return;
        }
        // Woken but leaving: the wake-up was meant for a slot; pass it on.
        if state.take_woken(id) {
            let next = state.wake_next(&waiters.config);
            drop(state);
            if let Some(w) = next {
                w.wake();
            }
        }
    }
}
