use core::time::Duration;

use super::{Clock, Instant, duration_as_nanos_saturating};

/// A clock that moves only when told to: for tests, the simulator, and fuzzing.
///
/// It is `Sync`: many threads may read and advance one shared clock. It stores a `u64`, so on
/// 32-bit targets without 64-bit atomics it uses portable-atomic's lock-based fallback; it is
/// a test clock, not one to read from an interrupt handler. (The policies themselves never
/// store a `u64`; see docs/design/contracts.md §4.)
///
/// ```
/// use core::time::Duration;
/// use resilix::time::{Clock, Instant, ManualClock};
///
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
/// CLOCK.advance(Duration::from_secs(2));
/// assert_eq!(CLOCK.now(), Instant::from_secs(2));
/// CLOCK.set(Instant::from_secs(1)); // stepping backwards is allowed
/// assert_eq!(CLOCK.now(), Instant::from_secs(1));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    nanos: portable_atomic::AtomicU64,
}

impl ManualClock {
    /// A clock reading `start`.
    pub const fn new(start: Instant) -> Self {
        ManualClock {
            nanos: portable_atomic::AtomicU64::new(start.as_nanos()),
        }
    }

    /// Moves the clock forward by `d`, saturating at [`Instant::MAX`]; returns the new time.
    pub fn advance(&self, d: Duration) -> Instant {
        let step = duration_as_nanos_saturating(d);
        let previous = self
            .nanos
            .fetch_update(
                portable_atomic::Ordering::AcqRel,
                portable_atomic::Ordering::Acquire,
                |n| Some(n.saturating_add(step)),
            )
            .unwrap_or_else(|n| n);
        Instant::from_nanos(previous.saturating_add(step))
    }

    /// Sets the clock to `t`, forwards or backwards.
    pub fn set(&self, t: Instant) {
        self.nanos
            .store(t.as_nanos(), portable_atomic::Ordering::Release);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.nanos.load(portable_atomic::Ordering::Acquire))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn advance_saturates_at_the_end_of_time() {
        let c = ManualClock::new(Instant::MAX - Duration::from_nanos(3));
        assert_eq!(c.advance(Duration::from_secs(10)), Instant::MAX);
        assert_eq!(c.now(), Instant::MAX);
    }

    #[test]
    fn many_threads_advancing_lose_no_step() {
        extern crate std;
        let c = ManualClock::new(Instant::ZERO);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.advance(Duration::from_nanos(1));
                    }
                });
            }
        });
        assert_eq!(c.now(), Instant::from_nanos(4000));
    }
}
