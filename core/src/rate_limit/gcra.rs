//! GCRA as a pure decision over one 31-bit tick word: no atomics here.
//!
//! The state is the theoretical arrival time (TAT): the instant at which the bucket would be
//! full again. `TAT − now` is the bucket's debt; a cell costs one emission interval T of debt,
//! and a call of n cells is admitted when the debt after it is at most the span, burst × T.
//! The limiters store the TAT in an atomic word and swap it with this decision.

use core::time::Duration;

use super::rate::{RateLimitConfig, RateLimitConfigError};
use crate::time::Instant;
use crate::time::duration_as_nanos_saturating;
use crate::time::ticks::TickScale;

/// The TAT uses the low 31 bits of a word; the limiter keeps its config-slot bit in the top.
pub(crate) const TICK_MASK: u32 = (1 << 31) - 1;
/// The TAT of a bucket that was never used: full at every instant. A fresh limiter's word is
/// zero, and zero read as an ordinary TAT would put debt on a new bucket whenever `now`'s tick
/// lies just below the wrap of the 31-bit circle. So no decision ever stores zero: an admitted
/// TAT that lands on it is stored one tick later instead, which can only refuse more, never
/// admit more.
pub(crate) const UNUSED: u32 = 0;

/// `tat` as it may be stored: never [`UNUSED`].
const fn storable(tat: u32) -> u32 {
    if tat == UNUSED { 1 } else { tat }
}
/// Every span stays below this many ticks, so "ahead" and "behind" split the 31-bit circle.
const SPAN_LIMIT: u64 = 1 << 30;
/// Emission intervals are stored as 2 049–4 097 ticks where the span allows: under 0.1% long.
const PRECISION_BITS: u32 = 11;
/// How late a caller's `now` may be, relative to the latest admission, and still be read as
/// an early arrival (refused) rather than as a long idle (full bucket): one second, or the
/// span if that is longer (ours). See the module docs.
const LAG_ALLOWANCE: Duration = Duration::from_secs(1);

/// The decision's parameters, in ticks of `scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gcra {
    pub(crate) scale: TickScale,
    /// T: the debt one cell adds, in ticks (at least 1).
    pub(crate) emission: u32,
    /// How many cells a full bucket holds (at least 1).
    pub(crate) burst: u32,
    /// Debt beyond the span up to this many ticks reads as an early arrival.
    pub(crate) early: u32,
}

/// What the decision says about one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Admitted: store this TAT.
    Admit(u32),
    /// Refused: the call would be admitted this many ticks from now.
    Wait(u32),
}

