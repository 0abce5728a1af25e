//! The front end every adapter shares: a pipeline with its observer, classifier, timer and
//! seed source, running calls through [`execute`].
//!
//! An adapter contributes a [`Timer`] (tokio, async-io, embassy) and, where the platform has
//! entropy, a [`SeedSource`]; everything else (per-call randomness, bounded waiting,
//! fallbacks with their event) is here, once. `no_std`, no allocation.
//!
//! ```
//! use core::future::{Future, Ready, ready};
//! use resilix::call::CallOptions;
//! use resilix::execute::Timer;
//! use resilix::pipeline::Pipeline;
//! use resilix::resilience::{FixedSeeds, Resilience};
//! use resilix::time::{Clock, Instant, ManualClock};
//!
//! struct Jump(ManualClock);
//! impl Timer for Jump {
//!     type Sleep<'a> = Ready<()>;
//!     fn now(&self) -> Instant { self.0.now() }
//!     fn sleep_until(&self, at: Instant) -> Ready<()> {
//!         if at > self.0.now() { self.0.set(at); }
//!         ready(())
//!     }
//! }
//!
//! let pipeline = Pipeline::new();
//! let timer = Jump(ManualClock::new(Instant::ZERO));
//! let resilience = Resilience::with_parts(&pipeline, timer, FixedSeeds::new(7));
//! let call = resilience.execute(CallOptions::default(), || ready(Ok::<u32, ()>(5)));
//! # let mut call = core::pin::pin!(call);
//! # let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
//! # let core::task::Poll::Ready(out) = call.as_mut().poll(&mut cx) else { panic!() };
//! assert_eq!(out, Ok(5));
//! ```
//!
//! Design notes: docs/design/pipeline-and-execute.md

use core::future::Future;
use core::time::Duration;

use crate::call::CallOptions;
use crate::classify::{Classify, ResultClassifier};
use crate::error::Error;
use crate::execute::{Drive, ExecuteError, Gate, Operation, Timer, execute, execute_gated};
use crate::fallback::{Fallback, Served};
use crate::observe::{Event, Observer};
use crate::permit::Env;
use crate::pipeline::AsPipeline;
use crate::random::{Random, SeededRandom};
use crate::rejection::Rejection;
use crate::sync::{AtomicU32, Ordering};
use crate::time::{Deadline, Instant};

mod call;
mod lent;

pub use call::{CallBuilder, Gated, NoWait, Seeded};
pub use lent::Lent;

/// Where each call's generator gets its seed.
pub trait SeedSource {
    /// A seed for one call.
    fn call_seed(&self) -> u64;
}

/// Seeds from one number: the `n`th seed drawn is mixed from `seed` and `n`, so a run with the
/// same order of calls jitters and sheds identically. (`Resilience::execute` draws a call's
/// seed only when the call first needs randomness: [`LazyRng`].) Pick a different seed per
/// process or device (a serial number, a TRNG read at boot).
///
/// The call counter is 32-bit (no 64-bit atomics on small MCUs): after 2³² calls the
/// sequence of seeds repeats, which jitter does not mind.
///
/// ```
/// use resilix::resilience::{FixedSeeds, SeedSource};
/// let a = FixedSeeds::new(1);
/// let b = FixedSeeds::new(1);
/// let first = a.call_seed();
/// assert_eq!(first, b.call_seed(), "reproducible");
/// assert_ne!(first, a.call_seed(), "each call draws anew");
/// ```
#[derive(Debug)]
pub struct FixedSeeds {
    seed: u64,
    calls: AtomicU32,
}

impl FixedSeeds {
    crate::sync::const_fn_unless_loom! {
        /// Seeds derived from `seed`.
        pub fn new(seed: u64) -> Self {
            FixedSeeds { seed, calls: AtomicU32::new(0) }
        }
    }
}

impl SeedSource for FixedSeeds {
    fn call_seed(&self) -> u64 {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        mix(self.seed.wrapping_add(u64::from(n)))
    }
}

/// A call's generator, seeded on its first draw. Most calls never draw (no retry delay to
/// jitter, nothing shed), and a seed is not free: a thread-local for entropy, a shared
/// counter (a contended cache line under many threads) for [`FixedSeeds`]. The generator
/// lives in a slot the caller owns, so a hand-written future can keep it between polls.
///
/// ```
/// use resilix::random::Random;
/// use resilix::resilience::{FixedSeeds, LazyRng, SeedSource};
///
/// let seeds = FixedSeeds::new(5);
/// let mut slot = None;
/// let mut rng = LazyRng::new(&seeds, &mut slot);
/// let first = rng.next_u64();
/// assert!(slot.is_some(), "seeded by the first draw");
/// let mut untouched = None;
/// let _unused = LazyRng::new(&seeds, &mut untouched);
/// assert!(untouched.is_none(), "never drawn, never seeded");
/// # let _ = first;
/// ```
#[derive(Debug)]
pub struct LazyRng<'a, S: ?Sized> {
    seeds: &'a S,
    rng: &'a mut Option<SeededRandom>,
}

