//! GCRA as a pure decision over one 31-bit tick word and its era: no atomics here.
//!
//! The state is the theoretical arrival time (TAT): the instant at which the bucket would be
//! full again. `TAT − now` is the bucket's debt; a cell costs one emission interval T of debt,
//! and a call of n cells is admitted when the debt after it is at most the span, burst × T.
//! The limiters store the TAT's low 31 bits in an atomic word beside an [`Era`] and swap it
//! with this decision.
//!
//! Design notes (why `T` is stored one tick long, the era in 2^32 ns units, the hot path's
//! 31-bit difference): docs/design/rate-limit.md#gcras-exactness-and-wide-time

use core::time::Duration;

use super::rate::{RateLimitConfig, RateLimitConfigError};
use crate::time::Instant;
use crate::time::duration_as_nanos_saturating;
use crate::time::era::{EraSeen, widen};
use crate::time::ticks::TickScale;

/// The TAT uses the low 31 bits of a word; the limiter keeps its config-slot bit in the top.
pub(crate) const TICK_BITS: u32 = 31;
/// The low 31 bits.
pub(crate) const TICK_MASK: u32 = (1 << TICK_BITS) - 1;
/// The finest tick, 8 ns: a 31-bit count of 8 ns ticks has at most 2^32 eras in the `u64`
/// timeline, so its era fits a `u32` (see `time::era`).
pub(crate) const MIN_SHIFT: u32 = 3;
/// Every span stays below this many ticks, so a TAT is at most half a circle ahead.
const SPAN_LIMIT: u64 = 1 << 30;
/// Emission intervals are stored as 2 049–4 097 ticks where the span allows: under 0.1% long.
const PRECISION_BITS: u32 = 11;
/// How late a caller's `now` may be, relative to the latest admission, and still be read as
/// an early arrival (refused) rather than as a long idle (full bucket): one second, or the
/// span if that is longer (ours). See the module docs.
const LAG_ALLOWANCE: Duration = Duration::from_secs(1);

/// The era's count: `now` in 8 ns units, a 31-bit word's finest ticks.
#[inline]
pub(crate) const fn era_count(now: Instant) -> u64 {
    now.as_nanos() >> MIN_SHIFT
}

/// The decision's parameters, in ticks of `scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gcra {
    /// log2 of the tick in nanoseconds (3..=63): kept as a plain number, so the hot path
    /// shifts by it without re-validating a `TickScale`.
    pub(crate) shift: u8,
    /// T: the debt one cell adds, in ticks (at least 1).
    pub(crate) emission: u32,
    /// How many cells a full bucket holds (at least 1).
    pub(crate) burst: u32,
    /// burst × T (below 2^30).
    pub(crate) span: u32,
    /// Debt up to this many ticks (span + the lag allowance, at most 2^30) reads as debt;
    /// beyond it, as a bucket left idle.
    pub(crate) limit: u32,
}

/// `now` as the decision reads it, on one scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Now {
    /// The full tick count of `now`, rounded down.
    pub(crate) tick: u64,
    /// `now`'s era (units of 2^32 ns).
    pub(crate) era: u64,
}

/// What the decision says about one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Admitted: store these low 31 bits of the TAT (the era must cover `now` first).
    Admit(u32),
    /// Refused: the call would be admitted at the start of this tick.
    Wait(u64),
}

impl Gcra {
    /// Validates `config` and picks the tick scale: the coarsest on which T is still held to
    /// within 0.1% (but never finer than 8 ns, where it is held within 1%), made coarser only
    /// if burst × T would not fit below 2^30 ticks.
    pub(crate) const fn new(config: &RateLimitConfig) -> Result<Gcra, RateLimitConfigError> {
        let count = config.rate.count() as u128;
        let per = duration_as_nanos_saturating(config.rate.period()) as u128;
        let burst = config.burst as u128;
        if count == 0 {
            return Err(RateLimitConfigError::ZeroRate);
        }
        if per == 0 {
            return Err(RateLimitConfigError::ZeroPeriod);
        }
        if burst == 0 {
            return Err(RateLimitConfigError::ZeroBurst);
        }
        if burst >= SPAN_LIMIT as u128 {
            return Err(RateLimitConfigError::BurstTooLarge);
        }
        let floor_interval = per / count;
        if floor_interval == 0 {
            return Err(RateLimitConfigError::RateBeyondResolution);
        }
        let log2 = 127 - floor_interval.leading_zeros();
        let mut shift = log2.saturating_sub(PRECISION_BITS);
        if shift < MIN_SHIFT {
            shift = MIN_SHIFT;
        }
        let mut emission;
        loop {
            // The interval rounded up to whole ticks, plus one: `now` is read to the tick
            // below, so an elapsed time can read up to one tick long, and the extra tick pays
            // for it (see the module docs).
            emission = per.div_ceil(count << shift) + 1;
            if emission * burst < SPAN_LIMIT as u128 {
                break;
            }
            shift += 1;
            if shift > 63 {
                return Err(RateLimitConfigError::BurstTooLarge);
            }
        }
        let stored = emission * (count << shift);
        // Within 0.1%; on the finest ticks, which hold intervals below 16 µs no closer, within
        // 1% (ours: refusing every rate above 61,000 a second would be worse).
        let tolerance = if shift == MIN_SHIFT { 100 } else { 1_000 };
        if (stored - per) * tolerance > per {
            return Err(RateLimitConfigError::RateBeyondResolution);
        }
        let scale = TickScale::from_shift(shift as u8);
        let span = (emission * burst) as u32;
        let lag = scale.ticks_in(LAG_ALLOWANCE);
        let mut early = if lag > span { lag } else { span };
        let room = (SPAN_LIMIT as u32) - span;
        if early > room {
            early = room;
        }
        Ok(Gcra {
            shift: shift as u8,
            emission: emission as u32,
            burst: config.burst,
            span,
            limit: span + early,
        })
    }

