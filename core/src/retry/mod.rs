//! Retry: whether and when to try again, as a pure decision. The adapters do the sleeping.
//!
//! Retry is the outermost slot of a [`Pipeline`](crate::pipeline::Pipeline) and each attempt
//! re-enters the whole stack, so the breaker, limiter and rate limiter are consulted again.
//! What may be retried follows the verdict (docs/design/spec.md §3.2): `Answered` and `Rejected` never,
//! `Overload` and `Transient` yes, `Timeout` only when the caller declared the operation
//! idempotent. `Uncertain` (an HTTP 500 or 502: the upstream may have acted on the request)
//! is retried like `Transient` by default, so **a POST answered 500 may run twice**;
//! [`RetryConfig::with_uncertain_retry`]`(`[`UncertainRetry::IdempotentOnly`]`)` retries it
//! only for idempotent calls (RFC 9110 §9.2.2), and an idempotency key makes the default
//! safe. Every give-up carries a [`GiveUpReason`], and "failed and not retried" is never
//! collapsed into "would have retried but the budget said no".
//!
//! * [`Backoff`] and [`Strategy`]: the delay formulas of docs/design/spec.md §3.1 (full jitter by default).
//! * [`RetryConfig`]: max attempts (3, Google SRE), the backoff, the Retry-After cap, and
//!   [`UncertainRetry`].
//! * [`Retry`]: the policy — verdict rule, backoff, Retry-After, deadline, budget.
//! * [`budget`]: the shared [`RetryBudget`](budget::RetryBudget)s (SRE ratio, token bucket).
//!
//! Design notes: docs/design/retry-and-budgets.md

pub mod backoff;
pub mod budget;
pub mod config;
mod error;
pub mod policy;

pub use backoff::{Backoff, Strategy};
pub use config::{RetryConfig, RetryConfigError, UncertainRetry};
pub use policy::{Retry, RetryState};

// Defined beside the other outcome types, below the observer that reports it.
pub use crate::give_up::GiveUpReason;

use crate::observe::Observer;
use crate::permit::Env;
use crate::random::Random;
use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

/// What the retry driver knows about the attempt that just settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptOutcome {
    /// The attempt's verdict.
    pub verdict: Verdict,
    /// Its number: 1 for the first attempt.
    pub attempt: u32,
    /// Whether the caller declared the operation idempotent (safe to repeat after a timeout).
    pub idempotent: bool,
    /// The call's overall deadline, if it has one.
    pub deadline: Option<Deadline>,
}

/// The retry policy's answer after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RetryDecision {
    /// The call is finished with an answer (`Success` or `Answered`).
    Done,
    /// Try again, not before this instant.
    RetryAt(Instant),
    /// Stop; the last attempt's outcome is final.
    GiveUp(GiveUpReason),
}

/// Decides, after each attempt, whether and when to try again.
///
/// `State` is the per-call memory (attempt count, the previous delay for decorrelated
/// jitter); the policy itself is shared `&self` like every other policy.
pub trait RetryPolicy {
    /// Per-call state.
    type State;

    /// A call starts at `now` (its first attempt is about to be admitted).
    fn begin(&self, now: Instant) -> Self::State;

    /// The attempt described by `outcome` settled at `env.now`: finish, retry, or give up.
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        state: &mut Self::State,
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision;
}

/// The verdict rule of docs/design/spec.md §3.2 under the default [`UncertainRetry::Always`]: `Ok(())` when
/// the verdict may be retried at all, `Err(Done)` for an answer, `Err(GiveUp)` for a failure
/// that must not be. [`retryable_with`] takes the setting.
///
/// ```
/// use resilix::retry::{retryable, GiveUpReason, RetryDecision};
/// use resilix::{Verdict, VerdictKind};
///
/// assert_eq!(retryable(&Verdict::Transient, false), Ok(()));
/// assert_eq!(retryable(&Verdict::Success, false), Err(RetryDecision::Done));
/// assert_eq!(
///     retryable(&Verdict::Timeout, false),
///     Err(RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Timeout)))
/// );
/// assert_eq!(retryable(&Verdict::Timeout, true), Ok(()));
/// // A 500 may have done the work, yet by default it is retried like any transient
/// // failure, for a POST too: the POST may run twice.
/// assert_eq!(retryable(&Verdict::Uncertain, false), Ok(()));
/// ```
pub const fn retryable(verdict: &Verdict, idempotent: bool) -> Result<(), RetryDecision> {
    retryable_with(verdict, idempotent, UncertainRetry::Always)
}

/// The verdict rule of docs/design/spec.md §3.2 with `uncertain` deciding an
/// [`Uncertain`](Verdict::Uncertain) failure ([`RetryConfig::uncertain_retry`]); the rest as
/// [`retryable`].
///
/// ```
/// use resilix::retry::{retryable_with, GiveUpReason, RetryDecision, UncertainRetry};
/// use resilix::{Verdict, VerdictKind};
///
/// let post = false;
/// assert_eq!(retryable_with(&Verdict::Uncertain, post, UncertainRetry::Always), Ok(()));
/// assert_eq!(
///     retryable_with(&Verdict::Uncertain, post, UncertainRetry::IdempotentOnly),
///     Err(RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Uncertain)))
/// );
/// assert_eq!(retryable_with(&Verdict::Uncertain, true, UncertainRetry::IdempotentOnly), Ok(()));
/// // The setting is about `Uncertain` only: a timeout still needs an idempotent call.
/// assert!(retryable_with(&Verdict::Timeout, post, UncertainRetry::Always).is_err());
/// ```
pub const fn retryable_with(
    verdict: &Verdict,
    idempotent: bool,
    uncertain: UncertainRetry,
) -> Result<(), RetryDecision> {
    match verdict {
        Verdict::Success | Verdict::Answered => Err(RetryDecision::Done),
        Verdict::Overload { .. } | Verdict::Transient => Ok(()),
        // A timed-out attempt may still be running upstream: a retry may do the work twice.
        Verdict::Timeout if idempotent => Ok(()),
        // The upstream may have done the work too, but docs/design/spec.md §3.2 retries a 5xx unless the
        // caller asked for RFC 9110 §9.2.2's caution.
        Verdict::Uncertain if uncertain.permits(idempotent) => Ok(()),
        Verdict::Timeout | Verdict::Uncertain | Verdict::Rejected(_) => Err(RetryDecision::GiveUp(
            GiveUpReason::NotRetryable(verdict.kind()),
        )),
    }
}

/// The absent retry policy: one attempt, then give up.
///
/// ```
/// use resilix::retry::{AttemptOutcome, GiveUpReason, NoRetry, RetryDecision, RetryPolicy};
/// use resilix::permit::Env;
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let mut rng = SeededRandom::new(1);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let outcome = AttemptOutcome { verdict: Verdict::Transient, attempt: 1, idempotent: false, deadline: None };
/// assert_eq!(
///     NoRetry.decide(&mut (), &outcome, &mut env),
///     RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 })
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoRetry;

impl RetryPolicy for NoRetry {
    type State = ();

    fn begin(&self, _now: Instant) {}

    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _state: &mut (),
        outcome: &AttemptOutcome,
        _env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        match retryable(&outcome.verdict, outcome.idempotent) {
            Err(decision) => decision,
            Ok(()) => RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted {
                attempts: outcome.attempt,
            }),
        }
    }
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for &P {
    type State = P::State;

    fn begin(&self, now: Instant) -> P::State {
        (**self).begin(now)
    }

    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        state: &mut P::State,
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        (**self).decide(state, outcome, env)
    }
}