impl<'a, S: SeedSource + ?Sized> LazyRng<'a, S> {
    /// A generator seeded from `seeds` into `slot` on its first draw (or already in `slot`).
    pub fn new(seeds: &'a S, slot: &'a mut Option<SeededRandom>) -> Self {
        LazyRng { seeds, rng: slot }
    }

    fn rng(&mut self) -> &mut SeededRandom {
        let seeds = self.seeds;
        self.rng
            .get_or_insert_with(|| SeededRandom::new(seeds.call_seed()))
    }
}

impl<S: SeedSource + ?Sized> Random for LazyRng<'_, S> {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        self.rng().next_u32()
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.rng().next_u64()
    }
}

/// SplitMix64's finaliser: spreads a counter (or any weak seed) into well-mixed seeds.
///
/// ```
/// assert_ne!(resilix::resilience::mix(1), resilix::resilience::mix(2));
/// ```
pub const fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pin_project_lite::pin_project! {
    /// [`Resilience::execute`]'s future: the loop, its answer flattened into the one error.
    struct Flat<'r, R, D> {
        resilience: &'r R,
        #[pin]
        drive: D,
    }
}

impl<'r, P, Tm, S, O, C, D, T, E> Future for Flat<'r, Resilience<P, Tm, S, O, C>, D>
where
    P: AsPipeline,
    Tm: Timer,
    O: Observer,
    D: Future<Output = Result<Result<T, E>, ExecuteError<Result<T, E>>>>,
{
    type Output = Result<T, Error<T, E>>;

    #[inline]
    fn poll(
        self: core::pin::Pin<&mut Self>,
        cx: &mut core::task::Context<'_>,
    ) -> core::task::Poll<Self::Output> {
        let this = self.project();
        this.drive
            .poll(cx)
            .map(|result| this.resilience.flatten(result))
    }
}

/// A pipeline with its observer, classifier, timer and seed source, ready to run calls.
///
/// `P` is anything that holds a [`Pipeline`](crate::pipeline::Pipeline) ([`AsPipeline`]): the pipeline itself (then
/// share the whole `Resilience` in an `Arc`), `&pipeline`, `Box<Pipeline<..>>` or
/// `Arc<Pipeline<..>>`. The policies are shared by every call (they take `&self`), so one
/// `Resilience` serves every task. `S` is the seed source; `()` means none, and each call
/// then takes a generator (the `*_with_rng` methods): firmware without entropy.
#[derive(Debug)]
pub struct Resilience<P, Tm, S = (), O = (), C = ResultClassifier> {
    pipeline: P,
    timer: Tm,
    seeds: S,
    observer: O,
    classifier: C,
}

/// What [`Resilience::new`] classifies with on a timer's runtime: the adapter's choice, so that
/// a runtime whose users call HTTP clients can read their responses by default.
///
/// The embassy and async-io adapters use [`ResultClassifier`] (every `Ok` a success, every
/// `Err` transient); resilix-tokio's default also reads `http`, `reqwest` and `hyper`
/// responses and errors by their status and by where they failed.
pub trait DefaultClassifier {
    /// The classifier a new `Resilience` on this timer starts with.
    type Classifier: Default;
}

impl<P, Tm: Default + DefaultClassifier, S: Default> Resilience<P, Tm, S, (), Tm::Classifier> {
    /// Runs calls through `pipeline`, observing nothing, timed on the default timer, seeded
    /// from the default source, classifying outputs with the timer's runtime's default
    /// ([`DefaultClassifier`]).
    pub fn new(pipeline: P) -> Self {
        Resilience {
            pipeline,
            timer: Tm::default(),
            seeds: S::default(),
            observer: (),
            classifier: Tm::Classifier::default(),
        }
    }
}

impl<P, Tm, S> Resilience<P, Tm, S> {
    /// A `Resilience` with this timer and seed source, classifying with [`ResultClassifier`]
    /// (`const`, for a `static`).
    pub const fn with_parts(pipeline: P, timer: Tm, seeds: S) -> Self {
        Resilience {
            pipeline,
            timer,
            seeds,
            observer: (),
            classifier: ResultClassifier::new(),
        }
    }
}

