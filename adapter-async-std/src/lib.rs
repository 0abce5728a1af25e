//! Drive resilix's core policies from async-std or smol.
//!
//! async-std was discontinued upstream in 2025 in favour of smol. Both use `async-io`'s timers,
//! so this crate builds on `async-io` alone and serves either runtime.
//!
//! ```
//! use resilix::time::Clock;
//! use resilix_async_std::AsyncIoClock;
//!
//! let clock = AsyncIoClock::new();
//! async_io::block_on(async {
//!     let before = clock.now();
//!     async_io::Timer::after(std::time::Duration::from_millis(5)).await;
//!     assert!(clock.now() - before >= std::time::Duration::from_millis(5));
//! });
//! ```

use resilix::time::{Clock, Instant};

/// A [`Clock`] on `std::time::Instant` (what `async-io` timers use), with its origin at the
/// clock's creation.
#[derive(Clone, Copy, Debug)]
pub struct AsyncIoClock {
    origin: std::time::Instant,
}

impl AsyncIoClock {
    /// A clock whose [`Instant::ZERO`] is now.
    pub fn new() -> Self {
        AsyncIoClock {
            origin: std::time::Instant::now(),
        }
    }

    /// The `std` instant corresponding to a resilix instant on this clock's timeline.
    pub fn to_std(&self, at: Instant) -> std::time::Instant {
        self.origin + at.since_origin()
    }
}

impl Default for AsyncIoClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for AsyncIoClock {
    fn now(&self) -> Instant {
        let elapsed = self.origin.elapsed();
        Instant::from_nanos(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[async_std::test]
    async fn clock_and_timer_agree_under_async_std() {
        let clock = AsyncIoClock::new();
        let t0 = clock.now();
        let deadline = clock.to_std(t0 + std::time::Duration::from_millis(2));
        async_io::Timer::at(deadline).await;
        assert!(clock.now() - t0 >= std::time::Duration::from_millis(2));
    }
}
