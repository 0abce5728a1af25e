//! Time stored in 32-bit words: the one place policies turn an [`Instant`] into something a
//! 32-bit microcontroller can update with a single native atomic.
//!
//! A tick word is the low 32 bits of `nanos >> shift`. Each policy chooses the shift from the
//! longest span it must measure ([`TickScale::covering`]), so its resolution is as fine as that
//! span allows. Differences are taken with wrapping arithmetic and read as *unsigned* elapsed
//! time. Two consequences, both bounded and documented on each policy:
//!
//! * Time going backwards makes `elapsed` huge, so an "has enough time passed?" question answers
//!   yes early. It never answers no forever.
//! * A jump of more than 2^32 ticks aliases: `elapsed` reads as the true value modulo 2^32. A
//!   question "has `span` passed?" may then answer no for at most `span` more real time, never
//!   longer, because `covering` keeps `span` below 2^31 ticks.
//!
//! ```text
//! shift  tick        2^31 ticks (longest span)
//!   0    1 ns        2.1 s
//!  10    1.02 µs     36 min
//!  20    1.05 ms     26 days
//!  30    1.07 s      73 years
//! ```

use core::time::Duration;

use super::{Instant, duration_as_nanos_saturating};

/// How an [`Instant`] maps to a 32-bit tick word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct TickScale {
    shift: u8,
}

#[allow(dead_code)] // each policy uses the part it needs
impl TickScale {
    /// The finest scale on which `span` is less than 2^31 ticks.
    pub(crate) const fn covering(span: Duration) -> TickScale {
        let nanos = duration_as_nanos_saturating(span);
        let mut shift = 0u8;
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
        assert_eq!(TickScale::covering(Duration::from_secs(1)).shift, 0);
        let s = TickScale::covering(Duration::from_secs(60));
        assert!(s.ticks_in(Duration::from_secs(60)) < 1 << 31);
        assert!(TickScale { shift: s.shift - 1 }.ticks_in(Duration::from_secs(60)) >= 1 << 31);
        // A year fits; so does the whole u64 timeline.
        let year = TickScale::covering(Duration::from_secs(365 * 86_400));
        assert!(year.ticks_in(Duration::from_secs(365 * 86_400)) < 1 << 31);
        assert_eq!(TickScale::covering(Duration::MAX).shift, 33);
    }

    #[test]
    fn elapsed_wraps_across_the_tick_word_boundary() {
        let s = TickScale::covering(Duration::from_secs(1));
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
}
