//! The one error a call through a [`Resilience`](crate::resilience::Resilience) returns: flat,
//! matched once, with the upstream's own error as a variant.
//!
//! The retry loop itself ([`crate::execute::execute`]) is generic over any output (a `u16`
//! status, an `http::Response`) and reports [`ExecuteError`] beside it. The front end runs
//! operations that return `Result<T, E>`, and folds both layers into `Result<T, Error<T, E>>`:
//!
//! | the loop's result | becomes |
//! |---|---|
//! | `Ok(Ok(t))` (a success, or an answer the classifier let through) | `Ok(t)` |
//! | `Ok(Err(e))` (an error the classifier called an answer: a 404) | [`Error::Upstream`], `gave_up: None` |
//! | gave up after `Err(e)` | [`Error::Upstream`], `gave_up: Some(why)` |
//! | gave up after `Ok(t)` (a 503 response) | [`Error::Failed`] with the response |
//! | gave up after a timed-out attempt | [`Error::TimedOut`] |
//! | a policy refused | [`Error::Refused`], with the wait until it admits again |
//! | the deadline passed before an attempt | [`Error::DeadlinePassed`] |
//!
//! ```
//! use std::time::Duration;
//! use resilix::error::Error;
//! use resilix::execute::{Attempted, ExecuteError};
//! use resilix::time::Instant;
//! use resilix::{RejectReason, Rejection};
//!
//! let now = Instant::from_secs(10);
//! let open = Rejection::until(RejectReason::CircuitOpen, now + Duration::from_secs(4));
//! let nested: Result<Result<u32, &str>, _> =
//!     Err(ExecuteError::Refused { rejection: open, attempts: 2, last: Some(Attempted::Output(Err("reset"))) });
//! let flat = Error::flatten(nested, now);
//! match &flat {
//!     Err(Error::Refused { retry_in, last_error, .. }) => {
//!         assert_eq!(*retry_in, Some(Duration::from_secs(4)));
//!         assert_eq!(*last_error, Some("reset"));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! let text = flat.unwrap_err().to_string();
//! assert!(text.starts_with("refused by the circuit-open policy"), "{text}");
//! assert!(text.contains("admits again in 4s"), "{text}");
//! ```

use core::fmt;
use core::time::Duration;

use crate::execute::{Attempted, ExecuteError};
use crate::observe::Degradation;
use crate::rejection::Rejection;
use crate::retry::GiveUpReason;
use crate::time::Instant;

/// Why a call returned no answer. See the [module docs](self) for where each variant comes
/// from. `T` is the operation's success type, `E` the upstream's own error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error<T, E> {
    /// The upstream's own error: an answer the classifier let through as is (`gave_up: None`:
    /// a caller's mistake, a 4xx, never retried), or the last failure after the retry policy
    /// gave up (`gave_up: Some(why)`).
    Upstream {
        /// The operation's error, as it returned it.
        error: E,
        /// Why no further attempt was made, if the error was a failure.
        gave_up: Option<GiveUpReason>,
    },
    /// The retry policy gave up after an output the classifier called a failure (a 503 or a
    /// 429 response): the output is here, to read its status and headers.
    Failed {
        /// What the last attempt returned.
        output: T,
        /// Why no further attempt was made.
        reason: GiveUpReason,
        /// How many attempts reached the upstream.
        attempts: u32,
    },
    /// The last attempt ran out of time (the attempt timeout or the call's deadline) and the
    /// retry policy gave up (a timeout is retried only for calls declared idempotent).
    TimedOut {
        /// Why no further attempt was made.
        reason: GiveUpReason,
        /// How many attempts reached the upstream.
        attempts: u32,
    },
    /// One of our own policies refused an attempt (never retried: at once it would be refused
    /// again).
    Refused {
        /// Which policy, and the instant it admits again if it knows.
        rejection: Rejection,
        /// That instant as a wait from the moment of the refusal (zero if it had passed).
        retry_in: Option<Duration>,
        /// How many attempts had reached the upstream before the refusal.
        attempts: u32,
        /// The previous attempt's error, when the refusal came on a retry after one.
        last_error: Option<E>,
    },
    /// The call's deadline passed before another attempt could start.
    DeadlinePassed {
        /// How many attempts reached the upstream.
        attempts: u32,
        /// The previous attempt's error, if it failed with one.
        last_error: Option<E>,
    },
}

