//! The doubles the scenarios use: an event log, a counting gate, a fixed-delay retry, a drop
//! flag.

use core::time::Duration;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use resilix::observe::{Event, Observer};
use resilix::permit::{Detach, Env, Permit, Policy};
use resilix::random::Random;
use resilix::retry::{AttemptOutcome, GiveUpReason, RetryDecision, RetryPolicy, retryable};
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, Verdict};

/// Records every event (Sync, so futures holding it stay `Send`).
#[derive(Debug, Default)]
pub struct Log(Mutex<Vec<Event>>);

impl Log {
    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(*event);
    }
}

/// A policy that counts what reaches it and refuses with `bulkhead-full` on demand: it makes
/// permit linearity observable (admitted = settled + cancelled; held returns to zero).
#[derive(Debug, Default)]
pub struct Counting {
    admitted: AtomicU32,
    settled: AtomicU32,
    cancelled: AtomicU32,
    held: AtomicU32,
    refuse: AtomicBool,
}

/// A snapshot of a [`Counting`] policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Permits handed out.
    pub admitted: u32,
    /// Permits settled with a verdict.
    pub settled: u32,
    /// Permits dropped without a verdict (cancelled).
    pub cancelled: u32,
    /// Permits alive now.
    pub held: u32,
}

impl Counting {
    /// Refuse every admission from now on (or stop refusing).
    pub fn refuse(&self, refuse: bool) {
        self.refuse.store(refuse, Ordering::SeqCst);
    }

    /// What reached it so far.
    pub fn counts(&self) -> Counts {
        Counts {
            admitted: self.admitted.load(Ordering::SeqCst),
            settled: self.settled.load(Ordering::SeqCst),
            cancelled: self.cancelled.load(Ordering::SeqCst),
            held: self.held.load(Ordering::SeqCst),
        }
    }
}

/// The [`Counting`] policy's permit.
#[derive(Debug)]
pub struct CountingPermit<'a> {
    policy: &'a Counting,
    settled: bool,
}

impl Policy for Counting {
    type Permit<'a> = CountingPermit<'a>;
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<CountingPermit<'_>, Rejection> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(Rejection::new(RejectReason::BulkheadFull));
        }
        self.admitted.fetch_add(1, Ordering::SeqCst);
        self.held.fetch_add(1, Ordering::SeqCst);
        Ok(CountingPermit {
            policy: self,
            settled: false,
        })
    }
}

/// A [`CountingPermit`] apart from its policy: still held, and counted as held.
#[derive(Debug)]
pub struct DetachedCounting(());

impl Detach for Counting {
    type Detached = DetachedCounting;

    fn detach(permit: CountingPermit<'_>) -> DetachedCounting {
        // Still held: its drop would count a cancellation and give the hold back.
        core::mem::forget(permit);
        DetachedCounting(())
    }

    fn attach(&self, detached: DetachedCounting) -> CountingPermit<'_> {
        let DetachedCounting(()) = detached;
        CountingPermit {
            policy: self,
            settled: false,
        }
    }
}

impl Permit for CountingPermit<'_> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        _verdict: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
        self.settled = true;
        self.policy.settled.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for CountingPermit<'_> {
    fn drop(&mut self) {
        self.policy.held.fetch_sub(1, Ordering::SeqCst);
        if !self.settled {
            self.policy.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Retries what the verdict rule allows after a fixed delay, up to `max` attempts, never past
/// the deadline. A driver-test double: it makes the loop's timing exact and checkable. Jitter
/// and budgets are the real retry policy's ([`jittered_retry_timing`](super::jittered_retry_timing), [`budget_refusal`](super::budget_refusal)).
#[derive(Clone, Copy, Debug)]
pub struct FixedRetry {
    /// Attempts, the first included.
    pub max: u32,
    /// The wait before each retry.
    pub delay: Duration,
}

/// A retrying policy: each attempt gets a clone of the request.
impl<Req: Clone> resilix::call::Replay<Req> for FixedRetry {
    fn next_request(kept: &mut Option<Req>) -> Option<Req> {
        kept.clone()
    }
}

impl RetryPolicy for FixedRetry {
    type State = ();
    fn begin(&self, _now: Instant) {}
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _state: &mut (),
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        if let Err(d) = retryable(&outcome.verdict, outcome.idempotent) {
            return d;
        }
        if outcome.attempt >= self.max {
            return RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted {
                attempts: outcome.attempt,
            });
        }
        let at = env.now + self.delay;
        if outcome.deadline.is_some_and(|d| d.has_passed(at)) {
            return RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass);
        }
        RetryDecision::RetryAt(at)
    }
}

/// Sets a flag when dropped: proves an operation's future was dropped, not leaked.
#[derive(Debug)]
pub struct DropFlag<'a>(pub &'a AtomicBool);

impl Drop for DropFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
