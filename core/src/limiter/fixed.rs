//! The fixed-point numbers the limiter computes with, so the once-per-window update needs no
//! floating-point unit (thumbv6m and riscv32imac have none; soft-float there costs hundreds of
//! cycles per operation and pulls in compiler-builtins' float routines).
//!
//! * A limit is Q24.8: `256` is one call. The fraction matters: Gradient2 grows by 0.8 of a
//!   call per window, which an integer limit would round away forever.
//! * A ratio (smoothing, tolerance, backoff) is Q16: `65_536` is 1.0.
//! * A round-trip time is [`Rtt`]: sixteenths of a microsecond (max 268 s, saturating).
//!
//! Intermediate products use `u64`, which every target computes in registers (no atomics).

use core::time::Duration;

/// One call, in Q24.8.
pub(crate) const CALL: u32 = 256;
/// 1.0 in Q16.
pub(crate) const UNIT: u32 = 65_536;

/// `x` (any fixed-point) times `ratio` (Q16), rounded to nearest, saturating.
pub(crate) const fn mul_ratio(x: u32, ratio: u32) -> u32 {
    sat((x as u64 * ratio as u64 + (UNIT as u64 / 2)) >> 16)
}

/// `(1 - s)·a + s·b` with `s` in Q16: exponential smoothing, rounded to nearest.
pub(crate) const fn smooth(a: u32, b: u32, s: u32) -> u32 {
    let s = (if s > UNIT { UNIT } else { s }) as u64;
    sat((a as u64 * (UNIT as u64 - s) + b as u64 * s + (UNIT as u64 / 2)) >> 16)
}

/// A finite, non-negative `f32` in Q16 (rounded); callers validate the range first.
pub(crate) const fn ratio_from_f32(x: f32) -> u32 {
    let scaled = x * UNIT as f32 + 0.5;
    if scaled >= u32::MAX as f32 {
        u32::MAX
    } else if scaled > 0.0 {
        scaled as u32
    } else {
        0
    }
}

/// Saturates a `u64` into a `u32`.
pub(crate) const fn sat(x: u64) -> u32 {
    if x > u32::MAX as u64 {
        u32::MAX
    } else {
        x as u32
    }
}

/// A round-trip time in sixteenths of a microsecond (62.5 ns), saturating at 268 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rtt(pub(crate) u32);

impl Rtt {
    /// No time at all.
    pub const ZERO: Rtt = Rtt(0);

    /// `d`, rounded down to 62.5 ns, saturating at 268 s.
    pub const fn from_duration(d: Duration) -> Rtt {
        let nanos = crate::time::duration_as_nanos_saturating(d);
        Rtt(sat(
            (nanos / 1_000).saturating_mul(16) + (nanos % 1_000) * 16 / 1_000
        ))
    }

    /// `micros` microseconds.
    pub const fn from_micros(micros: u32) -> Rtt {
        Rtt(micros.saturating_mul(16))
    }

    /// Whole microseconds.
    pub const fn as_micros(self) -> u32 {
        self.0 / 16
    }

    /// As a [`Duration`].
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0 as u64 * 1_000 / 16)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_rounds_and_saturates() {
        assert_eq!(mul_ratio(20 * CALL, UNIT / 2), 10 * CALL);
        assert_eq!(mul_ratio(u32::MAX, u32::MAX), u32::MAX);
        assert_eq!(smooth(20 * CALL, 24 * CALL, ratio_from_f32(0.2)), 5325); // 20.8 calls
        assert_eq!(smooth(7, 9, UNIT), 9);
        assert_eq!(smooth(7, 9, 0), 7);
        assert_eq!(smooth(7, 9, 2 * UNIT), 9, "a weight above one is one");
        assert_eq!(ratio_from_f32(1.5), 98_304);
        assert_eq!(ratio_from_f32(0.0), 0);
        assert_eq!(ratio_from_f32(1e30), u32::MAX);
    }

    #[test]
    fn rtt_conversions() {
        assert_eq!(
            Rtt::from_duration(Duration::from_millis(10)).as_micros(),
            10_000
        );
        assert_eq!(Rtt::from_duration(Duration::from_nanos(125)).0, 2);
        assert_eq!(Rtt::from_duration(Duration::MAX).0, u32::MAX);
        assert_eq!(Rtt::from_micros(3).as_duration(), Duration::from_micros(3));
    }
}
