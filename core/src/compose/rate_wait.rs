//! Waiting for a rate-limit cell instead of being refused at once (governor's `until_ready`,
//! resilience4j's `timeoutDuration`), bounded by the call's deadline and never past it.
//!
//! A rate limiter's refusal already says when a cell will be there: its retry-at. So the
//! wait needs no waiter list and no wake-up: [`RateGate`] is a [`Gate`] that, before each
//! attempt, [peeks](crate::rate_limit::RateLimiter::peek) at the limiter and sleeps until the
//! retry-at, then peeks again (another caller may have taken the cell: it then sleeps until
//! the next one, as governor's `until_ready` does), and lets the attempt go to the pipeline as
//! soon as a cell is there. The pipeline's own rate-limit slot takes the cell, so a cell is
//! spent once, by the admission, exactly as without waiting.
//!
//! The rule at each peek: a retry-at **at or after the call's deadline** is refused at once
//! (waiting could only end in `deadline-passed`; the caller learns it now, with the retry-at
//! in the rejection), and so is a retry-at beyond `max_wait` from the attempt's first peek.
//! Otherwise the gate sleeps until exactly the retry-at. The refusal is the limiter's own
//! `rate-limited` rejection, reported to the observer like any refusal.
//!
//! Under contention a woken caller can still lose its cell between its peek and its
//! admission to a caller on another thread at the same instant (a snapshot, never a
//! reservation); that admission is then refused with `rate-limited` and the next retry-at,
//! as a caller that did not wait would be. On a current-thread runtime the peek and the
//! admission run in one poll, so waiters are served one cell each, in the order of their
//! timers.
//!
//! Design notes: docs/design/rate-limit.md

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::execute::Gate;
use crate::rate_limit::RateLimiter;
use crate::rejection::Rejection;
use crate::time::{Deadline, Instant};
use crate::waiters::WaitTimer;

/// A rate limiter a caller can peek at: [`RateLimiter`], or one behind a reference or an
/// `Arc` (how a pipeline's slot holds it).
pub trait Peek {
    /// Whether a cell would be admitted at `now`; the refusal carries when one will be.
    fn peek(&self, now: Instant) -> Result<(), Rejection>;
}

impl Peek for RateLimiter {
    fn peek(&self, now: Instant) -> Result<(), Rejection> {
        RateLimiter::peek(self, now)
    }
}

impl<L: Peek + ?Sized> Peek for &L {
    fn peek(&self, now: Instant) -> Result<(), Rejection> {
        (**self).peek(now)
    }
}

#[cfg(feature = "alloc")]
impl<L: Peek + ?Sized> Peek for alloc::sync::Arc<L> {
    fn peek(&self, now: Instant) -> Result<(), Rejection> {
        (**self).peek(now)
    }
}

/// Holds each attempt until the rate limiter has a cell, at most `max_wait` and never to the
/// call's deadline: the [`Gate`] an adapter passes to
/// [`execute_gated`](crate::execute::execute_gated). See the [module docs](self).
pub struct RateGate<'l, L: ?Sized, Tm> {
    limiter: &'l L,
    timer: Tm,
    max_wait: Duration,
}

impl<L: ?Sized, Tm> fmt::Debug for RateGate<'_, L, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateGate")
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

impl<'l, L: ?Sized, Tm> RateGate<'l, L, Tm> {
    /// A gate on `limiter` (the one in the pipeline), sleeping on `timer` (the timeline of
    /// the call's deadline), for at most `max_wait` per attempt (`Duration::MAX`: only the
    /// deadline bounds it).
    pub const fn new(limiter: &'l L, timer: Tm, max_wait: Duration) -> Self {
        RateGate {
            limiter,
            timer,
            max_wait,
        }
    }
}

impl<'l, L: Peek + ?Sized, Tm: WaitTimer + Clone> Gate for RateGate<'l, L, Tm> {
    type Wait = RateWait<'l, L, Tm>;

    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> RateWait<'l, L, Tm> {
        RateWait {
            limiter: self.limiter,
            timer: self.timer.clone(),
            latest: now.saturating_add(self.max_wait),
            deadline: deadline.map(Deadline::instant),
            sleep: None,
        }
    }
}

/// The wait of a [`RateGate`]: peek, sleep until the retry-at, peek again. Dropping it leaves
/// nothing behind (it holds no place and no cell).
pub struct RateWait<'l, L: ?Sized, Tm: WaitTimer> {
    limiter: &'l L,
    timer: Tm,
    /// The latest retry-at `max_wait` allows.
    latest: Instant,
    deadline: Option<Instant>,
    sleep: Option<Tm::OwnedSleep>,
}

impl<L: ?Sized, Tm: WaitTimer> fmt::Debug for RateWait<'_, L, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateWait")
            .field("latest", &self.latest)
            .field("deadline", &self.deadline)
            .field("sleeping", &self.sleep.is_some())
            .finish_non_exhaustive()
    }
}

// Nothing is pinned structurally: the sleep is `Unpin`, the rest is plain data.
impl<L: ?Sized, Tm: WaitTimer> Unpin for RateWait<'_, L, Tm> {}

/// Whether a cell that will be there at `at` is worth waiting for: before the deadline (at
/// it the call is over) and within `max_wait`.
const fn worth_waiting(at: Instant, latest: Instant, deadline: Option<Instant>) -> bool {
    let before_deadline = match deadline {
        Some(d) => at.as_nanos() < d.as_nanos(),
        None => true,
    };
    before_deadline && at.as_nanos() <= latest.as_nanos()
}

impl<L: Peek + ?Sized, Tm: WaitTimer> Future for RateWait<'_, L, Tm> {
    type Output = Result<(), Rejection>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = &mut *self;
        loop {
            if let Some(sleep) = me.sleep.as_mut() {
                if Pin::new(sleep).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                me.sleep = None;
            }
            let refused = match me.limiter.peek(me.timer.now()) {
                Ok(()) => return Poll::Ready(Ok(())),
                Err(refused) => refused,
            };
            match refused.retry_at() {
                Some(at) if worth_waiting(at, me.latest, me.deadline) => {
                    me.sleep = Some(me.timer.sleep_owned(at));
                }
                _ => return Poll::Ready(Err(refused)),
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_rule_at_the_deadline_and_at_max_wait() {
        let at = Instant::from_secs(2);
        assert!(worth_waiting(at, at, None), "exactly max_wait is waited");
        assert!(!worth_waiting(at, Instant::from_millis(1_999), None));
        assert!(worth_waiting(
            at,
            Instant::MAX,
            Some(Instant::from_nanos(2_000_000_001))
        ));
        assert!(
            !worth_waiting(at, Instant::MAX, Some(at)),
            "a cell at the deadline comes too late"
        );
    }
}
