use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

use resilix::Rejection;
use resilix::execute::Timer;
use resilix::time::{Clock, Deadline, Instant};
use resilix::waiters::WaitTimer;
use resilix_std::timeline;

/// A [`Clock`] on `std::time::Instant` (what `async-io` timers use), on the process's one
/// timeline ([`resilix_std::timeline`]): every `AsyncIoClock`, made at any time, reads the same
/// instant at the same moment (and the same as `resilix-tokio`'s clocks outside paused time),
/// so policies shared by many handles see one timeline.
///
/// ```
/// use resilix::time::Clock;
/// use resilix_async_std::AsyncIoClock;
///
/// let clock = AsyncIoClock::new();
/// async_io::block_on(async {
///     let before = clock.now();
///     async_io::Timer::after(std::time::Duration::from_millis(5)).await;
///     assert!(clock.now() - before >= std::time::Duration::from_millis(5));
///     // A clock made later reads the same timeline.
///     let (a, b, c) = (clock.now(), AsyncIoClock::new().now(), clock.now());
///     assert!(a <= b && b <= c);
/// });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncIoClock {
    // Private: a handle on the process's timeline, not a timeline of its own.
    _timeline: (),
}

impl AsyncIoClock {
    /// A handle on the process's timeline (`const`: nothing is read until [`Clock::now`]).
    pub const fn new() -> Self {
        AsyncIoClock { _timeline: () }
    }

    /// The `std` instant corresponding to a resilix instant on the process's timeline; `None`
    /// where `std` cannot represent it: beyond its range (`Instant::MAX`), or, on a platform
    /// whose clock starts at boot, before it (such an instant has passed).
    pub fn to_std(&self, at: Instant) -> Option<std::time::Instant> {
        timeline::to_std(at)
    }
}

impl Clock for AsyncIoClock {
    fn now(&self) -> Instant {
        timeline::now()
    }
}

/// Now on the process's timeline: the instant every [`AsyncIoClock`], [`AsyncIoTimer`] and
/// `Resilience` of the process reads at this moment.
///
/// ```
/// use resilix::time::Clock;
/// let (a, b) = (resilix_async_std::now(), resilix_async_std::AsyncIoClock::new().now());
/// assert!(b >= a);
/// ```
pub fn now() -> Instant {
    timeline::now()
}

/// A deadline `timeout` from now on the process's timeline: what
/// [`CallOptions::deadline`](resilix::call::CallOptions::deadline) wants, without reading a
/// clock of your own.
///
/// ```
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::pipeline::Pipeline;
/// use resilix_async_std::Resilience;
///
/// # async_io::block_on(async {
/// let pipeline = Pipeline::new();
/// let options = CallOptions::default().deadline(resilix_async_std::deadline_in(Duration::from_secs(2)));
/// let out = Resilience::new(&pipeline)
///     .execute(options, || async { Ok::<_, ()>(7) })
///     .await;
/// assert_eq!(out, Ok(7));
/// # });
/// ```
pub fn deadline_in(timeout: Duration) -> Deadline {
    Deadline::after(now(), timeout)
}

/// How long from now until `rejection`'s policy expects to admit again (its retry-at, on the
/// process's timeline): zero if that instant has passed, `None` if the policy does not know.
///
/// ```
/// use std::time::Duration;
/// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
///
/// let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
/// assert!(limiter.try_acquire(resilix_async_std::now()).is_ok());
/// let refused = limiter.try_acquire(resilix_async_std::now()).unwrap_err();
/// assert!(resilix_async_std::retry_in(&refused).unwrap() <= Duration::from_millis(1_002));
/// ```
pub fn retry_in(rejection: &Rejection) -> Option<Duration> {
    let now = now();
    rejection
        .retry_at()
        .map(|at| at.saturating_duration_since(now))
}

/// The core's [`Timer`] on `async-io`: [`AsyncIoClock`] and `async_io::Timer`, which
/// async-std, smol and `async_io::block_on` all drive.
///
/// ```
/// use resilix::execute::Timer;
/// use resilix_async_std::AsyncIoTimer;
///
/// let timer = AsyncIoTimer::new();
/// async_io::block_on(async {
///     let at = timer.now() + std::time::Duration::from_millis(3);
///     timer.sleep_until(at).await;
///     assert!(timer.now() >= at);
/// });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncIoTimer {
    clock: AsyncIoClock,
}

impl AsyncIoTimer {
    /// A timer on the process's timeline (every `AsyncIoTimer` reads the same one).
    pub const fn new() -> Self {
        AsyncIoTimer {
            clock: AsyncIoClock::new(),
        }
    }

    /// The clock it reads.
    pub const fn clock(&self) -> &AsyncIoClock {
        &self.clock
    }
}

/// A sleep on an `async_io::Timer` (its output, the instant it fired, is dropped).
#[derive(Debug)]
pub struct Sleep(async_io::Timer);

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// A waiter's sleep: an `async-io` timer owns its registration already.
impl WaitTimer for AsyncIoTimer {
    type OwnedSleep = Sleep;

    fn sleep_owned(&self, at: Instant) -> Sleep {
        self.sleep_until(at)
    }
}

/// Every `Ok` a success, every `Err` transient: an HTTP client's responses need a classifier
/// that reads them.
impl resilix::resilience::DefaultClassifier for AsyncIoTimer {
    type Classifier = resilix::classify::ResultClassifier;
}

impl Timer for AsyncIoTimer {
    type Sleep<'a> = Sleep;

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: Instant) -> Sleep {
        Sleep(match self.clock.to_std(at) {
            Some(at) => async_io::Timer::at(at),
            // Before std's range (long past, on a platform whose clock starts at boot): fire
            // at once.
            None if at <= self.now() => async_io::Timer::after(Duration::ZERO),
            // Beyond std's range: a sleep that never fires, never a panic.
            None => async_io::Timer::never(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[async_std::test]
    async fn clock_and_timer_agree_under_async_std() {
        let timer = AsyncIoTimer::new();
        let t0 = timer.now();
        timer.sleep_until(t0 + Duration::from_millis(2)).await;
        assert!(timer.now() - t0 >= Duration::from_millis(2));
    }

    #[test]
    fn the_distant_past_fires_at_once() {
        let timer = AsyncIoTimer::new();
        let won = async_io::block_on(async {
            futures_lite_race(
                timer.sleep_until(Instant::ZERO),
                timer.sleep_until(timer.now() + Duration::from_secs(5)),
            )
            .await
        });
        assert!(
            won,
            "a sleep until a day before the first read is immediate"
        );
    }

    #[test]
    fn the_end_of_time_never_fires_and_never_panics() {
        let timer = AsyncIoTimer::new();
        let out = async_io::block_on(async {
            futures_lite_race(
                timer.sleep_until(Instant::MAX),
                timer.sleep_until(timer.now() + Duration::from_millis(3)),
            )
            .await
        });
        assert!(!out, "the far sleep lost to a 3 ms one");
    }

    /// `true` if `a` finished first.
    async fn futures_lite_race(a: Sleep, b: Sleep) -> bool {
        let mut a = std::pin::pin!(a);
        let mut b = std::pin::pin!(b);
        std::future::poll_fn(|cx| {
            if a.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            if b.as_mut().poll(cx).is_ready() {
                return Poll::Ready(false);
            }
            Poll::Pending
        })
        .await
    }
}
