//! Time as an argument: the core never reads a clock.
//!
//! An [`Instant`] is a point on a monotonic timeline that the caller owns, counted in
//! nanoseconds in a `u64` (584 years). Every time-dependent method of every policy takes `now`.
//! Arithmetic saturates: time that goes backwards reads as "no time has passed", time that
//! jumps to the end of the `u64` reads as "a very long time has passed", and neither panics.
//!
//! The [`Clock`] trait serves adapters and tests; [`ManualClock`] drives tests and the
//! simulator, and can be shared and advanced by many threads. [`DeadlinePropagation`] passes a
//! deadline on to the next hop as a `grpc-timeout` or milliseconds header value.
//!
//! ```
//! use core::time::Duration;
//! use resilix::time::{Clock, Instant, ManualClock};
//!
//! let clock = ManualClock::new(Instant::ZERO);
//! let start = clock.now();
//! clock.advance(Duration::from_millis(250));
//! assert_eq!(clock.now() - start, Duration::from_millis(250));
//! // Backwards never panics: it saturates to zero.
//! assert_eq!(start - clock.now(), Duration::ZERO);
//! ```
//!
//! Design notes: docs/design/time-and-eras.md

mod deadline;
pub(crate) mod divide;
pub(crate) mod era;
mod instant;
mod manual;
mod propagation;
pub(crate) mod ticks;

pub use deadline::Deadline;
pub use instant::Instant;
pub use manual::ManualClock;
pub use propagation::{
    DeadlinePropagation, TimeoutHeader, TimeoutHeaderError, decode_grpc_timeout, decode_millis,
    encode_grpc_timeout, encode_millis,
};

/// A source of [`Instant`]s on one monotonic timeline.
///
/// The core's policies never call a clock themselves; adapters and tests use this trait to
/// produce the `now` they pass in. Implementations must be monotonic in intent, but the
/// policies tolerate a clock that steps backwards or jumps.
///
/// ```
/// use resilix::time::{Clock, Instant};
///
/// /// A clock that reads a tick counter, as firmware might.
/// struct Ticks(u64);
/// impl Clock for Ticks {
///     fn now(&self) -> Instant {
///         Instant::from_micros(self.0)
///     }
/// }
/// assert_eq!(Ticks(1_500).now().as_nanos(), 1_500_000);
/// ```
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Instant;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

/// Converts a [`Duration`](core::time::Duration) to whole nanoseconds, saturating at
/// `u64::MAX` (584 years) instead of truncating the high bits.
pub(crate) const fn duration_as_nanos_saturating(d: core::time::Duration) -> u64 {
    let nanos = d.as_nanos();
    if nanos > u64::MAX as u128 {
        u64::MAX
    } else {
        nanos as u64
    }
}
