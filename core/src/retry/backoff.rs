//! How long to wait before the next attempt: the four formulas of AWS's "Exponential Backoff
//! And Jitter" (docs/design/spec.md §3.1), plus no wait at all.
//!
//! ```text
//! none          sleep = 0
//! exponential   sleep = min(cap, base · 2^attempt)
//! full jitter   sleep = random(0, min(cap, base · 2^attempt))
//! equal jitter  sleep = min(cap, base · 2^attempt)/2 + random(0, min(cap, base · 2^attempt)/2)
//! decorrelated  sleep = min(cap, random(base, 3 · previous sleep)), the first previous = base
//! ```
//!
//! `attempt` is the number of attempts already made (1 after the first failure), exactly as in
//! AWS's published simulator, whose figures the simulator reproduces: with `base` = 5 ms the
//! first retry waits up to 10 ms. To have the first retry wait up to `x`, set `base` = `x / 2`.
//!
//! Every delay is a pure function of (attempt, previous delay, configuration, random draw), in
//! integer nanoseconds with saturating arithmetic (firmware has no FPU), and never exceeds
//! `cap`. `random(a, b)` is uniform over the integers of `[a, b]` (both ends included), drawn
//! without modulo bias through [`Random::below`].

use core::fmt;
use core::time::Duration;

use crate::random::Random;
use crate::retry::error::RetryConfigError;
use crate::time::duration_as_nanos_saturating;

/// Which backoff formula to use. See the [module docs](self) for each formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Strategy {
    /// Retry at once. AWS's "clear loser" under contention; only for callers that pace
    /// themselves (a firmware loop with its own tick).
    None,
    /// Capped exponential growth with no jitter: clients that failed together retry together.
    Exponential,
    /// A uniform draw below the exponential ceiling. The default: least work on the upstream
    /// (AWS measured it, docs/design/spec.md §3.1).
    FullJitter,
    /// Half the ceiling plus a uniform draw over the other half. AWS: "the loser" — slightly
    /// more work and much more time than full jitter. Shipped for comparison.
    EqualJitter,
    /// A uniform draw between `base` and three times the previous delay, capped: slightly more
    /// work than full jitter, slightly less time. The documented alternative.
    Decorrelated,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::None => "none",
            Strategy::Exponential => "exponential",
            Strategy::FullJitter => "full jitter",
            Strategy::EqualJitter => "equal jitter",
            Strategy::Decorrelated => "decorrelated jitter",
        })
    }
}

/// A backoff formula with its `base` and `cap`, validated.
///
/// ```
/// use core::time::Duration;
/// use resilix::random::SeededRandom;
/// use resilix::retry::{Backoff, Strategy};
///
/// let backoff = Backoff::new(Strategy::FullJitter, Duration::from_millis(5), Duration::from_secs(2))?;
/// let mut rng = SeededRandom::new(42);
/// // After the third failed attempt the ceiling is min(2 s, 5 ms · 2^3) = 40 ms.
/// let d = backoff.delay(3, backoff.first_previous(), &mut rng);
/// assert!(d <= Duration::from_millis(40));
/// # Ok::<(), resilix::retry::RetryConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Backoff {
    strategy: Strategy,
    base_nanos: u64,
    cap_nanos: u64,
}

impl Backoff {
    /// Retry at once, with no delay.
    pub const NONE: Backoff = Backoff {
        strategy: Strategy::None,
        base_nanos: 0,
        cap_nanos: 0,
    };

    /// The default: full jitter, `base` 100 ms (the gRPC A6 example's `initialBackoff` 0.1 s),
    /// `cap` 20 s (the AWS SDK standard mode's `MaxBackoff`).
    pub const DEFAULT: Backoff = Backoff {
        strategy: Strategy::FullJitter,
        base_nanos: 100_000_000,
        cap_nanos: 20_000_000_000,
    };

    /// A backoff of `strategy` growing from `base` up to `cap`.
    ///
    /// Refused: a zero `base` (every delay would be zero, or decorrelated would stick at zero:
    /// use [`Backoff::NONE`] to mean that) and a `cap` below `base`. [`Strategy::None`] ignores
    /// both and returns [`Backoff::NONE`].
    pub const fn new(
        strategy: Strategy,
        base: Duration,
        cap: Duration,
    ) -> Result<Backoff, RetryConfigError> {
        if let Strategy::None = strategy {
            return Ok(Backoff::NONE);
        }
        let base_nanos = duration_as_nanos_saturating(base);
        let cap_nanos = duration_as_nanos_saturating(cap);
        if base_nanos == 0 {
            return Err(RetryConfigError::ZeroBase);
        }
        if cap_nanos < base_nanos {
            return Err(RetryConfigError::CapBelowBase);
        }
        Ok(Backoff {
            strategy,
            base_nanos,
            cap_nanos,
        })
    }

