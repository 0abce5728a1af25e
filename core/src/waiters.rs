//! Bounded waiting for a slot, written once for every adapter: the async half of the wait
//! protocol in [`crate::bulkhead`], for a bulkhead's slots and for the adaptive limiter's queue
//! zone alike.
//!
//! The pieces:
//!
//! * [`SlotWaiters`]: the waiters of one policy, kept in its release hook (pass it to
//!   [`Bulkhead::with_hook`] or [`Limiter::with_hook`]). The list lives behind a lock the
//!   adapter chooses ([`WaiterLock`]: a `Mutex` on std, a critical section on firmware): the
//!   core itself stays lock-free, and this module needs the lock only to wake and queue.
//! * [`WaitTimer`]: a [`Timer`] whose sleeps own what they need, so a waiting future can keep
//!   one across polls.
//! * [`WaitGate`]: the [`Gate`] that holds each attempt of
//!   [`execute_gated`](crate::execute::execute_gated) until the policy has room.
//!
//! The rules, whichever policy is waited on:
//!
//! * **Bounded.** A caller that finds `max_waiters` already waiting, or whose `max_wait` (or
//!   call deadline) passes, is refused with the policy's own reason (`bulkhead-full`,
//!   `limiter-full`). For the limiter each waiter also holds a place in its queue zone, so no
//!   more than `⌊limit × (queue_factor − 1)⌋` ever wait, and the zone's shedding ladder applies.
//! * **FIFO on arrival.** A caller that finds waiters queued joins the queue even if a slot is
//!   free, so callers are served in the configured order (FIFO, or LIFO).
//! * **No hand-off.** A release wakes one waiter; it does not give it the slot (the core keeps
//!   no per-waiter state). A caller arriving between the wake-up and the woken waiter's poll
//!   while the queue is empty can take the slot first; the woken waiter then queues again.
//! * **Cancellation.** Dropping a waiting future leaves the queue; a waiter that was woken
//!   and is dropped before using its wake-up passes it on to the next waiter.
//!
//! ```
//! use core::future::{Future, Ready, ready};
//! use core::pin::pin;
//! use core::task::{Context, Poll, Waker};
//! use core::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::execute::{Gate, Timer};
//! use resilix::time::{Clock, Instant, ManualClock};
//! use resilix::waiters::{SlotWaiters, WaitGate, WaitTimer, WaiterList, WaiterLock};
//!
//! /// A single-threaded lock; an adapter's is a mutex or a critical section.
//! struct Solo<const N: usize>(core::cell::RefCell<WaiterList<N>>);
//! impl<const N: usize> WaiterLock<N> for Solo<N> {
//!     #[allow(clippy::declare_interior_mutable_const)]
//!     const NEW: Self = Solo(core::cell::RefCell::new(WaiterList::new()));
//!     fn with<R>(&self, f: impl FnOnce(&mut WaiterList<N>) -> R) -> R { f(&mut self.0.borrow_mut()) }
//! }
//! #[derive(Clone, Copy)]
//! struct Still(Instant);
//! impl Timer for Still {
//!     type Sleep<'a> = core::future::Pending<()>;
//!     fn now(&self) -> Instant { self.0 }
//!     fn sleep_until(&self, _: Instant) -> Self::Sleep<'_> { core::future::pending() }
//! }
//! impl WaitTimer for Still {
//!     type OwnedSleep = core::future::Pending<()>;
//!     fn sleep_owned(&self, _: Instant) -> Self::OwnedSleep { core::future::pending() }
//! }
//!
//! let wait = WaitConfig::new(4, Duration::from_millis(50), WaitOrder::Fifo).unwrap();
//! let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::<4, Solo<4>>::new(wait));
//! let gate = WaitGate::new(&bulkhead, Still(Instant::ZERO));
//! let mut cx = Context::from_waker(Waker::noop());
//! let holder = bulkhead.try_admit().unwrap();
//! let mut waiting = pin!(gate.ready(Instant::ZERO, None));
//! assert!(waiting.as_mut().poll(&mut cx).is_pending(), "no slot: queued");
//! assert_eq!(bulkhead.hook().waiting(), 1);
//! drop(holder); // wakes the waiter
//! assert_eq!(waiting.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
//! ```
//!
//! [`Bulkhead::with_hook`]: crate::bulkhead::Bulkhead::with_hook
//! [`Limiter::with_hook`]: crate::limiter::Limiter::with_hook

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use crate::bulkhead::Bulkhead;
use crate::bulkhead::wait::{Ticket, WaitConfig, WaitQueue};
use crate::execute::{Gate, Timer};
use crate::limiter::{Limiter, QueuePlace};
use crate::rejection::{RejectReason, Rejection};
use crate::release::ReleaseHook;
use crate::time::{Deadline, Instant};

