//! Drive resilix's core policies from tokio.
//!
//! [`TokioClock`] reads `tokio::time::Instant`, so tests under
//! `#[tokio::test(start_paused = true)]` see exact, virtual time.
//!
//! ```
//! use resilix::time::Clock;
//! use resilix_tokio::TokioClock;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let clock = TokioClock::new();
//! let before = clock.now();
//! tokio::time::sleep(std::time::Duration::from_millis(30)).await;
//! assert_eq!(clock.now() - before, std::time::Duration::from_millis(30));
//! # });
//! ```

use resilix::time::{Clock, Instant};

/// A [`Clock`] on `tokio::time::Instant`, with its origin at the clock's creation.
///
/// Paused tokio time (`start_paused = true`, `tokio::time::advance`) moves it exactly.
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose [`Instant::ZERO`] is now.
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }

    /// The tokio instant corresponding to a resilix instant on this clock's timeline, for
    /// sleeping until it.
    pub fn to_tokio(&self, at: Instant) -> tokio::time::Instant {
        self.origin + at.since_origin()
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.origin);
        Instant::from_nanos(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn paused_time_is_exact_and_round_trips() {
        let clock = TokioClock::new();
        tokio::time::advance(Duration::from_micros(1_234_567)).await;
        let now = clock.now();
        assert_eq!(now, Instant::from_nanos(1_234_567_000));
        assert_eq!(clock.to_tokio(now), tokio::time::Instant::now());
    }
}
