//! Drive resilix's core policies from embassy.
//!
//! `no_std`, no heap. [`EmbassyClock`] reads `embassy_time::Instant` and keeps its full tick
//! precision (embassy's ticks are converted to nanoseconds exactly, never truncated to whole
//! milliseconds).
#![no_std]

use resilix::time::{Clock, Instant};

/// A [`Clock`] on `embassy_time::Instant` (the timeline starts at boot).
///
/// ```no_run
/// use resilix::time::Clock;
/// use resilix_embassy::EmbassyClock;
/// let now = EmbassyClock.now();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct EmbassyClock;

/// Converts embassy ticks to a resilix instant without losing precision.
pub const fn from_embassy(t: embassy_time::Instant) -> Instant {
    let ticks = t.as_ticks() as u128;
    let nanos = ticks * 1_000_000_000 / embassy_time::TICK_HZ as u128;
    Instant::from_nanos(if nanos > u64::MAX as u128 {
        u64::MAX
    } else {
        nanos as u64
    })
}

/// Converts a resilix instant to embassy ticks, rounding up so a timer never fires early.
pub const fn to_embassy(t: Instant) -> embassy_time::Instant {
    let nanos = t.as_nanos() as u128;
    let ticks = (nanos * embassy_time::TICK_HZ as u128).div_ceil(1_000_000_000);
    embassy_time::Instant::from_ticks(if ticks > u64::MAX as u128 {
        u64::MAX
    } else {
        ticks as u64
    })
}

impl Clock for EmbassyClock {
    fn now(&self) -> Instant {
        from_embassy(embassy_time::Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_keeps_sub_millisecond_precision_both_ways() {
        // The std driver ticks at 1 MHz: 1_234 ticks is 1.234 ms, not 1 ms.
        let t = embassy_time::Instant::from_ticks(1_234);
        let ours = from_embassy(t);
        assert_eq!(ours, Instant::from_micros(1_234));
        assert_eq!(to_embassy(ours), t);
        // Rounding up: 1 ns past a tick becomes the next tick.
        assert_eq!(to_embassy(Instant::from_nanos(1_234_001)).as_ticks(), 1_235);
    }

    #[test]
    fn clock_reads_the_driver() {
        let a = EmbassyClock.now();
        let b = EmbassyClock.now();
        assert!(b >= a);
    }
}
