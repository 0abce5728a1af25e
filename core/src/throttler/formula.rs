//! The SRE rejection probability as a pure function of two counts: no atomics, no time.
//!
//! Kept apart from the window that stores the counts so the formula can be tested, fuzzed and
//! read on its own, and so the analysis in the module docs is about this function only.

use core::cmp::Ordering as CmpOrdering;
use core::fmt;

/// One, in the millionths the formula's parameters are stored in.
pub(crate) const MILLION: u64 = 1_000_000;

/// A probability as an exact fraction, so a shed decision is an integer draw
/// ([`Random::chance`](crate::random::Random::chance)) that needs no floating-point unit.
///
/// Equality compares the values, not the representations: 10/11 equals 20/22.
///
/// ```
/// use resilix::throttler::Probability;
///
/// let p = Probability::new(10, 11);
/// assert_eq!(p, Probability::new(20, 22));
/// assert!((p.as_f64() - 0.909).abs() < 1e-3);
/// assert!(Probability::ZERO.is_zero());
/// ```
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Probability {
    numerator: u64,
    denominator: u64,
}

impl Probability {
    /// Never.
    pub const ZERO: Probability = Probability {
        numerator: 0,
        denominator: 1,
    };

    /// `numerator / denominator`, clamped to `[0, 1]`; a zero denominator reads as zero.
    pub const fn new(numerator: u64, denominator: u64) -> Self {
        if denominator == 0 {
            return Probability::ZERO;
        }
        let numerator = if numerator > denominator {
            denominator
        } else {
            numerator
        };
        Probability {
            numerator,
            denominator,
        }
    }

    /// The numerator of the stored fraction.
    pub const fn numerator(self) -> u64 {
        self.numerator
    }

    /// The denominator of the stored fraction (never zero).
    pub const fn denominator(self) -> u64 {
        self.denominator
    }

    /// Whether this is exactly zero (the throttler then draws no random number at all).
    pub const fn is_zero(self) -> bool {
        self.numerator == 0
    }

    /// The value as a float, for display and metrics.
    pub fn as_f64(self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }
}

impl PartialEq for Probability {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Probability {}

impl PartialOrd for Probability {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Probability {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // Both fit in u64, so the cross products fit in u128 exactly.
        let a = self.numerator as u128 * other.denominator as u128;
        let b = other.numerator as u128 * self.denominator as u128;
        a.cmp(&b)
    }
}

impl fmt::Display for Probability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.4}", self.as_f64())
    }
}

/// The validated parameters of the formula, in millionths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct Formula {
    /// K × 10^6, at least 10^6.
    pub(crate) k_millionths: u64,
    /// The cap × 10^6, below 10^6.
    pub(crate) max_rejection_millionths: u64,
    /// Below this many requests in the window, nothing is shed.
    pub(crate) min_requests: u32,
}

impl Formula {
    /// K and the cap as the three words of the throttler's settings block: K's low and
    /// high halves (K is stored to a millionth in 64 bits, an infinite K saturating), then the
    /// cap (below 10^6). `min_requests` is not in the block: it cannot change in place.
    pub(crate) const fn words(&self) -> [u32; 3] {
        [
            self.k_millionths as u32,
            (self.k_millionths >> 32) as u32,
            self.max_rejection_millionths as u32,
        ]
    }

    /// The formula of a settings block ([`words`](Self::words)) and `min_requests`.
    #[inline(always)]
    pub(crate) const fn from_words([k_low, k_high, cap]: [u32; 3], min_requests: u32) -> Formula {
        Formula {
            k_millionths: (k_high as u64) << 32 | k_low as u64,
            max_rejection_millionths: cap as u64,
            min_requests,
        }
    }

