//! What one attempt's outcome means, for every policy at once.
//!
//! A classifier turns a call's result into a [`Verdict`]; each policy then reads the verdict
//! its own way (docs/design/contracts.md §6):
//!
//! | verdict | breaker | throttler | retry | budget | limiter |
//! |---|---|---|---|---|---|
//! | `Success` | success | accept | done | — | latency sample |
//! | `Answered` | success | accept | never retried | — | latency sample |
//! | `Overload` | failure | not accept | after Retry-After if given | spends on retry | drop signal |
//! | `Transient` | failure | not accept | yes | spends on retry | — |
//! | `Uncertain` | failure | not accept | yes, unless set idempotent-only | spends on retry | — |
//! | `Timeout` | failure | not accept | only if idempotent | spends on retry | drop signal |
//! | `Rejected` | invisible | invisible | never retried | — | invisible |
//!
//! `Uncertain` is ours, the seventh, beside docs/design/contracts.md §6's six: a failure after which the
//! upstream may have acted on the request (an HTTP 500 or 502). `Transient` promises the
//! opposite — a failure that did not act, which a retry cannot make worse. Every statistic
//! reads `Uncertain` as `Transient`, and so, by default, does retry (docs/design/spec.md §3.2:
//! transient failures are retried): **a POST answered 500 is sent again, and may run twice.**
//! That is safe when the request carries an idempotency key the server deduplicates on. The
//! one setting that stops it is
//! [`RetryConfig::with_uncertain_retry`](crate::retry::RetryConfig::with_uncertain_retry)`(`[`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly)`)`:
//! an `Uncertain` failure is then retried only for a call declared idempotent, like
//! `Timeout` (RFC 9110 §9.2.2: a client "SHOULD NOT automatically retry a request with a
//! non-idempotent method"), and a POST gives up with `NotRetryable(Uncertain)`. The verdict
//! exists so that this choice can be made at all.

use core::fmt;
use core::time::Duration;

use crate::rejection::RejectReason;

/// The meaning of one attempt's outcome.
///
/// ```
/// use core::time::Duration;
/// use resilix::Verdict;
///
/// let v = Verdict::Overload { retry_after: Some(Duration::from_secs(2)) };
/// assert!(v.is_failure());
/// assert!(!v.is_accept());
/// assert!(Verdict::Answered.is_accept()); // a 404 means the upstream worked
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// The call did what was asked.
    Success,
    /// The upstream worked, but the caller was wrong (a 4xx). Never retried: a retry cannot
    /// change the answer.
    Answered,
    /// The upstream said it is overloaded (429, 503), optionally with how long to wait.
    Overload {
        /// The upstream's `Retry-After`, relative to when the verdict was reached.
        retry_after: Option<Duration>,
    },
    /// A failure that a retry may not repeat and that did not act on the request (connection
    /// refused, a 408, a 421): retried for any call.
    Transient,
    /// A failure after which the upstream may have acted on the request (a 500, a 502): it
    /// failed, but perhaps after doing the work. Counted as a failure like [`Transient`]
    /// (breaker failure, throttler not accept, no limiter signal) and, by default, retried
    /// like it for any call (docs/design/spec.md §3.2), so a POST may run twice; under
    /// [`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly) it is
    /// retried only when the caller declared the operation idempotent, like [`Timeout`].
    ///
    /// [`Transient`]: Verdict::Transient
    /// [`Timeout`]: Verdict::Timeout
    Uncertain,
    /// No answer in time. The attempt may still be running upstream, so it is retried only when
    /// the caller declared the operation idempotent.
    Timeout,
    /// We refused the call ourselves (a policy in a nested pipeline); the upstream never saw it.
    /// Invisible to every statistic and never retried.
    Rejected(RejectReason),
}

impl Verdict {
    /// Whether the breaker counts this as a failure: overload, transient, uncertain, timeout.
    pub const fn is_failure(&self) -> bool {
        matches!(
            self,
            Verdict::Overload { .. } | Verdict::Transient | Verdict::Uncertain | Verdict::Timeout
        )
    }

