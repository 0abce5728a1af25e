//! Division of a `u64` count of nanoseconds by a fixed length, by multiplication: a window's
//! bucket number is `now / bucket_length` on every add, and a hardware 64-bit division costs
//! 25–90 cycles on x86-64 (a library call on 32-bit targets), a multiply-high 3–4.
//!
//! The method is the round-up variant of Granlund and Montgomery's ("Division by invariant
//! integers using multiplication", 1994), branch-free for `u64` as libdivide implements it
//! (`libdivide_u64_branchfree_gen` / `_do`). Why it is exact, for `d ≥ 2` not a power of two,
//! `ℓ = ⌊log₂ d⌋` (so `2^ℓ < d < 2^(ℓ+1)`) and every `n < 2^64`:
//!
//! * the multiplier is `m = ⌊2^(65+ℓ) / d⌋ + 1`, a 65-bit number stored as `magic = m − 2^64`;
//!   so `m·d = 2^(65+ℓ) + e` with `0 < e ≤ d`;
//! * `n·m / 2^(65+ℓ) = n/d + n·e / (d·2^(65+ℓ))`, and the second term is below
//!   `2^64·d / (d·2^(65+ℓ)) = 2^−(ℓ+1) < 1/d`; the fraction of `n/d` is at most `(d−1)/d`, so
//!   adding less than `1/d` never reaches the next integer: `⌊n·m / 2^(65+ℓ)⌋ = ⌊n/d⌋`;
//! * with `q = ⌊magic·n / 2^64⌋`, `⌊n·m / 2^64⌋ = n + q`, a 65-bit sum: it is halved as
//!   `⌊(n − q)/2⌋ + q` (`q ≤ n`), then shifted by `ℓ`, and nested floors of divisions by powers
//!   of two are one floor.
//!
//! A power of two is a shift (`magic = 0`, the shift one less to undo the halving). The tests
//! check it against `/` on the edges of every magnitude and on a sweep.

/// A fixed divisor (at least 2), ready to divide by multiplication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Divisor {
    magic: u64,
    shift: u8,
}

impl Divisor {
    /// The divisor `d`; `d < 2` is taken as 2 (every caller's divisor is a bucket of at least
    /// 8 ns, checked at construction).
    pub(crate) const fn new(d: u64) -> Divisor {
        let d = if d < 2 { 2 } else { d };
        let log2 = 63 - d.leading_zeros();
        if d.is_power_of_two() {
            return Divisor {
                magic: 0,
                shift: (log2 - 1) as u8,
            };
        }
        // ⌊2^(64+ℓ) / d⌋ < 2^64, since d > 2^ℓ.
        let numerator = 1u128 << (64 + log2);
        let proposed = (numerator / d as u128) as u64;
        let rem = (numerator % d as u128) as u64;
        // Doubled to ⌊2^(65+ℓ) / d⌋ (its low 64 bits), then rounded up.
        let mut magic = proposed.wrapping_add(proposed);
        let twice_rem = rem.wrapping_add(rem);
        if twice_rem >= d || twice_rem < rem {
            magic = magic.wrapping_add(1);
        }
        Divisor {
            magic: magic.wrapping_add(1),
            shift: log2 as u8,
        }
    }

    /// `⌊n / d⌋`, exactly, for every `n`.
    #[inline]
    pub(crate) const fn divide(self, n: u64) -> u64 {
        let q = ((self.magic as u128 * n as u128) >> 64) as u64;
        (((n - q) >> 1) + q) >> self.shift
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn check(d: u64, n: u64) {
        assert_eq!(Divisor::new(d).divide(n), n / d, "{n} / {d}");
    }

    /// A SplitMix64 stream: deterministic, and spread over the whole `u64`.
    fn stream(mut state: u64) -> impl Iterator<Item = u64> {
        core::iter::from_fn(move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            Some(z ^ (z >> 31))
        })
    }

    #[test]
    fn exact_on_the_edges() {
        let divisors = (2..=4_100u64)
            .chain((1..64).map(|k| 1u64 << k))
            .chain((2..64).flat_map(|k| [(1u64 << k) - 1, (1u64 << k) + 1]))
            .chain([
                1_000_000_000,
                100_000_000,
                6_000_000_000,
                u64::MAX,
                u64::MAX - 1,
                u64::MAX / 3,
            ]);
        for d in divisors {
            for n in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                u64::MAX,
                u64::MAX - 1,
                u64::MAX / d * d,
            ] {
                check(d, n);
                check(d, n.wrapping_sub(1));
            }
            let top = u64::MAX / d;
            for k in [2, 3, top / 2, top.saturating_sub(1), top] {
                let n = k.saturating_mul(d);
                check(d, n);
                check(d, n.saturating_sub(1));
            }
        }
    }

    #[test]
    fn exact_on_a_sweep() {
        let mut values = stream(7);
        for _ in 0..20_000 {
            let raw = values.next().unwrap();
            // Divisors of every magnitude, dividends of every magnitude.
            let d = (raw >> (raw % 62)).max(2);
            for _ in 0..16 {
                let n = values.next().unwrap();
                check(d, n);
                check(d, n >> (n % 64));
            }
        }
    }

    #[test]
    fn small_divisors_are_taken_as_two() {
        assert_eq!(Divisor::new(0), Divisor::new(2));
        assert_eq!(Divisor::new(1).divide(9), 4);
    }
}
