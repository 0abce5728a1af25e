use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use resilix::execute::Timer;
use resilix::time::{Clock, Instant};
use resilix::waiters::WaitTimer;

/// A [`Clock`] on `std::time::Instant` (what `async-io` timers use), with its origin at the
/// clock's creation.
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
/// });
/// ```
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

    /// The `std` instant corresponding to a resilix instant on this clock's timeline; `None`
    /// beyond what `std` can represent (`Instant::MAX`).
    pub fn to_std(&self, at: Instant) -> Option<std::time::Instant> {
        self.origin.checked_add(at.since_origin())
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
#[derive(Clone, Copy, Debug, Default)]
pub struct AsyncIoTimer {
    clock: AsyncIoClock,
}

impl AsyncIoTimer {
    /// A timer whose timeline starts now.
    pub fn new() -> Self {
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

impl Timer for AsyncIoTimer {
    type Sleep<'a> = Sleep;

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: Instant) -> Sleep {
        Sleep(match self.clock.to_std(at) {
            Some(at) => async_io::Timer::at(at),
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
