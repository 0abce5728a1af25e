use core::fmt;
use core::ops::{Add, Sub};
use core::time::Duration;

use super::duration_as_nanos_saturating;

/// A point on the caller's monotonic timeline, in nanoseconds.
///
/// The origin is whatever the caller chooses (boot, process start, the start of a
/// simulation); only differences matter. All arithmetic saturates instead of panicking or
/// wrapping: `Instant - Instant` is zero when the second is later, and `Instant + Duration`
/// stops at [`Instant::MAX`].
///
/// ```
/// use core::time::Duration;
/// use resilix::time::Instant;
///
/// let t = Instant::from_millis(10);
/// assert_eq!(t + Duration::from_millis(5), Instant::from_millis(15));
/// assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
/// assert_eq!(Instant::ZERO - t, Duration::ZERO);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Instant(u64);

impl Instant {
    /// The origin of the timeline.
    pub const ZERO: Instant = Instant(0);
    /// The last representable instant, 584 years after the origin.
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `micros` microseconds after the origin (saturating).
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros.saturating_mul(1_000))
    }

    /// An instant `millis` milliseconds after the origin (saturating).
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// An instant `secs` seconds after the origin (saturating).
    pub const fn from_secs(secs: u64) -> Self {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time since the origin, as a [`Duration`].
    pub const fn since_origin(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self + d`, stopping at [`Instant::MAX`].
    pub const fn saturating_add(self, d: Duration) -> Self {
        Instant(self.0.saturating_add(duration_as_nanos_saturating(d)))
    }

    /// `self - d`, stopping at [`Instant::ZERO`].
    pub const fn saturating_sub(self, d: Duration) -> Self {
        Instant(self.0.saturating_sub(duration_as_nanos_saturating(d)))
    }

    /// Time from `earlier` to `self`, or zero if `earlier` is later (time went backwards).
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// Time from `earlier` to `self`, or `None` if `earlier` is later.
    pub const fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(n) => Some(Duration::from_nanos(n)),
            None => None,
        }
    }

    /// The earlier of two instants.
    pub const fn min(self, other: Instant) -> Instant {
        if self.0 <= other.0 { self } else { other }
    }

    /// The later of two instants.
    pub const fn max(self, other: Instant) -> Instant {
        if self.0 >= other.0 { self } else { other }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        self.saturating_sub(d)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant({:?})", Duration::from_nanos(self.0))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_at_both_ends() {
        assert_eq!(Instant::MAX + Duration::from_nanos(1), Instant::MAX);
        assert_eq!(Instant::MAX + Duration::MAX, Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(
            Instant::from_secs(1) - Instant::from_secs(2),
            Duration::ZERO
        );
        assert_eq!(
            Instant::from_secs(1).checked_duration_since(Instant::from_secs(2)),
            None
        );
        assert_eq!(
            Instant::MAX - Instant::ZERO,
            Duration::from_nanos(u64::MAX),
            "the whole timeline is representable as a Duration"
        );
    }

    #[test]
    fn constructors_saturate_instead_of_overflowing() {
        assert_eq!(Instant::from_secs(u64::MAX), Instant::MAX);
        assert_eq!(Instant::from_millis(u64::MAX), Instant::MAX);
        assert_eq!(Instant::from_micros(u64::MAX), Instant::MAX);
        assert_eq!(Instant::from_millis(3).as_nanos(), 3_000_000);
    }

    #[test]
    fn duration_beyond_u64_nanos_saturates() {
        // Duration::MAX is ~5.8e11 years: far past u64 nanoseconds.
        assert_eq!(
            Instant::from_secs(1).saturating_add(Duration::MAX),
            Instant::MAX
        );
        assert_eq!(Instant::MAX.saturating_sub(Duration::MAX), Instant::ZERO);
    }

    #[test]
    fn a_duration_just_past_u64_nanos_saturates_rather_than_wraps() {
        // 18,446,744,074 s is 290 ms past u64::MAX nanoseconds: truncated it would be 290 ms.
        let past = Duration::from_secs(18_446_744_074);
        assert_eq!(Instant::ZERO.saturating_add(past), Instant::MAX);
        assert_eq!(Instant::MAX.saturating_sub(past), Instant::ZERO);
    }

    #[test]
    fn a_clock_reads_the_same_through_a_reference() {
        use crate::time::{Clock, ManualClock};
        let clock = ManualClock::new(Instant::from_secs(9));
        let by_ref: &ManualClock = &clock;
        assert_eq!(Clock::now(&by_ref), Instant::from_secs(9));
        clock.set(Instant::from_secs(10));
        assert_eq!(Clock::now(&&clock), Instant::from_secs(10));
    }

    #[test]
    fn min_max_order() {
        let a = Instant::from_nanos(5);
        let b = Instant::from_nanos(7);
        assert_eq!(a.min(b), a);
        assert_eq!(b.min(a), a);
        assert_eq!(a.max(b), b);
    }

    #[test]
    fn arithmetic_inside_the_range_is_exact() {
        // The saturating cases above all land on ZERO or MAX; these land in between.
        let t = Instant::from_secs(3);
        assert_eq!(t - Duration::from_secs(1), Instant::from_secs(2));
        assert_eq!(
            t.saturating_sub(Duration::from_nanos(1)).as_nanos(),
            2_999_999_999
        );
        assert_eq!(
            t + Duration::from_micros(1),
            Instant::from_nanos(3_000_001_000)
        );
        assert_eq!(t.since_origin(), Duration::from_secs(3));
        assert_eq!(Instant::from_micros(7).as_nanos(), 7_000);
        assert_eq!(
            t.checked_duration_since(Instant::from_secs(1)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            t.saturating_duration_since(Instant::from_secs(1)),
            Duration::from_secs(2)
        );
        assert_eq!(t.max(Instant::from_secs(1)), t);
    }
}
