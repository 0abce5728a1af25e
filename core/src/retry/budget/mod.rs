//! Retry budgets: how much of the traffic may be retries, shared by every retry policy (and
//! later every hedge) in the process.
//!
//! A per-call attempt cap bounds one call; it does not bound the system. Three attempts per
//! call still triple the load on an upstream that fails everything (Google SRE: "somewhere
//! just below 3X"). A budget is one `&self` object passed to every [`Retry`](super::Retry), so
//! it bounds the retries of the whole process, whichever pipeline makes them.
//!
//! Three kinds, behind one trait, [`RetryBudget`]:
//!
//! * [`RatioBudget`]: Google SRE's per-client budget, retries at most 10% of requests over a
//!   sliding window, with a floor of retries per window so a quiet service can still retry
//!   (failsafe-go's `minConcurrency` idea, docs/design/spec.md §4). It bounds load: amplification ≤ 1.1×.
//! * [`TokenBucket`]: Brooker's adaptive retries, gRPC A6 retry throttling and the AWS SDK
//!   retry quota. Successes deposit, retries (or failures) withdraw, and below a threshold
//!   retries stop. It favours availability: a full bucket lets a burst of retries through.
//! * [`RetryBreaker`]: Brooker's retry circuit breaker: every retry while the recent failure
//!   rate is at most a threshold (10%), none above it. It favours load: above the threshold
//!   the system does no extra work at all.
//!
//! Neither is ideal, and we do not present a budget as a solved problem. Marc Brooker
//! ("Fixing retries with token buckets and circuit breakers", 2022) simulated both shapes: the
//! retry circuit breaker "is tripping too early" when many clients each see few calls, while
//! the token bucket "doesn't deplete its bucket fast enough", converging on plain N retries.
//! His conclusion: the choice depends on whether you are optimising for availability or for
//! load. [`Unlimited`] is the absent budget.
//!
//! # Per-key budgets (docs/design/spec.md §9)
//!
//! A shared budget bounds the process, so one hostile or broken key (a tenant, an endpoint)
//! can spend all of it and leave other keys without retries. [`KeyedBudget`] answers it: a
//! fixed table of small per-key ratio budgets under the shared one, a retry made only when
//! both grant it, the key asked first and refunded if the shared budget refuses, so neither
//! pays for a retry that is not made. With the default per-key ratio (the shared 10%), each
//! key can spend only its own traffic's share. Memory is fixed by the table's size; see
//! [`keyed`] for the reasoning, the table's rules and the cost per key.
//!
//! Design notes: docs/design/retry-and-budgets.md

pub mod circuit;
mod control;
pub mod keyed;
pub mod ratio;
pub mod token_bucket;

pub use circuit::{RetryBreaker, RetryBreakerConfig};
pub use keyed::{ForKey, KeyedBudget, KeyedBudgetError, PER_KEY_DEFAULT};
pub use ratio::{RatioBudget, RatioBudgetConfig};
pub use token_bucket::{
    Charge, RetrySuccess, TokenBucket, TokenBucketConfig, TokenBucketReconfigureError, Tokens,
};

use core::fmt;

use crate::time::Instant;
use crate::verdict::VerdictKind;

/// A shared account of how many retries the process may make.
///
/// Methods take `&self` and are lock-free: one budget serves any number of retry policies
/// across pipelines, tasks, threads and interrupt handlers. The retry policy calls them in a
/// fixed pattern, so each kind can do its own accounting:
///
/// * [`record_first_attempt`](Self::record_first_attempt) when a call's first attempt settles
///   (never for `Rejected`: a refused call was not a request);
/// * [`try_spend`](Self::try_spend) only when a retry is otherwise going to happen (it is
///   retryable, attempts remain, the deadline allows it), so "budget said no" is never
///   confused with "not retried anyway";
/// * [`record_unretried_failure`](Self::record_unretried_failure) for a retryable failure that
///   will not be retried for another reason (gRPC charges every such failure);
/// * [`record_success`](Self::record_success) when a call ends in `Success`.
///
/// ```
/// use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig};
/// use resilix::time::Instant;
/// use resilix::VerdictKind;
///
/// let bucket = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?;
/// assert!(bucket.try_spend(Instant::ZERO, VerdictKind::Transient));
/// // A shared reference is a budget too, so many policies can hold the same one.
/// fn takes_budget(b: impl RetryBudget) -> bool { b.try_spend(Instant::ZERO, VerdictKind::Timeout) }
/// assert!(takes_budget(&bucket));
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
pub trait RetryBudget {
    /// A call's first attempt settled at `now` with a counted verdict.
    fn record_first_attempt(&self, now: Instant);

