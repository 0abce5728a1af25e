//! The adaptive concurrency limiter: infers how many calls may be in flight to an upstream
//! from the latency it observes, instead of a constant someone chose once (the essay's (docs/design/essay.md) lesson
//! from Hystrix's fixed thread pools).
//!
//! * Admission is exact: the in-flight count is a compare-and-swap counter, and a call is
//!   refused with [`RejectReason::LimiterFull`] when `in_flight ≥ limit`.
//! * Outcomes feed a window (see `sample.rs`): `Success` and `Answered` give a latency sample
//!   (`now − admitted_at`); `Overload` and `Timeout` are drops, a congestion signal whose
//!   latency is never sampled; `Transient` and `Uncertain` give nothing (a reset or a 500
//!   says nothing about queueing); `Rejected` and cancelled (dropped) permits give nothing and only hand their
//!   slot back (concurrency-limits #146).
//! * Once per window the thread that wins the window's close runs the algorithm
//!   ([`Gradient2`] by default, [`Vegas`], [`Aimd`]) and stores the new limit, in Q24.8 fixed
//!   point in one `AtomicU32`; [`Event::LimitChanged`] reports whole-call changes.
//! * App-limited guard: no algorithm grows the limit from a window whose peak in-flight count
//!   was below half the limit.
//! * The queue zone (see [`Zone`]): [`Limiter::admit_or_queue`] lets a call beyond the limit
//!   wait, up to `limit × queue_factor` calls in all, shedding on a deterministic ladder.
//!
//! ```
//! use core::time::Duration;
//! use resilix::limiter::{Limiter, LimiterConfig};
//! use resilix::permit::{Env, Permit, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::{RejectReason, Verdict};
//!
//! static LIMITER: Limiter = match Limiter::new(LimiterConfig {
//!     initial_limit: 2,
//!     min_limit: 1,
//!     ..LimiterConfig::gradient2()
//! }) {
//!     Ok(l) => l,
//!     Err(_) => panic!("invalid limiter config"),
//! };
//!
//! let mut rng = SeededRandom::new(5);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let a = LIMITER.admit(&mut env).unwrap();
//! let b = LIMITER.admit(&mut env).unwrap();
//! let refused = LIMITER.admit(&mut env).unwrap_err();
//! assert_eq!(refused.reason(), RejectReason::LimiterFull);
//! drop(b); // cancelled: the slot comes back, no sample is recorded
//! env.now = Instant::from_millis(20);
//! a.settle(&Verdict::Success, &mut env); // a 20 ms latency sample
//! assert_eq!(LIMITER.in_flight(), 0);
//! ```
//!
//! Design notes: docs/design/limiter.md

mod aimd;
mod config;
mod control;
mod fixed;
mod gradient2;
mod reconfigure;
pub(crate) mod sample;
mod vegas;
mod zone;

pub use aimd::Aimd;
pub use config::{Algorithm, LimiterConfig, LimiterConfigError, MAX_LIMIT, MAX_WINDOW};
pub use fixed::Rtt;
pub use gradient2::Gradient2;
pub use reconfigure::LimiterReconfigureError;
pub use vegas::Vegas;
pub use zone::Zone;

use config::Rule;
use fixed::CALL;
use sample::{Baseline, SampleWindow};