    /// The tick scale.
    pub(crate) const fn scale(&self) -> TickScale {
        TickScale::from_shift(self.shift)
    }

    /// The instant at the start of tick `tick` (saturating): a refusal's retry-at. The
    /// shift was validated at construction, so unlike [`TickScale::instant_at`] it is not
    /// clamped again on the refused path.
    #[inline(always)]
    pub(crate) const fn instant_at(&self, tick: u64) -> Instant {
        let shift = self.shift as u32 & 63;
        if tick > u64::MAX >> shift {
            Instant::MAX
        } else {
            Instant::from_nanos(tick << shift)
        }
    }

    /// `now` as the decision reads it.
    #[inline]
    pub(crate) const fn now(&self, now: Instant) -> Now {
        Now {
            tick: now.as_nanos() >> self.shift,
            era: era_count(now) >> (TICK_BITS - 2),
        }
    }

    /// The debt, in ticks, at `now` of a bucket whose TAT's low bits are `low`, with the era
    /// `seen` read after them.
    ///
    /// Up to `limit` it is debt: ordinary debt up to the span, and beyond it a caller whose
    /// `now` lags the latest admission (another thread's clock read, a small step backwards),
    /// refused. Anything further ahead, and anything behind, reads as a bucket left idle.
    ///
    /// In `now`'s own era the 31-bit difference is the debt; in any other era the TAT is widened
    /// to its full count first, so no idle gap changes the answer.
    // Why the 31-bit difference is exact: docs/design/rate-limit.md#the-hot-paths-31-bit-difference
    #[inline]
    pub(crate) fn debt(&self, low: u32, seen: EraSeen, now: Now) -> u32 {
        let ahead = if seen.get() as u64 == now.era {
            ahead_in_era(low, now)
        } else {
            widened_ahead(low, seen, self.shift, self.span, now.tick)
        };
        self.debt_of(ahead)
    }

    /// How far ahead of `now` the TAT lies, read as debt: up to `limit`, and 0 beyond it.
    #[inline(always)]
    const fn debt_of(&self, ahead: u32) -> u32 {
        if ahead <= self.limit { ahead } else { 0 }
    }

    /// Admit `n` cells (1 ≤ n ≤ burst) at `now` against the stored TAT, or say when.
    #[inline]
    pub(crate) fn decide(&self, low: u32, seen: EraSeen, now: Now, n: u32) -> Decision {
        self.decide_on(self.debt(low, seen, now), now, n)
    }

    /// [`debt`](Self::debt) for a TAT whose era read is `now`'s own (the caller checked):
    /// the 31-bit difference alone.
    #[inline(always)]
    pub(crate) fn debt_in_era(&self, low: u32, now: Now) -> u32 {
        self.debt_of(ahead_in_era(low, now))
    }

    /// [`decide`](Self::decide) on a debt already read.
    #[inline(always)]
    pub(crate) fn decide_on(&self, debt: u32, now: Now, n: u32) -> Decision {
        // n ≤ burst, so n·T ≤ span < 2^30, and debt ≤ limit ≤ 2^30: no overflow.
        let after = debt + n * self.emission;
        if after <= self.span {
            Decision::Admit((now.tick as u32).wrapping_add(after) & TICK_MASK)
        } else {
            Decision::Wait(now.tick + (after - self.span) as u64)
        }
    }