/// A [`Timer`] whose sleeps borrow nothing, so a waiting future can own one across polls.
///
/// Each adapter's timer implements both (see the [module docs](self) for one on a manual
/// clock); tokio's owned sleep is a boxed `tokio::time::Sleep`, paid only by a caller that
/// actually waits.
pub trait WaitTimer: Timer {
    /// The future `sleep_owned` returns.
    type OwnedSleep: Future<Output = ()> + Unpin;

    /// A future that completes at `at`, owning everything it needs.
    fn sleep_owned(&self, at: Instant) -> Self::OwnedSleep;
}

/// The waiting callers of one policy, with the ids of those woken and not yet back.
#[derive(Debug)]
pub struct WaiterList<const N: usize> {
    queue: WaitQueue<(Waker, u32), N>,
    // Ids popped by a release and not yet seen by their waiter: "you were woken".
    woken: [Option<u32>; N],
    next_id: u32,
}

impl<const N: usize> WaiterList<N> {
    /// Nobody waiting.
    #[allow(clippy::new_without_default)] // const, for a lock's `NEW`
    pub const fn new() -> Self {
        WaiterList {
            queue: WaitQueue::new(),
            woken: [None; N],
            next_id: 0,
        }
    }

    /// How many wait.
    pub const fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nobody waits.
    pub const fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

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

    /// Pops the next waiter in `config`'s order and marks it woken: a release, or a woken
    /// waiter passing its turn on. The caller wakes the waker outside the lock.
    fn wake_next(&mut self, config: &WaitConfig) -> Option<Waker> {
        let (waker, id) = self.queue.pop(config.order())?;
        self.mark_woken(id);
        Some(waker)
    }

    /// Leaves quietly: out of the queue, or forgets a wake-up not yet seen.
    fn leave(&mut self, place: Place) {
        if self.queue.remove(place.ticket).is_none() {
            self.take_woken(place.id);
        }
    }
}

/// The lock an adapter keeps a [`WaiterList`] behind: held only to queue, pop and wake.
pub trait WaiterLock<const N: usize> {
    /// An unlocked, empty list: `const`, so a policy with waiters can live in a `static`.
    const NEW: Self;

    /// Runs `f` with the list locked.
    fn with<R>(&self, f: impl FnOnce(&mut WaiterList<N>) -> R) -> R;
}

/// The waiters of one policy: its release hook. Holds at most `min(N, max_waiters)`.
pub struct SlotWaiters<const N: usize, Lk> {
    config: WaitConfig,
    list: Lk,
}

impl<const N: usize, Lk> fmt::Debug for SlotWaiters<N, Lk> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotWaiters")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<const N: usize, Lk: WaiterLock<N>> SlotWaiters<N, Lk> {
    /// Waiters as `config` allows (see [`WaitConfig`]: no waiting is its default).
    pub const fn new(config: WaitConfig) -> Self {
        SlotWaiters {
            config,
            list: Lk::NEW,
        }
    }

    /// The wait settings.
    pub const fn config(&self) -> &WaitConfig {
        &self.config
    }

    /// How many callers are waiting now.
    pub fn waiting(&self) -> usize {
        self.list.with(|l| l.len())
    }
}