    /// A retry is about to be scheduled after a failure of kind `after`: spend for it and
    /// answer `true`, or refuse with `false`. Exact under concurrency for the token bucket.
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool;

    /// A retryable failure of kind `after` that will not be retried for another reason
    /// (attempts exhausted, deadline). Records only; never refuses.
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind);

    /// A call ended in `Success` at `now`. `retried_after` is the kind of failure that caused
    /// the last retry, or `None` if the first attempt succeeded.
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>);
}

impl<B: RetryBudget + ?Sized> RetryBudget for &B {
    #[inline]
    fn record_first_attempt(&self, now: Instant) {
        (**self).record_first_attempt(now)
    }
    #[inline]
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        (**self).try_spend(now, after)
    }
    #[inline]
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        (**self).record_unretried_failure(now, after)
    }
    #[inline]
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        (**self).record_success(now, retried_after)
    }
}

/// The absent budget: every retry the policy wants is granted; nothing is recorded.
///
/// ```
/// use resilix::retry::budget::{RetryBudget, Unlimited};
/// use resilix::time::Instant;
/// use resilix::VerdictKind;
///
/// assert!(Unlimited.try_spend(Instant::MAX, VerdictKind::Overload));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unlimited;

impl RetryBudget for Unlimited {
    #[inline(always)]
    fn record_first_attempt(&self, _now: Instant) {}
    #[inline(always)]
    fn try_spend(&self, _now: Instant, _after: VerdictKind) -> bool {
        true
    }
    #[inline(always)]
    fn record_unretried_failure(&self, _now: Instant, _after: VerdictKind) {}
    #[inline(always)]
    fn record_success(&self, _now: Instant, _retried_after: Option<VerdictKind>) {}
}

/// Why a budget configuration was refused.
///
/// ```
/// use resilix::retry::budget::{BudgetConfigError, TokenBucketConfig, Tokens};
///
/// assert_eq!(
///     TokenBucketConfig::grpc(Tokens::whole(1001), Tokens::milli(100)),
///     Err(BudgetConfigError::GrpcMaxTokensOutOfRange)
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BudgetConfigError {
    /// A ratio budget over a zero-length window, or with zero buckets.
    EmptyWindow,
    /// A ratio budget with a zero ratio and a zero floor: it could never retry.
    NeverRetries,
    /// A token bucket with zero capacity.
    ZeroCapacity,
    /// A token bucket that starts with more tokens than it can hold.
    InitialAboveCapacity,
    /// A token bucket whose capacity is above [`TokenBucketConfig::MAX_CAPACITY`]
    /// (2,147,483.647 tokens).
    CapacityAboveMax,
    /// A retry cost of zero: nothing would ever be spent (use `Unlimited` for that).
    ZeroCost,
    /// The floor plus the cheapest retry exceeds the capacity: no retry could ever be granted.
    FloorUnreachable,
    /// gRPC A6 requires `maxTokens` in (0, 1000].
    GrpcMaxTokensOutOfRange,
    /// gRPC A6 requires `tokenRatio` above zero (to three decimals).
    GrpcZeroTokenRatio,
    /// A ratio budget allowing more than one retry per first attempt (above 1000 per mille).
    RatioAboveOne,
    /// A ratio budget whose window is shorter than `B × 8 ns`, the shortest its buckets can be
    /// (the retry breaker's window too).
    WindowShorterThanBuckets,
    /// A retry breaker with a failure threshold of zero: every retry follows a failure, so it
    /// could never retry.
    FailureThresholdZero,
    /// A retry breaker with a failure threshold of 1000 per mille or more: it could never trip.
    FailureThresholdNotBelowOne,
    /// A retry breaker whose `min_attempts` its window can never hold (more than one attempt
    /// per 10 ns, or `u32::MAX`).
    MinAttemptsUnreachable,
}

