//! Time stored in 32-bit words: the one place policies turn an [`Instant`] into something a
//! 32-bit microcontroller can update with a single native atomic.
//!
//! A tick word is the low 32 bits of `nanos >> shift`. Each policy chooses the shift from the
//! longest span it must measure ([`TickScale::covering`]), so its resolution is as fine as that
//! span allows, and never finer than 4 ns ([`MIN_SHIFT`]), so that a 32-bit word's era fits
//! in a `u32` for the whole timeline and its circle (2^32 ticks) is at least 17.2 s.
//!
//! A stored tick word is never compared with `now` modulo 2^32: a word kept with an
//! [`Era`](super::era::Era) is widened back to its full count (`era::widen`) and compared with
//! [`TickScale::wide`] in 64-bit arithmetic, so no idle gap of any length changes a decision
//! (see `time::era`). [`TickScale::elapsed`] (wrapping) remains only for spans that
//! are known to be shorter than a circle, such as two instants of one call.
//!
//! ```text
//! shift  tick        circle (2^32 ticks)
//!   2    4 ns        17.2 s
//!  10    1.02 µs     73 min
//!  20    1.05 ms     52 days
//!  30    1.07 s      146 years
//! ```
//!
//! Design notes: docs/design/time-and-eras.md

use core::time::Duration;

use super::{Instant, duration_as_nanos_saturating};

/// The finest tick: 4 ns, so the era of a 32-bit tick word fits in a `u32` (see `time::era`).
pub(crate) const MIN_SHIFT: u8 = 2;

/// How an [`Instant`] maps to a 32-bit tick word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct TickScale {
    shift: u8,
}

#[allow(dead_code)] // each policy uses the part it needs
impl TickScale {
    /// The finest scale (at least [`MIN_SHIFT`]) on which `span` is less than 2^31 ticks.
    pub(crate) const fn covering(span: Duration) -> TickScale {
        let nanos = duration_as_nanos_saturating(span);
        let mut shift = MIN_SHIFT;
        while shift < 63 && (nanos >> shift) >= (1u64 << 31) {
            shift += 1;
        }
        TickScale { shift }
    }

    /// The scale whose tick is `2^shift` nanoseconds (`shift` at most 63), for a policy that
    /// picks its own resolution (the rate limiter trades resolution for wrap-around range).
    pub(crate) const fn from_shift(shift: u8) -> TickScale {
        TickScale {
            shift: if shift > 63 { 63 } else { shift },
        }
    }

    /// The full tick count of `now`, not cut to a word.
    #[inline]
    pub(crate) const fn wide(self, now: Instant) -> u64 {
        now.as_nanos() >> self.shift
    }

    /// The instant at the start of full tick count `ticks` (saturating).
    pub(crate) const fn instant_at(self, ticks: u64) -> Instant {
        if ticks > (u64::MAX >> self.shift) {
            Instant::MAX
        } else {
            Instant::from_nanos(ticks << self.shift)
        }
    }

    /// log2 of the tick length in nanoseconds.
    pub(crate) const fn shift(self) -> u8 {
        self.shift
    }

    /// The tick word for `now`.
    pub(crate) const fn ticks(self, now: Instant) -> u32 {
        (now.as_nanos() >> self.shift) as u32
    }

    /// Ticks from `since` to `now`, read as unsigned elapsed time (see the module docs).
    pub(crate) const fn elapsed(self, since: u32, now: u32) -> u32 {
        now.wrapping_sub(since)
    }

    /// `d` in ticks, rounded up so a wait is never shortened; saturates at `u32::MAX`.
    pub(crate) const fn ticks_in(self, d: Duration) -> u32 {
        let nanos = duration_as_nanos_saturating(d);
        let unit = 1u64 << self.shift;
        let t = nanos.div_ceil(unit);
        if t > u32::MAX as u64 {
            u32::MAX
        } else {
            t as u32
        }
    }

    /// The length of `ticks` ticks.
    pub(crate) const fn duration_of(self, ticks: u32) -> Duration {
        Duration::from_nanos((ticks as u64) << self.shift)
    }

