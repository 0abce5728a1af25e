use core::time::Duration;

use super::AcquireError;
use super::gcra::{Decision, Gcra, TICK_BITS, TICK_MASK, era_count};
use super::rate::{RateLimitConfig, RateLimitConfigError};
use crate::observe::Observer;
use crate::permit::{Detach, Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::sync::{AtomicBool, AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::era::{Era, EraSeen};
use crate::verdict::Verdict;

const SLOT_BIT: u32 = 1 << 31;

#[path = "control.rs"]
mod control;

/// One of the two configurations the state word can point at.
#[derive(Debug)]
struct Slot {
    shift: AtomicU32,
    emission: AtomicU32,
    burst: AtomicU32,
    span: AtomicU32,
    limit: AtomicU32,
}

impl Slot {
    crate::sync::const_fn_unless_loom! {
        fn new(g: Gcra) -> Self {
            Slot {
                shift: AtomicU32::new(g.shift as u32),
                emission: AtomicU32::new(g.emission),
                burst: AtomicU32::new(g.burst),
                span: AtomicU32::new(g.span),
                limit: AtomicU32::new(g.limit),
            }
        }
    }

    /// The slot's parameters, read (Relaxed) after an `Acquire` load of the state word that
    /// names this slot.
    // Why Relaxed suffices: docs/design/rate-limit.md#reconfiguration
    #[inline(always)]
    fn load(&self) -> Gcra {
        Gcra {
            shift: self.shift.load(Ordering::Relaxed) as u8,
            emission: self.emission.load(Ordering::Relaxed),
            burst: self.burst.load(Ordering::Relaxed),
            span: self.span.load(Ordering::Relaxed),
            limit: self.limit.load(Ordering::Relaxed),
        }
    }

    fn store(&self, g: Gcra) {
        self.shift.store(g.shift as u32, Ordering::Release);
        self.emission.store(g.emission, Ordering::Release);
        self.burst.store(g.burst, Ordering::Release);
        self.span.store(g.span, Ordering::Release);
        self.limit.store(g.limit, Ordering::Release);
    }
}

/// A token bucket: GCRA over one 32-bit atomic word. See the [module docs](super).
///
/// `Sync` and lock-free; `try_acquire` is two loads (the word, then its era) and one
/// compare-and-swap when uncontended.
///
/// ```
/// use core::time::Duration;
/// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
/// use resilix::time::Instant;
/// use resilix::RejectReason;
///
/// let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(2))).unwrap();
/// let t0 = Instant::from_secs(100);
/// assert!(limiter.try_acquire(t0).is_ok());
/// assert!(limiter.try_acquire(t0).is_ok());
/// let refused = limiter.try_acquire(t0).unwrap_err();
/// assert_eq!(refused.reason(), RejectReason::RateLimited);
/// let at = refused.retry_at().unwrap();
/// assert!(at - t0 >= Duration::from_millis(500)); // the next cell
/// assert!(limiter.try_acquire(at).is_ok());
/// ```
#[derive(Debug)]
pub struct RateLimiter {
    /// Bit 31: which slot is in force. Bits 0–30: the TAT in that slot's ticks.
    state: AtomicU32,
    /// The era of the TAT (see `time::era`), in units of 2^32 ns for both slots: raised
    /// before every compare-and-swap that publishes a TAT, read after every load of it.
    era: Era,
    slots: [Slot; 2],
    reconfiguring: AtomicBool,
}

impl RateLimiter {
    crate::sync::const_fn_unless_loom! {
        /// A limiter with a full bucket, or the reason `config` is refused.
        ///
        /// ```
        /// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
        ///
        /// static LIMITER: RateLimiter =
        ///     match RateLimiter::new(RateLimitConfig::new(Rate::per_minute(600))) {
        ///         Ok(l) => l,
        ///         Err(_) => panic!("valid config"),
        ///     };
        /// assert_eq!(LIMITER.burst(), 600);
        /// ```
        pub fn new(config: RateLimitConfig) -> Result<Self, RateLimitConfigError> {
            let g = match Gcra::new(&config) {
                Ok(g) => g,
                Err(e) => return Err(e),
            };
            Ok(RateLimiter {
                state: AtomicU32::new(0),
                era: Era::new(),
                slots: [Slot::new(g), Slot::new(g)],
                reconfiguring: AtomicBool::new(false),
            })
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(super) fn reconfiguring_flag(&self) -> &AtomicBool {
        &self.reconfiguring
    }

    /// The state word, then its era (in that order: see `time::era`), and the slot in force.
    fn current(&self) -> (u32, EraSeen, Gcra) {
        let word = self.state.load(Ordering::Acquire);
        let seen = self.era.read();
        (word, seen, self.slots[(word >> 31) as usize].load())
    }

    /// Takes one cell at `now`, or refuses with [`RejectReason::RateLimited`] and the instant
    /// at which a single cell would be admitted (if nobody else takes it first).
    #[inline]
    pub fn try_acquire(&self, now: Instant) -> Result<(), Rejection> {
        one_cell(self.acquire(now, 1))
    }

    /// Takes `n` cells at once, or none. `n = 0` always succeeds and changes nothing.
    ///
    /// `n` above the burst is [`AcquireError::ExceedsBurst`]: it could never succeed, however
    /// long the caller waits.
    pub fn try_acquire_n(&self, now: Instant, n: u32) -> Result<(), AcquireError> {
        if n == 0 {
            return Ok(());
        }
        self.acquire(now, n)
    }

    /// The compare-and-swap loop (n ≥ 1). One copy: on the smallest targets the flash matters
    /// more than the instructions a second, hot-only copy would save.
    #[inline(always)]
    fn acquire(&self, now: Instant, n: u32) -> Result<(), AcquireError> {
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            let seen = self.era.read();
            let g = self.slots[(word >> 31) as usize].load();
            // One cell always fits (burst ≥ 1 is validated): `try_acquire` skips the check.
            if n > 1 && n > g.burst {
                return Err(AcquireError::ExceedsBurst {
                    requested: n,
                    burst: g.burst,
                });
            }
            let at = g.now(now);
            // The hot path: in `now`'s own era the TAT is read by its 31-bit difference and
            // the era needs no raising (see `gcra`). In any other era (once per era, or after
            // an idle gap) the TAT is widened and the era raised, out of line.
            let in_era = seen.is_era_of(era_count(now), TICK_BITS);
            let debt = if in_era {
                g.debt_in_era(word & TICK_MASK, at)
            } else {
                self.debt_in_other_era(word, seen, now)
            };
            match g.decide_on(debt, at, n) {
                Decision::Admit(tat) => {
                    if !in_era {
                        // Era first: every reader of the new TAT widens it from an era that
                        // covers this `now`.
                        self.cover(seen, now);
                    }
                    // AcqRel: an admission is ordered after the one whose TAT it extends.
                    // Reload the slot even when the bit is unchanged: two reconfigurations
                    // flip it back onto a rewritten slot.
                    match self.state.compare_exchange_weak(
                        word,
                        (word & SLOT_BIT) | tat,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Ok(()),
                        Err(actual) => word = actual,
                    }
                }
                Decision::Wait(tick) => {
                    return Err(AcquireError::Limited(Rejection::until(
                        RejectReason::RateLimited,
                        g.instant_at(tick),
                    )));
                }
            }
        }
    }

    /// The debt of a TAT whose era read is not `now`'s: widened to its full count (see
    /// `gcra`). Out of line: once per era, or after an idle gap.
    #[cold]
    #[inline(never)]
    fn debt_in_other_era(&self, word: u32, seen: EraSeen, now: Instant) -> u32 {
        // The slot again (the caller's copy stays in registers): the same one, read after the
        // same `Acquire` load of the word.
        let g = self.slots[(word >> 31) as usize].load();
        g.debt(word & TICK_MASK, seen, g.now(now))
    }

    /// Raises the era to cover `now` before an admission read in another era is published.
    /// Its count is computed here, out of line: the hot path needs only the era's compare.
    #[cold]
    #[inline(never)]
    fn cover(&self, seen: EraSeen, now: Instant) {
        self.era.cover(seen, era_count(now), TICK_BITS);
    }

    /// Whole cells available at `now` (a snapshot).
    pub fn available(&self, now: Instant) -> u32 {
        let (word, seen, g) = self.current();
        g.available(word & TICK_MASK, seen, g.now(now))
    }

    /// The burst in force.
    pub fn burst(&self) -> u32 {
        self.current().2.burst
    }

    /// The emission interval in force, as stored: the configured `period / count` rounded up
    /// to whole ticks of at least 8 ns (within 0.1%, or 1% for intervals below 16.4 µs; never
    /// shorter).
    pub fn emission_interval(&self) -> Duration {
        self.current().2.emission_interval()
    }

    /// Changes the rate and burst at `env.now`, keeping what the bucket holds, and emits
    /// [`Event::PolicyReconfigured`] with [`PolicyKind::RateLimiter`].
    ///
    /// The cells in the bucket at `now` (with their fraction) carry over, capped at the new
    /// burst; from `now` the bucket refills at the new rate. Lowering the burst therefore never
    /// refills a bucket, and raising it never empties one. Admissions running concurrently
    /// see either the old configuration and state or the new ones, never a mix: the state word
    /// names the configuration slot it belongs to, and the switch is one compare-and-swap.
    ///
    /// Reconfigurations are not queued: while one runs, another returns
    /// [`ReconfigureError::Busy`] instead of waiting (no lock is ever waited on).
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
    /// use resilix::time::Instant;
    ///
    /// let l = RateLimiter::new(RateLimitConfig::new(Rate::per_second(10))).unwrap();
    /// let now = Instant::from_secs(1);
    /// for _ in 0..4 {
    ///     l.try_acquire(now).unwrap();
    /// }
    /// let mut rng = SeededRandom::new(1);
    /// l.reconfigure(RateLimitConfig::new(Rate::per_second(5)), &mut Env::new(now, &mut rng))
    ///     .unwrap();
    /// assert_eq!(l.burst(), 5);
    /// assert_eq!(l.available(now), 5, "6 cells carried over, capped at the new burst");
    /// ```
    ///
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    /// [`PolicyKind::RateLimiter`]: crate::observe::PolicyKind::RateLimiter
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: RateLimitConfig,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), ReconfigureError> {
        let now = env.now;
        let next = Gcra::new(&config).map_err(ReconfigureError::Config)?;
        if self
            .reconfiguring
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(ReconfigureError::Busy);
        }
        let mut word = self.state.load(Ordering::Acquire);
        let mut seen = self.era.read();
        let active = word >> 31;
        let old = self.slots[active as usize].load();
        // The inactive slot is read only by admissions holding a stale word; their
        // compare-and-swap fails because the slot bit no longer matches.
        self.slots[(active ^ 1) as usize].store(next);
        loop {
            let tat = old.carry_over(word & TICK_MASK, seen, now, &next);
            let moved = ((active ^ 1) << 31) | tat;
            // The era counts nanoseconds, not either slot's ticks: the same cover serves both.
            self.era.cover(seen, era_count(now), TICK_BITS);
            match self
                .state
                .compare_exchange_weak(word, moved, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                // Only the holder of `reconfiguring` flips the slot bit, so `actual` is
                // still in the old slot.
                Err(actual) => {
                    word = actual;
                    seen = self.era.read();
                }
            }
        }
        self.reconfiguring.store(false, Ordering::Release);
        crate::control::emit_reconfigured(crate::observe::PolicyKind::RateLimiter, env);
        Ok(())
    }
}

/// Why [`RateLimiter::reconfigure`] changed nothing: the one reconfigure error, over this policy's config error.
pub type ReconfigureError = crate::control::ReconfigureError<RateLimitConfigError>;

/// A one-cell acquisition's result as a rejection.
#[inline(always)]
fn one_cell(result: Result<(), AcquireError>) -> Result<(), Rejection> {
    match result {
        Ok(()) => Ok(()),
        Err(AcquireError::Limited(r)) => Err(r),
        // burst ≥ 1 is a validated invariant, so one cell always fits.
        Err(AcquireError::ExceedsBurst { .. }) => Err(Rejection::new(RejectReason::RateLimited)),
    }
}

impl Policy for RateLimiter {
    type Permit<'a> = RateLimitPermit;

    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<RateLimitPermit, Rejection> {
        self.try_acquire(env.now).map(|()| RateLimitPermit::new())
    }
}

/// A rate-limit permit borrows nothing: it is its own detached form.
impl Detach for RateLimiter {
    type Detached = RateLimitPermit;

    #[inline(always)]
    fn detach(permit: RateLimitPermit) -> RateLimitPermit {
        permit
    }

    #[inline(always)]
    fn attach(&self, detached: RateLimitPermit) -> RateLimitPermit {
        detached
    }
}

/// A rate-limit admission. It holds nothing: the cell was spent at admit.
///
/// Settling and dropping do the same thing, nothing. A cancelled call (dropped permit) still
/// consumed its cell, as in every GCRA: the rate bounds how often calls are *started*, and
/// giving a cell back would let a caller that cancels in a loop exceed it.
#[derive(Debug)]
pub struct RateLimitPermit(());

impl RateLimitPermit {
    pub(crate) const fn new() -> Self {
        RateLimitPermit(())
    }
}

impl Permit for RateLimitPermit {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(self, _: &Verdict, _: &mut Env<'_, R, O>) {}
}
