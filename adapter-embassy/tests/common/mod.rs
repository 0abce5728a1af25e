//! The executor of these tests: embassy-time's mock driver, advanced by hand, so every test
//! runs on simulated time (deterministic, no wall-clock sleeps, immune to a loaded machine).

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};

use embassy_time::{Duration, MockDriver};

/// One tick of the mock driver (it runs at 1 MHz). The driver keeps its next alarm to itself,
/// so the clock cannot jump to it; stepping one tick at a time still wakes every timer exactly
/// at its deadline, because a deadline is a whole tick.
const STEP: Duration = Duration::from_ticks(1);

/// Simulated time after which [`run`] takes a future for deadlocked: 30 times the longest
/// test here (about 0.3 s). Not an hour: each simulated microsecond is a step, about 0.2 µs of
/// CPU in a debug build, so 10 s fails a stuck test within seconds.
const LIMIT: Duration = Duration::from_secs(10);

/// The mock clock is one per process and tests run on parallel threads: one run at a time.
static CLOCK: Mutex<()> = Mutex::new(());

/// Set when the future asks to be polled again.
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Runs `future` to completion on simulated time starting at zero: polls it whenever it was
/// woken, and otherwise advances the clock a tick, which wakes the timers that are due.
///
/// One `run` per test, with everything that reads the clock inside it (the clock is reset at
/// the start of each run). Panics when the future is still pending after [`LIMIT`] of
/// simulated time.
pub fn run<F: Future>(future: F) -> F::Output {
    run_within(LIMIT, future)
}

/// [`run`], taking the future for deadlocked after `limit` of simulated time.
pub fn run_within<F: Future>(limit: Duration, future: F) -> F::Output {
    // A test that failed inside its run poisons the lock; the next run resets the clock anyway.
    let _one_at_a_time = CLOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let driver = MockDriver::get();
    // Back to zero with no timers queued: the previous run's timers were dropped with its
    // future, so the wakers its queue still holds have no one to wake.
    driver.reset();
    let woken = Arc::new(Woken(AtomicBool::new(true)));
    let waker = Waker::from(woken.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    // Counted here rather than read from the clock: one critical section per step, not two.
    let mut elapsed = Duration::from_ticks(0);
    loop {
        if woken.0.swap(false, Ordering::SeqCst) {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            continue;
        }
        assert!(
            elapsed < limit,
            "still pending after {} ms of simulated time with nothing left to wake it: \
             a deadlock?",
            limit.as_millis()
        );
        driver.advance(STEP);
        elapsed += STEP;
    }
}