    /// Whether the upstream may have acted on the request although the attempt failed
    /// (`Uncertain`, `Timeout`): a retry may do the work twice. A timeout is retried only for
    /// an idempotent call; an uncertain failure too under
    /// [`UncertainRetry::IdempotentOnly`](crate::retry::UncertainRetry::IdempotentOnly).
    ///
    /// ```
    /// use resilix::Verdict;
    /// assert!(Verdict::Uncertain.may_have_acted());
    /// assert!(Verdict::Timeout.may_have_acted());
    /// assert!(!Verdict::Transient.may_have_acted());
    /// ```
    pub const fn may_have_acted(&self) -> bool {
        matches!(self, Verdict::Uncertain | Verdict::Timeout)
    }

    /// Whether the upstream did the work (the throttler's "accept"): success and answered.
    pub const fn is_accept(&self) -> bool {
        matches!(self, Verdict::Success | Verdict::Answered)
    }

    /// Whether any statistic may count this outcome: everything but `Rejected`.
    pub const fn is_counted(&self) -> bool {
        !matches!(self, Verdict::Rejected(_))
    }

    /// The upstream's `Retry-After`, if this is an overload that carried one.
    pub const fn retry_after(&self) -> Option<Duration> {
        match self {
            Verdict::Overload { retry_after } => *retry_after,
            _ => None,
        }
    }

    /// The verdict's kind, without its payload (for events, metrics and give-up reasons).
    pub const fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Success => VerdictKind::Success,
            Verdict::Answered => VerdictKind::Answered,
            Verdict::Overload { .. } => VerdictKind::Overload,
            Verdict::Transient => VerdictKind::Transient,
            Verdict::Uncertain => VerdictKind::Uncertain,
            Verdict::Timeout => VerdictKind::Timeout,
            Verdict::Rejected(_) => VerdictKind::Rejected,
        }
    }
}

/// A [`Verdict`] without its payload.
///
/// ```
/// use resilix::{Verdict, VerdictKind};
/// assert_eq!(Verdict::Timeout.kind(), VerdictKind::Timeout);
/// assert_eq!(VerdictKind::Overload.as_str(), "overload");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VerdictKind {
    /// See [`Verdict::Success`].
    Success,
    /// See [`Verdict::Answered`].
    Answered,
    /// See [`Verdict::Overload`].
    Overload,
    /// See [`Verdict::Transient`].
    Transient,
    /// See [`Verdict::Uncertain`].
    Uncertain,
    /// See [`Verdict::Timeout`].
    Timeout,
    /// See [`Verdict::Rejected`].
    Rejected,
}

impl VerdictKind {
    /// Every kind, in declaration order (for metrics tables).
    pub const ALL: [VerdictKind; 7] = [
        VerdictKind::Success,
        VerdictKind::Answered,
        VerdictKind::Overload,
        VerdictKind::Transient,
        VerdictKind::Uncertain,
        VerdictKind::Timeout,
        VerdictKind::Rejected,
    ];

    /// A stable lower-case name, for logs and metric labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Success => "success",
            VerdictKind::Answered => "answered",
            VerdictKind::Overload => "overload",
            VerdictKind::Transient => "transient",
            VerdictKind::Uncertain => "uncertain",
            VerdictKind::Timeout => "timeout",
            VerdictKind::Rejected => "rejected",
        }
    }
}

impl fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_accounting_table_of_design_section_6() {
        let overload = Verdict::Overload { retry_after: None };
        let rejected = Verdict::Rejected(RejectReason::BulkheadFull);
        // (verdict, breaker failure, throttler accept, counted at all)
        let table = [
            (Verdict::Success, false, true, true),
            (Verdict::Answered, false, true, true),
            (overload, true, false, true),
            (Verdict::Transient, true, false, true),
            (Verdict::Uncertain, true, false, true),
            (Verdict::Timeout, true, false, true),
            (rejected, false, false, false),
        ];
        for (v, failure, accept, counted) in table {
            assert_eq!(v.is_failure(), failure, "{v:?}");
            assert_eq!(v.is_accept(), accept, "{v:?}");
            assert_eq!(v.is_counted(), counted, "{v:?}");
        }
    }

    #[test]
    fn retry_after_only_from_overload() {
        let d = Duration::from_secs(3);
        assert_eq!(
            Verdict::Overload {
                retry_after: Some(d)
            }
            .retry_after(),
            Some(d)
        );
        assert_eq!(Verdict::Transient.retry_after(), None);
    }

    #[test]
    fn kinds_are_distinct_and_named() {
        for (i, a) in VerdictKind::ALL.iter().enumerate() {
            for b in &VerdictKind::ALL[i + 1..] {
                assert_ne!(a.as_str(), b.as_str());
            }
        }
    }
}
