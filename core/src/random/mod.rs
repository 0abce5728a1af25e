//! Randomness as an argument: no policy owns or hides a generator.
//!
//! Full jitter and SRE throttling are irreducibly random (docs/design/spec.md §2): a deterministic backoff makes
//! a fleet retry in step, and deterministic shedding makes every client drop the same calls. So
//! randomness is injected exactly as time is. Policies take any [`Random`]; the core ships
//! [`SeededRandom`] so tests, the simulator and firmware without a hardware RNG are reproducible
//! bit for bit on every target. Optional features bridge `rand_core` 0.6, 0.9 and 0.10
//! ([`bridge`]), so any `RngCore` serves.
//!
//! There is deliberately no default seed: a fixed seed shared by every device makes the whole
//! fleet jitter alike, which is the failure jitter exists to prevent. Seeding is the caller's
//! explicit choice.
//!
//! ```
//! use resilix::random::{Random, SeededRandom};
//!
//! let mut a = SeededRandom::new(42);
//! let mut b = SeededRandom::new(42);
//! let x: f64 = a.unit();
//! assert!((0.0..1.0).contains(&x));
//! assert_eq!(x, b.unit()); // same seed, same draws
//! assert!(a.below(10) < 10);
//! ```

pub mod bridge;
mod seeded;

pub use seeded::SeededRandom;

/// A source of uniformly distributed random bits. One required method.
///
/// The provided methods derive everything the policies need from `next_u32`, identically on
/// every target, so a seeded generator gives the same jitter and shed decisions everywhere.
///
/// ```
/// use resilix::random::Random;
///
/// /// A hardware RNG register, as firmware might expose it.
/// struct Trng(u32);
/// impl Random for Trng {
///     fn next_u32(&mut self) -> u32 {
///         self.0 = self.0.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
///         self.0
///     }
/// }
/// let mut rng = Trng(7);
/// assert!(rng.below(6) < 6);
/// ```
pub trait Random {
    /// 32 uniformly distributed random bits.
    fn next_u32(&mut self) -> u32;

    /// 64 uniformly distributed random bits: two draws, the first in the high half.
    fn next_u64(&mut self) -> u64 {
        let hi = self.next_u32() as u64;
        let lo = self.next_u32() as u64;
        (hi << 32) | lo
    }

    /// Uniform in `[0, 1)` with 53 bits of precision (every representable multiple of 2^-53 in
    /// the interval is equally likely; 1.0 is never returned). Two `next_u32` draws.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[0, bound)` without modulo bias (Lemire's multiply-and-reject); `0` when
    /// `bound` is `0`. Integer-only, for targets without a floating-point unit.
    fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        // Reject the low products that would make some results one draw more likely.
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = (self.next_u64() as u128) * (bound as u128);
            if (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// `true` with probability `numerator / denominator` (`false` when the denominator is 0).
    fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        denominator != 0 && self.below(denominator) < numerator
    }
}

impl<R: Random + ?Sized> Random for &mut R {
    fn next_u32(&mut self) -> u32 {
        (**self).next_u32()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Fixed(&'static [u32], usize);
    impl Random for Fixed {
        fn next_u32(&mut self) -> u32 {
            let v = self.0[self.1 % self.0.len()];
            self.1 += 1;
            v
        }
    }

    #[test]
    fn unit_spans_zero_to_just_below_one() {
        assert_eq!(Fixed(&[0, 0], 0).unit(), 0.0);
        let top = Fixed(&[u32::MAX, u32::MAX], 0).unit();
        assert!(top < 1.0 && top > 1.0 - 1e-15);
    }

    #[test]
    fn below_is_unbiased_in_counts() {
        let mut rng = SeededRandom::new(1);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[rng.below(3) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn chance_edges() {
        let mut rng = SeededRandom::new(3);
        assert!(!rng.chance(0, 10));
        assert!(rng.chance(10, 10));
        assert!(!rng.chance(5, 0));
    }
}
