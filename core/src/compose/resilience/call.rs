//! The call builder: see [`CallBuilder`].

use core::future::Future;
use core::time::Duration;

use super::Resilience;
use crate::call::CallOptions;
use crate::classify::Classify;
use crate::error::Error;
use crate::execute::{AttemptInfo, ExecuteError, Gate, Timer, with_attempt};
use crate::fallback::{Fallback, Served};
use crate::observe::Observer;
use crate::pipeline::AsPipeline;
use crate::random::Random;
use crate::rate_wait::{Peek, RateGate};
use crate::waiters::{WaitGate, WaitTimer, Waitable};

use super::SeedSource;

/// One way to call: [`Resilience::execute`], or [`Resilience::call`] and its options.
///
/// `call(options)` starts a [`CallBuilder`]; each option returns it with that option set, and
/// one of three endings runs the call:
///
/// | option | what it changes |
/// |---|---|
/// | [`rng(&mut r)`](CallBuilder::rng) | randomness from `r` instead of the seed source (firmware, a test) |
/// | [`wait_for_bulkhead()`](CallBuilder::wait_for_bulkhead), [`wait_for_limiter()`](CallBuilder::wait_for_limiter) | each attempt waits (boundedly) for room in the pipeline's own bulkhead or limiter queue zone instead of being refused |
/// | [`wait_for_rate_limit(max)`](CallBuilder::wait_for_rate_limit) | each attempt waits for a rate-limit cell, at most `max` |
/// | [`wait_on(&policy)`](CallBuilder::wait_on), [`gate(g)`](CallBuilder::gate) | wait on another waitable policy, or any [`Gate`] |
///
/// | ending | answers |
/// |---|---|
/// | [`run(op)`](CallBuilder::run) | `Result<T, Error<T, E>>`, as [`Resilience::execute`] |
/// | [`run_attempts(op)`](CallBuilder::run_attempts) | the same, `op` told each attempt's [`AttemptInfo`] (number, criticality, deadline) to send on |
/// | [`run_output(op)`](CallBuilder::run_output) | the last output of an operation that does not return a `Result` (an HTTP response), or the [`ExecuteError`] that stopped it |
/// | [`run_or(fallback, op)`](CallBuilder::run_or) | the output, or the fallback's answer when the call was refused, gave up or ran out of time |
///
/// `R` is where randomness comes from ([`Seeded`] or `&mut` a generator) and `G` what each
/// attempt waits at ([`NoWait`] or [`Gated`]).
#[must_use = "a call is made by run, run_output or run_or"]
#[derive(Debug)]
pub struct CallBuilder<'r, P, Tm, S, O, C, R = Seeded, G = NoWait> {
    resilience: &'r Resilience<P, Tm, S, O, C>,
    options: CallOptions,
    rng: R,
    gate: G,
}

/// Randomness from the [`Resilience`]'s seed source, seeded on the call's first draw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seeded;

/// No waiting: a policy without room refuses at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWait;

/// Each attempt waits at this gate before the pipeline admits it.
#[derive(Clone, Copy, Debug)]
pub struct Gated<G>(G);

impl<P, Tm, S, O, C> Resilience<P, Tm, S, O, C> {
    /// A call with `options`, set up by the builder's options and made by one of its endings
    /// (see [`CallBuilder`]); [`Self::execute`] is `call(options).run(op)`.
    ///
    /// ```
    /// # use core::future::{Ready, ready};
    /// # use resilix::execute::Timer;
    /// # use resilix::time::{Clock, Instant, ManualClock};
    /// # struct Jump(ManualClock);
    /// # impl Timer for Jump {
    /// #     type Sleep<'a> = Ready<()>;
    /// #     fn now(&self) -> Instant { self.0.now() }
    /// #     fn sleep_until(&self, at: Instant) -> Ready<()> { self.0.set(at); ready(()) }
    /// # }
    /// use resilix::call::CallOptions;
    /// use resilix::pipeline::Pipeline;
    /// use resilix::random::SeededRandom;
    /// use resilix::resilience::Resilience;
    ///
    /// let pipeline = Pipeline::new();
    /// let resilience = Resilience::with_parts(&pipeline, Jump(ManualClock::new(Instant::ZERO)), ());
    /// let mut rng = SeededRandom::new(7); // no seed source: the caller's generator
    /// let call = resilience.call(CallOptions::default()).rng(&mut rng).run(|| ready(Ok::<u32, ()>(5)));
    /// # let mut call = core::pin::pin!(call);
    /// # let waker = core::task::Waker::noop();
    /// # let answer = call.as_mut().poll(&mut core::task::Context::from_waker(&waker));
    /// # assert_eq!(answer, core::task::Poll::Ready(Ok(5)));
    /// ```
    pub fn call(&self, options: CallOptions) -> CallBuilder<'_, P, Tm, S, O, C> {
        CallBuilder {
            resilience: self,
            options,
            rng: Seeded,
            gate: NoWait,
        }
    }
}