impl<const N: usize, Lk: WaiterLock<N>> ReleaseHook for SlotWaiters<N, Lk> {
    fn on_release(&self) {
        // Wake outside the lock: the woken task may run at once on another thread.
        if let Some(w) = self.list.with(|l| l.wake_next(&self.config)) {
            w.wake();
        }
    }
}

/// A waiter's place in a [`WaiterList`].
#[derive(Clone, Copy, Debug)]
pub struct Place {
    ticket: Ticket,
    id: u32,
}

/// What a caller found: go now, or it joined the queue (holding `P` if it newly reserved
/// one), or it is refused.
#[doc(hidden)]
#[derive(Debug)]
pub enum Join<P> {
    /// Room: go.
    Go,
    /// Queued.
    Joined(Place, Option<P>),
    /// May not wait.
    Refused,
}

/// The waiters' side of a policy, without the list's capacity in its type.
pub trait WaiterQueue {
    /// The wait settings.
    fn config(&self) -> &WaitConfig;
    /// Whether the wake-up of `place` has arrived (and takes it).
    fn take_woken(&self, place: Place) -> bool;
    /// Leaves the queue quietly (refused, or going after all).
    fn leave(&self, place: Place);
    /// Leaves because the waiter was dropped, passing on a wake-up it had not used.
    fn cancel(&self, place: Place);
    /// Under the lock: go if `woken` or nobody waits, and `has_room`; otherwise (deadline
    /// not passed) take `reserve`'s place and join with `waker`.
    #[doc(hidden)]
    fn join<P>(&self, args: JoinArgs<'_>, ops: impl JoinOps<P>) -> Join<P>;
}

/// The arguments of [`WaiterQueue::join`].
#[doc(hidden)]
#[derive(Debug)]
pub struct JoinArgs<'w> {
    woken: bool,
    passed: bool,
    now: Instant,
    waker: &'w Waker,
}

/// What [`WaiterQueue::join`] asks of the policy being waited on.
#[doc(hidden)]
pub trait JoinOps<P> {
    /// A slot is free now.
    fn has_room(&self) -> bool;
    /// Whatever a waiter must hold to wait (a limiter queue-zone place): `Ok(None)` when
    /// it holds one already, `Err` when it may not wait.
    fn reserve(self) -> Result<Option<P>, Rejection>;
}

impl<const N: usize, Lk: WaiterLock<N>> WaiterQueue for SlotWaiters<N, Lk> {
    fn config(&self) -> &WaitConfig {
        &self.config
    }

    fn take_woken(&self, place: Place) -> bool {
        self.list.with(|l| l.take_woken(place.id))
    }

    fn leave(&self, place: Place) {
        self.list.with(|l| l.leave(place));
    }

    fn cancel(&self, place: Place) {
        let next = self.list.with(|l| {
            if l.queue.remove(place.ticket).is_some() {
                return None;
            }
            // Woken but leaving: the wake-up was meant for a slot; pass it on.
            if l.take_woken(place.id) {
                l.wake_next(&self.config)
            } else {
                None
            }
        });
        if let Some(w) = next {
            w.wake();
        }
    }

    fn join<P>(&self, args: JoinArgs<'_>, ops: impl JoinOps<P>) -> Join<P> {
        self.list.with(|l| {
            // FIFO on arrival: with waiters queued, a newcomer queues behind them even if a
            // slot is free; only a woken waiter (or nobody waiting) may take it.
            if (args.woken || l.is_empty()) && ops.has_room() {
                return Join::Go;
            }
            if args.passed {
                return Join::Refused;
            }
            let Ok(held) = ops.reserve() else {
                return Join::Refused;
            };
            let id = l.next_id;
            l.next_id = l.next_id.wrapping_add(1);
            match l
                .queue
                .push((args.waker.clone(), id), args.now, &self.config)
            {
                Ok(ticket) => Join::Joined(Place { ticket, id }, held),
                Err(_) => Join::Refused,
            }
        })
    }
}