use crate::observe::{Event, Observer};
use crate::permit::{Detach, Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::release::{ReleaseHook, ReleaseSignal};
use crate::slots::Slots;
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::ticks::TickScale;
use crate::verdict::Verdict;

/// "No window RTT seen since the last refresh."
const NO_RTT: u32 = u32::MAX;

/// An adaptive concurrency limiter. See the [module docs](self).
///
/// `H` is called after every in-flight slot is given back (see [`Limiter::with_hook`]): the
/// wake-up an adapter needs to let callers wait in the queue zone.
#[derive(Debug)]
pub struct Limiter<H = ()> {
    rule: Rule,
    scale: TickScale,
    min_window: u32,
    max_window: u32,
    window_samples: u32,
    min_rtt_us: u32,
    probe_multiplier: u32,
    queue_factor: u32,
    queue_rungs: u32,
    /// The configured initial limit in whole calls, where a reset returns.
    initial_limit: u32,
    /// The limit in force, Q24.8.
    limit: AtomicU32,
    /// The bounds in force, Q24.8 (`rule`'s own are the configured ones): written by
    /// `reconfigure` and read by the closer, both holding the window's right to close, so the
    /// pair is never seen half-changed and no `Settings` block is needed.
    bounds: [AtomicU32; 2],
    in_flight: Slots,
    waiting: Slots,
    tickets: AtomicU32,
    window: SampleWindow,
    baseline_rtt: AtomicU32,
    baseline_count: AtomicU32,
    recent_min_rtt: AtomicU32,
    windows_to_refresh: AtomicU32,
    // Bumped after every in-flight release: the queue zone's wake-up (the bulkhead's protocol).
    released: ReleaseSignal<H>,
}

impl Limiter {
    crate::sync::const_fn_unless_loom! {
        /// A limiter from `config`, or why the config is invalid.
        pub fn new(config: LimiterConfig) -> Result<Limiter, LimiterConfigError> {
            Limiter::with_hook(config, ())
        }
    }
}

/// [`LimiterConfig::default`] (valid by construction), no hook.
///
/// ```
/// let limiter = resilix::limiter::Limiter::default();
/// assert!(limiter.limit() >= 1);
/// ```
impl Default for Limiter {
    fn default() -> Self {
        match Limiter::new(LimiterConfig::default()) {
            Ok(limiter) => limiter,
            Err(_) => unreachable!("the default config is valid (its doctest checks it)"),
        }
    }
}

impl<H> Limiter<H> {
    crate::sync::const_fn_unless_loom! {
        /// A limiter from `config` that calls `hook` after every in-flight slot is given back
        /// (settled or dropped), or why the config is invalid. An adapter keeps the callers
        /// waiting in the queue zone there and wakes one per release, following the wait
        /// protocol in [`crate::bulkhead`]: [`Limiter::releases`] before the attempt,
        /// [`Limiter::released_since`] after joining its queue.
        ///
        /// ```
        /// use resilix::limiter::{Limiter, LimiterConfig};
        /// use resilix::release::ReleaseHook;
        ///
        /// struct Wake;
        /// impl ReleaseHook for Wake {
        ///     fn on_release(&self) { /* wake the next waiter */ }
        /// }
        /// let limiter = Limiter::with_hook(LimiterConfig::gradient2(), Wake).unwrap();
        /// assert_eq!(limiter.releases(), 0);
        /// ```
        pub fn with_hook(config: LimiterConfig, hook: H) -> Result<Limiter<H>, LimiterConfigError> {
            let rule = match config::compile(&config) {
                Ok(r) => r,
                Err(e) => {
                    // A const fn cannot run `H`'s destructor; an invalid config is a startup
                    // error, so the hook (a small waiter list) is leaked rather than dropped.
                    core::mem::forget(hook);
                    return Err(e);
                }
            };
            let scale = TickScale::covering(config.max_window);
            let min_window = scale.ticks_in(config.min_window);
            let micros = config.min_rtt.as_micros();
            Ok(Limiter {
                rule,
                scale,
                min_window,
                max_window: scale.ticks_in(config.max_window),
                window_samples: config.window_samples,
                min_rtt_us: if micros > u32::MAX as u128 { u32::MAX } else { micros as u32 },
                probe_multiplier: config.probe_multiplier,
                queue_factor: fixed::ratio_from_f32(config.queue_factor) >> 8,
                queue_rungs: config.queue_rungs,
                initial_limit: config.initial_limit,
                limit: AtomicU32::new(config.initial_limit * CALL),
                bounds: [
                    AtomicU32::new(config.min_limit * CALL),
                    AtomicU32::new(config.max_limit * CALL),
                ],
                in_flight: Slots::new(),
                waiting: Slots::new(),
                tickets: AtomicU32::new(0),
                window: SampleWindow::new(min_window),
                baseline_rtt: AtomicU32::new(0),
                baseline_count: AtomicU32::new(0),
                recent_min_rtt: AtomicU32::new(NO_RTT),
                windows_to_refresh: AtomicU32::new(
                    first_refresh(config.probe_multiplier, config.initial_limit),
                ),
                released: ReleaseSignal::new(hook),
            })
        }
    }

    /// The limit in force, in whole calls.
    pub fn limit(&self) -> u32 {
        self.limit.load(Ordering::Acquire) / CALL
    }

    /// The limit in force with its fraction, in 256ths of a call (Q24.8).
    pub fn limit_fixed(&self) -> u32 {
        self.limit.load(Ordering::Acquire)
    }

    /// Calls admitted and not yet settled or dropped (a snapshot).
    pub fn in_flight(&self) -> u32 {
        self.in_flight.held()
    }

    /// Calls holding a waiting place in the queue zone (a snapshot).
    pub fn waiting(&self) -> u32 {
        self.waiting.held()
    }

    /// How many in-flight slots have been given back, wrapping at `u32::MAX`: the wait
    /// protocol's event count (see [`crate::release`]). Read it before trying to admit.
    pub fn releases(&self) -> u32 {
        self.released.count()
    }

    /// Whether an in-flight slot was given back since `seen` (a [`Self::releases`] read): the
    /// waiter's re-check after joining its queue, ordered with every release.
    pub fn released_since(&self, seen: u32) -> bool {
        self.released.released_since(seen)
    }

    /// The release hook, so an adapter can reach the waiters it keeps there.
    pub const fn hook(&self) -> &H {
        self.released.hook()
    }

    /// Whether a call arriving now would find an in-flight slot under the limit (a snapshot).
    pub fn has_room(&self) -> bool {
        self.in_flight() < self.limit()
    }

    /// The baseline latency the algorithm compares with (zero before the first window).
    pub fn baseline(&self) -> Rtt {
        Rtt(self.baseline_rtt.load(Ordering::Acquire))
    }

    /// Which zone a call arriving now would be in (a snapshot; [`Limiter::admit_or_queue`]
    /// decides atomically).
    pub fn zone(&self) -> Zone {
        let limit = self.limit();
        zone::zone(
            self.in_flight(),
            self.waiting(),
            limit,
            zone::room(limit, self.queue_factor),
            self.queue_rungs,
        )
    }
}

impl<H: ReleaseHook> Limiter<H> {
    /// Admits now, or hands out a waiting place in the queue zone, or refuses.
    ///
    /// A waiting place is bounded (at most `⌊limit × (queue_factor − 1)⌋` are held at once)
    /// and is not a slot: the adapter waits, bounded by the caller's deadline, and calls
    /// [`QueuePlace::try_admit`] when a slot may have freed. Dropping the place gives it back.
    ///
    /// ```
    /// use resilix::limiter::{Admission, Limiter, LimiterConfig};
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let limiter = Limiter::new(LimiterConfig {
    ///     initial_limit: 1, min_limit: 1, queue_factor: 2.0, ..LimiterConfig::gradient2()
    /// }).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    /// let Admission::Admitted(first) = limiter.admit_or_queue(&mut env) else { panic!() };
    /// let Admission::Wait(place) = limiter.admit_or_queue(&mut env) else { panic!() };
    /// assert!(matches!(limiter.admit_or_queue(&mut env), Admission::Refused(_)));
    /// drop(first);
    /// let _second = place.try_admit(&mut env).ok().expect("the slot freed");
    /// ```
    pub fn admit_or_queue<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Admission<'a, H> {
        let limit = self.limit();
        if let Ok(n) = self.in_flight.try_acquire(limit) {
            return Admission::Admitted(self.permit(env.now, n, limit));
        }
        match self.queue_place(limit) {
            Ok(place) => Admission::Wait(place),
            Err(refused) => Admission::Refused(refused),
        }
    }

    /// A place in the queue zone for a caller that will wait (an adapter's waiting gate,
    /// whether or not a slot is free: a newcomer queues behind earlier waiters), or the
    /// `limiter-full` refusal: beyond the zone, or shed by the ladder. At most
    /// `⌊limit × (queue_factor − 1)⌋` places are held at once. Takes no in-flight slot.
    ///
    /// ```
    /// use resilix::limiter::{Limiter, LimiterConfig};
    ///
    /// let limiter = Limiter::new(LimiterConfig {
    ///     initial_limit: 1, min_limit: 1, queue_factor: 2.0, ..LimiterConfig::gradient2()
    /// }).unwrap();
    /// let place = limiter.wait_place().expect("the queue zone has one place");
    /// assert!(limiter.wait_place().is_err(), "the zone is full");
    /// drop(place);
    /// assert_eq!(limiter.waiting(), 0);
    /// ```
    pub fn wait_place(&self) -> Result<QueuePlace<'_, H>, Rejection> {
        self.queue_place(self.limit())
    }

    /// A place in the waiting room for a call that found `limit` calls in flight.
    fn queue_place(&self, limit: u32) -> Result<QueuePlace<'_, H>, Rejection> {
        let room = zone::room(limit, self.queue_factor);
        let refused = Rejection::new(RejectReason::LimiterFull);
        match zone::zone(limit, self.waiting(), limit, room, self.queue_rungs) {
            Zone::Queue { rung, rungs } => {
                let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
                if zone::sheds(rung, rungs, ticket) {
                    return Err(refused);
                }
                match self.waiting.try_acquire(room) {
                    Ok(_) => Ok(QueuePlace { limiter: self }),
                    Err(_) => Err(refused),
                }
            }
            _ => Err(refused),
        }
    }

    /// An in-flight slot under `cap(limit)` (never above the limit), as `(in flight, limit)`, for
    /// a policy that keeps its own permit (the inbound admission, whose permits may own their
    /// policy through an `Arc`). Pair with [`Self::release_slot`] and [`Self::record_outcome`].
    pub(crate) fn acquire_within(&self, cap: impl FnOnce(u32) -> u32) -> Option<(u32, u32)> {
        let limit = self.limit();
        self.in_flight
            .try_acquire(cap(limit).min(limit))
            .ok()
            .map(|n| (n, limit))
    }

    /// Gives back a slot taken with [`Self::acquire_within`] (the `LimiterPermit` drop).
    pub(crate) fn release_slot(&self) {
        self.in_flight.release();
        self.released.notify();
    }

    /// Records the outcome of a call admitted at `admitted_at` with `in_flight` calls in flight
    /// (the `LimiterPermit` settle, after [`Self::release_slot`]).
    pub(crate) fn record_outcome<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        admitted_at: Instant,
        in_flight: u32,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        self.record(admitted_at, in_flight, verdict, env);
    }

    fn permit(&self, now: Instant, in_flight: u32, limit: u32) -> LimiterPermit<'_, H> {
        LimiterPermit {
            limiter: self,
            admitted_at: now,
            in_flight,
            limit,
        }
    }

    fn record<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        admitted_at: Instant,
        in_flight: u32,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        match verdict {
            Verdict::Success | Verdict::Answered => {
                let micros = (env.now - admitted_at).as_micros();
                let micros = if micros > u32::MAX as u128 {
                    u32::MAX
                } else {
                    micros as u32
                };
                if micros < self.min_rtt_us {
                    return;
                }
                self.window.add_latency(micros, in_flight);
            }
            Verdict::Overload { .. } | Verdict::Timeout => self.window.add_drop(in_flight),
            Verdict::Transient | Verdict::Uncertain | Verdict::Rejected(_) => return,
        }
        self.close_window(env);
    }

    /// Runs the algorithm if the window may close and this thread wins the close.
    fn close_window<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        let scale = self.scale;
        // The full tick count: the window's age is taken in 64 bits (see `sample.rs`).
        let now = scale.wide(env.now);
        let Some((summary, closing)) = self.window.try_close(now, self.window_samples) else {
            return;
        };
        let old = self.limit.load(Ordering::Relaxed);
        let base = Baseline {
            rtt: Rtt(self.baseline_rtt.load(Ordering::Relaxed)),
            count: self.baseline_count.load(Ordering::Relaxed),
        };
        // Relaxed: the right to close was taken with `Acquire`, after the last reconfiguration
        // released it, and these are written only under it.
        let rule = self.rule.with_bounds(
            self.bounds[0].load(Ordering::Relaxed),
            self.bounds[1].load(Ordering::Relaxed),
        );
        let (new, mut base) = rule.update(old, base, &summary);
        if let Some(rtt) = summary.rtt {
            let recent = self.recent_min_rtt.load(Ordering::Relaxed);
            self.recent_min_rtt
                .store(recent.min(rtt.0), Ordering::Relaxed);
            let twice = scale.ticks_in(rtt.as_duration()).saturating_mul(2);
            closing.set_length(twice.clamp(self.min_window, self.max_window));
        }
        if self.probe_multiplier > 0 {
            let left = self.windows_to_refresh.load(Ordering::Relaxed);
            let next = if left <= 1 {
                let recent = self.recent_min_rtt.swap(NO_RTT, Ordering::Relaxed);
                if recent != NO_RTT && !matches!(rule, Rule::Aimd(_)) {
                    base.rtt = Rtt(recent);
                    base.count = base.count.max(gradient2::WARMUP);
                }
                let span = (self.probe_multiplier as u64) * ((new / CALL).max(1) as u64);
                let half = span / 2;
                fixed::sat(half + env.rng.below(span - half)).max(1)
            } else {
                left - 1
            };
            self.windows_to_refresh.store(next, Ordering::Relaxed);
        }
        self.baseline_rtt.store(base.rtt.0, Ordering::Relaxed);
        self.baseline_count.store(base.count, Ordering::Relaxed);
        self.limit.store(new, Ordering::Release);
        drop(closing);
        if old / CALL != new / CALL {
            env.observer.on_event(&Event::LimitChanged {
                from: old / CALL,
                to: new / CALL,
            });
        }
    }
}