impl<P, Tm, S, O, C> Resilience<P, Tm, S, O, C> {
    /// Reports every policy's events, every retry decision and every fallback to `observer`.
    pub fn observer<O2: Observer>(self, observer: O2) -> Resilience<P, Tm, S, O2, C> {
        Resilience {
            pipeline: self.pipeline,
            timer: self.timer,
            seeds: self.seeds,
            observer,
            classifier: self.classifier,
        }
    }

    /// Turns each attempt's output into a verdict with `classifier`.
    pub fn classifier<C2>(self, classifier: C2) -> Resilience<P, Tm, S, O, C2> {
        Resilience {
            pipeline: self.pipeline,
            timer: self.timer,
            seeds: self.seeds,
            observer: self.observer,
            classifier,
        }
    }

    /// Draws each call's seed from `seeds`.
    pub fn seeds<S2>(self, seeds: S2) -> Resilience<P, Tm, S2, O, C> {
        Resilience {
            pipeline: self.pipeline,
            timer: self.timer,
            seeds,
            observer: self.observer,
            classifier: self.classifier,
        }
    }

    /// Draws each call's randomness from `seed` ([`FixedSeeds`]) instead of the default
    /// source: reproducible for a given order of calls.
    pub fn seed(mut self, seed: u64) -> Self
    where
        S: From<FixedSeeds>,
    {
        self.seeds = S::from(FixedSeeds::new(seed));
        self
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// The observer.
    pub fn observer_ref(&self) -> &O {
        &self.observer
    }

    /// The classifier.
    pub fn classifier_ref(&self) -> &C {
        &self.classifier
    }

    /// The timer calls are timed and sleep on (deadlines in [`CallOptions`] are instants on
    /// its clock).
    pub fn timer(&self) -> &Tm {
        &self.timer
    }

    /// Now, on the timer's clock: the timeline every deadline and retry-at of this
    /// `Resilience`'s calls lives on.
    pub fn now(&self) -> Instant
    where
        Tm: Timer,
    {
        self.timer.now()
    }

    /// A deadline `timeout` from now on the timer's clock, for [`CallOptions::deadline`]: a
    /// relative timeout, with no clock of the caller's own (a deadline on another timeline,
    /// such as one anchored at [`Instant::ZERO`], passes at a time that has nothing to do with
    /// the timeout).
    ///
    /// ```
    /// # use core::future::{Future, Ready, ready};
    /// # use core::time::Duration;
    /// # use resilix::call::CallOptions;
    /// # use resilix::execute::Timer;
    /// # use resilix::pipeline::Pipeline;
    /// # use resilix::resilience::{FixedSeeds, Resilience};
    /// # use resilix::time::{Clock, Deadline, Instant, ManualClock};
    /// # struct Manual(ManualClock);
    /// # impl Timer for Manual {
    /// #     type Sleep<'a> = Ready<()>;
    /// #     fn now(&self) -> Instant { self.0.now() }
    /// #     fn sleep_until(&self, _: Instant) -> Ready<()> { ready(()) }
    /// # }
    /// let pipeline = Pipeline::new();
    /// let timer = Manual(ManualClock::new(Instant::from_secs(3_600)));
    /// let resilience = Resilience::with_parts(&pipeline, timer, FixedSeeds::new(1));
    /// let options = CallOptions::default().deadline(resilience.deadline_in(Duration::from_secs(2)));
    /// assert_eq!(options.deadline_value(), Some(Deadline::at(Instant::from_secs(3_602))));
    /// ```
    pub fn deadline_in(&self, timeout: Duration) -> Deadline
    where
        Tm: Timer,
    {
        Deadline::after(self.timer.now(), timeout)
    }

    /// How long from now until `rejection`'s policy expects to admit again (its retry-at, on
    /// the timer's clock): zero if it has passed, `None` if the policy does not know.
    pub fn retry_in(&self, rejection: &Rejection) -> Option<Duration>
    where
        Tm: Timer,
    {
        let now = self.timer.now();
        rejection
            .retry_at()
            .map(|at| at.saturating_duration_since(now))
    }

    /// The generator for one call.
    pub fn call_rng(&self) -> SeededRandom
    where
        S: SeedSource,
    {
        SeededRandom::new(self.seeds.call_seed())
    }

    /// The generator for one call, seeded on its first draw into `slot` ([`LazyRng`]): what
    /// [`Self::execute`] uses, so a call that never draws never pays for a seed.
    pub fn lazy_rng<'a>(&'a self, slot: &'a mut Option<SeededRandom>) -> LazyRng<'a, S>
    where
        S: SeedSource,
    {
        LazyRng::new(&self.seeds, slot)
    }

    /// The environment of one step of a call at `now` (an admission, a settle): `rng` and
    /// this `Resilience`'s observer. What an engine over a `Resilience` hands the pipeline,
    /// whether it borrows the `Resilience` ([`Lent`]) or owns it through an `Arc` (the tokio
    /// Layer's).
    ///
    /// ```
    /// use resilix::call::{CallOptions, Next};
    /// use resilix::pipeline::{AsPipeline, Pipeline};
    /// use resilix::resilience::{FixedSeeds, Resilience};
    /// # use resilix::execute::Timer;
    /// # use resilix::time::Instant;
    /// # struct Still;
    /// # impl Timer for Still {
    /// #     type Sleep<'a> = core::future::Ready<()>;
    /// #     fn now(&self) -> Instant { Instant::ZERO }
    /// #     fn sleep_until(&self, _: Instant) -> Self::Sleep<'_> { core::future::ready(()) }
    /// # }
    /// use resilix::Verdict;
    ///
    /// let resilience = Resilience::with_parts(Pipeline::new(), Still, FixedSeeds::new(1));
    /// let (now, mut slot) = (Instant::from_secs(1), None);
    /// let mut rng = resilience.lazy_rng(&mut slot);
    /// let pipeline = resilience.pipeline().as_pipeline();
    /// let mut call = pipeline.begin(now, CallOptions::default());
    /// let mut env = resilience.env(now, &mut rng);
    /// let attempt = pipeline.admit_next(&mut call, &mut env).unwrap();
    /// let next = pipeline.settle_attempt(&mut call, attempt, &Verdict::Success, &mut env);
    /// assert_eq!(next, Next::Done);
    /// ```
    #[inline]
    pub fn env<'e, R: ?Sized>(&'e self, now: Instant, rng: &'e mut R) -> Env<'e, R, O> {
        Env {
            now,
            rng,
            observer: &self.observer,
        }
    }
}

/// The policies, for inspection (a dashboard, a test's counts after a run): each slot's
/// policy as the pipeline holds it (`()` where the slot is empty; an `Arc` where it was given
/// one).
///
/// ```
/// use resilix::bulkhead::Bulkhead;
/// use resilix::pipeline::Pipeline;
/// use resilix::resilience::{FixedSeeds, Resilience};
/// # use resilix::time::Instant;
/// # struct Never;
/// # impl resilix::execute::Timer for Never {
/// #     type Sleep<'a> = core::future::Pending<()>;
/// #     fn now(&self) -> Instant { Instant::ZERO }
/// #     fn sleep_until(&self, _: Instant) -> Self::Sleep<'_> { core::future::pending() }
/// # }
///
/// let resilience = Resilience::with_parts(Pipeline::new().bulkhead(Bulkhead::default()), Never, FixedSeeds::new(1));
/// assert_eq!(resilience.bulkhead().held(), 0);
/// ```
impl<P: AsPipeline, Tm, S, O, C> Resilience<P, Tm, S, O, C> {
    /// The retry policy.
    pub fn retry(&self) -> &P::Retry {
        self.pipeline.as_pipeline().retry_policy()
    }

