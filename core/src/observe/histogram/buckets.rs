//! The log-linear bucket layout, as pure arithmetic on `u64` nanoseconds.
//!
//! With `p` sub-bucket bits, values below `2^(p+1)` each get a bucket of their own, and every
//! octave `[2^e, 2^(e+1))` above is cut into `2^p` buckets of equal width `2^(e-p)`. A bucket's
//! width is therefore at most `2^-p` of its lower bound, which is what bounds the relative
//! error. The index is monotone in the value, so an index is also an order-preserving,
//! precision-reduced encoding of the value: the histogram stores its minimum and maximum as
//! such indexes with `p = 26` in 32-bit words.
//!
//! Layout for `p`: index `v` for `v < 2^p`, then octave `e` (`p ≤ e ≤ 63`) at indexes
//! `(e - p + 1)·2^p .. (e - p + 2)·2^p`, so `(65 - p)·2^p` buckets cover all of `u64`.

/// How many buckets cover `0..=u64::MAX` with `p` sub-bucket bits.
pub(crate) const fn count(p: u32) -> usize {
    (65 - p as usize) << p
}

/// The bucket holding `v`.
pub(crate) const fn index(v: u64, p: u32) -> usize {
    let linear = 1u64 << p;
    if v < linear {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // e ≥ p
    let sub = (v >> (e - p)) - linear; // the p bits after the leading one
    (((e - p + 1) as u64) << p) as usize + sub as usize
}

/// The smallest value in bucket `i`.
pub(crate) const fn lower(i: usize, p: u32) -> u64 {
    let linear = 1usize << p;
    if i < linear {
        return i as u64;
    }
    let octave = (i >> p) as u32; // 1 for e = p
    let sub = (i & (linear - 1)) as u64;
    ((linear as u64) + sub) << (octave - 1)
}

/// The largest value in bucket `i` (inclusive, so the top bucket ends at `u64::MAX`).
pub(crate) const fn upper(i: usize, p: u32) -> u64 {
    lower(i, p) + (width(i, p) - 1)
}

/// How many distinct values bucket `i` holds (a power of two).
pub(crate) const fn width(i: usize, p: u32) -> u64 {
    let octave = (i >> p) as u32;
    if octave == 0 { 1 } else { 1 << (octave - 1) }
}

/// The value reported for bucket `i`: the middle, rounded down, so that no value of the bucket
/// is farther from it than half the width, which is at most `2^-(p+1)` of that value.
pub(crate) const fn midpoint(i: usize, p: u32) -> u64 {
    lower(i, p) + (width(i, p) - 1) / 2
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_documented_sizes() {
        assert_eq!(count(0), 65);
        assert_eq!(count(2), 252);
        assert_eq!(count(3), 496);
        assert_eq!(count(26), 39 << 26);
        // The 32-bit min/max encoding needs every index and a sentinel to fit in a u32.
        assert!((count(26) as u64) < u32::MAX as u64);
    }

    #[test]
    fn small_values_are_exact() {
        for p in 0..=8 {
            for v in 0..(2u64 << p) {
                let i = index(v, p);
                assert_eq!(i as u64, v, "p={p}");
                assert_eq!((lower(i, p), upper(i, p), midpoint(i, p)), (v, v, v));
            }
        }
    }

    #[test]
    fn extremes() {
        for p in 0..=16 {
            let top = index(u64::MAX, p);
            assert_eq!(
                top,
                count(p) - 1,
                "p={p}: u64::MAX lands in the last bucket"
            );
            assert_eq!(upper(top, p), u64::MAX);
            assert_eq!(index(0, p), 0);
            assert_eq!(index(1 << 63, p), count(p) - (1 << p));
        }
    }

    /// Around every power of two and at seeded random points: the value lies in its bucket,
    /// buckets tile the line without gaps, and the midpoint honours the error bound.
    #[test]
    fn buckets_tile_and_bound_the_error() {
        use crate::random::{Random, SeededRandom};
        let mut rng = SeededRandom::new(7);
        for p in [0, 1, 2, 3, 4, 7, 16, 26] {
            let check = |v: u64| {
                let i = index(v, p);
                assert!(lower(i, p) <= v && v <= upper(i, p), "p={p} v={v}");
                if i + 1 < count(p) {
                    assert_eq!(upper(i, p) + 1, lower(i + 1, p), "p={p} i={i}: no gap");
                }
                let err = midpoint(i, p).abs_diff(v) as u128;
                assert!(err << (p + 1) <= v as u128, "p={p} v={v} err={err}");
            };
            for e in 0..64 {
                let b = 1u64 << e;
                for v in [b - 1, b, b + 1, b.saturating_mul(3) / 2] {
                    check(v);
                }
            }
            for _ in 0..10_000 {
                let bits = rng.below(65) as u32;
                let v = if bits == 0 {
                    0
                } else {
                    rng.next_u64() >> (64 - bits)
                };
                check(v);
            }
            check(u64::MAX);
        }
    }

    #[test]
    fn index_is_monotone() {
        use crate::random::{Random, SeededRandom};
        let mut rng = SeededRandom::new(11);
        for _ in 0..10_000 {
            let a = rng.next_u64() >> rng.below(64);
            let b = rng.next_u64() >> rng.below(64);
            let (lo, hi) = (a.min(b), a.max(b));
            assert!(index(lo, 3) <= index(hi, 3));
            assert!(index(lo, 26) <= index(hi, 26));
        }
    }
}