impl fmt::Display for BudgetConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BudgetConfigError::EmptyWindow => {
                "the budget window must be longer than zero and have at least one bucket"
            }
            BudgetConfigError::NeverRetries => {
                "a ratio of 0 with a floor of 0 never allows a retry (use NoRetry instead)"
            }
            BudgetConfigError::ZeroCapacity => "the token bucket's capacity must be above zero",
            BudgetConfigError::InitialAboveCapacity => {
                "the token bucket must not start with more tokens than its capacity"
            }
            BudgetConfigError::CapacityAboveMax => {
                "the token bucket's capacity must be at most 2147483.647 tokens (gRPC A6 allows \
                 at most 1000, the AWS SDK uses 500)"
            }
            BudgetConfigError::ZeroCost => {
                "a retry must cost some tokens (use Unlimited for a budget that never refuses)"
            }
            BudgetConfigError::FloorUnreachable => {
                "floor + retry cost exceeds the capacity: no retry could ever be granted"
            }
            BudgetConfigError::GrpcMaxTokensOutOfRange => {
                "gRPC A6 maxTokens must be above 0 and at most 1000"
            }
            BudgetConfigError::GrpcZeroTokenRatio => {
                "gRPC A6 tokenRatio must be above 0 (three decimals are kept)"
            }
            BudgetConfigError::RatioAboveOne => {
                "max_retry_permille must be at most 1000 (one retry per first attempt); more \
                 retries than calls bounds nothing (Google SRE uses 100, i.e. 10%)"
            }
            BudgetConfigError::WindowShorterThanBuckets => {
                "the budget's window must be at least 8 ns per bucket (B x 8 ns)"
            }
            BudgetConfigError::FailureThresholdZero => {
                "max_failure_permille must be above 0: every retry follows a failure, so a \
                 zero threshold never retries (use NoRetry instead; Brooker uses 100, i.e. 10%)"
            }
            BudgetConfigError::FailureThresholdNotBelowOne => {
                "max_failure_permille must be below 1000: a failure rate never exceeds 100%, \
                 so the breaker would never trip (use Unlimited for that)"
            }
            BudgetConfigError::MinAttemptsUnreachable => {
                "min_attempts must be reachable within the window: at most one attempt per \
                 10 ns of it, and below u32::MAX"
            }
        })
    }
}

impl core::error::Error for BudgetConfigError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn unlimited_grants_everything_and_references_delegate() {
        let u = Unlimited;
        for kind in VerdictKind::ALL {
            assert!(u.try_spend(Instant::MAX, kind));
        }
        let bucket = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
        let by_ref = &bucket;
        assert!(by_ref.try_spend(Instant::ZERO, VerdictKind::Timeout));
        by_ref.record_unretried_failure(Instant::ZERO, VerdictKind::Timeout);
        by_ref.record_first_attempt(Instant::ZERO);
        assert_eq!(
            bucket.balance(),
            Tokens::whole(490),
            "the reference spent from the bucket"
        );
        by_ref.record_success(Instant::ZERO, Some(VerdictKind::Timeout));
        assert_eq!(bucket.balance(), Tokens::whole(500));
    }

    #[test]
    fn every_config_error_has_its_own_text() {
        extern crate std;
        use std::string::ToString;
        let all = [
            BudgetConfigError::EmptyWindow,
            BudgetConfigError::NeverRetries,
            BudgetConfigError::ZeroCapacity,
            BudgetConfigError::InitialAboveCapacity,
            BudgetConfigError::ZeroCost,
            BudgetConfigError::FloorUnreachable,
            BudgetConfigError::GrpcMaxTokensOutOfRange,
            BudgetConfigError::GrpcZeroTokenRatio,
            BudgetConfigError::RatioAboveOne,
            BudgetConfigError::WindowShorterThanBuckets,
            BudgetConfigError::FailureThresholdZero,
            BudgetConfigError::FailureThresholdNotBelowOne,
            BudgetConfigError::MinAttemptsUnreachable,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.to_string(), b.to_string());
            }
        }
    }
}
