//! Policies shared by ownership: `Arc<P>` is the policy `P` (feature `alloc`).
//!
//! A process usually wants one breaker per upstream and one retry budget for everything, held
//! by every pipeline and every task that calls out. A `&P` already works (`static`s, borrowed
//! instances), but a tokio task wants `'static` data it owns, and without this module that
//! meant a `static`, a `LazyLock` or `Box::leak`. With `alloc` on, an [`Arc`] of a policy, a
//! retry budget or a retry policy plugs into the same slot as the value itself:
//!
//! * `Arc<P>` is a [`Policy`] with `P`'s permit: admitting through the `Arc` is admitting
//!   through `P` (one pointer hop, no reference count touched per call: the permit borrows the
//!   policy inside the `Arc`, exactly as it borrows an owned one).
//! * `Arc<B>` is a [`RetryBudget`]: `Retry::new(config, budget.clone())` spends from the one
//!   bucket every clone points to.
//! * `Arc<R>` is a [`RetryPolicy`], for one retry configuration shared as a whole.
//!
//! The state still lives in the policy's atomics, so sharing by `Arc` changes who owns the
//! memory, never the decisions: a clone is the same policy, not a copy of its state.
//!
//! ```
//! use std::sync::Arc;
//! use resilix::breaker::{Breaker, Config};
//! use resilix::call::{CallOptions, Next};
//! use resilix::permit::Env;
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
//! use resilix::retry::{Retry, RetryConfig};
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! // One budget for the process, one breaker for the upstream; two pipelines own them.
//! let budget = Arc::new(TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?);
//! let breaker = Arc::new(Breaker::new(Config::DEFAULT).unwrap());
//! let reads = Pipeline::new()
//!     .retry(Retry::new(RetryConfig::DEFAULT, budget.clone()))
//!     .breaker(breaker.clone());
//! let writes = Pipeline::new()
//!     .retry(Retry::new(RetryConfig::DEFAULT, budget.clone()))
//!     .breaker(breaker);
//!
//! let mut rng = SeededRandom::new(3);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let full = budget.balance();
//! let mut call = reads.call(env.now, CallOptions::default());
//! let attempt = call.admit(&mut env).unwrap();
//! assert!(matches!(call.settle(attempt, &Verdict::Transient, &mut env), Next::RetryAt(_)));
//! // The retry `reads` planned spent from the bucket `writes` holds too.
//! assert!(writes.retry_policy().budget().balance() < full);
//! # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
//! ```

use alloc::sync::Arc;

use crate::observe::{Event, Observer};
use crate::permit::{Detach, Env, Policy};
use crate::random::Random;
use crate::rejection::Rejection;
use crate::retry::budget::RetryBudget;
use crate::retry::{AttemptOutcome, RetryDecision, RetryPolicy};
use crate::time::Instant;
use crate::verdict::VerdictKind;

/// An `Arc` of a policy is the policy: every clone admits through the one instance.
///
/// The permit is `P`'s own, borrowing the policy inside the `Arc` for as long as the pipeline
/// that holds the `Arc` is borrowed, so a pipeline of `Arc`s behaves (and is `Send`) exactly
/// like a pipeline of owned policies.
///
/// ```
/// use std::sync::Arc;
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix::permit::{Env, Policy};
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
/// use resilix::RejectReason;
///
/// let bulkhead = Arc::new(Bulkhead::new(BulkheadConfig::new(1)?));
/// let other = bulkhead.clone();
/// let mut rng = SeededRandom::new(1);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let held = bulkhead.admit(&mut env).unwrap();
/// // The clone is the same bulkhead: its one slot is taken.
/// assert_eq!(other.admit(&mut env).unwrap_err().reason(), RejectReason::BulkheadFull);
/// drop(held);
/// assert!(other.admit(&mut env).is_ok());
/// # Ok::<(), resilix::bulkhead::BulkheadConfigError>(())
/// ```
impl<P: Policy + ?Sized> Policy for Arc<P> {
    type Permit<'a>
        = P::Permit<'a>
    where
        Self: 'a;

    #[inline(always)]
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<Self::Permit<'_>, Rejection> {
        (**self).admit(env)
    }
}

/// An `Arc`'s permits detach as its policy's do.
impl<P: Detach + ?Sized> Detach for Arc<P> {
    type Detached = P::Detached;

    #[inline(always)]
    fn detach(permit: P::Permit<'_>) -> P::Detached {
        P::detach(permit)
    }

    #[inline(always)]
    fn attach(&self, detached: P::Detached) -> P::Permit<'_> {
        (**self).attach(detached)
    }
}

/// An `Arc` of a retry budget is the budget: one process-wide bucket, owned by every retry
/// policy that spends from it.
///
/// ```
/// use std::sync::Arc;
/// use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig};
/// use resilix::time::Instant;
/// use resilix::VerdictKind;
///
/// let budget = Arc::new(TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?);
/// let handle = budget.clone();
/// let full = budget.balance();
/// assert!(handle.try_spend(Instant::ZERO, VerdictKind::Transient));
/// assert!(budget.balance() < full, "the clone spent from the same bucket");
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
impl<B: RetryBudget + ?Sized> RetryBudget for Arc<B> {
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

/// An `Arc` of a retry policy is the retry policy (its per-call state is still per call).
///
/// ```
/// use std::sync::Arc;
/// use resilix::pipeline::Pipeline;
/// use resilix::retry::{Retry, RetryConfig};
///
/// let retry = Arc::new(Retry::unbudgeted(RetryConfig::DEFAULT));
/// let a = Pipeline::new().retry(retry.clone());
/// let b = Pipeline::new().retry(retry);
/// assert!(Arc::ptr_eq(a.retry_policy(), b.retry_policy()));
/// ```
impl<P: RetryPolicy + ?Sized> RetryPolicy for Arc<P> {
    type State = P::State;

    #[inline]
    fn begin(&self, now: Instant) -> P::State {
        (**self).begin(now)
    }

    #[inline]
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        state: &mut P::State,
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        (**self).decide(state, outcome, env)
    }
}

/// An observer shared by `Arc`: every pipeline and every admin handler that holds a clone
/// reports to the one observer (a metrics bridge, a counter an endpoint reads).
///
/// ```
/// use std::sync::Arc;
/// use resilix::observe::{DurationHistogram, Event, Observer};
/// use resilix::Verdict;
///
/// let latency = Arc::new(DurationHistogram::new());
/// let heard: Arc<DurationHistogram> = latency.clone();
/// heard.on_event(&Event::Executed { verdict: Verdict::Success, duration: core::time::Duration::from_millis(3) });
/// assert_eq!(latency.count(), 1);
/// ```
impl<O: Observer + ?Sized> Observer for Arc<O> {
    #[inline]
    fn on_event(&self, event: &Event) {
        (**self).on_event(event)
    }
}
