//! What the retry loop ([`Drive`](super::Drive)) steps through, and how it keeps what it holds
//! between polls: an [`Engine`].
//!
//! The loop is one state machine for every driver; an engine is what differs. [`Borrowed`]
//! borrows each part from its caller ([`execute`](super::execute)): it keeps the call's
//! attempt as the pipeline's [`Attempt`], borrowing the pipeline. (`Resilience::execute`'s,
//! `resilience::Lent`, lives with `Resilience`.) A future that owns its
//! pipeline (the tower Layer's, through an `Arc`) cannot keep a borrow of what it owns, so its
//! engine keeps the attempt detached ([`DetachedAttempt`](crate::pipeline::DetachedAttempt))
//! and attaches it again to settle or cancel it.

use core::future::Future;

use crate::call::{CallOptions, CallState, Next, Stop};
use crate::observe::Observer;
use crate::permit::Env;
use crate::pipeline::{AsPipeline, Attempt};
use crate::random::Random;
use crate::retry::RetryPolicy;
use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

use super::Timer;

/// The parts of one call the loop steps through: its pipeline, clock and sleep, randomness,
/// observer and classifier, and how it keeps an admitted attempt while the attempt runs.
///
/// Implemented by [`Borrowed`] for [`execute`](super::execute), and by the tokio adapter for
/// its tower Layer. A runtime adds a [`Timer`], not an engine.
pub trait Engine {
    /// The retry policy's state for one call.
    type RetryState;
    /// An admitted attempt, kept while it runs.
    type Held;
    /// A sleep until an instant (a retry's delay, an attempt's deadline).
    type Sleep: Future<Output = ()>;
    /// Hears the loop's events.
    type Observer: Observer + ?Sized;
    /// Turns each attempt's output into a verdict.
    type Classifier: ?Sized;

    /// The current instant, on the timeline the sleeps use.
    fn now(&self) -> Instant;

    /// A sleep that completes at `at`.
    fn sleep_until(&self, at: Instant) -> Self::Sleep;

    /// Starts the call at `now`.
    fn begin(&mut self, now: Instant, options: CallOptions) -> CallState<Self::RetryState>;

    /// Admits the call's next attempt at `now`.
    fn admit(
        &mut self,
        call: &mut CallState<Self::RetryState>,
        now: Instant,
    ) -> Result<Self::Held, Stop>;

    /// The instant the attempt is raced against, if any.
    fn deadline(held: &Self::Held) -> Option<Deadline>;

    /// Settles the attempt with its verdict at `now`, and decides what the call does next.
    fn settle(
        &mut self,
        call: &mut CallState<Self::RetryState>,
        held: Self::Held,
        verdict: &Verdict,
        now: Instant,
    ) -> Next;

    /// The attempt was cancelled (its future dropped while it ran): give back what it holds
    /// and record nothing.
    fn cancel(&mut self, held: Self::Held);

    /// The observer.
    fn observer(&self) -> &Self::Observer;

    /// The classifier.
    fn classifier(&self) -> &Self::Classifier;
}

/// The [`Engine`] of parts borrowed from the caller, for as long as the call runs: what
/// [`execute`](super::execute) and [`execute_gated`](super::execute_gated) drive.
pub struct Borrowed<'a, P: ?Sized, Tm: ?Sized, R: ?Sized, O: ?Sized, C: ?Sized> {
    pipeline: &'a P,
    timer: &'a Tm,
    rng: &'a mut R,
    observer: &'a O,
    classifier: &'a C,
}

impl<'a, P: ?Sized, Tm: ?Sized, R: ?Sized, O: ?Sized, C: ?Sized> Borrowed<'a, P, Tm, R, O, C> {
    /// The engine over these parts.
    pub fn new(
        pipeline: &'a P,
        timer: &'a Tm,
        rng: &'a mut R,
        observer: &'a O,
        classifier: &'a C,
    ) -> Self {
        Borrowed {
            pipeline,
            timer,
            rng,
            observer,
            classifier,
        }
    }
}

impl<P: ?Sized, Tm: ?Sized, R: ?Sized, O: ?Sized, C: ?Sized> core::fmt::Debug
    for Borrowed<'_, P, Tm, R, O, C>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Borrowed").finish_non_exhaustive()
    }
}

/// The attempt an engine over `P` admits, borrowing the pipeline for `'a`.
pub(crate) type AttemptOf<'a, P> = Attempt<
    'a,
    <P as AsPipeline>::Throttler,
    <P as AsPipeline>::Breaker,
    <P as AsPipeline>::Limiter,
    <P as AsPipeline>::Bulkhead,
    <P as AsPipeline>::RateLimit,
>;

impl<'a, P, Tm, R, O, C> Engine for Borrowed<'a, P, Tm, R, O, C>
where
    P: AsPipeline + ?Sized,
    Tm: Timer + ?Sized,
    R: Random + ?Sized,
    O: Observer + ?Sized,
    C: ?Sized,
{
    type RetryState = <P::Retry as RetryPolicy>::State;
    type Held = AttemptOf<'a, P>;
    type Sleep = Tm::Sleep<'a>;
    type Observer = O;
    type Classifier = C;

    #[inline]
    fn now(&self) -> Instant {
        self.timer.now()
    }

    #[inline]
    fn sleep_until(&self, at: Instant) -> Tm::Sleep<'a> {
        let timer: &'a Tm = self.timer;
        timer.sleep_until(at)
    }

    #[inline]
    fn begin(&mut self, now: Instant, options: CallOptions) -> CallState<Self::RetryState> {
        self.pipeline.as_pipeline().begin(now, options)
    }

    #[inline]
    fn admit(
        &mut self,
        call: &mut CallState<Self::RetryState>,
        now: Instant,
    ) -> Result<AttemptOf<'a, P>, Stop> {
        let pipeline: &'a P = self.pipeline;
        let mut env = Env {
            now,
            rng: &mut *self.rng,
            observer: self.observer,
        };
        pipeline.as_pipeline().admit_next(call, &mut env)
    }

    #[inline]
    fn deadline(held: &AttemptOf<'a, P>) -> Option<Deadline> {
        held.deadline()
    }

    #[inline]
    fn settle(
        &mut self,
        call: &mut CallState<Self::RetryState>,
        held: AttemptOf<'a, P>,
        verdict: &Verdict,
        now: Instant,
    ) -> Next {
        let mut env = Env {
            now,
            rng: &mut *self.rng,
            observer: self.observer,
        };
        self.pipeline
            .as_pipeline()
            .settle_attempt(call, held, verdict, &mut env)
    }

    #[inline]
    fn cancel(&mut self, held: AttemptOf<'a, P>) {
        drop(held);
    }

    #[inline]
    fn observer(&self) -> &O {
        self.observer
    }

    #[inline]
    fn classifier(&self) -> &C {
        self.classifier
    }
}