    /// The throttler.
    pub fn throttler(&self) -> &P::Throttler {
        self.pipeline.as_pipeline().throttler_ref()
    }

    /// The circuit breaker.
    pub fn breaker(&self) -> &P::Breaker {
        self.pipeline.as_pipeline().breaker_ref()
    }

    /// The adaptive limiter.
    pub fn limiter(&self) -> &P::Limiter {
        self.pipeline.as_pipeline().limiter_ref()
    }

    /// The bulkhead.
    pub fn bulkhead(&self) -> &P::Bulkhead {
        self.pipeline.as_pipeline().bulkhead_ref()
    }

    /// The rate limiter.
    pub fn rate_limit(&self) -> &P::RateLimit {
        self.pipeline.as_pipeline().rate_limit_ref()
    }
}

impl<P, Tm, S, O, C> Resilience<P, Tm, S, O, C>
where
    P: AsPipeline,
    Tm: Timer,
    O: Observer,
{
    /// Runs `operation` through the pipeline: it is called once per attempt and may borrow.
    ///
    /// Returns the success, or one flat [`Error`]: the upstream's own error, a failed answer
    /// retry gave up on, a timeout, a refusal (which policy, and the wait until it admits
    /// again), or the deadline passed. Dropping the returned future at any point gives back
    /// every permit and records nothing. Allocates nothing beyond the operation's own future.
    pub fn execute<F, Fut, T, E>(
        &self,
        options: CallOptions,
        operation: F,
    ) -> impl Future<Output = Result<T, Error<T, E>>>
    where
        S: SeedSource,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        self.execute_op(options, operation)
    }