    /// Whole cells available at `now`.
    pub(crate) fn available(&self, low: u32, seen: EraSeen, now: Now) -> u32 {
        let debt = self.debt(low, seen, now);
        if debt >= self.span {
            0
        } else {
            (self.span - debt) / self.emission
        }
    }

    /// Whether the bucket is full: a key in this state is indistinguishable from a new one.
    pub(crate) fn is_full(&self, low: u32, seen: EraSeen, now: Now) -> bool {
        self.debt(low, seen, now) == 0
    }

    /// The TAT of a bucket full at `now` (and at every later instant).
    pub(crate) const fn full(&self, now: Now) -> u32 {
        now.tick as u32 & TICK_MASK
    }

    /// The TAT under `next` that carries this bucket's cells (with their fraction) over,
    /// capped at `next`'s burst; the new rate refills from `now`.
    ///
    /// In nanoseconds: the bucket holds `H = span − debt` (its exact debt at `now`), worth
    /// `H / T` cells; under `next` they are worth `⌊H · T' / T⌋` ns of credit, and the new
    /// debt is `span' − credit` (at least zero), counted from `now` and rounded up to a whole
    /// tick of `next`. Never a cell more than the bucket held, never more than `next`'s burst.
    pub(crate) fn carry_over(&self, low: u32, seen: EraSeen, now: Instant, next: &Gcra) -> u32 {
        let at = self.now(now);
        let debt = self.debt(low, seen, at) as u128;
        let nanos = now.as_nanos() as u128;
        let unit = 1u128 << self.shift;
        let debt_ns = if debt == 0 {
            0
        } else {
            (at.tick as u128 + debt) * unit - nanos
        };
        let held = (self.span as u128 * unit).saturating_sub(debt_ns);
        let next_unit = 1u128 << next.shift;
        let next_span = next.span as u128 * next_unit;
        let credit = mul_div_floor(
            held,
            next.emission as u128 * next_unit,
            self.emission as u128 * unit,
            next_span,
        );
        let owed = next_span - credit;
        let at_next = next.now(now);
        if owed == 0 {
            return next.full(at_next);
        }
        ((nanos + owed).div_ceil(next_unit) as u64 as u32) & TICK_MASK
    }

    /// T as stored: the configured interval rounded up to whole ticks, plus one tick.
    pub(crate) const fn emission_interval(&self) -> Duration {
        self.scale().duration_of(self.emission)
    }
}

/// How far the TAT stored as `low` lies ahead of `now`, when the era read is `now`'s: the
/// 31-bit difference (see [`Gcra::debt`] for why it is exact).
#[inline(always)]
const fn ahead_in_era(low: u32, now: Now) -> u32 {
    low.wrapping_sub(now.tick as u32) & TICK_MASK
}

/// How far the TAT stored as `low`, widened from era `seen`, lies ahead of tick `now` on a
/// scale of `2^shift` ns with this `span` (0 if behind, saturating): the path taken once per
/// era or after an idle gap, kept out of line (and its arguments in registers) so that the hot
/// path stays short.
#[cold]
#[inline(never)]
fn widened_ahead(low: u32, seen: EraSeen, shift: u8, span: u32, now: u64) -> u32 {
    // The era counts 2^32 ns; the slot's quarter circle is 2^(29 + shift) ns.
    let seen = EraSeen::of(((seen.get() as u64) << 32) >> shift, TICK_BITS);
    // A TAT points at most `span` ticks past its writer's `now`, a carried-over one at most
    // `span + 1` (its debt is rounded up to a whole tick from `now`).
    let tat = widen(low & TICK_MASK, TICK_BITS, seen, span as u64 + 1);
    if tat <= now {
        0
    } else {
        let ahead = tat - now;
        if ahead > u32::MAX as u64 {
            u32::MAX
        } else {
            ahead as u32
        }
    }
}

/// `min(⌊a · b / c⌋, cap)`, exactly, for `c > 0` (no intermediate overflows: the product is
/// built by doubling, every partial remainder below `3c`). For a reconfiguration, not a hot path.
fn mul_div_floor(a: u128, b: u128, c: u128, cap: u128) -> u128 {
    let (whole, rest) = (a / c, a % c);
    let Some(high) = whole.checked_mul(b) else {
        return cap;
    };
    if high >= cap {
        return cap;
    }
    // ⌊rest · b / c⌋ with rest < c, bit by bit of b.
    let (mut q, mut r) = (0u128, 0u128);
    let bits = 128 - b.leading_zeros();
    for i in (0..bits).rev() {
        q <<= 1;
        r <<= 1;
        if (b >> i) & 1 == 1 {
            r += rest;
        }
        while r >= c {
            r -= c;
            q += 1;
        }
    }
    high.saturating_add(q).min(cap)
}

#[cfg(all(test, not(loom)))]
mod tests;
