//! A fixed-backoff retry policy written against the core's public `RetryPolicy` trait: the
//! core's own retry (jittered backoff and budgets) was not in main when this program was
//! written. It follows the core's verdict rule (`retryable`) and its give-up reasons.

use core::time::Duration;

use resilix::observe::Observer;
use resilix::permit::Env;
use resilix::random::Random;
use resilix::retry::{AttemptOutcome, GiveUpReason, RetryDecision, RetryPolicy, retryable};
use resilix::time::Instant;

pub(crate) struct FixedBackoff {
    pub(crate) attempts: u32,
    pub(crate) delay: Duration,
}

impl RetryPolicy for FixedBackoff {
    type State = ();

    fn begin(&self, _now: Instant) {}

    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _state: &mut (),
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        if let Err(decision) = retryable(&outcome.verdict, outcome.idempotent) {
            return decision;
        }
        if outcome.attempt >= self.attempts {
            return RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted {
                attempts: outcome.attempt,
            });
        }
        let at = env.now + self.delay;
        match outcome.deadline {
            Some(d) if d.has_passed(at) => RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass),
            _ => RetryDecision::RetryAt(at),
        }
    }
}