/// The first refresh, before any randomness is at hand: the middle of `U[0.5, 1)·m·limit`.
const fn first_refresh(multiplier: u32, initial: u32) -> u32 {
    let w = (multiplier as u64 * initial as u64 * 3 / 4) as u32;
    if w == 0 { 1 } else { w }
}

impl<H: ReleaseHook> Policy for Limiter<H> {
    type Permit<'a>
        = LimiterPermit<'a, H>
    where
        Self: 'a;

    #[inline]
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<LimiterPermit<'a, H>, Rejection> {
        let limit = self.limit();
        match self.in_flight.try_acquire(limit) {
            Ok(n) => Ok(self.permit(env.now, n, limit)),
            Err(_) => Err(Rejection::new(RejectReason::LimiterFull)),
        }
    }
}

/// What [`Limiter::admit_or_queue`] decided.
#[derive(Debug)]
#[must_use = "a waiting place or permit is given back when dropped"]
pub enum Admission<'a, H: ReleaseHook = ()> {
    /// Under the limit: go now.
    Admitted(LimiterPermit<'a, H>),
    /// In the queue zone: wait, bounded by the deadline, then [`QueuePlace::try_admit`].
    Wait(QueuePlace<'a, H>),
    /// Beyond the queue zone, or shed by the ladder.
    Refused(Rejection),
}

/// A place in the limiter's waiting room. Dropping it gives the place back.
#[derive(Debug)]
#[must_use = "dropping a waiting place gives it back"]
pub struct QueuePlace<'a, H: ReleaseHook = ()> {
    limiter: &'a Limiter<H>,
}

