//! Which policy, if any, a request's attempts wait on before they are admitted: the [`Gate`]
//! of the Layer's loop, chosen by [`ResilienceLayer`](super::ResilienceLayer).

use std::ops::Deref;
use std::sync::Arc;

use resilix::execute::Gate;
use resilix::pipeline::AsPipeline;
use resilix::waiters::{WaitGate, Waitable};

use crate::{Resilience, TokioTimer};

/// Which policy, if any, an attempt waits on before it is admitted: the [`Gate`] the loop
/// holds each attempt at. Chosen by the Layer ([`ResilienceLayer::wait_for_bulkhead`](super::ResilienceLayer::wait_for_bulkhead)).
pub trait Wait<R> {
    /// The gate, owning what it waits on (a request's future is `'static`).
    type Gate: Gate;

    /// The gate on `resilience`'s policy.
    fn gate(resilience: &Arc<R>) -> Self::Gate;
}

/// Attempts never wait: a full policy refuses at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWait;

/// Attempts wait for a slot in the pipeline's bulkhead.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForBulkhead;

/// Attempts wait in the pipeline's adaptive limiter's queue zone.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForLimiter;

impl<R> Wait<R> for NoWait {
    type Gate = ();

    #[inline(always)]
    fn gate(_resilience: &Arc<R>) {}
}

impl<P, O, C> Wait<Resilience<P, O, C>> for ForBulkhead
where
    P: AsPipeline,
    P::Bulkhead: Waitable,
{
    type Gate = WaitGate<BulkheadOf<Resilience<P, O, C>>, TokioTimer>;

    fn gate(resilience: &Arc<Resilience<P, O, C>>) -> Self::Gate {
        WaitGate::new(BulkheadOf(Arc::clone(resilience)), *resilience.timer())
    }
}

impl<P, O, C> Wait<Resilience<P, O, C>> for ForLimiter
where
    P: AsPipeline,
    P::Limiter: Waitable,
{
    type Gate = WaitGate<LimiterOf<Resilience<P, O, C>>, TokioTimer>;

    fn gate(resilience: &Arc<Resilience<P, O, C>>) -> Self::Gate {
        WaitGate::new(LimiterOf(Arc::clone(resilience)), *resilience.timer())
    }
}

/// The pipeline's bulkhead, reached through the `Resilience` a request owns: what a waiting
/// request's gate holds (one `Arc` clone per request and per wait, paid only by a Layer that
/// waits).
pub struct BulkheadOf<R>(Arc<R>);

/// The pipeline's adaptive limiter, reached as [`BulkheadOf`] reaches the bulkhead.
pub struct LimiterOf<R>(Arc<R>);

impl<R> std::fmt::Debug for BulkheadOf<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkheadOf").finish_non_exhaustive()
    }
}

impl<R> std::fmt::Debug for LimiterOf<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimiterOf").finish_non_exhaustive()
    }
}

impl<R> Clone for BulkheadOf<R> {
    fn clone(&self) -> Self {
        BulkheadOf(Arc::clone(&self.0))
    }
}

impl<R> Clone for LimiterOf<R> {
    fn clone(&self) -> Self {
        LimiterOf(Arc::clone(&self.0))
    }
}

impl<P: AsPipeline, O, C> Deref for BulkheadOf<Resilience<P, O, C>> {
    type Target = P::Bulkhead;

    fn deref(&self) -> &P::Bulkhead {
        self.0.pipeline().as_pipeline().bulkhead_ref()
    }
}

impl<P: AsPipeline, O, C> Deref for LimiterOf<Resilience<P, O, C>> {
    type Target = P::Limiter;

    fn deref(&self) -> &P::Limiter {
        self.0.pipeline().as_pipeline().limiter_ref()
    }
}