/// A policy a caller can wait on: a [`Bulkhead`] or a [`Limiter`] whose release hook is a
/// [`SlotWaiters`].
pub trait Waitable {
    /// What a waiter holds while waiting: nothing for a bulkhead, a queue-zone place for the
    /// limiter.
    type Held<'a>
    where
        Self: 'a;
    /// Its waiters.
    type Queue: WaiterQueue;
    /// Its waiters.
    fn queue(&self) -> &Self::Queue;
    /// Whether a slot is free now (a snapshot; the pipeline's admission decides).
    fn has_room(&self) -> bool;
    /// What a caller must hold to wait, or `None` when it may not wait.
    fn reserve(&self) -> Option<Self::Held<'_>>;
    /// Why a caller that cannot wait is refused.
    fn refusal(&self) -> Rejection;
}

impl<const N: usize, Lk: WaiterLock<N>> Waitable for Bulkhead<SlotWaiters<N, Lk>> {
    type Held<'a>
        = ()
    where
        Self: 'a;
    type Queue = SlotWaiters<N, Lk>;

    fn queue(&self) -> &SlotWaiters<N, Lk> {
        self.hook()
    }
    fn has_room(&self) -> bool {
        self.available() > 0
    }
    fn reserve(&self) -> Option<()> {
        Some(())
    }
    fn refusal(&self) -> Rejection {
        Rejection::new(RejectReason::BulkheadFull)
    }
}

impl<const N: usize, Lk: WaiterLock<N>> Waitable for Limiter<SlotWaiters<N, Lk>> {
    type Held<'a>
        = QueuePlace<'a, SlotWaiters<N, Lk>>
    where
        Self: 'a;
    type Queue = SlotWaiters<N, Lk>;

    fn queue(&self) -> &SlotWaiters<N, Lk> {
        self.hook()
    }
    fn has_room(&self) -> bool {
        Limiter::has_room(self)
    }
    /// A place in the queue zone: none beyond it, or when the shedding ladder sheds.
    fn reserve(&self) -> Option<Self::Held<'_>> {
        self.wait_place().ok()
    }
    fn refusal(&self) -> Rejection {
        Rejection::new(RejectReason::LimiterFull)
    }
}

/// The policy's side of a join; `holds` when the waiter kept its place from an earlier wait.
struct Ops<'w, W: Waitable + ?Sized> {
    target: &'w W,
    holds: bool,
}

impl<'w, W: Waitable + ?Sized> JoinOps<W::Held<'w>> for Ops<'w, W> {
    fn has_room(&self) -> bool {
        self.target.has_room()
    }
    fn reserve(self) -> Result<Option<W::Held<'w>>, Rejection> {
        if self.holds {
            return Ok(None);
        }
        self.target.reserve().map(Some).ok_or(self.target.refusal())
    }
}

/// Holds each attempt until `target` has room: the [`Gate`] an adapter passes to
/// [`execute_gated`](crate::execute::execute_gated). See the [module docs](self).
pub struct WaitGate<'b, W: ?Sized, Tm> {
    target: &'b W,
    timer: Tm,
}

impl<W: ?Sized, Tm> fmt::Debug for WaitGate<'_, W, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGate").finish_non_exhaustive()
    }
}

impl<'b, W: ?Sized, Tm> WaitGate<'b, W, Tm> {
    /// A gate on `target`, timing waits on `timer` (the timeline of the call's deadline).
    pub const fn new(target: &'b W, timer: Tm) -> Self {
        WaitGate { target, timer }
    }
}

impl<'b, W: Waitable + ?Sized, Tm: WaitTimer + Clone> Gate for WaitGate<'b, W, Tm> {
    type Wait = WaitFor<'b, W, Tm>;

    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> WaitFor<'b, W, Tm> {
        let max_wait = self.target.queue().config().max_wait();
        WaitFor {
            target: self.target,
            timer: self.timer.clone(),
            until: Deadline::after(now, max_wait).min_opt(deadline),
            registered: None,
            held: None,
            sleep: None,
        }
    }
}