    /// [`Self::execute`] over any [`Operation`] (one told its [`AttemptInfo`]).
    ///
    /// [`AttemptInfo`]: crate::execute::AttemptInfo
    pub(crate) fn execute_op<Op, T, E>(
        &self,
        options: CallOptions,
        operation: Op,
    ) -> impl Future<Output = Result<T, Error<T, E>>>
    where
        S: SeedSource,
        Op: Operation,
        Op::Future: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        // The loop itself, its answer flattened as it comes, rather than an `async` block
        // around it: no second state machine holding a copy of the first.
        Flat {
            resilience: self,
            drive: Drive::new(Lent::new(self), (), options, operation),
        }
    }

    /// The loop with `gate` and `rng`, its answer flattened: what every builder ending but
    /// the seeded, ungated `run` comes to.
    pub(crate) async fn gated<G, R, Op, T, E>(
        &self,
        gate: &G,
        rng: &mut R,
        options: CallOptions,
        operation: Op,
    ) -> Result<T, Error<T, E>>
    where
        G: Gate + ?Sized,
        R: Random + ?Sized,
        Op: Operation,
        Op::Future: Future<Output = Result<T, E>>,
        C: Classify<Result<T, E>>,
    {
        let result = execute_gated(
            self.pipeline.as_pipeline(),
            &self.timer,
            rng,
            &self.observer,
            options,
            &self.classifier,
            gate,
            operation,
        )
        .await;
        self.flatten(result)
    }

    /// The loop's nested result as the flat one. The clock is read again only on a refusal,
    /// whose retry-at becomes a wait from now.
    #[allow(clippy::type_complexity)] // the loop's result, spelled out once
    #[inline]
    fn flatten<T, E>(
        &self,
        result: Result<Result<T, E>, ExecuteError<Result<T, E>>>,
    ) -> Result<T, Error<T, E>> {
        match result {
            Err(stopped) => Err(self.stopped(stopped)),
            answered => Error::flatten(answered, Instant::ZERO),
        }
    }

    /// The flat error for a call the loop stopped: apart, so the success path stays small.
    #[cold]
    #[inline(never)]
    fn stopped<T, E>(&self, stopped: ExecuteError<Result<T, E>>) -> Error<T, E> {
        let now = match stopped {
            ExecuteError::Refused { .. } => self.timer.now(),
            _ => Instant::ZERO,
        };
        Error::from_stopped(stopped, now)
    }

    /// The output-generic loop with `rng`: the last output, or why the call stopped.
    pub(crate) async fn output_with<R, Op, Out>(
        &self,
        rng: &mut R,
        options: CallOptions,
        operation: Op,
    ) -> Result<Out, ExecuteError<Out>>
    where
        R: Random + ?Sized,
        Op: Operation,
        Op::Future: Future<Output = Out>,
        C: Classify<Out>,
    {
        execute(
            self.pipeline.as_pipeline(),
            &self.timer,
            rng,
            &self.observer,
            options,
            &self.classifier,
            operation,
        )
        .await
    }

    /// The loop with `rng`, answered by `fallback` when the call is refused, gives up or runs
    /// out of time. The observer hears [`Event::FallbackServed`] with the cause, so the
    /// degradation shows in logs and metrics. With a last-known-good store, every output the
    /// classifier calls a `Success` is remembered. The error comes back only when the fallback
    /// has nothing to give (an empty store with no default).
    pub(crate) async fn or_with<R, Op, Out>(
        &self,
        rng: &mut R,
        options: CallOptions,
        fallback: Fallback<'_, Out>,
        operation: Op,
    ) -> Result<Served<Out>, ExecuteError<Out>>
    where
        R: Random + ?Sized,
        Op: Operation,
        Op::Future: Future<Output = Out>,
        Out: Clone,
        C: Classify<Out>,
    {
        let result = self.output_with(rng, options, operation).await;
        fallback.resolve(result, &self.classifier, |cause| {
            self.observer.on_event(&Event::FallbackServed { cause })
        })
    }
}
