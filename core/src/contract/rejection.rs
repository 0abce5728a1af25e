//! The six ways a call can be refused before it reaches the upstream (docs/design/spec.md §7).
//!
//! Every refusal names the policy that refused and why, so a caller can match on it, log it and
//! know the typical fix. Rejections are never read as upstream distress: a refused call was
//! never a request to the upstream, and [`Verdict::Rejected`](crate::Verdict::Rejected) is
//! invisible to every statistic.

use core::fmt;

use crate::time::Instant;

/// Which policy refused, and therefore what it means.
///
/// ```
/// use resilix::RejectReason;
///
/// assert_eq!(RejectReason::CircuitOpen.code(), "circuit-open");
/// assert_eq!(RejectReason::ALL.len(), 6);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RejectReason {
    /// The breaker is open: the upstream looks wholly down. Typical fix: wait for the probe.
    CircuitOpen,
    /// The adaptive limiter is full: too many calls in flight for the current latency.
    /// Typical fix: shed or slow down.
    LimiterFull,
    /// The throttler shed the call: too many recent attempts were not accepted upstream.
    /// Typical fix: back off.
    Throttled,
    /// The bulkhead is full: a hard concurrency cap you configured. Typical fix: raise it or
    /// queue.
    BulkheadFull,
    /// The rate limiter refused: a fixed rate you configured. Typical fix: raise it or slow
    /// down.
    RateLimited,
    /// The retry budget refused this retry; the first attempt was not refused. Typical fix:
    /// fewer retries.
    BudgetExceeded,
}

impl RejectReason {
    /// Every reason, in pipeline order (outermost first), budget last.
    pub const ALL: [RejectReason; 6] = [
        RejectReason::Throttled,
        RejectReason::CircuitOpen,
        RejectReason::LimiterFull,
        RejectReason::BulkheadFull,
        RejectReason::RateLimited,
        RejectReason::BudgetExceeded,
    ];

    /// The stable reason code of docs/design/spec.md §7, for logs, metric labels and HTTP headers.
    pub const fn code(self) -> &'static str {
        match self {
            RejectReason::CircuitOpen => "circuit-open",
            RejectReason::LimiterFull => "limiter-full",
            RejectReason::Throttled => "throttled",
            RejectReason::BulkheadFull => "bulkhead-full",
            RejectReason::RateLimited => "rate-limited",
            RejectReason::BudgetExceeded => "budget-exceeded",
        }
    }

    /// What the refusal means.
    pub const fn meaning(self) -> &'static str {
        match self {
            RejectReason::CircuitOpen => "the upstream looks wholly down",
            RejectReason::LimiterFull => "too many in flight for current latency",
            RejectReason::Throttled => "too many recent attempts were not accepted",
            RejectReason::BulkheadFull => "a hard concurrency cap you configured",
            RejectReason::RateLimited => "a fixed rate you configured",
            RejectReason::BudgetExceeded => "this retry was refused; the first attempt was not",
        }
    }

    /// The typical fix.
    pub const fn typical_fix(self) -> &'static str {
        match self {
            RejectReason::CircuitOpen => "wait for the probe",
            RejectReason::LimiterFull => "shed or slow down",
            RejectReason::Throttled => "back off",
            RejectReason::BulkheadFull => "raise it or queue",
            RejectReason::RateLimited => "raise it or slow down",
            RejectReason::BudgetExceeded => "fewer retries",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (typical fix: {})",
            self.code(),
            self.meaning(),
            self.typical_fix()
        )
    }
}

/// A refusal: which policy, and when it would admit again if it knows.
///
/// ```
/// use resilix::{RejectReason, Rejection};
/// use resilix::time::Instant;
///
/// let r = Rejection::until(RejectReason::RateLimited, Instant::from_millis(1_500));
/// assert_eq!(r.retry_at(), Some(Instant::from_millis(1_500)));
/// let text = format!("{r}");
/// assert!(text.starts_with("rate-limited: a fixed rate you configured"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rejection {
    reason: RejectReason,
    retry_at: Option<Instant>,
}

impl Rejection {
    /// A refusal with no known time of re-admission.
    pub const fn new(reason: RejectReason) -> Self {
        Rejection {
            reason,
            retry_at: None,
        }
    }

    /// A refusal by a policy that knows it will admit again at `retry_at` (an open breaker's
    /// next probe, a rate limiter's next token).
    pub const fn until(reason: RejectReason, retry_at: Instant) -> Self {
        Rejection {
            reason,
            retry_at: Some(retry_at),
        }
    }

    /// Which policy refused.
    pub const fn reason(&self) -> RejectReason {
        self.reason
    }

    /// When the refusing policy expects to admit again, if it knows.
    pub const fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.reason, f)?;
        if let Some(at) = self.retry_at {
            write!(f, "; admits again at {at:?}")?;
        }
        Ok(())
    }
}

impl core::error::Error for Rejection {}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::BTreeSet;
    use std::format;

    #[test]
    fn six_distinct_reasons_with_distinct_texts() {
        let codes: BTreeSet<_> = RejectReason::ALL.iter().map(|r| r.code()).collect();
        assert_eq!(codes.len(), 6);
        let texts: BTreeSet<_> = RejectReason::ALL.iter().map(|r| format!("{r}")).collect();
        assert_eq!(texts.len(), 6);
        assert_eq!(
            format!("{}", RejectReason::BulkheadFull),
            "bulkhead-full: a hard concurrency cap you configured (typical fix: raise it or queue)"
        );
    }

    #[test]
    fn rejection_is_an_error_with_retry_at() {
        fn takes_error(_: &dyn core::error::Error) {}
        let r = Rejection::new(RejectReason::Throttled);
        takes_error(&r);
        assert_eq!(r.retry_at(), None);
        assert!(
            format!(
                "{}",
                Rejection::until(RejectReason::CircuitOpen, Instant::from_secs(1))
            )
            .contains("admits again")
        );
    }
}