/// Waiting for room: the future of [`WaitGate`]. Dropping it leaves the queue (and passes a
/// wake-up it received on to the next waiter).
pub struct WaitFor<'b, W: Waitable + ?Sized, Tm: WaitTimer> {
    target: &'b W,
    timer: Tm,
    until: Deadline,
    registered: Option<Place>,
    held: Option<W::Held<'b>>,
    sleep: Option<Tm::OwnedSleep>,
}

impl<W: Waitable + ?Sized, Tm: WaitTimer> fmt::Debug for WaitFor<'_, W, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitFor")
            .field("until", &self.until)
            .field("registered", &self.registered)
            .finish_non_exhaustive()
    }
}

// Nothing is pinned structurally: the sleep is `Unpin`, the rest is plain data.
impl<W: Waitable + ?Sized, Tm: WaitTimer> Unpin for WaitFor<'_, W, Tm> {}

impl<'b, W: Waitable + ?Sized, Tm: WaitTimer> WaitFor<'b, W, Tm> {
    fn refuse(&mut self) -> Poll<Result<(), Rejection>> {
        self.held = None;
        Poll::Ready(Err(self.target.refusal()))
    }

    fn go(&mut self) -> Poll<Result<(), Rejection>> {
        // Give the queue-zone place back before the pipeline admits: it is not a slot.
        self.held = None;
        Poll::Ready(Ok(()))
    }
}

impl<'b, W: Waitable + ?Sized, Tm: WaitTimer> Future for WaitFor<'b, W, Tm> {
    type Output = Result<(), Rejection>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = &mut *self;
        let target: &'b W = me.target;
        let queue = target.queue();
        if !queue.config().allows_waiting() {
            // No waiting configured: the pipeline's own admission refuses at once.
            return Poll::Ready(Ok(()));
        }
        let mut woken = false;
        if let Some(place) = me.registered {
            if queue.take_woken(place) {
                me.registered = None;
                woken = true;
            } else if me
                .sleep
                .as_mut()
                .is_some_and(|s| Pin::new(s).poll(cx).is_ready())
            {
                // The wait is over: leave the queue, refused.
                queue.leave(place);
                me.registered = None;
                return me.refuse();
            } else {
                // Still queued (a spurious poll): keep the place. The waker of the first poll
                // stays in the queue (a task keeps its waker); the sleep just polled holds the
                // current one, so the wait ends by `max_wait` at the latest.
                return Poll::Pending;
            }
        }
        // Not queued: the first poll, or woken by a release.
        let now = me.timer.now();
        let args = JoinArgs {
            woken,
            passed: me.until.has_passed(now),
            now,
            waker: cx.waker(),
        };
        let ops = Ops {
            target,
            holds: me.held.is_some(),
        };
        let place = match queue.join(args, ops) {
            Join::Go => return me.go(),
            Join::Joined(place, held) => {
                if held.is_some() {
                    me.held = held;
                }
                place
            }
            Join::Refused => return me.refuse(),
        };
        me.registered = Some(place);
        // No re-check of the room after joining. The room check and the join ran under the
        // lock the release hook takes to wake, so a release either freed its slot before
        // that check (seen there) or wakes from the queue that now holds this waiter. A
        // re-check here would let a newcomer take a slot a woken waiter is about to use,
        // defeating FIFO on arrival (the first version did exactly that).
        let (timer, until) = (&me.timer, me.until);
        let sleep = me
            .sleep
            .get_or_insert_with(|| timer.sleep_owned(until.instant()));
        if Pin::new(sleep).poll(cx).is_ready() {
            queue.leave(place);
            me.registered = None;
            return me.refuse();
        }
        Poll::Pending
    }
}

impl<W: Waitable + ?Sized, Tm: WaitTimer> Drop for WaitFor<'_, W, Tm> {
    fn drop(&mut self) {
        if let Some(place) = self.registered.take() {
            self.target.queue().cancel(place);
        }
    }
}