impl<'a, H: ReleaseHook> QueuePlace<'a, H> {
    /// Takes an in-flight slot if one is free under the current limit, giving the waiting place
    /// back; otherwise returns the place to keep waiting with.
    pub fn try_admit<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        env: &mut Env<'_, R, O>,
    ) -> Result<LimiterPermit<'a, H>, QueuePlace<'a, H>> {
        let limiter = self.limiter;
        let limit = limiter.limit();
        match limiter.in_flight.try_acquire(limit) {
            Ok(n) => {
                drop(self);
                Ok(limiter.permit(env.now, n, limit))
            }
            Err(_) => Err(self),
        }
    }
}

impl<'a, H: ReleaseHook> QueuePlace<'a, H> {
    /// The place apart from its limiter: still taken, until [`Limiter::attach_place`] gives it
    /// a limiter to go back to (a waiter that cannot keep a borrow of the limiter keeps this).
    pub fn detach(self) -> DetachedQueuePlace {
        core::mem::forget(self);
        DetachedQueuePlace(())
    }
}

/// A [`QueuePlace`] apart from its limiter ([`QueuePlace::detach`]).
#[must_use = "attach it to its limiter again: dropping it would leave its place taken"]
#[derive(Debug)]
pub struct DetachedQueuePlace(());

