use std::pin::Pin;
use std::time::Duration;

use resilix::Rejection;
use resilix::execute::Timer;
use resilix::time::{Clock, Deadline, Instant};
use resilix::waiters::WaitTimer;
use resilix_std::timeline;

/// A [`Clock`] on `tokio::time::Instant`, on the process's one timeline
/// ([`resilix_std::timeline`]): every `TokioClock`, made at any time, reads the same instant
/// at the same moment, so policies shared by many handles (a `Resilience` per request, a
/// handle per task) see one timeline.
///
/// Paused tokio time (`start_paused = true`, `tokio::time::advance`) moves it exactly, in
/// every runtime of the process: each paused runtime has its own virtual clock, but all of
/// them are `std::time::Instant`s, and the origin is taken from `std`'s real clock with a
/// day of room before it (see [`resilix_std::timeline`]), so a runtime built before or after
/// the process's first read, advanced by any amount, reads exact differences.
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
/// // A clock made later reads the same timeline.
/// assert_eq!(TokioClock::new().now(), clock.now());
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokioClock {
    // Private: a handle on the process's timeline, not a timeline of its own.
    _timeline: (),
}

impl TokioClock {
    /// A handle on the process's timeline (`const`: nothing is read until [`Clock::now`]).
    pub const fn new() -> Self {
        TokioClock { _timeline: () }
    }

    /// The tokio instant corresponding to a resilix instant on the process's timeline, for
    /// sleeping until it. Instants beyond what `std` can represent (`Instant::MAX`) become
    /// about thirty years from now, as tokio's own "far future" does; an instant before what
    /// it can represent (long past) becomes now. Never a panic.
    pub fn to_tokio(&self, at: Instant) -> tokio::time::Instant {
        match timeline::to_std(at) {
            Some(at) => tokio::time::Instant::from_std(at),
            None => {
                let now = tokio::time::Instant::now();
                if at <= self.now() {
                    now
                } else {
                    now + FAR_FUTURE
                }
            }
        }
    }
}

/// Tokio's own "far future" for a sleep that should never fire (30 years).
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        timeline::from_std(tokio::time::Instant::now().into_std())
    }
}

/// Now on the process's timeline, by tokio's clock (paused time included): the instant every
/// [`TokioClock`], [`TokioTimer`] and `Resilience` of the process reads at this moment.
///
/// ```
/// use std::time::Duration;
/// use resilix::execute::Timer;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let t0 = resilix_tokio::now();
/// tokio::time::sleep(Duration::from_secs(60)).await;
/// assert_eq!(resilix_tokio::now() - t0, Duration::from_secs(60));
/// assert_eq!(resilix_tokio::TokioTimer::new().now(), resilix_tokio::now());
/// # });
/// ```
pub fn now() -> Instant {
    TokioClock::new().now()
}

/// A deadline `timeout` from now on the process's timeline: what [`CallOptions::deadline`]
/// wants, without reading a clock of your own.
///
/// ```
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::pipeline::Pipeline;
/// use resilix_tokio::Resilience;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let pipeline = Pipeline::new();
/// let options = CallOptions::default().deadline(resilix_tokio::deadline_in(Duration::from_secs(2)));
/// let out = Resilience::new(&pipeline)
///     .execute(options, || async { Ok::<_, ()>(7) })
///     .await;
/// assert_eq!(out, Ok(7));
/// # });
/// ```
///
/// [`CallOptions::deadline`]: resilix::call::CallOptions::deadline
pub fn deadline_in(timeout: Duration) -> Deadline {
    Deadline::after(now(), timeout)
}

/// How long from now until `rejection`'s policy expects to admit again (its retry-at, on the
/// process's timeline): zero if that instant has passed, `None` if the policy does not know.
/// For a `Retry-After` header, see `resilix_tokio::http::retry_after_value`.
///
/// ```
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::pipeline::Pipeline;
/// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
/// use resilix_tokio::Resilience;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
/// let pipeline = Pipeline::new().rate_limit(&limiter);
/// let resilience = Resilience::new(&pipeline);
/// let call = || resilience.execute(CallOptions::default(), || async { Ok::<_, ()>(()) });
/// assert!(call().await.is_ok());
/// let refused = call().await.unwrap_err().rejection().unwrap();
/// let wait = resilix_tokio::retry_in(&refused).unwrap();
/// assert!(wait <= Duration::from_millis(1_002) && wait >= Duration::from_millis(998), "{wait:?}");
/// tokio::time::sleep(wait).await;
/// assert!(call().await.is_ok(), "admitted again when it said");
/// # });
/// ```
pub fn retry_in(rejection: &Rejection) -> Option<Duration> {
    let now = now();
    rejection
        .retry_at()
        .map(|at| at.saturating_duration_since(now))
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokioTimer {
    clock: TokioClock,
}

impl TokioTimer {
    /// A timer on the process's timeline (every `TokioTimer` reads the same one).
    pub const fn new() -> Self {
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
        let start = clock.now();
        tokio::time::advance(Duration::from_micros(1_234_567)).await;
        let now = clock.now();
        assert_eq!(now - start, Duration::from_nanos(1_234_567_000));
        assert_eq!(clock.to_tokio(now), tokio::time::Instant::now());
    }

    #[tokio::test(start_paused = true)]
    async fn the_distant_past_is_now_not_a_panic() {
        let clock = TokioClock::new();
        // A day before the process's first read: representable on Linux, possibly not where
        // std's clock starts at boot; either way it has passed, and sleeping until it is
        // immediate.
        assert!(clock.to_tokio(Instant::ZERO) <= tokio::time::Instant::now());
        let before = clock.now();
        TokioTimer::new().sleep_until(Instant::ZERO).await;
        assert_eq!(clock.now(), before);
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
