//! The retry policy: the verdict rule, a backoff, Retry-After, the deadline and a budget,
//! combined into one decision per settled attempt.
//!
//! After each attempt, [`Retry::decide`](RetryPolicy::decide) asks, in this order, and the
//! first "no" is the give-up reason:
//!
//! 1. May this verdict be retried at all? ([`retryable_with`]: `Answered` and `Rejected`
//!    never, `Timeout` only when the call is idempotent, `Uncertain` as
//!    [`RetryConfig::uncertain_retry`] says.) → [`GiveUpReason::NotRetryable`]
//! 2. Is an attempt left? → [`GiveUpReason::AttemptsExhausted`]
//! 3. Is the upstream's Retry-After within the longest wait we accept
//!    ([`RetryConfig::max_retry_after`], 300 s by default)? → [`GiveUpReason::RetryAfterTooLong`]
//! 4. Does the upstream's Retry-After end before the deadline? →
//!    [`GiveUpReason::RetryAfterBeyondDeadline`]
//! 5. Can the next attempt start strictly before the deadline, after its delay? →
//!    [`GiveUpReason::DeadlineWouldPass`]
//! 6. Does the budget grant the retry? → [`GiveUpReason::BudgetExceeded`]
//!
//! The budget is asked last, only when a retry is otherwise going to happen, so a budget
//! refusal always means "we would have retried" and tokens are never spent on a retry that
//! will not be made. (Failures that stop at 2–5 are still *recorded* with the budget, for
//! gRPC-style buckets that charge every failure.)
//!
//! **Retry-After.** The delay is `max(backoff, retry_after)`: the upstream's floor is always
//! honoured, and when the backoff is already longer the jitter still spreads clients out. The
//! backoff series itself (decorrelated's "previous") continues from the drawn backoff, not the
//! Retry-After, so one long Retry-After does not inflate every later delay.
//!
//! **Retry-After beyond the cap**: a call without a deadline would otherwise sleep as long as
//! the upstream says, and an `Overload` with a 364-day Retry-After would schedule a retry 364
//! days out, holding the caller (and whatever it holds) that long. Beyond the cap the call
//! gives up at once, for the same reason as beyond the deadline below; the cap is checked
//! first, so one upstream answer gives one reason whether or not the call has a deadline. The
//! parser saturates absurd values (a Unix timestamp sent as delay-seconds) rather than
//! dropping them, so they land here too, never in our own much shorter backoff.
//!
//! **Retry-After beyond the deadline** (docs/design/spec.md §9): give up at once with its own reason rather
//! than ignore it and retry sooner. The upstream said it cannot serve us before then;
//! retrying earlier spends its capacity exactly when it asked us not to, and waiting past the
//! deadline produces an answer nobody is waiting for. Failing now also hands the caller its
//! remaining time to fall back. A Retry-After ending exactly at the deadline is beyond it: an
//! attempt cannot start at the instant the deadline passes.
//!
//! **Timeouts.** A timed-out attempt may still be running upstream, so a retry can do the work
//! twice. It is retried only when the caller declares the operation idempotent
//! ([`CallOptions::idempotent`](crate::call::CallOptions::idempotent)); we never assume it.
//!
//! **Uncertain failures** (HTTP 500, 502: the server failed, perhaps after acting). By
//! default they are retried for any call, as docs/design/spec.md §3.2 retries transient failures: a
//! POST answered 500 is sent again and may run twice, which is safe when it carries an
//! idempotency key the server deduplicates on. With
//! [`RetryConfig::with_uncertain_retry`]`(`[`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly)`)`
//! they are retried only for idempotent calls, as RFC 9110 §9.2.2 advises, and a POST gives
//! up with `NotRetryable(Uncertain)`.

use core::time::Duration;

use crate::observe::Observer;
use crate::permit::Env;
use crate::random::Random;
use crate::retry::backoff::Backoff;
use crate::retry::budget::{RetryBudget, Unlimited};
use crate::retry::config::RetryConfig;
use crate::retry::{AttemptOutcome, GiveUpReason, RetryDecision, RetryPolicy, retryable_with};
use crate::time::{Instant, duration_as_nanos_saturating};
use crate::verdict::{Verdict, VerdictKind};

/// Retry with backoff, Retry-After, the deadline and a shared budget `B`.
///
/// ```
/// use core::time::Duration;
/// use resilix::call::{CallOptions, Next};
/// use resilix::permit::Env;
/// use resilix::pipeline::Pipeline;
/// use resilix::random::SeededRandom;
/// use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
/// use resilix::retry::{GiveUpReason, Retry, RetryConfig};
/// use resilix::time::{Deadline, Instant};
/// use resilix::Verdict;
///
/// let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?;
/// let pipeline = Pipeline::new().retry(Retry::new(RetryConfig::DEFAULT, &budget));
/// let mut rng = SeededRandom::new(7);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let options = CallOptions::default().deadline(Deadline::after(env.now, Duration::from_secs(5)));
/// let mut call = pipeline.call(env.now, options);
/// loop {
///     let attempt = call.admit(&mut env).unwrap();
///     match call.settle(attempt, &Verdict::Transient, &mut env) {
///         Next::RetryAt(at) => env.now = at, // an adapter sleeps until `at`
///         Next::GiveUp(reason) => {
///             assert_eq!(reason, GiveUpReason::AttemptsExhausted { attempts: 3 });
///             break;
///         }
///         Next::Done => unreachable!(),
///     }
/// }
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Retry<B = Unlimited> {
    config: RetryConfig,
    budget: B,
}

