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
//! * **No hand-off, but no lost wake-up either.** A release wakes one waiter; it does not give
//!   it the slot (the core keeps no per-waiter state). The list counts the wake-ups given and
//!   not yet *resolved* (the waiter took a slot with it, or gave it up), and a newcomer goes
//!   past an empty queue only to a slot no such wake-up claims. A caller that skips the gate
//!   altogether (`try_admit`, a pipeline run without waiting) can still take a freed slot
//!   first; the woken waiter then queues again, at its place.
//! * **Every way out passes an unused wake-up on.** A woken waiter that leaves without using
//!   its wake-up (refused by another policy of the pipeline, its deadline or `max_wait`
//!   passed, its future dropped) wakes the next waiter if a slot is free that no other
//!   wake-up claims. A gate's future is dropped only after the admission it let through is
//!   decided (see [`Gate`]), and that drop is when the wake-up is resolved.
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
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use crate::bulkhead::Bulkhead;
use crate::bulkhead::wait::{Ticket, WaitConfig, WaitQueue};
use crate::execute::{Gate, Timer};
use crate::limiter::{DetachedQueuePlace, Limiter, QueuePlace};
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
    // Ids popped by a release and not yet seen by their waiter: "you were woken". Queued and
    // marked together never exceed N (`join` refuses beyond), so a mark always finds a cell.
    woken: [Option<u32>; N],
    // Wake-ups given and not yet resolved: marked, or seen by a waiter that went to the
    // pipeline and has not come back. Each claims one free slot; a slot beyond the claims
    // is what an unused wake-up is passed on to, or what a newcomer may take.
    claims: usize,
    next_id: u32,
}