impl Gcra {
    /// Validates `config` and picks the tick scale: the coarsest on which T is still held to
    /// within 0.1%, made coarser only if burst × T would not fit below 2^30 ticks.
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
        let mut emission;
        loop {
            // The interval rounded up to whole ticks, plus one: `now` is read to the tick
            // below, so an elapsed time can read up to one tick long, and the extra tick pays
            // for it. That makes burst + rate × elapsed exact in real nanoseconds against the
            // configured rate, not just to within a tick (found by the proptest).
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
        if (stored - per) * 1_000 > per {
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
            scale,
            emission: emission as u32,
            burst: config.burst,
            early,
        })
    }

    /// burst × T: the most debt a bucket may carry (below 2^30).
    pub(crate) const fn span(&self) -> u32 {
        self.emission * self.burst
    }

    /// `now` as a 31-bit tick.
    pub(crate) const fn tick(&self, now: Instant) -> u32 {
        self.scale.ticks(now) & TICK_MASK
    }

    /// How far `tat` lies ahead of `now`, if it reads as ahead at all.
    ///
    /// Up to the span it is ordinary debt. Up to `span + early` it is a caller whose `now` lags
    /// the latest admission (another thread's clock read, a small step backwards): real debt,
    /// refused. Anything further, and anything behind, reads as a bucket left idle: no debt.
    const fn debt(&self, tat: u32, now: u32) -> u32 {
        if tat == UNUSED {
            return 0;
        }
        let ahead = tat.wrapping_sub(now) & TICK_MASK;
        if ahead <= self.span() + self.early {
            ahead
        } else {
            0
        }
    }

    /// Admit `n` cells (1 ≤ n ≤ burst) at `now` against `tat`, or say how long to wait.
    pub(crate) const fn decide(&self, tat: u32, now: u32, n: u32) -> Decision {
        let debt = self.debt(tat, now);
        // n ≤ burst, so n·T ≤ span < 2^30, and debt < 2^30: the sum cannot overflow.
        let after = debt + n * self.emission;
        if after <= self.span() {
            Decision::Admit(storable(now.wrapping_add(after) & TICK_MASK))
        } else {
            Decision::Wait(after - self.span())
        }
    }

    /// Whole cells available at `now`.
    pub(crate) const fn available(&self, tat: u32, now: u32) -> u32 {
        let debt = self.debt(tat, now);
        if debt >= self.span() {
            0
        } else {
            (self.span() - debt) / self.emission
        }
    }

    /// Whether the bucket is full: a key in this state is indistinguishable from a new one.
    pub(crate) const fn is_full(&self, tat: u32, now: u32) -> bool {
        self.debt(tat, now) == 0
    }

    /// The TAT of a full bucket at `now`.
    pub(crate) const fn full(&self, _now: Instant) -> u32 {
        // A bucket that is full now stays full as time moves on: the never-used mark says so
        // without naming an instant.
        UNUSED
    }

    /// The TAT under `next` that carries this bucket's cells (with their fraction) over,
    /// capped at `next`'s burst; the new rate refills from `now`.
    pub(crate) const fn carry_over(&self, tat: u32, now: Instant, next: &Gcra) -> u32 {
        let debt = self.debt(tat, self.tick(now));
        let old_span = self.span() as u64;
        // Cells in the bucket, as (old_span − debt) / T_old; may be "negative" (early arrivals).
        let held = old_span.saturating_sub(debt as u64);
        // New debt = span_new − held · T_new / T_old, rounded up, within [0, span_new].
        let owed =
            (next.span() as u64 * self.emission as u64).saturating_sub(held * next.emission as u64);
        let new_debt = owed.div_ceil(self.emission as u64);
        let new_debt = if new_debt > next.span() as u64 {
            next.span()
        } else {
            new_debt as u32
        };
        if new_debt == 0 {
            return UNUSED;
        }
        storable(next.tick(now).wrapping_add(new_debt) & TICK_MASK)
    }

    /// The instant `wait` ticks after `now`.
    pub(crate) const fn after(&self, now: Instant, wait: u32) -> Instant {
        self.scale.instant_after(now, wait)
    }

    /// T as stored: the configured interval rounded up to whole ticks.
    pub(crate) const fn emission_interval(&self) -> Duration {
        self.scale.duration_of(self.emission)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::rate_limit::Rate;

    fn gcra(rate: Rate, burst: u32) -> Gcra {
        Gcra::new(&RateLimitConfig::new(rate).with_burst(burst)).unwrap()
    }

    #[test]
    fn scale_keeps_the_interval_within_a_thousandth_and_rounds_up() {
        for (rate, burst) in [
            (Rate::per_second(10), 10),
            (Rate::per_second(3), 1),
            (Rate::per_hour(1), 1_000),
            (Rate::per_second(1_000_000), 1),
            (Rate::per_second(499_999), 1),
            (Rate::per_second(1_000), 500_000),
        ] {
            let g = gcra(rate, burst);
            let asked = rate.emission_interval().as_nanos();
            let stored = g.emission_interval().as_nanos();
            assert!(stored > asked, "{rate:?}: strictly longer");
            assert!(
                stored * 1_000 <= asked * 1_001,
                "{rate:?}: {stored} vs {asked}"
            );
            assert!((g.span() as u64) < SPAN_LIMIT);
            assert!(g.span() + g.early <= SPAN_LIMIT as u32);
        }
    }

    #[test]
    fn refused_configs() {
        let c = |rate, burst| Gcra::new(&RateLimitConfig::new(rate).with_burst(burst));
        assert_eq!(
            c(Rate::per_second(0), 1),
            Err(RateLimitConfigError::ZeroRate)
        );
        assert_eq!(
            c(Rate::new(1, Duration::ZERO), 1),
            Err(RateLimitConfigError::ZeroPeriod)
        );
        assert_eq!(
            c(Rate::per_second(1), 0),
            Err(RateLimitConfigError::ZeroBurst)
        );
        assert_eq!(
            c(Rate::per_second(2_000_000_000), 1),
            Err(RateLimitConfigError::RateBeyondResolution)
        );
        assert_eq!(
            c(Rate::per_second(2_000_000), 1),
            Err(RateLimitConfigError::RateBeyondResolution),
            "500 ns plus a 1 ns tick is 0.2% off"
        );
        assert_eq!(
            c(Rate::per_second(999_999), 1),
            Err(RateLimitConfigError::RateBeyondResolution),
            "1 000.001 ns rounds up to 1 001, plus a tick: 0.2% off"
        );
        assert_eq!(
            c(Rate::per_second(1), 1 << 30),
            Err(RateLimitConfigError::BurstTooLarge)
        );
    }

    #[test]
    fn decide_burst_then_rate() {
        let g = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 3);
        let t = g.emission;
        assert_eq!(
            t, 2049,
            "2^20 ns in 512 ns ticks, plus the tick that pays for rounding"
        );
        let mut tat = g.full(Instant::ZERO);
        for _ in 0..3 {
            match g.decide(tat, 0, 1) {
                Decision::Admit(next) => tat = next,
                Decision::Wait(_) => panic!("a full bucket admits its burst"),
            }
        }
        assert_eq!(g.decide(tat, 0, 1), Decision::Wait(t));
        assert_eq!(g.decide(tat, t - 1, 1), Decision::Wait(1));
        assert!(matches!(g.decide(tat, t, 1), Decision::Admit(_)));
        assert_eq!(g.available(tat, 0), 0);
        assert_eq!(g.available(tat, 2 * t), 2);
        assert_eq!(g.decide(tat, 0, 3), Decision::Wait(3 * t));
    }

    #[test]
    fn a_lagging_caller_is_refused_and_a_long_idle_refills() {
        let g = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 2);
        // Empty bucket: TAT = now + span.
        let now = 5_000_000;
        let tat = now + g.span();
        assert!(matches!(g.decide(tat, now - 10, 1), Decision::Wait(w) if w == 10 + g.emission));
        assert!(matches!(g.decide(tat, now - g.early, 1), Decision::Wait(_)));
        assert!(matches!(
            g.decide(tat, now - g.early - 1, 1),
            Decision::Admit(_)
        ));
        assert!(g.is_full(tat, now + g.span()));
        assert!(g.is_full(tat, tat.wrapping_add(1 << 30)));
    }

    #[test]
    fn carry_over_keeps_cells_and_caps_at_the_new_burst() {
        let slow = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 4);
        let fast = gcra(Rate::one_every(Duration::from_nanos(1 << 19)), 10);
        let now = Instant::ZERO;
        // Two of four cells used.
        let tat = slow.full(now).wrapping_add(2 * slow.emission);
        assert_eq!(slow.available(tat, slow.tick(now)), 2);
        let moved = slow.carry_over(tat, now, &fast);
        assert_eq!(fast.available(moved, fast.tick(now)), 2, "cells carry over");
        // A full bucket stays full, capped at the smaller burst.
        let small = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 1);
        let full = fast.full(now);
        let moved = fast.carry_over(full, now, &small);
        assert_eq!(small.available(moved, small.tick(now)), 1);
    }
}
