use std::pin::Pin;

use resilix::execute::Timer;
use resilix::time::{Clock, Instant};
use resilix::waiters::WaitTimer;

/// A [`Clock`] on `tokio::time::Instant`, with its origin at the clock's creation.
///
/// Paused tokio time (`start_paused = true`, `tokio::time::advance`) moves it exactly.
///
/// ```
/// use resilix::time::Clock;
/// use resilix_tokio::TokioClock;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let clock = TokioClock::new();
/// let before = clock.now();
/// tokio::time::sleep(std::time::Duration::from_millis(30)).await;
/// assert_eq!(clock.now() - before, std::time::Duration::from_millis(30));
/// # });
/// ```
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
    /// sleeping until it. Instants beyond what `std` can represent (`Instant::MAX`) become
    /// about thirty years from the origin, as tokio's own "far future" does: never a panic.
    pub fn to_tokio(&self, at: Instant) -> tokio::time::Instant {
        self.origin
            .checked_add(at.since_origin())
            .unwrap_or_else(|| self.origin + FAR_FUTURE)
    }
}

/// Tokio's own "far future" for a sleep that should never fire (30 years).
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);

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

/// The core's [`Timer`] on tokio: [`TokioClock`] and `tokio::time::sleep_until`.
///
/// Sleeps are tokio's own timer entries (no allocation); under paused time they complete as
/// soon as the runtime is idle, exactly at the instant asked for.
///
/// ```
/// use resilix::execute::Timer;
/// use resilix_tokio::TokioTimer;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let timer = TokioTimer::new();
/// let at = timer.now() + std::time::Duration::from_secs(3);
/// timer.sleep_until(at).await;
/// assert_eq!(timer.now(), at);
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTimer {
    clock: TokioClock,
}

impl TokioTimer {
    /// A timer whose timeline starts now.
    pub fn new() -> Self {
        TokioTimer {
            clock: TokioClock::new(),
        }
    }

    /// The clock it reads.
    pub const fn clock(&self) -> &TokioClock {
        &self.clock
    }
}

impl Timer for TokioTimer {
    type Sleep<'a> = tokio::time::Sleep;

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: Instant) -> tokio::time::Sleep {
        tokio::time::sleep_until(self.clock.to_tokio(at))
    }
}

/// A waiter's sleep: tokio's `Sleep` is `!Unpin`, so a waiting future boxes it (one
/// allocation per caller that actually waits; the free path pays nothing).
impl WaitTimer for TokioTimer {
    type OwnedSleep = Pin<Box<tokio::time::Sleep>>;

    fn sleep_owned(&self, at: Instant) -> Self::OwnedSleep {
        Box::pin(tokio::time::sleep_until(self.clock.to_tokio(at)))
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

    #[tokio::test(start_paused = true)]
    async fn the_end_of_time_is_far_future_not_a_panic() {
        let clock = TokioClock::new();
        let far = clock.to_tokio(Instant::MAX);
        assert!(far > tokio::time::Instant::now() + Duration::from_secs(86_400 * 365 * 29));
        // A sleep until then is pending, not a panic.
        let timer = TokioTimer::new();
        let sleep = timer.sleep_until(Instant::MAX);
        assert!(
            tokio::time::timeout(Duration::from_secs(60), sleep)
                .await
                .is_err()
        );
    }
}