impl<const N: usize> WaiterList<N> {
    /// Nobody waiting.
    #[allow(clippy::new_without_default)] // const, for a lock's `NEW`
    pub const fn new() -> Self {
        WaiterList {
            queue: WaitQueue::new(),
            woken: [None; N],
            claims: 0,
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

    /// Wake-ups given and not yet resolved (used on a slot, or passed on).
    pub const fn claims(&self) -> usize {
        self.claims
    }

    fn marks(&self) -> usize {
        self.woken.iter().filter(|w| w.is_some()).count()
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

    /// Pops the next waiter in `config`'s order and marks it woken, a claim on one slot: a
    /// release, or an unused wake-up passed on. The caller wakes the waker outside the lock.
    fn wake_next(&mut self, config: &WaitConfig) -> Option<Waker> {
        let (waker, id) = self.queue.pop(config.order())?;
        self.mark_woken(id);
        self.claims += 1;
        Some(waker)
    }

    /// One wake-up is resolved (used, or given up); `free` slots are free now, read under the
    /// lock. Wakes the next waiter if a free slot is left that no other wake-up claims.
    // Why reading `free` under the lock loses nothing: docs/design/waiters.md#wake-ups-are-claims
    fn resolve(&mut self, free: u32, config: &WaitConfig) -> Option<Waker> {
        self.claims = self.claims.saturating_sub(1);
        let unclaimed = usize::try_from(free).unwrap_or(usize::MAX) > self.claims;
        if unclaimed && !self.queue.is_empty() {
            self.wake_next(config)
        } else {
            None
        }
    }

    /// Leaves: out of the queue, or, if woken meanwhile, resolves that wake-up unused (passed
    /// on). The timeout path and a dropped future both come here.
    fn leave(
        &mut self,
        place: Place,
        free: impl FnOnce() -> u32,
        config: &WaitConfig,
    ) -> Option<Waker> {
        if self.queue.remove(place.ticket).is_some() {
            return None;
        }
        if self.take_woken(place.id) {
            return self.resolve(free(), config);
        }
        None
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

    /// How many wake-ups are given and not yet resolved (a woken waiter not yet back from
    /// the pipeline): slots they claim are not offered to newcomers.
    pub fn claims(&self) -> usize {
        self.list.with(|l| l.claims())
    }
}

/// Wakes outside the lock: the woken task may run at once on another thread.
fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

impl<const N: usize, Lk: WaiterLock<N>> ReleaseHook for SlotWaiters<N, Lk> {
    fn on_release(&self) {
        // One slot more: one waiter more may claim it. Unconditional, as the release may be
        // the one a `resolve` read of `free` missed (see `WaiterList::resolve`).
        wake(self.list.with(|l| l.wake_next(&self.config)));
    }

    /// A raised cap: `n` slots more, so up to `n` waiters are woken, each claiming one, as
    /// `n` releases would. One lock section per waiter (wakers are woken outside the lock and
    /// nothing is allocated to collect them); it stops at the first empty queue, so a large
    /// raise costs at most one section per waiter queued (≤ N), not `n`.
    fn on_slots_added(&self, n: u32) {
        for _ in 0..n {
            match self.list.with(|l| l.wake_next(&self.config)) {
                Some(waker) => waker.wake(),
                None => break,
            }
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
///
/// Every method that can end a wake-up's life takes `free`, the policy's free slots, read
/// under the list's lock: that is what an unused wake-up is passed on to.
pub trait WaiterQueue {
    /// The wait settings.
    fn config(&self) -> &WaitConfig;
    /// Whether the wake-up of `place` has arrived (and takes it).
    fn take_woken(&self, place: Place) -> bool;
    /// Leaves the queue (the wait is over, or the waiting future was dropped); a wake-up that
    /// arrived meanwhile is passed on, unused.
    fn leave(&self, place: Place, free: impl FnOnce() -> u32);
    /// A waiter that went on a wake-up is back from the pipeline (admitted, or refused there):
    /// its wake-up is resolved, and passed on if it left a slot unclaimed.
    fn resolve(&self, free: impl FnOnce() -> u32);
    /// Under the lock: go if `woken` and a slot is free, or if nobody waits and a slot is
    /// free that no wake-up claims; otherwise (deadline not passed) take `reserve`'s place
    /// and join with `waker` (a woken waiter at its old place).
    #[doc(hidden)]
    fn join<P>(&self, args: JoinArgs<'_>, ops: impl JoinOps<P>) -> Join<P>;
}

/// The arguments of [`WaiterQueue::join`].
#[doc(hidden)]
#[derive(Debug)]
pub struct JoinArgs<'w> {
    // The place the waiter was woken from, if it was.
    woken: Option<Place>,
    passed: bool,
    now: Instant,
    until: Deadline,
    waker: &'w Waker,
}

/// What [`WaiterQueue::join`] asks of the policy being waited on.
#[doc(hidden)]
pub trait JoinOps<P> {
    /// How many slots are free now.
    fn free(&self) -> u32;
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

    fn leave(&self, place: Place, free: impl FnOnce() -> u32) {
        wake(self.list.with(|l| l.leave(place, free, &self.config)));
    }

    fn resolve(&self, free: impl FnOnce() -> u32) {
        wake(self.list.with(|l| l.resolve(free(), &self.config)));
    }

    fn join<P>(&self, args: JoinArgs<'_>, ops: impl JoinOps<P>) -> Join<P> {
        self.list.with(|l| {
            let free = usize::try_from(ops.free()).unwrap_or(usize::MAX);
            if args.woken.is_some() {
                // Its own claim covers one free slot: go, and resolve after the pipeline.
                if free > 0 {
                    return Join::Go;
                }
                // Taken by a caller that skipped the gate: no slot to pass on, the claim
                // ends here, and the waiter queues again at its place.
                l.claims = l.claims.saturating_sub(1);
            } else if l.is_empty() && free > l.claims {
                // FIFO on arrival: a newcomer goes only with nobody queued and to a slot no
                // woken waiter is about to use; otherwise it queues behind them.
                return Join::Go;
            }
            if args.passed {
                return Join::Refused;
            }
            // Queued and marked together stay within N, so every wake-up finds a mark.
            if l.len() + l.marks() >= N {
                return Join::Refused;
            }
            let Ok(held) = ops.reserve() else {
                return Join::Refused;
            };
            let item = |id| (args.waker.clone(), id);
            let pushed = match args.woken {
                Some(place) => l
                    .queue
                    .rejoin(item(place.id), place.ticket, args.until, &self.config)
                    .map(|ticket| Place { ticket, ..place }),
                None => {
                    let id = l.next_id;
                    l.next_id = l.next_id.wrapping_add(1);
                    l.queue
                        .push(item(id), args.now, &self.config)
                        .map(|ticket| Place { ticket, id })
                }
            };
            match pushed {
                Ok(place) => Join::Joined(place, held),
                Err(_) => Join::Refused,
            }
        })
    }
}

/// A policy a caller can wait on: a [`Bulkhead`] or a [`Limiter`] whose release hook is a
/// [`SlotWaiters`].
pub trait Waitable {
    /// What a waiter holds while waiting: nothing for a bulkhead, a queue-zone place for the
    /// limiter. Plain data, held apart from the policy (so a waiter may own the policy
    /// through an `Arc`): give it back with [`unreserve`](Waitable::unreserve).
    type Held;
    /// Its waiters.
    type Queue: WaiterQueue;
    /// Its waiters.
    fn queue(&self) -> &Self::Queue;
    /// Whether a slot is free now (a snapshot; the pipeline's admission decides).
    fn has_room(&self) -> bool;
    /// How many slots are free now (a snapshot): what wake-ups are counted against.
    fn free(&self) -> u32 {
        u32::from(self.has_room())
    }
    /// What a caller must hold to wait, or `None` when it may not wait.
    fn reserve(&self) -> Option<Self::Held>;
    /// Gives back what [`reserve`](Waitable::reserve) took.
    fn unreserve(&self, held: Self::Held);
    /// Why a caller that cannot wait is refused.
    fn refusal(&self) -> Rejection;
}

impl<const N: usize, Lk: WaiterLock<N>> Waitable for Bulkhead<SlotWaiters<N, Lk>> {
    type Held = ();
    type Queue = SlotWaiters<N, Lk>;

    fn queue(&self) -> &SlotWaiters<N, Lk> {
        self.hook()
    }
    fn has_room(&self) -> bool {
        self.available() > 0
    }
    fn free(&self) -> u32 {
        self.available()
    }
    fn reserve(&self) -> Option<()> {
        Some(())
    }
    fn unreserve(&self, _held: ()) {}
    fn refusal(&self) -> Rejection {
        Rejection::new(RejectReason::BulkheadFull)
    }
}

impl<const N: usize, Lk: WaiterLock<N>> Waitable for Limiter<SlotWaiters<N, Lk>> {
    type Held = DetachedQueuePlace;
    type Queue = SlotWaiters<N, Lk>;

    fn queue(&self) -> &SlotWaiters<N, Lk> {
        self.hook()
    }
    fn has_room(&self) -> bool {
        Limiter::has_room(self)
    }
    fn free(&self) -> u32 {
        self.limit().saturating_sub(self.in_flight())
    }
    /// A place in the queue zone: none beyond it, or when the shedding ladder sheds.
    fn reserve(&self) -> Option<DetachedQueuePlace> {
        self.wait_place().ok().map(QueuePlace::detach)
    }
    fn unreserve(&self, held: DetachedQueuePlace) {
        drop(self.attach_place(held));
    }
    fn refusal(&self) -> Rejection {
        Rejection::new(RejectReason::LimiterFull)
    }
}

macro_rules! waitable_through {
    ($($(#[$attr:meta])* $holder:ty),*) => {$(
        /// The policy behind the pointer: how a pipeline's slot (`&bulkhead`, an `Arc`) is
        /// waited on.
        $(#[$attr])*
        impl<W: Waitable + ?Sized> Waitable for $holder {
            type Held = W::Held;
            type Queue = W::Queue;

            fn queue(&self) -> &W::Queue {
                (**self).queue()
            }
            fn has_room(&self) -> bool {
                (**self).has_room()
            }
            fn free(&self) -> u32 {
                (**self).free()
            }
            fn reserve(&self) -> Option<W::Held> {
                (**self).reserve()
            }
            fn unreserve(&self, held: W::Held) {
                (**self).unreserve(held)
            }
            fn refusal(&self) -> Rejection {
                (**self).refusal()
            }
        }
    )*};
}

waitable_through!(
    &W,
    #[cfg(feature = "alloc")]
    alloc::sync::Arc<W>
);

/// The policy's side of a join; `holds` when the waiter kept its place from an earlier wait.
struct Ops<'w, W: Waitable + ?Sized> {
    target: &'w W,
    holds: bool,
}

impl<'w, W: Waitable + ?Sized> JoinOps<W::Held> for Ops<'w, W> {
    fn free(&self) -> u32 {
        self.target.free()
    }
    fn reserve(self) -> Result<Option<W::Held>, Rejection> {
        if self.holds {
            return Ok(None);
        }
        self.target.reserve().map(Some).ok_or(self.target.refusal())
    }
}

/// Holds each attempt until `target` has room: the [`Gate`] an adapter passes to
/// [`execute_gated`](crate::execute::execute_gated). See the [module docs](self).
///
/// `T` reaches the policy: a reference (`&bulkhead`), or a handle that owns it (an `Arc`, or
/// a handle into a shared pipeline), cloned into each wait.
pub struct WaitGate<T, Tm> {
    target: T,
    timer: Tm,
}

impl<T, Tm> fmt::Debug for WaitGate<T, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGate").finish_non_exhaustive()
    }
}

impl<T, Tm> WaitGate<T, Tm> {
    /// A gate on `target`, timing waits on `timer` (the timeline of the call's deadline).
    pub const fn new(target: T, timer: Tm) -> Self {
        WaitGate { target, timer }
    }
}

impl<T, Tm> Gate for WaitGate<T, Tm>
where
    T: Deref<Target: Waitable> + Clone,
    Tm: WaitTimer + Clone,
{
    type Wait = WaitFor<T, Tm>;

    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> WaitFor<T, Tm> {
        let max_wait = self.target.queue().config().max_wait();
        WaitFor {
            target: self.target.clone(),
            timer: self.timer.clone(),
            until: Deadline::after(now, max_wait).min_opt(deadline),
            registered: None,
            claim: false,
            held: None,
            sleep: None,
        }
    }
}

/// What a waiter on `T`'s policy holds.
type HeldBy<T> = <<T as Deref>::Target as Waitable>::Held;

/// Waiting for room: the future of [`WaitGate`]. Dropping it leaves the queue, and resolves a
/// wake-up it went on: [`execute_gated`](crate::execute::execute_gated) drops it right after
/// the admission it let through, so a wake-up the admission did not use (another policy
/// refused, the deadline passed) is passed on then.
pub struct WaitFor<T: Deref<Target: Waitable>, Tm: WaitTimer> {
    target: T,
    timer: Tm,
    until: Deadline,
    registered: Option<Place>,
    // Went on a wake-up, not yet resolved: the drop resolves it.
    claim: bool,
    held: Option<HeldBy<T>>,
    sleep: Option<Tm::OwnedSleep>,
}

impl<T: Deref<Target: Waitable>, Tm: WaitTimer> fmt::Debug for WaitFor<T, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitFor")
            .field("until", &self.until)
            .field("registered", &self.registered)
            .field("claim", &self.claim)
            .finish_non_exhaustive()
    }
}

// Nothing is pinned structurally: the sleep is `Unpin`, the rest is plain data.
impl<T: Deref<Target: Waitable>, Tm: WaitTimer> Unpin for WaitFor<T, Tm> {}

impl<T: Deref<Target: Waitable>, Tm: WaitTimer> WaitFor<T, Tm> {
    /// Gives back what the wait reserved, if anything.
    fn unreserve(&mut self) {
        if let Some(held) = self.held.take() {
            self.target.unreserve(held);
        }
    }

    fn refuse(&mut self) -> Poll<Result<(), Rejection>> {
        self.unreserve();
        Poll::Ready(Err(self.target.refusal()))
    }

    fn go(&mut self) -> Poll<Result<(), Rejection>> {
        // Give the queue-zone place back before the pipeline admits: it is not a slot.
        self.unreserve();
        Poll::Ready(Ok(()))
    }

    /// The wait is over (max wait or deadline): leave, passing on a wake-up that came
    /// meanwhile, and refuse.
    fn time_out(&mut self, place: Place) -> Poll<Result<(), Rejection>> {
        self.registered = None;
        let target = &*self.target;
        target.queue().leave(place, || target.free());
        self.refuse()
    }
}

impl<T: Deref<Target: Waitable>, Tm: WaitTimer> Future for WaitFor<T, Tm> {
    type Output = Result<(), Rejection>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = &mut *self;
        let target = &*me.target;
        let queue = target.queue();
        if !queue.config().allows_waiting() {
            // No waiting configured: the pipeline's own admission refuses at once.
            return Poll::Ready(Ok(()));
        }
        let mut woken = None;
        if let Some(place) = me.registered {
            if queue.take_woken(place) {
                me.registered = None;
                woken = Some(place);
            } else if me
                .sleep
                .as_mut()
                .is_some_and(|s| Pin::new(s).poll(cx).is_ready())
            {
                return me.time_out(place);
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
            until: me.until,
            waker: cx.waker(),
        };
        let ops = Ops {
            target,
            holds: me.held.is_some(),
        };
        let place = match queue.join(args, ops) {
            Join::Go => {
                // Going on a wake-up: it stays claimed until this future is dropped, after
                // the admission (`Drop` resolves it).
                me.claim = woken.is_some();
                return me.go();
            }
            Join::Joined(place, held) => {
                if held.is_some() {
                    me.held = held;
                }
                place
            }
            Join::Refused => return me.refuse(),
        };
        me.registered = Some(place);
        // No re-check of the room after joining.
        // Why: docs/design/waiters.md#fifo-on-arrival
        let (timer, until) = (&me.timer, me.until);
        let sleep = me
            .sleep
            .get_or_insert_with(|| timer.sleep_owned(until.instant()));
        if Pin::new(sleep).poll(cx).is_ready() {
            return me.time_out(place);
        }
        Poll::Pending
    }
}

impl<T: Deref<Target: Waitable>, Tm: WaitTimer> Drop for WaitFor<T, Tm> {
    fn drop(&mut self) {
        let target = &*self.target;
        // Still queued (cancelled): leave, passing on a wake-up not yet seen.
        if let Some(place) = self.registered.take() {
            target.queue().leave(place, || target.free());
        }
        // Went on a wake-up: the admission is decided by now. A slot it took is no longer
        // free; one it left (refused elsewhere, deadline passed) goes to the next waiter.
        if core::mem::take(&mut self.claim) {
            target.queue().resolve(|| target.free());
        }
        // Last, as the reserved place's own drop ran after this body before.
        self.unreserve();
    }
}