    /// The instant `ticks` ticks after `now` (for reporting a retry-at time).
    pub(crate) const fn instant_after(self, now: Instant, ticks: u32) -> Instant {
        now.saturating_add(self.duration_of(ticks))
    }

    /// The length of one tick.
    pub(crate) const fn resolution(self) -> Duration {
        Duration::from_nanos(1u64 << self.shift)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn covering_picks_the_finest_scale_that_fits() {
        assert_eq!(TickScale::covering(Duration::from_secs(1)).shift, MIN_SHIFT);
        let s = TickScale::covering(Duration::from_secs(60));
        assert!(s.ticks_in(Duration::from_secs(60)) < 1 << 31);
        assert!(TickScale { shift: s.shift - 1 }.ticks_in(Duration::from_secs(60)) >= 1 << 31);
        // A year fits; so does the whole u64 timeline.
        let year = TickScale::covering(Duration::from_secs(365 * 86_400));
        assert!(year.ticks_in(Duration::from_secs(365 * 86_400)) < 1 << 31);
        assert_eq!(TickScale::covering(Duration::MAX).shift, 33);
    }

    #[test]
    fn wide_ticks_and_instants_round_trip() {
        let s = TickScale::covering(Duration::from_secs(5));
        let t = Instant::from_secs(1);
        assert_eq!(
            s.instant_at(s.wide(t)),
            Instant::from_nanos(s.wide(t) << s.shift())
        );
        assert_eq!(s.ticks(t), s.wide(t) as u32);
        assert_eq!(TickScale::from_shift(10).instant_at(u64::MAX), Instant::MAX);
    }

    #[test]
    fn elapsed_wraps_across_the_tick_word_boundary() {
        let s = TickScale::from_shift(0);
        let before = Instant::from_nanos(u32::MAX as u64 - 5);
        let after = Instant::from_nanos(u32::MAX as u64 + 10);
        assert_eq!(s.elapsed(s.ticks(before), s.ticks(after)), 15);
    }

    #[test]
    fn backwards_time_reads_as_a_long_elapsed_time() {
        let s = TickScale::covering(Duration::from_secs(1));
        let e = s.elapsed(
            s.ticks(Instant::from_nanos(100)),
            s.ticks(Instant::from_nanos(50)),
        );
        assert!(e > 1 << 31);
    }

    #[test]
    fn ticks_in_rounds_up_and_saturates() {
        let s = TickScale { shift: 10 };
        assert_eq!(s.ticks_in(Duration::from_nanos(1)), 1);
        assert_eq!(s.ticks_in(Duration::from_nanos(1024)), 1);
        assert_eq!(s.ticks_in(Duration::from_nanos(1025)), 2);
        assert_eq!(s.ticks_in(Duration::MAX), u32::MAX);
        assert_eq!(s.duration_of(2), Duration::from_nanos(2048));
        assert_eq!(s.resolution(), Duration::from_nanos(1024));
    }

    #[test]
    fn from_shift_clamps_past_63() {
        for shift in [63, 64, 200, u8::MAX] {
            assert_eq!(TickScale::from_shift(shift).shift(), 63, "{shift}");
        }
        assert_eq!(TickScale::from_shift(62).shift(), 62);
    }

    #[test]
    fn instant_at_is_exact_up_to_the_last_whole_tick_then_saturates() {
        let s = TickScale::from_shift(10);
        let last = u64::MAX >> 10;
        assert_eq!(s.instant_at(last), Instant::from_nanos(last << 10));
        assert_ne!(
            s.instant_at(last),
            Instant::MAX,
            "the last tick starts before the end"
        );
        assert_eq!(s.instant_at(last + 1), Instant::MAX);
        assert_eq!(s.instant_at(3), Instant::from_nanos(3 << 10));
    }

    #[test]
    fn instant_after_adds_whole_ticks_and_saturates() {
        let s = TickScale::from_shift(10);
        let now = Instant::from_nanos(500);
        assert_eq!(s.instant_after(now, 2), Instant::from_nanos(500 + 2048));
        assert_eq!(s.instant_after(now, 0), now);
        assert_eq!(s.instant_after(Instant::MAX, 1), Instant::MAX);
    }
}
