//! Why a call that failed was not tried again: the retry driver's half of a call's outcome,
//! beside [`Rejection`](crate::rejection::Rejection) (the policies' half). It lives below both
//! the retry policy that decides it and the observer that reports it, so neither layer
//! imports upward.

use core::fmt;

use crate::verdict::VerdictKind;

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
#[non_exhaustive]
pub enum GiveUpReason {
    /// The verdict may not be retried (answered, rejected, a timeout of a call not declared
    /// idempotent, or an uncertain failure of one under [`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly)).
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
    /// ([`RetryConfig::max_retry_after`](crate::retry::RetryConfig::max_retry_after), 300 s by default). Checked before the deadline, so
    /// the same answer gives the same reason with or without one.
    RetryAfterTooLong,
}

impl GiveUpReason {
    /// The refusal this give-up amounts to, if it is one: a retry the budget refused is the
    /// sixth way to be refused (`budget-exceeded`, docs/design/spec.md §7). Every other reason is the call's
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