impl<T, E> Error<T, E> {
    /// Folds the retry loop's nested result into the flat one, `now` being the moment it
    /// returned (a refusal's retry-at becomes a wait from then).
    #[allow(clippy::type_complexity)] // the loop's result, spelled out once
    #[inline]
    pub fn flatten(
        result: Result<Result<T, E>, ExecuteError<Result<T, E>>>,
        now: Instant,
    ) -> Result<T, Error<T, E>> {
        let error = match result {
            Ok(Ok(output)) => return Ok(output),
            Ok(Err(error)) => Error::Upstream {
                error,
                gave_up: None,
            },
            Err(stopped) => Error::from_stopped(stopped, now),
        };
        Err(error)
    }

    /// The flat error for a call the loop stopped.
    pub fn from_stopped(stopped: ExecuteError<Result<T, E>>, now: Instant) -> Self {
        let last_error = |last: Option<Attempted<Result<T, E>>>| match last {
            Some(Attempted::Output(Err(error))) => Some(error),
            _ => None,
        };
        match stopped {
            ExecuteError::Refused {
                rejection,
                attempts,
                last,
            } => Error::Refused {
                rejection,
                retry_in: rejection
                    .retry_at()
                    .map(|at| at.saturating_duration_since(now)),
                attempts,
                last_error: last_error(last),
            },
            ExecuteError::GaveUp {
                reason,
                attempts,
                last,
            } => match last {
                Attempted::Output(Err(error)) => Error::Upstream {
                    error,
                    gave_up: Some(reason),
                },
                Attempted::Output(Ok(output)) => Error::Failed {
                    output,
                    reason,
                    attempts,
                },
                Attempted::TimedOut => Error::TimedOut { reason, attempts },
            },
            ExecuteError::DeadlinePassed { attempts, last } => Error::DeadlinePassed {
                attempts,
                last_error: last_error(last),
            },
        }
    }

    /// How many attempts reached the upstream, where the loop counted them (not for
    /// [`Error::Upstream`], whose error says what happened).
    pub fn attempts(&self) -> Option<u32> {
        match self {
            Error::Failed { attempts, .. }
            | Error::TimedOut { attempts, .. }
            | Error::Refused { attempts, .. }
            | Error::DeadlinePassed { attempts, .. } => Some(*attempts),
            Error::Upstream { .. } => None,
        }
    }