impl<H: ReleaseHook> Limiter<H> {
    /// The place again, from one [`QueuePlace::detach`] took from this limiter.
    pub fn attach_place(&self, detached: DetachedQueuePlace) -> QueuePlace<'_, H> {
        let DetachedQueuePlace(()) = detached;
        QueuePlace { limiter: self }
    }
}

impl<H: ReleaseHook> Drop for QueuePlace<'_, H> {
    fn drop(&mut self) {
        self.limiter.waiting.release();
    }
}

/// An admitted call's in-flight slot. Settle it with the verdict, or drop it to cancel (the
/// slot comes back and no sample is recorded).
#[derive(Debug)]
#[must_use = "settle the permit with the call's verdict; dropping it records a cancellation"]
pub struct LimiterPermit<'a, H: ReleaseHook = ()> {
    limiter: &'a Limiter<H>,
    admitted_at: Instant,
    in_flight: u32,
    limit: u32,
}

impl<H: ReleaseHook> LimiterPermit<'_, H> {
    /// Calls in flight at admission, this one included.
    pub fn in_flight_at_admission(&self) -> u32 {
        self.in_flight
    }

    /// The limit in force when this call was admitted.
    pub fn limit_at_admission(&self) -> u32 {
        self.limit
    }

    /// When this call was admitted.
    pub fn admitted_at(&self) -> Instant {
        self.admitted_at
    }
}

