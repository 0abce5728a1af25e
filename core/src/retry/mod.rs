//! Retry: whether and when to try again, as a pure decision. The adapters do the sleeping.
//!
//! Retry is the outermost slot of a [`Pipeline`](crate::pipeline::Pipeline) and each attempt
//! re-enters the whole stack, so the breaker, limiter and rate limiter are consulted again.
//! What may be retried follows the verdict (spec §3.2): `Answered` and `Rejected` never,
//! `Overload` and `Transient` yes, `Timeout` only when the caller declared the operation
//! idempotent. `Uncertain` (an HTTP 500 or 502: the upstream may have acted on the request)
//! is retried like `Transient` by default, so **a POST answered 500 may run twice**;
//! [`RetryConfig::with_uncertain_retry`]`(`[`UncertainRetry::IdempotentOnly`]`)` retries it
//! only for idempotent calls (RFC 9110 §9.2.2), and an idempotency key makes the default
//! safe. Every give-up carries a [`GiveUpReason`], and "failed and not retried" is never
//! collapsed into "would have retried but the budget said no".
//!
//! * [`Backoff`] and [`Strategy`]: the delay formulas of spec §3.1 (full jitter by default).
//! * [`RetryConfig`]: max attempts (3, Google SRE), the backoff, the Retry-After cap, and
//!   [`UncertainRetry`].
//! * [`Retry`]: the policy — verdict rule, backoff, Retry-After, deadline, budget.
//! * [`budget`]: the shared [`RetryBudget`](budget::RetryBudget)s (SRE ratio, token bucket).

use core::fmt;

pub mod backoff;
pub mod budget;
pub mod config;
pub mod policy;

pub use backoff::{Backoff, Strategy};
pub use config::{RetryConfig, RetryConfigError, UncertainRetry};
pub use policy::{Retry, RetryState};

use crate::observe::Observer;
use crate::permit::Env;
use crate::random::Random;
use crate::time::{Deadline, Instant};
use crate::verdict::{Verdict, VerdictKind};

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

/// Why a call that failed was not tried again.
///
/// ```
/// use resilix::retry::GiveUpReason;
/// use resilix::VerdictKind;
///
/// let r = GiveUpReason::NotRetryable(VerdictKind::Answered);
/// assert_eq!(format!("{r}"), "not retryable: the last attempt was answered");
/// assert_ne!(GiveUpReason::BudgetExceeded, GiveUpReason::AttemptsExhausted { attempts: 3 });
/// assert!(format!("{}", GiveUpReason::RetryAfterTooLong).contains("longer than"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GiveUpReason {
    /// The verdict may not be retried (answered, rejected, a timeout of a call not declared
    /// idempotent, or an uncertain failure of one under [`UncertainRetry::IdempotentOnly`]).
    NotRetryable(VerdictKind),
    /// Every allowed attempt was made.
    AttemptsExhausted {
        /// How many attempts were made, the first included.
        attempts: u32,
    },
    /// A retry was wanted, but the retry budget refused it.
    BudgetExceeded,
    /// The next attempt could not start before the deadline.
    DeadlineWouldPass,
    /// The upstream's `Retry-After` points past the deadline.
    RetryAfterBeyondDeadline,
    /// The upstream's `Retry-After` is longer than the retry policy waits for
    /// ([`RetryConfig::max_retry_after`], 300 s by default). Checked before the deadline, so
    /// the same answer gives the same reason with or without one.
    RetryAfterTooLong,
}

impl GiveUpReason {
    /// The refusal this give-up amounts to, if it is one: a retry the budget refused is the
    /// sixth way to be refused (`budget-exceeded`, spec §7). Every other reason is the call's
    /// own outcome, not a refusal.
    ///
    /// ```
    /// use resilix::retry::GiveUpReason;
    /// use resilix::RejectReason;
    ///
    /// assert_eq!(GiveUpReason::BudgetExceeded.as_rejection().map(|r| r.reason()), Some(RejectReason::BudgetExceeded));
    /// assert_eq!(GiveUpReason::AttemptsExhausted { attempts: 3 }.as_rejection(), None);
    /// ```
    pub const fn as_rejection(&self) -> Option<crate::rejection::Rejection> {
        match self {
            GiveUpReason::BudgetExceeded => Some(crate::rejection::Rejection::new(
                crate::rejection::RejectReason::BudgetExceeded,
            )),
            _ => None,
        }
    }

    /// A stable kebab-case code, one per variant, for metric labels and logs (the same style
    /// as [`RejectReason::code`](crate::rejection::RejectReason::code); the budget's give-up
    /// shares its code with the rejection it amounts to). A new variant needs one line here,
    /// and every label follows.
    ///
    /// ```
    /// use resilix::retry::GiveUpReason;
    /// use resilix::VerdictKind;
    ///
    /// assert_eq!(GiveUpReason::BudgetExceeded.as_str(), "budget-exceeded");
    /// assert_eq!(GiveUpReason::AttemptsExhausted { attempts: 3 }.as_str(), "attempts-exhausted");
    /// assert_eq!(GiveUpReason::NotRetryable(VerdictKind::Answered).as_str(), "not-retryable");
    /// ```
    pub const fn as_str(&self) -> &'static str {
        match self {
            GiveUpReason::NotRetryable(_) => "not-retryable",
            GiveUpReason::AttemptsExhausted { .. } => "attempts-exhausted",
            GiveUpReason::BudgetExceeded => "budget-exceeded",
            GiveUpReason::DeadlineWouldPass => "deadline-would-pass",
            GiveUpReason::RetryAfterBeyondDeadline => "retry-after-beyond-deadline",
            GiveUpReason::RetryAfterTooLong => "retry-after-too-long",
        }
    }
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GiveUpReason::NotRetryable(kind) => {
                write!(f, "not retryable: the last attempt was {kind}")
            }
            GiveUpReason::AttemptsExhausted { attempts } => {
                write!(f, "attempts exhausted after {attempts}")
            }
            GiveUpReason::BudgetExceeded => {
                f.write_str("would have retried, but the retry budget said no")
            }
            GiveUpReason::DeadlineWouldPass => {
                f.write_str("the next attempt could not start before the deadline")
            }
            GiveUpReason::RetryAfterBeyondDeadline => {
                f.write_str("the upstream's Retry-After lies beyond the deadline")
            }
            GiveUpReason::RetryAfterTooLong => f.write_str(
                "the upstream's Retry-After is longer than the retry policy waits for (raise RetryConfig::with_max_retry_after to wait)",
            ),
        }
    }
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

/// The verdict rule of spec §3.2 under the default [`UncertainRetry::Always`]: `Ok(())` when
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

/// The verdict rule of spec §3.2 with `uncertain` deciding an
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
        // The upstream may have done the work too, but spec §3.2 retries a 5xx unless the
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