    /// The formula.
    pub const fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The smallest step (and decorrelated's lower bound).
    pub const fn base(&self) -> Duration {
        Duration::from_nanos(self.base_nanos)
    }

    /// No delay is ever longer.
    pub const fn cap(&self) -> Duration {
        Duration::from_nanos(self.cap_nanos)
    }

    /// The "previous delay" to start a call with: `base`, as AWS's decorrelated jitter does.
    pub const fn first_previous(&self) -> Duration {
        Duration::from_nanos(self.base_nanos)
    }

    /// `min(cap, base · 2^attempt)`, saturating: the ceiling of the exponential family.
    pub const fn ceiling(&self, attempt: u32) -> Duration {
        Duration::from_nanos(self.ceiling_nanos(attempt))
    }

    const fn ceiling_nanos(&self, attempt: u32) -> u64 {
        let grown = if attempt >= 64 {
            if self.base_nanos == 0 { 0 } else { u64::MAX }
        } else {
            self.base_nanos.saturating_mul(1u64 << attempt)
        };
        if grown < self.cap_nanos {
            grown
        } else {
            self.cap_nanos
        }
    }

    /// The delay before the next attempt, after `attempt` attempts were made (1 after the
    /// first failure). `previous` is the delay this formula returned last time in the same
    /// call ([`first_previous`](Self::first_previous) at the start); only decorrelated jitter
    /// reads it. The result never exceeds [`cap`](Self::cap).
    pub fn delay<R: Random + ?Sized>(
        &self,
        attempt: u32,
        previous: Duration,
        rng: &mut R,
    ) -> Duration {
        let nanos = match self.strategy {
            Strategy::None => 0,
            Strategy::Exponential => self.ceiling_nanos(attempt),
            Strategy::FullJitter => uniform_inclusive(rng, 0, self.ceiling_nanos(attempt)),
            Strategy::EqualJitter => {
                let half = self.ceiling_nanos(attempt) / 2;
                // half + [0, half] ≤ 2·half ≤ the ceiling: an odd nanosecond is dropped, never
                // added, so the cap holds.
                half + uniform_inclusive(rng, 0, half)
            }
            Strategy::Decorrelated => {
                // A previous delay below base (a caller's odd input) is read as base, so the
                // draw range is never empty and the result never drops below base.
                let prev = duration_as_nanos_saturating(previous).max(self.base_nanos);
                let drawn = uniform_inclusive(rng, self.base_nanos, prev.saturating_mul(3));
                drawn.min(self.cap_nanos)
            }
        };
        Duration::from_nanos(nanos)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::DEFAULT
    }
}

/// Uniform over the integers of `[low, high]`, both included (`low ≤ high`).
fn uniform_inclusive<R: Random + ?Sized>(rng: &mut R, low: u64, high: u64) -> u64 {
    let span = high - low;
    if span == u64::MAX {
        // [0, u64::MAX] is every u64: `below` cannot express a bound of 2^64.
        return rng.next_u64();
    }
    low + rng.below(span + 1)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::random::SeededRandom;

    const MS: Duration = Duration::from_millis(1);

    fn b(strategy: Strategy) -> Backoff {
        Backoff::new(strategy, 5 * MS, 2_000 * MS).unwrap()
    }

    /// A generator that always returns the same word: its draws sit at one end of the range.
    /// (Not 0: `below` rejects an all-zero product as biased and would draw forever.)
    struct Constant(u32);
    impl Random for Constant {
        fn next_u32(&mut self) -> u32 {
            self.0
        }
    }

    #[test]
    fn invalid_configs_are_refused() {
        assert_eq!(
            Backoff::new(Strategy::FullJitter, Duration::ZERO, MS),
            Err(RetryConfigError::ZeroBase)
        );
        assert_eq!(
            Backoff::new(Strategy::Exponential, 2 * MS, MS),
            Err(RetryConfigError::CapBelowBase)
        );
        assert_eq!(
            Backoff::new(Strategy::None, Duration::ZERO, Duration::ZERO),
            Ok(Backoff::NONE)
        );
        assert!(
            Backoff::new(Strategy::Decorrelated, MS, MS).is_ok(),
            "cap = base is fine"
        );
    }

    #[test]
    fn exponential_doubles_from_twice_base_and_stops_at_the_cap() {
        let e = b(Strategy::Exponential);
        let mut rng = SeededRandom::new(1);
        let got: [u64; 6] = core::array::from_fn(|i| {
            e.delay(i as u32 + 1, e.first_previous(), &mut rng)
                .as_millis() as u64
        });
        assert_eq!(got, [10, 20, 40, 80, 160, 320]);
        assert_eq!(
            e.delay(9, Duration::ZERO, &mut rng),
            2_000 * MS,
            "2560 ms capped"
        );
        assert_eq!(
            e.delay(0, Duration::ZERO, &mut rng),
            5 * MS,
            "attempt 0 is base"
        );
    }

    #[test]
    fn huge_attempt_numbers_saturate_at_the_cap() {
        let mut rng = SeededRandom::new(2);
        for s in [
            Strategy::Exponential,
            Strategy::FullJitter,
            Strategy::EqualJitter,
        ] {
            for attempt in [63, 64, 65, 1_000, u32::MAX] {
                assert!(b(s).delay(attempt, Duration::MAX, &mut rng) <= 2_000 * MS);
            }
            assert_eq!(b(s).ceiling(u32::MAX), 2_000 * MS);
        }
        let max = Backoff::new(Strategy::Exponential, Duration::MAX, Duration::MAX).unwrap();
        assert_eq!(
            max.delay(u32::MAX, Duration::MAX, &mut rng),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn full_jitter_reaches_both_ends_of_zero_to_ceiling() {
        let f = b(Strategy::FullJitter);
        assert_eq!(f.delay(1, Duration::ZERO, &mut Constant(1)), Duration::ZERO);
        assert_eq!(f.delay(1, Duration::ZERO, &mut Constant(u32::MAX)), 10 * MS);
    }

    #[test]
    fn equal_jitter_stays_in_the_upper_half() {
        let e = b(Strategy::EqualJitter);
        assert_eq!(e.delay(2, Duration::ZERO, &mut Constant(1)), 10 * MS);
        assert_eq!(e.delay(2, Duration::ZERO, &mut Constant(u32::MAX)), 20 * MS);
        // An odd ceiling never rounds above itself.
        let odd = Backoff::new(
            Strategy::EqualJitter,
            Duration::from_nanos(3),
            Duration::from_nanos(3),
        )
        .unwrap();
        assert_eq!(
            odd.delay(5, Duration::ZERO, &mut Constant(u32::MAX)),
            Duration::from_nanos(2)
        );
    }

    #[test]
    fn decorrelated_draws_between_base_and_three_times_previous_then_caps() {
        let d = b(Strategy::Decorrelated);
        assert_eq!(d.delay(1, 5 * MS, &mut Constant(1)), 5 * MS);
        assert_eq!(d.delay(1, 5 * MS, &mut Constant(u32::MAX)), 15 * MS);
        assert_eq!(
            d.delay(1, 1_000 * MS, &mut Constant(u32::MAX)),
            2_000 * MS,
            "3 s capped"
        );
        // The attempt number does not matter; a previous below base reads as base.
        assert_eq!(
            d.delay(40, Duration::ZERO, &mut Constant(u32::MAX)),
            15 * MS
        );
        assert_eq!(
            d.delay(1, Duration::MAX, &mut Constant(u32::MAX)),
            2_000 * MS
        );
    }

    #[test]
    fn none_never_waits() {
        let mut rng = SeededRandom::new(3);
        assert_eq!(
            Backoff::NONE.delay(7, Duration::MAX, &mut rng),
            Duration::ZERO
        );
        assert_eq!(Backoff::NONE.cap(), Duration::ZERO);
    }

    #[test]
    fn uniform_inclusive_covers_the_whole_u64_range() {
        assert_eq!(
            uniform_inclusive(&mut Constant(u32::MAX), 0, u64::MAX),
            u64::MAX
        );
        assert_eq!(uniform_inclusive(&mut Constant(7), 9, 9), 9);
    }

    #[test]
    fn strategies_have_distinct_names() {
        extern crate std;
        use std::string::ToString;
        let all = [
            Strategy::None,
            Strategy::Exponential,
            Strategy::FullJitter,
            Strategy::EqualJitter,
            Strategy::Decorrelated,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.to_string(), b.to_string());
            }
        }
    }

    #[test]
    fn the_default_is_full_jitter_100ms_to_20s() {
        let d = Backoff::default();
        assert_eq!(d.strategy(), Strategy::FullJitter);
        assert_eq!((d.base(), d.cap()), (100 * MS, Duration::from_secs(20)));
    }
}