impl<H: ReleaseHook> Permit for LimiterPermit<'_, H> {
    #[inline]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        let (limiter, admitted_at, in_flight) = (self.limiter, self.admitted_at, self.in_flight);
        drop(self); // gives the slot back
        limiter.record(admitted_at, in_flight, verdict, env);
    }
}

/// A [`LimiterPermit`]'s data, apart from its limiter ([`Detach`]).
#[must_use = "attach it to its limiter again: dropping it would leave its slot taken"]
#[derive(Debug)]
pub struct DetachedLimiterPermit {
    admitted_at: Instant,
    in_flight: u32,
    limit: u32,
}

impl<H: ReleaseHook> Detach for Limiter<H> {
    type Detached = DetachedLimiterPermit;

    #[inline]
    fn detach(permit: LimiterPermit<'_, H>) -> DetachedLimiterPermit {
        // Its drop would give the slot back: the detached data still holds it.
        let permit = core::mem::ManuallyDrop::new(permit);
        DetachedLimiterPermit {
            admitted_at: permit.admitted_at,
            in_flight: permit.in_flight,
            limit: permit.limit,
        }
    }

    #[inline]
    fn attach(&self, detached: DetachedLimiterPermit) -> LimiterPermit<'_, H> {
        self.permit(detached.admitted_at, detached.in_flight, detached.limit)
    }
}

impl<H: ReleaseHook> Drop for LimiterPermit<'_, H> {
    fn drop(&mut self) {
        self.limiter.in_flight.release();
        // After the slot is free, as the protocol requires: a waiter that misses the slot
        // sees the bump.
        self.limiter.released.notify();
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
