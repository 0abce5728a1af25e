//! The process's one timeline: every std adapter's clock reads it, so any two handles made at
//! any times give the same [`Instant`] for the same moment.
//!
//! A policy stores the instants it was handed (a breaker's open-until, a rate limiter's next
//! token) and compares them with later ones. If each clock handle counted from its own
//! creation, a policy shared by two handles would see two timelines: a `Resilience` made per
//! request would read "zero" forever and stay refused behind a token it took "at one second".
//! So there is one origin per process, a `static`, and a clock handle is only a way to read it.
//!
//! # The origin
//!
//! The origin is `std::time::Instant::now()` at the first read anywhere in the process (a
//! [`LazyLock`]), and it stands for [`ORIGIN`] on the resilix timeline: one day *after*
//! [`Instant::ZERO`]. Two reasons for the day of room:
//!
//! * An instant read *before* the origin must still be exact. Tokio's paused clock is per
//!   runtime and starts at the real time the runtime was built; a paused runtime built before
//!   the process's first read (parallel tests start their runtimes together) reads a tokio
//!   instant a little before the origin. With the day of room it maps to an exact instant
//!   below [`ORIGIN`] instead of saturating at zero, so paused time stays exact in every
//!   runtime of the process, built before or after the first read.
//! * A deadline anchored at [`Instant::ZERO`] (`Deadline::after(Instant::ZERO, 2 s)`) is a bug:
//!   with a zero at the first read it would work for the first two seconds of uptime and then
//!   refuse every call. A day before the first read makes it fail at once, where a test sees it.
//!   Build deadlines from the clock's `now` (or the adapter's `deadline_in`).
//!
//! The origin is read from `std`'s real clock, never from a paused tokio clock: a paused
//! runtime may run ahead of real time (a test that advanced an hour), and an origin taken there
//! would lie in the future of every runtime built after it. `tokio::time::Instant` wraps
//! `std::time::Instant` (`from_std` / `into_std`), so one origin serves tokio, async-io and any
//! other `std::time::Instant`-based timer, and instants from different adapters in one process
//! compare.
//!
//! ```
//! use std::time::Duration;
//! use resilix_std::timeline;
//!
//! let t = std::time::Instant::now();
//! let at = timeline::from_std(t);
//! assert_eq!(timeline::to_std(at), Some(t), "exact both ways");
//! assert_eq!(timeline::from_std(t + Duration::from_millis(5)) - at, Duration::from_millis(5));
//! assert!(timeline::now() >= at);
//! ```

use std::sync::LazyLock;

use resilix::time::Instant;

/// Where the process's origin lies on the resilix timeline: one day after [`Instant::ZERO`]
/// (ours: the room lets instants read before the origin, by paused tokio runtimes built before
/// the first read, stay exact; and it makes a deadline anchored at `Instant::ZERO` fail at
/// once instead of after some uptime). See the [module docs](self).
pub const ORIGIN: Instant = Instant::from_secs(86_400);

/// The origin: `std`'s real clock at the first read in the process.
static STD_ORIGIN: LazyLock<std::time::Instant> = LazyLock::new(std::time::Instant::now);

/// The resilix instant of a `std` instant, on the process's timeline. Exact (to the
/// nanosecond) from one day before the process's first read to 584 years after; saturating
/// beyond.
pub fn from_std(t: std::time::Instant) -> Instant {
    let origin = *STD_ORIGIN;
    match t.checked_duration_since(origin) {
        Some(after) => ORIGIN.saturating_add(after),
        None => ORIGIN.saturating_sub(origin.duration_since(t)),
    }
}

/// The `std` instant of a resilix instant on the process's timeline, for sleeping until it;
/// `None` when `std` cannot represent it (beyond its range, such as [`Instant::MAX`] on some
/// platforms, or before the platform's clock began where `Instant` cannot go below boot).
/// Compare `at` with [`now`] to tell which: an instant already past can be slept until with
/// any past `std` instant.
pub fn to_std(at: Instant) -> Option<std::time::Instant> {
    let origin = *STD_ORIGIN;
    if at >= ORIGIN {
        origin.checked_add(at - ORIGIN)
    } else {
        origin.checked_sub(ORIGIN - at)
    }
}

/// Now, on the process's timeline, from `std`'s real clock (what async-io timers use; tokio's
/// `resilix_tokio::now` reads tokio's clock, which paused time controls).
pub fn now() -> Instant {
    from_std(std::time::Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_origin_for_every_read() {
        let a = now();
        let b = now();
        assert!(b >= a);
        // Far from both ends of the timeline: a read is never saturated.
        assert!(a >= ORIGIN - Duration::from_secs(3_600));
        assert!(a.as_nanos() < u64::MAX / 2);
    }

    #[test]
    fn instants_before_the_origin_are_exact() {
        let origin = *STD_ORIGIN;
        if let Some(before) = origin.checked_sub(Duration::from_millis(1_500)) {
            assert_eq!(from_std(before), ORIGIN - Duration::from_millis(1_500));
            assert_eq!(to_std(from_std(before)), Some(before));
        }
        assert_eq!(from_std(origin), ORIGIN);
        assert_eq!(to_std(ORIGIN), Some(origin));
        assert_eq!(
            to_std(ORIGIN + Duration::from_nanos(7)),
            Some(origin + Duration::from_nanos(7))
        );
    }

    #[test]
    fn the_ends_of_time_are_none_not_a_panic() {
        // 584 years on: beyond std's range on some platforms (None), within it on others.
        if let Some(end) = to_std(Instant::MAX) {
            assert!(end > std::time::Instant::now() + Duration::from_secs(500 * 365 * 86_400));
        }
        // Instant::ZERO is a day before the first read: representable on Linux, maybe not on
        // a platform whose clock starts at boot; either way no panic, and it has passed.
        let _ = to_std(Instant::ZERO);
        assert!(Instant::ZERO < now());
    }
}
