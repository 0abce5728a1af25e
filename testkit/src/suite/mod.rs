//! The behavioural scenarios every resilix adapter must pass, written once.
//!
//! Each scenario is an `async fn` generic over the core's [`Timer`]: an adapter's test calls it
//! from inside its own runtime with its own timer (tokio with paused time, async-std and smol
//! with real `async-io` timers, embassy on its mock driver). Latencies and delays are given in
//! a `unit` the caller picks, so virtual-time runtimes can use round numbers and real timers can
//! keep every sleep to a few milliseconds.
//!
//! [`Tolerance`] says how precise the runtime's time is: exact for virtual time, a bounded
//! lateness for real timers (a real timer never fires early, so lower bounds stay exact).
//!
//! Scenarios: [`retry_timing`], [`jittered_retry_timing`], [`deadline_respected`],
//! [`budget_refusal`], [`breaker_open_half_open`], [`cancel_during_attempt`],
//! [`cancel_during_retry_sleep`], [`fallback`], [`handles_share_one_timeline`]; bounded
//! waiting: [`limiter_queue_zone`], [`served_order`], [`wake_up_passed_on`].

mod breaker;
mod cancel;
mod doubles;
mod fallback;
mod retry;
mod timeline;
mod waiting;

use core::future::Future;
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;
use std::future::poll_fn;

use resilix::classify::ResultClassifier;
use resilix::execute::Timer;
use resilix::time::Instant;

pub use breaker::breaker_open_half_open;
pub use cancel::{cancel_during_attempt, cancel_during_retry_sleep};
pub use doubles::{Counting, CountingPermit, Counts, DetachedCounting, DropFlag, FixedRetry, Log};
pub use fallback::{GatePipeline, Store, fallback};
pub use retry::{budget_refusal, deadline_respected, jittered_retry_timing, retry_timing};
pub use timeline::handles_share_one_timeline;
pub use waiting::{limiter_queue_zone, queue_zone_limiter, served_order, wake_up_passed_on};

const CLASSIFIER: ResultClassifier = ResultClassifier::new();

/// How precise a runtime's clock and sleeps are.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// How much later than asked a whole scenario may finish (real timers fire late, never
    /// early). Zero for virtual time.
    pub late: Duration,
}

impl Tolerance {
    /// Virtual time: every instant is exact.
    pub const EXACT: Tolerance = Tolerance {
        late: Duration::ZERO,
    };

    /// Real timers that may fire up to `late` after the instant asked for (summed over a
    /// scenario).
    pub const fn real(late: Duration) -> Tolerance {
        Tolerance { late }
    }

    /// Asserts `actual` is `expected`, or at most `late` after it.
    #[track_caller]
    pub fn assert_elapsed(&self, actual: Duration, expected: Duration, what: &str) {
        assert!(
            actual >= expected && actual <= expected + self.late,
            "{what}: took {actual:?}, expected {expected:?} (+ at most {:?})",
            self.late
        );
    }
}

/// Sleeps `d` on `timer`: what a scenario's operation does to take time.
pub async fn latency<Tm: Timer + ?Sized>(timer: &Tm, d: Duration) {
    timer.sleep_until(timer.now() + d).await
}

/// Polls `fut` until `at`, then drops it: a caller that gave up (a dropped future). `None` if
/// it was cancelled.
pub async fn cancel_at<Tm: Timer + ?Sized, F: Future>(
    timer: &Tm,
    fut: F,
    at: Instant,
) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut stop = pin!(timer.sleep_until(at));
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if stop.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Runs both futures to completion, concurrently, on the caller's task.
pub async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut ra, mut rb) = (None, None);
    poll_fn(|cx| {
        if ra.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            ra = Some(v);
        }
        if rb.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            rb = Some(v);
        }
        if ra.is_some() && rb.is_some() {
            Poll::Ready((ra.take().unwrap(), rb.take().unwrap()))
        } else {
            Poll::Pending
        }
    })
    .await
}
