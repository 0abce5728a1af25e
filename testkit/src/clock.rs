//! A manual clock shared by the pipeline and the test, and a timer on it whose sleeps end at
//! once by moving the clock: virtual time without a runtime.
//!
//! The test holds the [`ManualClock`]; the pipeline reads it through [`VirtualTimer`] (any
//! driver that takes the core's [`Timer`]: `execute`, `Resilience`), so a retry's backoff, an
//! attempt timeout and a breaker's open wait all happen on the clock the test reads and moves.
//! [`block_on`] runs such a call to completion on the current thread: the synchronous driver.
//!
//! What it does not model: races. A sleep ends at its first poll, so of two futures raced
//! (an attempt against its timeout) the one polled first wins, whatever their instants. Test
//! timeouts on a runtime with virtual time (tokio's paused clock), where the kit's scripted
//! upstream runs unchanged.
//!
//! ```
//! use std::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::classify::ResultClassifier;
//! use resilix::execute::execute;
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
//! use resilix::time::{Clock, Instant, ManualClock};
//! use resilix_testkit::clock::{VirtualTimer, block_on};
//!
//! let clock = ManualClock::new(Instant::from_secs(10));
//! let timer = VirtualTimer::new(&clock);
//! let backoff = Backoff::new(Strategy::Exponential, Duration::from_millis(100), Duration::from_secs(1)).unwrap();
//! let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::new(3, backoff).unwrap()));
//! let mut rng = SeededRandom::new(1);
//! let mut tries = 0;
//! let out = block_on(execute(&pipeline, &timer, &mut rng, &(), CallOptions::default(),
//!     &ResultClassifier::new(), || { tries += 1; let ok = tries == 3; async move { if ok { Ok(()) } else { Err(()) } } }));
//! assert!(out.is_ok());
//! // Two backoffs, base · 2^attempt: 200 ms then 400 ms, on the test's own clock.
//! assert_eq!(clock.now(), Instant::from_millis(10_600));
//! ```

use core::future::{Future, Ready, ready};
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use resilix::execute::Timer;
use resilix::time::{Clock, Instant, ManualClock};

/// A [`Timer`] on a shared [`ManualClock`]: `now` reads it; a sleep until `at` moves it to
/// `at` (never backwards) and ends at once.
///
/// ```
/// use resilix::execute::Timer;
/// use resilix::time::{Clock, Instant, ManualClock};
/// use resilix_testkit::clock::{VirtualTimer, block_on};
///
/// let clock = ManualClock::new(Instant::ZERO);
/// let timer = VirtualTimer::new(&clock);
/// block_on(timer.sleep_until(Instant::from_secs(5)));
/// assert_eq!(clock.now(), Instant::from_secs(5));
/// block_on(timer.sleep_until(Instant::from_secs(1))); // already past: no change
/// assert_eq!(timer.now(), Instant::from_secs(5));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct VirtualTimer<'c> {
    clock: &'c ManualClock,
}

impl<'c> VirtualTimer<'c> {
    /// A timer on `clock`.
    pub const fn new(clock: &'c ManualClock) -> Self {
        VirtualTimer { clock }
    }

    /// The clock it moves.
    pub const fn clock(&self) -> &'c ManualClock {
        self.clock
    }
}

impl Timer for VirtualTimer<'_> {
    type Sleep<'a>
        = Ready<()>
    where
        Self: 'a;

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: Instant) -> Ready<()> {
        if at > self.clock.now() {
            self.clock.set(at);
        }
        ready(())
    }
}

/// Runs `future` to completion on this thread, polling it until it is ready. For futures that
/// never wait on anything but a [`VirtualTimer`] (or a scripted upstream on one): a future
/// still pending after a million polls is waiting on something that will never wake it, and
/// this panics rather than spin for ever.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1_000_000 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("block_on: the future is waiting on something other than virtual time");
}