    /// `max(0, (requests − K·accepts) / (requests + 1))`, capped at the maximum rejection
    /// rate, and zero while the window holds fewer than `min_requests` requests.
    ///
    /// In `u64` throughout (K and the cap are words read at run time, so no constant folds
    /// them away, and 128-bit products cost flash on 32-bit targets): every quantity below is
    /// under 2^52, and K·accepts saturates only where its exact value would shed nothing.
    pub(crate) const fn probability(&self, requests: u32, accepts: u32) -> Probability {
        if requests < self.min_requests {
            return Probability::ZERO;
        }
        // Scaled by 10^6 so K keeps its fraction.
        let excess = requests as u64 * MILLION;
        let weighted = self.k_millionths.saturating_mul(accepts as u64);
        if excess <= weighted {
            return Probability::ZERO;
        }
        let numerator = excess - weighted;
        // P = numerator / (units · 10^6), so P > cap / 10^6 exactly when numerator > cap · units.
        let units = requests as u64 + 1;
        // Both fractions are at most one over a denominator above zero: no clamp to apply.
        if numerator > self.max_rejection_millionths * units {
            Probability {
                numerator: self.max_rejection_millionths,
                denominator: MILLION,
            }
        } else {
            Probability {
                numerator,
                denominator: units * MILLION,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const SRE: Formula = Formula {
        k_millionths: 2 * MILLION,
        max_rejection_millionths: 900_000,
        min_requests: 0,
    };

    #[test]
    fn zero_while_requests_are_at_most_k_times_accepts() {
        assert!(SRE.probability(0, 0).is_zero());
        assert!(SRE.probability(10, 5).is_zero(), "requests == K·accepts");
        assert!(SRE.probability(10, 10).is_zero());
        assert!(SRE.probability(u32::MAX, u32::MAX).is_zero());
        assert!(
            !SRE.probability(11, 5).is_zero(),
            "one over the cutoff sheds"
        );
        assert_eq!(SRE.probability(11, 5), Probability::new(1, 12));
    }

    #[test]
    fn the_sre_book_cases() {
        let uncapped = Formula {
            max_rejection_millionths: 999_999,
            ..SRE
        };
        assert_eq!(uncapped.probability(10, 0), Probability::new(10, 11));
        assert_eq!(uncapped.probability(100, 40), Probability::new(20, 101));
        // With the failsafe-go cap of 0.9, 10/11 = 0.909 is held at 0.9.
        assert_eq!(SRE.probability(10, 0), Probability::new(9, 10));
        assert_eq!(SRE.probability(100, 40), Probability::new(20, 101));
    }

    #[test]
    fn failsafe_go_cases_with_k_one_point_one_one() {
        // failsafe-go's successRateThreshold 0.9 is K = 1/0.9; its published check:
        // successes 50 of 100 executions → (100 − 55.56) / 101 = 0.440.
        let f = Formula {
            k_millionths: 1_111_111,
            max_rejection_millionths: 900_000,
            min_requests: 0,
        };
        let p = f.probability(100, 50).as_f64();
        assert!((p - 0.440).abs() < 1e-3, "{p}");
        assert_eq!(f.probability(100, 0), Probability::new(9, 10));
        // 90 of 100 is exactly failsafe-go's threshold; K = 1/0.9 stored to a millionth
        // (1.111111) sits a hair below it, so one more success is needed to read zero.
        assert!(f.probability(100, 91).is_zero());
    }

    #[test]
    fn the_cap_holds_at_every_extreme() {
        let p = SRE.probability(u32::MAX, 0);
        assert_eq!(p, Probability::new(9, 10));
        let zero_cap = Formula {
            max_rejection_millionths: 0,
            ..SRE
        };
        assert!(zero_cap.probability(1_000, 0).is_zero());
    }

    #[test]
    fn min_requests_gates_shedding() {
        let gated = Formula {
            min_requests: 10,
            ..SRE
        };
        assert!(gated.probability(9, 0).is_zero());
        assert_eq!(gated.probability(10, 0), Probability::new(9, 10));
    }

    #[test]
    fn fractions_compare_by_value() {
        assert!(Probability::new(1, 3) < Probability::new(1, 2));
        assert_ne!(
            Probability::new(1, 3),
            Probability::new(1, 2),
            "unequal values differ"
        );
        assert_eq!(Probability::new(5, 0), Probability::ZERO);
        assert_eq!(
            Probability::new(7, 3),
            Probability::new(1, 1),
            "clamped to one"
        );
    }

    #[test]
    fn the_fraction_is_what_the_draw_receives() {
        // The shed draw is `chance(numerator, denominator)`: the accessors are the decision.
        let p = Probability::new(3, 7);
        assert_eq!((p.numerator(), p.denominator()), (3, 7));
        let clamped = Probability::new(9, 4);
        assert_eq!((clamped.numerator(), clamped.denominator()), (4, 4));
        let zero = Probability::new(5, 0);
        assert_eq!((zero.numerator(), zero.denominator()), (0, 1));
    }
}