    /// The upstream's own error, if it is one.
    pub fn upstream(&self) -> Option<&E> {
        match self {
            Error::Upstream { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The refusal, if one of our policies refused: a policy of the pipeline, or the retry
    /// budget refusing a retry (`budget-exceeded`).
    pub fn rejection(&self) -> Option<Rejection> {
        match self {
            Error::Refused { rejection, .. } => Some(*rejection),
            Error::Upstream {
                gave_up: Some(reason),
                ..
            }
            | Error::Failed { reason, .. }
            | Error::TimedOut { reason, .. } => reason.as_rejection(),
            Error::Upstream { gave_up: None, .. } | Error::DeadlinePassed { .. } => None,
        }
    }

    /// How long until the refusing policy expects to admit again, from the moment of the
    /// refusal, if it knows.
    pub fn retry_in(&self) -> Option<Duration> {
        match self {
            Error::Refused { retry_in, .. } => *retry_in,
            _ => None,
        }
    }

    /// What a fallback answering in place of this error reports; `None` for an answer the
    /// upstream gave (a fallback does not replace answers).
    pub fn degradation(&self) -> Option<Degradation> {
        match self {
            Error::Refused { rejection, .. } => Some(Degradation::Refused(*rejection)),
            Error::Upstream {
                gave_up: Some(reason),
                ..
            }
            | Error::Failed { reason, .. }
            | Error::TimedOut { reason, .. } => Some(Degradation::GaveUp(*reason)),
            Error::DeadlinePassed { .. } => Some(Degradation::DeadlinePassed),
            Error::Upstream { gave_up: None, .. } => None,
        }
    }
}

/// One line for a log, whatever `E` is: which policy stopped the call and what to do. The
/// upstream's own error is not repeated here: it is [`source()`](core::error::Error::source)
/// when `E` is an error type (so `{:#}` in anyhow and the chain in tracing show it), and in
/// `Error::Upstream` or `last_error` always.
impl<T, E> fmt::Display for Error<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Upstream { gave_up: None, .. } => {
                f.write_str("the upstream answered with an error, passed on as is")
            }
            Error::Upstream {
                gave_up: Some(reason),
                ..
            } => write!(
                f,
                "the upstream failed and the call was not retried ({reason})"
            ),
            Error::Failed {
                reason, attempts, ..
            } => write!(
                f,
                "the upstream's answer was a failure after {attempts} attempt(s) and the call was not retried ({reason}); the answer is in `Error::Failed`"
            ),
            Error::TimedOut { reason, attempts } => {
                write!(
                    f,
                    "the last of {attempts} attempt(s) timed out and the call was not retried ({reason})"
                )?;
                f.write_str(timeout_advice(reason))
            }
            Error::Refused {
                rejection,
                retry_in,
                attempts,
                ..
            } => {
                let reason = rejection.reason();
                write!(
                    f,
                    "refused by the {} policy after {attempts} attempt(s): {reason}",
                    reason.code()
                )?;
                match retry_in {
                    Some(wait) => write!(f, "; it admits again in {wait:?}"),
                    None => Ok(()),
                }
            }
            Error::DeadlinePassed { attempts, .. } => write!(
                f,
                "the call's deadline passed after {attempts} attempt(s), before another could start; give the call more time or its attempts less"
            ),
        }
    }
}

/// What to do about a call whose last attempt timed out, for the reason the retry policy gave
/// up: each advice is true in the case that prints it (declaring a call idempotent helps only
/// when that is why the timeout was not retried).
fn timeout_advice(reason: &GiveUpReason) -> &'static str {
    match reason {
        GiveUpReason::NotRetryable(_) => {
            "; a timeout is retried only for a call declared idempotent: declare it so if running it twice is safe, or raise the attempt timeout if the upstream is slow but healthy"
        }
        GiveUpReason::AttemptsExhausted { .. } => {
            "; every allowed attempt timed out: raise the attempt timeout if the upstream is slow but healthy, or allow more attempts"
        }
        GiveUpReason::DeadlineWouldPass | GiveUpReason::RetryAfterBeyondDeadline => {
            "; no time was left for another attempt: give the call a later deadline, or its attempts a shorter timeout"
        }
        GiveUpReason::BudgetExceeded => {
            "; the retry budget refused another attempt, as it does when many calls fail at once: it protects the upstream, so look at the upstream's health before the budget"
        }
        GiveUpReason::RetryAfterTooLong => "",
    }
}

/// The upstream's error, when there is one, is the source: `Error::Upstream`'s error, or the
/// error of the attempt before a refusal or a passed deadline.
impl<T: fmt::Debug, E: core::error::Error + 'static> core::error::Error for Error<T, E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Error::Upstream { error, .. } => Some(error),
            Error::Refused {
                last_error: Some(error),
                ..
            }
            | Error::DeadlinePassed {
                last_error: Some(error),
                ..
            } => Some(error),
            _ => None,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