impl Retry<Unlimited> {
    /// Retry with `config` and no budget: only the per-call attempt cap bounds retries.
    pub const fn unbudgeted(config: RetryConfig) -> Self {
        Retry {
            config,
            budget: Unlimited,
        }
    }
}

impl<B: RetryBudget> Retry<B> {
    /// Retry with `config`, spending from `budget` (pass `&budget` to share one).
    pub const fn new(config: RetryConfig, budget: B) -> Self {
        Retry { config, budget }
    }

    /// The configuration.
    pub const fn config(&self) -> &RetryConfig {
        &self.config
    }

    /// The budget.
    pub const fn budget(&self) -> &B {
        &self.budget
    }
}

/// One call's retry memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryState {
    /// Attempts settled so far in this call (the driver's count is authoritative; this one
    /// guards against a driver that reports the same attempt twice).
    attempts: u32,
    /// The last backoff drawn (decorrelated jitter grows from it).
    previous: Duration,
    /// What caused the last retry, for the budget's accounting on success.
    last_retry_after: Option<VerdictKind>,
}

impl RetryState {
    /// Attempts settled so far.
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The last backoff drawn.
    pub const fn previous_delay(&self) -> Duration {
        self.previous
    }
}

impl<B: RetryBudget> RetryPolicy for Retry<B> {
    type State = RetryState;

    fn begin(&self, _now: Instant) -> RetryState {
        RetryState {
            attempts: 0,
            previous: self.config.backoff().first_previous(),
            last_retry_after: None,
        }
    }

    #[inline]
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        state: &mut RetryState,
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        let now = env.now;
        let attempt = outcome.attempt.max(state.attempts.saturating_add(1));
        state.attempts = attempt;
        let verdict = outcome.verdict;
        if attempt == 1 && verdict.is_counted() {
            self.budget.record_first_attempt(now);
        }
        let uncertain = self.config.uncertain_retry();
        if let Err(decision) = retryable_with(&verdict, outcome.idempotent, uncertain) {
            if let Verdict::Success = verdict {
                self.budget.record_success(now, state.last_retry_after);
            }
            return decision;
        }
        let kind = verdict.kind();
        match plan(&self.config, attempt, state, outcome, env) {
            Err(reason) => {
                self.budget.record_unretried_failure(now, kind);
                RetryDecision::GiveUp(reason)
            }
            Ok((at, drawn)) => {
                if !self.budget.try_spend(now, kind) {
                    return RetryDecision::GiveUp(GiveUpReason::BudgetExceeded);
                }
                state.previous = drawn;
                state.last_retry_after = Some(kind);
                RetryDecision::RetryAt(at)
            }
        }
    }
}

/// Steps 2–5 of the module docs for a retryable failure: when the next attempt would start
/// and the backoff drawn for it, or why there is none. Draws from `env.rng` only when the
/// attempt cap and the Retry-After allow a retry.
fn plan<R: Random + ?Sized, O: Observer + ?Sized>(
    config: &RetryConfig,
    attempt: u32,
    state: &RetryState,
    outcome: &AttemptOutcome,
    env: &mut Env<'_, R, O>,
) -> Result<(Instant, Duration), GiveUpReason> {
    if attempt >= config.max_attempts() {
        return Err(GiveUpReason::AttemptsExhausted { attempts: attempt });
    }
    let now = env.now;
    let retry_after = outcome.verdict.retry_after();
    if let Some(wait) = retry_after {
        // On the u64-nanosecond timeline, as every instant is: a wait beyond its 584 years
        // reads as its end, so a cap of `Duration::MAX` waits for any Retry-After.
        if duration_as_nanos_saturating(wait)
            > duration_as_nanos_saturating(config.max_retry_after())
        {
            return Err(GiveUpReason::RetryAfterTooLong);
        }
        if outcome
            .deadline
            .is_some_and(|deadline| deadline.has_passed(now.saturating_add(wait)))
        {
            return Err(GiveUpReason::RetryAfterBeyondDeadline);
        }
    }
    let backoff: Backoff = config.backoff();
    let drawn = backoff.delay(attempt, state.previous, &mut *env.rng);
    let delay = match retry_after {
        Some(wait) if wait > drawn => wait,
        _ => drawn,
    };
    let at = now.saturating_add(delay);
    if outcome
        .deadline
        .is_some_and(|deadline| deadline.has_passed(at))
    {
        return Err(GiveUpReason::DeadlineWouldPass);
    }
    Ok((at, drawn))
}

#[cfg(all(test, not(loom)))]
mod tests;
