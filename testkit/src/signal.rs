//! Ordering a test's events by synchronisation instead of by how long something takes.
//!
//! A test that says "B arrives while A holds the slot" by giving A a 5 ms operation and B a
//! 1 ms head start is right only while the machine keeps up: on a loaded one, B is polled after
//! A finished. These helpers make the order a fact instead:
//!
//! * [`Signal`]: a one-shot flag a future can wait on. An operation fires one when it holds
//!   its slot and waits on another that the test fires once it has seen what it wanted.
//! * [`signal_when_pending`]: fires a signal once a future has gone as far as it can without
//!   being woken (a waiter is queued, an operation is parked on its signal).
//! * [`cancel_when`]: drops a future once an observed state holds (the operation said it
//!   started, the log shows a retry scheduled), not when a timer racing another timer fires.
//! * [`join`]: two futures, concurrently, on the caller's task.
//!
//! None needs a runtime: they work under tokio, async-std, smol, embassy's executor and the
//! kit's own [`block_on`](crate::clock::block_on).

use core::future::Future;
use core::pin::pin;
use core::task::{Poll, Waker};
use std::future::poll_fn;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A one-shot signal: [`fire`](Self::fire) once, and every [`wait`](Self::wait) (before or
/// after) completes. Runtime-agnostic: it keeps the wakers of the tasks waiting and wakes them
/// when fired.
///
/// ```
/// use resilix_testkit::Signal;
/// use resilix_testkit::clock::block_on;
///
/// let started = Signal::new();
/// let (first, second) = block_on(resilix_testkit::join(
///     async {
///         started.wait().await; // runs only once the other has started
///         "second"
///     },
///     async {
///         started.fire();
///         "first"
///     },
/// ));
/// assert_eq!((first, second), ("second", "first"));
/// assert!(started.is_fired());
/// ```
#[derive(Debug, Default)]
pub struct Signal {
    fired: AtomicBool,
    waiting: Mutex<Vec<Waker>>,
}

impl Signal {
    /// A signal not fired yet.
    pub const fn new() -> Signal {
        Signal {
            fired: AtomicBool::new(false),
            waiting: Mutex::new(Vec::new()),
        }
    }

    /// Fires the signal and wakes every task waiting on it. Firing again does nothing more.
    pub fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        let waiting = core::mem::take(&mut *self.waiting.lock().unwrap());
        for waker in waiting {
            waker.wake();
        }
    }

    /// Whether [`fire`](Self::fire) was called.
    pub fn is_fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Completes once the signal is fired (at once if it was).
    pub async fn wait(&self) {
        poll_fn(|cx| {
            if self.is_fired() {
                return Poll::Ready(());
            }
            let mut waiting = self.waiting.lock().unwrap();
            // Checked again under the lock: a `fire` between the check above and here has
            // already taken the list, and would not see this waker.
            if self.is_fired() {
                return Poll::Ready(());
            }
            if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                waiting.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}

/// Polls `fut` to completion, firing `signal` the first time a poll of it returns `Pending`:
/// the moment `fut` has gone as far as it can without being woken. A call to
/// `wait_on(..).run(..)` that finds no slot has joined the waiters by then; an operation that
/// fires a signal and waits on another is parked.
pub async fn signal_when_pending<F: Future>(signal: &Signal, fut: F) -> F::Output {
    let mut fut = pin!(fut);
    poll_fn(|cx| {
        let poll = fut.as_mut().poll(cx);
        if poll.is_pending() {
            signal.fire();
        }
        poll
    })
    .await
}

/// Polls `fut`; once it is pending and `cond()` holds, drops it and returns `None`: a caller
/// that gave up, at a point the test chose by what it observed. `Some` if `fut` finished first.
///
/// `cond` is checked after every poll of `fut` that returns `Pending`, so it should become true
/// through `fut`'s own progress (a signal its operation fires, an event its pipeline reports):
/// a state set from elsewhere is seen only when something next wakes `fut`.
pub async fn cancel_when<F: Future>(fut: F, mut cond: impl FnMut() -> bool) -> Option<F::Output> {
    let mut fut = pin!(fut);
    poll_fn(|cx| match fut.as_mut().poll(cx) {
        Poll::Ready(v) => Poll::Ready(Some(v)),
        Poll::Pending if cond() => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    })
    .await
    // `fut` is dropped here, before the caller goes on.
}

/// Runs both futures to completion, concurrently, on the caller's task (each poll polls the
/// unfinished ones, `a` first).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::block_on;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn a_signal_fired_before_the_wait_completes_it_at_once() {
        let s = Signal::new();
        s.fire();
        s.fire();
        block_on(s.wait());
        assert!(s.is_fired());
    }

    #[test]
    fn cancel_when_drops_the_future_once_the_condition_holds() {
        let started = Signal::new();
        let polls = AtomicU32::new(0);
        let out = block_on(cancel_when(
            async {
                polls.fetch_add(1, Ordering::SeqCst);
                started.fire();
                core::future::pending::<()>().await
            },
            || started.is_fired(),
        ));
        assert_eq!((out, polls.load(Ordering::SeqCst)), (None, 1));
        assert_eq!(block_on(cancel_when(async { 7 }, || true)), Some(7));
    }

    #[test]
    fn signal_when_pending_fires_once_the_future_parks() {
        let parked = Signal::new();
        let release = Signal::new();
        let (a, b) = block_on(join(
            signal_when_pending(&parked, async {
                release.wait().await;
                1
            }),
            async {
                parked.wait().await;
                release.fire();
                2
            },
        ));
        assert_eq!((a, b), (1, 2));
    }
}