// The builder's type spells what was chosen: its parameters are the choices.
#[allow(clippy::type_complexity)]
impl<'r, P, Tm, S, O, C, R, G> CallBuilder<'r, P, Tm, S, O, C, R, G> {
    /// Draws the call's randomness (jitter, shedding) from `rng`: a hardware RNG, a `rand`
    /// generator through the core's `rand_core` bridges, a seeded generator in a test.
    pub fn rng<'g, R2: Random + ?Sized>(
        self,
        rng: &'g mut R2,
    ) -> CallBuilder<'r, P, Tm, S, O, C, &'g mut R2, G> {
        CallBuilder {
            resilience: self.resilience,
            options: self.options,
            rng,
            gate: self.gate,
        }
    }

    /// Holds each attempt at `gate` until it may be admitted (the adapter's side of a bounded
    /// wait; see [`Gate`]).
    pub fn gate<G2: Gate>(self, gate: G2) -> CallBuilder<'r, P, Tm, S, O, C, R, Gated<G2>> {
        CallBuilder {
            resilience: self.resilience,
            options: self.options,
            rng: self.rng,
            gate: Gated(gate),
        }
    }

    /// Each attempt waits (boundedly) for room in `target` instead of being refused at once
    /// (see [`crate::waiters`]). `target` must be the policy in the pipeline, which this cannot
    /// check: prefer [`Self::wait_for_bulkhead`] and [`Self::wait_for_limiter`]. A caller that
    /// cannot wait (too many waiting, the zone full, `max_wait` or the deadline passed) is
    /// refused with the policy's reason.
    pub fn wait_on<W: Waitable + ?Sized>(
        self,
        target: &'r W,
    ) -> CallBuilder<'r, P, Tm, S, O, C, R, Gated<WaitGate<&'r W, Tm>>>
    where
        Tm: WaitTimer + Clone,
    {
        let timer = self.resilience.timer.clone();
        self.gate(WaitGate::new(target, timer))
    }
}

#[allow(clippy::type_complexity)]
impl<'r, P: AsPipeline, Tm, S, O, C, R, G> CallBuilder<'r, P, Tm, S, O, C, R, G> {
    /// Each attempt waits (boundedly) for a slot of the pipeline's own bulkhead, which must
    /// have a waiter list (the policy waited on is the one that admits, by construction).
    pub fn wait_for_bulkhead(
        self,
    ) -> CallBuilder<'r, P, Tm, S, O, C, R, Gated<WaitGate<&'r P::Bulkhead, Tm>>>
    where
        Tm: WaitTimer + Clone,
        P::Bulkhead: Waitable,
    {
        let bulkhead = self.resilience.bulkhead();
        self.wait_on(bulkhead)
    }

    /// Each attempt waits (boundedly) in the pipeline's own adaptive limiter's queue zone.
    pub fn wait_for_limiter(
        self,
    ) -> CallBuilder<'r, P, Tm, S, O, C, R, Gated<WaitGate<&'r P::Limiter, Tm>>>
    where
        Tm: WaitTimer + Clone,
        P::Limiter: Waitable,
    {
        let limiter = self.resilience.limiter();
        self.wait_on(limiter)
    }

