//! The behavioural scenarios every resilix adapter must pass, written once.
//!
//! Each scenario is an `async fn` generic over the core's [`Timer`]: an adapter's test calls it
//! from inside its own runtime with its own timer (tokio with paused time, async-std and smol
//! with real `async-io` timers, embassy on its mock driver). Latencies and delays are given in
//! a `unit` the caller picks, so virtual-time runtimes can use round numbers and real timers can
//! keep every sleep to a few milliseconds.
//!
//! What happens before what is never left to how long something takes: an operation that must
//! still be running when something else happens fires a [`Signal`](crate::Signal) once it
//! holds its slot and waits for one the scenario fires when it has seen what it wanted; a call
//! is cancelled once an observed state holds ([`cancel_when`](crate::cancel_when)). Durations
//! appear only where a duration is what is checked (retry delays, deadlines, the open wait, a
//! waiter's max wait).
//!
//! [`Tolerance`] says how precise the runtime's time is, for those checks: exact for virtual
//! time, a bounded lateness for real timers. A real timer never fires early, so lower bounds
//! stay exact on every runtime; upper bounds are exact on virtual time (tokio's paused clock,
//! embassy's mock driver), and on real time only say that nothing waited far too long.
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

use core::time::Duration;

use resilix::classify::ResultClassifier;
use resilix::execute::Timer;

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
    /// scenario). On a shared machine a thread can be off the CPU for hundreds of
    /// milliseconds, so a `late` that must hold under load is of the order of a second.
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
