//! [`Resilience::execute`]'s engine: the parts of a [`Resilience`] lent for one call.

use crate::call::{CallOptions, CallState, Next, Stop};
use crate::execute::engine::AttemptOf;
use crate::execute::{Engine, Timer};
use crate::observe::Observer;
use crate::pipeline::AsPipeline;
use crate::random::SeededRandom;
use crate::retry::RetryPolicy;
use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

use super::{Resilience, SeedSource};

/// The [`Engine`] of a [`Resilience`] lent for the call: its pipeline, timer, observer and
/// classifier, and a generator of the call's own, seeded on its first draw
/// ([`LazyRng`](super::LazyRng)):
/// what [`Resilience::execute`] drives.
pub struct Lent<'a, P, Tm, S, O, C> {
    resilience: &'a Resilience<P, Tm, S, O, C>,
    rng: Option<SeededRandom>,
}

impl<P, Tm, S, O, C> core::fmt::Debug for Lent<'_, P, Tm, S, O, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lent")
            .field("seeded", &self.rng.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a, P, Tm, S, O, C> Lent<'a, P, Tm, S, O, C> {
    /// The engine over `resilience`'s parts.
    pub fn new(resilience: &'a Resilience<P, Tm, S, O, C>) -> Self {
        Lent {
            resilience,
            rng: None,
        }
    }
}

impl<'a, P, Tm, S, O, C> Engine for Lent<'a, P, Tm, S, O, C>
where
    P: AsPipeline,
    Tm: Timer,
    S: SeedSource,
    O: Observer,
{
    type RetryState = <P::Retry as RetryPolicy>::State;
    type Held = AttemptOf<'a, P>;
    type Sleep = Tm::Sleep<'a>;
    type Observer = O;
    type Classifier = C;

    #[inline]
    fn now(&self) -> Instant {
        self.resilience.timer().now()
    }

    #[inline]
    fn sleep_until(&self, at: Instant) -> Tm::Sleep<'a> {
        let resilience: &'a Resilience<P, Tm, S, O, C> = self.resilience;
        resilience.timer().sleep_until(at)
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
    ) -> Result<AttemptOf<'a, P>, Stop> {
        let resilience: &'a Resilience<P, Tm, S, O, C> = self.resilience;
        let mut rng = resilience.lazy_rng(&mut self.rng);
        let mut env = resilience.env(now, &mut rng);
        resilience
            .pipeline()
            .as_pipeline()
            .admit_next(call, &mut env)
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
        let resilience = self.resilience;
        let mut rng = resilience.lazy_rng(&mut self.rng);
        let mut env = resilience.env(now, &mut rng);
        let pipeline = resilience.pipeline().as_pipeline();
        pipeline.settle_attempt(call, held, verdict, &mut env)
    }

    #[inline]
    fn cancel(&mut self, held: AttemptOf<'a, P>) {
        drop(held);
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