    /// Each attempt waits for a cell of the pipeline's own rate limiter: until the limiter's
    /// retry-at, for at most `max_wait`, and never to the call's deadline (a retry-at at or
    /// past it is refused at once). See [`crate::rate_wait`].
    pub fn wait_for_rate_limit(
        self,
        max_wait: Duration,
    ) -> CallBuilder<'r, P, Tm, S, O, C, R, Gated<RateGate<'r, P::RateLimit, Tm>>>
    where
        Tm: WaitTimer + Clone,
        P::RateLimit: Peek,
    {
        let resilience = self.resilience;
        self.gate(RateGate::new(
            resilience.rate_limit(),
            resilience.timer.clone(),
            max_wait,
        ))
    }
}

impl<'r, P, Tm, S, O, C> CallBuilder<'r, P, Tm, S, O, C, Seeded, NoWait>
where
    P: AsPipeline,
    Tm: Timer,
    O: Observer,
    S: SeedSource,
{
    /// Runs `operation` (called once per attempt; it may borrow): [`Resilience::execute`].
    pub fn run<F, Fut, T, E>(self, operation: F) -> impl Future<Output = Result<T, Error<T, E>>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.resilience.execute(self.options, operation)
    }

    /// [`Self::run`] with `operation` told each attempt's [`AttemptInfo`] (its number, the
    /// call's criticality, its deadline): to send them on to the next hop.
    ///
    /// ```
    /// # use core::future::{Ready, ready};
    /// # use resilix::execute::Timer;
    /// # use resilix::time::{Clock, Instant, ManualClock};
    /// # struct Jump(ManualClock);
    /// # impl Timer for Jump {
    /// #     type Sleep<'a> = Ready<()>;
    /// #     fn now(&self) -> Instant { self.0.now() }
    /// #     fn sleep_until(&self, at: Instant) -> Ready<()> { self.0.set(at); ready(()) }
    /// # }
    /// use resilix::call::CallOptions;
    /// use resilix::execute::AttemptInfo;
    /// use resilix::inbound::Priority;
    /// use resilix::pipeline::Pipeline;
    /// use resilix::resilience::{FixedSeeds, Resilience};
    /// use resilix::retry::{Backoff, Retry, RetryConfig};
    ///
    /// let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::new(2, Backoff::NONE)?));
    /// let resilience = Resilience::with_parts(&pipeline, Jump(ManualClock::new(Instant::ZERO)), FixedSeeds::new(1));
    /// let options = CallOptions::default().criticality(Priority::CriticalPlus);
    /// let call = resilience.call(options).run_attempts(|a: &AttemptInfo| {
    ///     assert_eq!(a.criticality, Some(Priority::CriticalPlus));
    ///     ready(if a.number == 1 { Err(()) } else { Ok(a.number) })
    /// });
    /// # let mut call = core::pin::pin!(call);
    /// # let waker = core::task::Waker::noop();
    /// # let answer = call.as_mut().poll(&mut core::task::Context::from_waker(&waker));
    /// # assert_eq!(answer, core::task::Poll::Ready(Ok(2)));
    /// # Ok::<(), resilix::retry::RetryConfigError>(())
    /// ```
    pub fn run_attempts<F, Fut, T, E>(
        self,
        operation: F,
    ) -> impl Future<Output = Result<T, Error<T, E>>>
    where
        F: FnMut(&AttemptInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.resilience
            .execute_op(self.options, with_attempt(operation))
    }

    /// Runs `operation` when its output is not a `Result` (an HTTP response the classifier
    /// reads, a chaos-wrapped output): the answer is the last output, or an [`ExecuteError`]
    /// saying why the call stopped.
    pub async fn run_output<F, Fut>(
        self,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        let mut slot = None;
        let mut rng = self.resilience.lazy_rng(&mut slot);
        self.resilience
            .output_with(&mut rng, self.options, operation)
            .await
    }

    /// Runs `operation`, answered by `fallback` when the call is refused, gives up or runs out
    /// of time: the observer hears [`Event::FallbackServed`](crate::observe::Event::FallbackServed)
    /// with the cause; with a last-known-good store every success is remembered; the error
    /// comes back only when the fallback has nothing to give.
    pub async fn run_or<F, Fut>(
        self,
        fallback: Fallback<'_, Fut::Output>,
        operation: F,
    ) -> Result<Served<Fut::Output>, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        Fut::Output: Clone,
        C: Classify<Fut::Output>,
    {
        let mut slot = None;
        let mut rng = self.resilience.lazy_rng(&mut slot);
        self.resilience
            .or_with(&mut rng, self.options, fallback, operation)
            .await
    }
}

