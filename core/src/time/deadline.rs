use core::time::Duration;

use super::Instant;

/// An absolute instant by which a call must be finished, on the caller's timeline.
///
/// "The caller's timeline" is the one the driver's clock reads: build a deadline from that
/// clock's `now` (`Deadline::after(clock.now(), timeout)`, or an adapter's `deadline_in`),
/// never from [`Instant::ZERO`] or a clock of your own, whose zero has nothing to do with the
/// driver's.
///
/// A deadline travels with a request, so each hop passes on the time *remaining* instead of
/// starting a fresh timeout (the essay (docs/design/essay.md): four hops of 2 s each can spend 8 s serving a client
/// that left after 3). Retry counts its delays against it; the pipeline's timeout slot races
/// each attempt against the tighter of the attempt timeout and the deadline.
///
/// ```
/// use core::time::Duration;
/// use resilix::time::{Deadline, Instant};
///
/// let now = Instant::from_secs(100);
/// let d = Deadline::after(now, Duration::from_secs(30));
/// assert_eq!(d.remaining(Instant::from_secs(110)), Duration::from_secs(20));
/// assert!(d.has_passed(Instant::from_secs(130)));
/// // The tighter of two deadlines wins.
/// let attempt = Deadline::after(now, Duration::from_secs(5));
/// assert_eq!(d.min(attempt), attempt);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Deadline(Instant);

impl Deadline {
    /// A deadline at `at`.
    pub const fn at(at: Instant) -> Self {
        Deadline(at)
    }

    /// A deadline `timeout` after `now` (saturating at the end of time).
    pub const fn after(now: Instant, timeout: Duration) -> Self {
        Deadline(now.saturating_add(timeout))
    }

    /// The instant itself.
    pub const fn instant(self) -> Instant {
        self.0
    }

    /// Time left at `now`; zero once the deadline has passed.
    pub const fn remaining(self, now: Instant) -> Duration {
        self.0.saturating_duration_since(now)
    }

    /// Whether `now` is at or past the deadline.
    pub const fn has_passed(self, now: Instant) -> bool {
        now.as_nanos() >= self.0.as_nanos()
    }

    /// The tighter (earlier) of two deadlines.
    pub const fn min(self, other: Deadline) -> Deadline {
        Deadline(self.0.min(other.0))
    }

    /// The tighter of this deadline and an optional other one.
    pub const fn min_opt(self, other: Option<Deadline>) -> Deadline {
        match other {
            Some(o) => self.min(o),
            None => self,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn remaining_saturates_and_passed_is_inclusive() {
        let d = Deadline::at(Instant::from_secs(10));
        assert_eq!(d.remaining(Instant::from_secs(11)), Duration::ZERO);
        assert!(d.has_passed(Instant::from_secs(10)));
        assert!(!d.has_passed(Instant::from_nanos(9_999_999_999)));
        assert_eq!(
            Deadline::after(Instant::MAX, Duration::from_secs(1)).instant(),
            Instant::MAX
        );
    }
}
