//! The loop's [`Engine`] for a request through the Layer: [`Owned`].
//!
//! A request's future must be `'static` (a server spawns it), so it owns the service's
//! `Resilience` through an `Arc` rather than borrowing it, and it cannot keep a borrow of what
//! it owns across an await. It keeps its admitted attempt detached
//! ([`DetachedAttempt`]) instead, and attaches it to the pipeline again to settle or cancel it:
//! the same permits, moved, with no reference count per policy.

use std::sync::Arc;

use resilix::call::{CallOptions, CallState, Next, Stop};
use resilix::execute::{Engine, Timer};
use resilix::observe::Observer;
use resilix::permit::Detach;
use resilix::pipeline::{AsPipeline, Attempt, DetachedAttempt};
use resilix::random::SeededRandom;
use resilix::retry::RetryPolicy;
use resilix::time::{Deadline, Instant};
use resilix::verdict::Verdict;

use crate::Resilience;

/// The [`Engine`] of one request through the Layer: the service's [`Resilience`], owned
/// through an `Arc` while the request runs, and a generator of the request's own, seeded on
/// its first draw (most requests never draw).
pub struct Owned<R> {
    resilience: Arc<R>,
    rng: Option<SeededRandom>,
}

impl<R> Owned<R> {
    /// The engine of a request through `resilience`.
    pub fn new(resilience: Arc<R>) -> Self {
        Owned {
            resilience,
            rng: None,
        }
    }
}

impl<R> std::fmt::Debug for Owned<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owned")
            .field("seeded", &self.rng.is_some())
            .finish_non_exhaustive()
    }
}

/// An attempt through `P`, detached from it.
type Detached<P> = DetachedAttempt<
    <P as AsPipeline>::Throttler,
    <P as AsPipeline>::Breaker,
    <P as AsPipeline>::Limiter,
    <P as AsPipeline>::Bulkhead,
    <P as AsPipeline>::RateLimit,
>;

impl<P, O, C> Engine for Owned<Resilience<P, O, C>>
where
    P: AsPipeline,
    P::Throttler: Detach,
    P::Breaker: Detach,
    P::Limiter: Detach,
    P::Bulkhead: Detach,
    P::RateLimit: Detach,
    O: Observer,
{
    type RetryState = <P::Retry as RetryPolicy>::State;
    type Held = Detached<P>;
    type Sleep = tokio::time::Sleep;
    type Observer = O;
    type Classifier = C;

    #[inline]
    fn now(&self) -> Instant {
        self.resilience.timer().now()
    }

    #[inline]
    fn sleep_until(&self, at: Instant) -> tokio::time::Sleep {
        self.resilience.timer().sleep_until(at)
    }

    #[inline]
    fn begin(&mut self, now: Instant, options: CallOptions) -> CallState<Self::RetryState> {
        self.resilience.pipeline().as_pipeline().begin(now, options)
    }

    #[inline]
    fn admit(
        &mut self,
        call: &mut CallState<Self::RetryState>,
        now: Instant,
    ) -> Result<Detached<P>, Stop> {
        let resilience = &*self.resilience;
        let mut rng = resilience.lazy_rng(&mut self.rng);
        let mut env = resilience.env(now, &mut rng);
        let pipeline = resilience.pipeline().as_pipeline();
        pipeline.admit_next(call, &mut env).map(Attempt::detach)
    }

    #[inline]
    fn deadline(held: &Detached<P>) -> Option<Deadline> {
        held.deadline()
    }

    #[inline]
    fn settle(
        &mut self,
        call: &mut CallState<Self::RetryState>,
        held: Detached<P>,
        verdict: &Verdict,
        now: Instant,
    ) -> Next {
        let resilience = &*self.resilience;
        let mut rng = resilience.lazy_rng(&mut self.rng);
        let mut env = resilience.env(now, &mut rng);
        let pipeline = resilience.pipeline().as_pipeline();
        pipeline.settle_attempt(call, pipeline.attach(held), verdict, &mut env)
    }

    #[inline]
    fn cancel(&mut self, held: Detached<P>) {
        drop(self.resilience.pipeline().as_pipeline().attach(held));
    }

    #[inline]
    fn observer(&self) -> &O {
        self.resilience.observer_ref()
    }

    #[inline]
    fn classifier(&self) -> &C {
        self.resilience.classifier_ref()
    }
}