impl<'r, 'g, P, Tm, S, O, C, R> CallBuilder<'r, P, Tm, S, O, C, &'g mut R, NoWait>
where
    P: AsPipeline,
    Tm: Timer,
    O: Observer,
    R: Random + ?Sized,
{
    /// Runs `operation` with the caller's generator.
    pub async fn run<F, Fut, T, E>(self, operation: F) -> Result<T, Error<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.resilience
            .gated(&(), self.rng, self.options, operation)
            .await
    }

    /// [`Self::run`] with `operation` told each attempt's [`AttemptInfo`].
    pub async fn run_attempts<F, Fut, T, E>(self, operation: F) -> Result<T, Error<T, E>>
    where
        F: FnMut(&AttemptInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.resilience
            .gated(&(), self.rng, self.options, with_attempt(operation))
            .await
    }

    /// [`CallBuilder::run_output`] with the caller's generator.
    pub async fn run_output<F, Fut>(
        self,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        self.resilience
            .output_with(self.rng, self.options, operation)
            .await
    }

    /// [`CallBuilder::run_or`] with the caller's generator.
    pub async fn run_or<F, Fut>(
        self,
        fallback: Fallback<'_, Fut::Output>,
        operation: F,
    ) -> Result<Served<Fut::Output>, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        Fut::Output: Clone,
        C: Classify<Fut::Output>,
    {
        self.resilience
            .or_with(self.rng, self.options, fallback, operation)
            .await
    }
}

impl<'r, P, Tm, S, O, C, G> CallBuilder<'r, P, Tm, S, O, C, Seeded, Gated<G>>
where
    P: AsPipeline,
    Tm: Timer,
    O: Observer,
    S: SeedSource,
    G: Gate,
{
    /// Runs `operation`, each attempt waiting at the gate first.
    pub async fn run<F, Fut, T, E>(self, operation: F) -> Result<T, Error<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        let mut slot = None;
        let mut rng = self.resilience.lazy_rng(&mut slot);
        self.resilience
            .gated(&self.gate.0, &mut rng, self.options, operation)
            .await
    }

    /// [`Self::run`] with `operation` told each attempt's [`AttemptInfo`].
    pub async fn run_attempts<F, Fut, T, E>(self, operation: F) -> Result<T, Error<T, E>>
    where
        F: FnMut(&AttemptInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        let mut slot = None;
        let mut rng = self.resilience.lazy_rng(&mut slot);
        self.resilience
            .gated(
                &self.gate.0,
                &mut rng,
                self.options,
                with_attempt(operation),
            )
            .await
    }
}

impl<'r, 'g, P, Tm, S, O, C, R, G> CallBuilder<'r, P, Tm, S, O, C, &'g mut R, Gated<G>>
where
    P: AsPipeline,
    Tm: Timer,
    O: Observer,
    R: Random + ?Sized,
    G: Gate,
{
    /// Runs `operation` with the caller's generator, each attempt waiting at the gate first.
    pub async fn run<F, Fut, T, E>(self, operation: F) -> Result<T, Error<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.resilience
            .gated(&self.gate.0, self.rng, self.options, operation)
            .await
    }

    /// [`Self::run`] with `operation` told each attempt's [`AttemptInfo`].
    pub async fn run_attempts<F, Fut, T, E>(self, operation: F) -> Result<T, Error<T, E>>
    where
        F: FnMut(&AttemptInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.resilience
            .gated(
                &self.gate.0,
                self.rng,
                self.options,
                with_attempt(operation),
            )
            .await
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
