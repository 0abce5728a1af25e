//! The pipeline: every policy in the one order of docs/design/spec.md §7, composed statically.
//!
//! ```text
//! retry → throttler → breaker → limiter → bulkhead → rate limit → timeout → call
//! ```
//!
//! Each slot is a type parameter; an absent slot is `()` (or [`NoRetry`]) and compiles to
//! nothing. [`Pipeline::admit`] asks each policy in order and stops at the first refusal: the
//! permits already taken are dropped (cancelled, so they record nothing) and only the
//! rejection hook hears of it. [`Attempt::settle`] settles each permit innermost first and only
//! then reports the execution, so shed calls never reach the duration histogram. Retry is
//! outermost: the [`Call`](crate::call::Call) driver re-enters the whole stack for every
//! attempt.
//!
//! ```
//! use core::time::Duration;
//! use resilix::permit::{Env, Permit};
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(200));
//! let mut rng = SeededRandom::new(11);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let attempt = pipeline.admit(&mut env, None).unwrap();
//! assert_eq!(attempt.deadline().unwrap().instant(), Instant::from_millis(200));
//! env.now = Instant::from_millis(15);
//! attempt.settle(&Verdict::Success, &mut env);
//! ```
//!
//! Design notes: docs/design/pipeline-and-execute.md

use core::fmt;
use core::time::Duration;

use crate::observe::{Event, Observer};
use crate::permit::{Detach, Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::Rejection;
use crate::retry::{NoRetry, RetryPolicy};
use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

/// Why a duration cannot be an attempt timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttemptTimeoutError {
    /// Zero: every attempt that awaits anything would time out.
    Zero,
}

impl AttemptTimeoutError {
    const ZERO_TEXT: &'static str = "an attempt timeout of zero times out every attempt that awaits anything: leave it unset for no timeout, or set it from the upstream's latency (its p99 plus a margin)";
}

impl fmt::Display for AttemptTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptTimeoutError::Zero => f.write_str(Self::ZERO_TEXT),
        }
    }
}

impl core::error::Error for AttemptTimeoutError {}

/// A static composition of policies. Build it with [`Pipeline::new`] and the slot setters.
///
/// The slot types may be owned policies or references (`&'static Breaker`), so one policy can
/// be shared by several pipelines: one breaker per upstream, one budget per process.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pipeline<Rt = NoRetry, T = (), B = (), L = (), H = (), Rl = ()> {
    retry: Rt,
    throttler: T,
    breaker: B,
    limiter: L,
    bulkhead: H,
    rate_limit: Rl,
    attempt_timeout: Option<Duration>,
}

impl Pipeline {
    /// An empty pipeline: no retry, every slot absent, no attempt timeout.
    pub const fn new() -> Self {
        Pipeline {
            retry: NoRetry,
            throttler: (),
            breaker: (),
            limiter: (),
            bulkhead: (),
            rate_limit: (),
            attempt_timeout: None,
        }
    }
}

impl<Rt, T, B, L, H, Rl> Pipeline<Rt, T, B, L, H, Rl> {
    /// Sets the retry slot (outermost).
    pub fn retry<Rt2: RetryPolicy>(self, retry: Rt2) -> Pipeline<Rt2, T, B, L, H, Rl> {
        let Pipeline {
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
            ..
        } = self;
        Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
        }
    }

    /// Sets the throttler slot.
    pub fn throttler<T2: Policy>(self, throttler: T2) -> Pipeline<Rt, T2, B, L, H, Rl> {
        let Pipeline {
            retry,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
            ..
        } = self;
        Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
        }
    }

    /// Sets the circuit-breaker slot.
    pub fn breaker<B2: Policy>(self, breaker: B2) -> Pipeline<Rt, T, B2, L, H, Rl> {
        let Pipeline {
            retry,
            throttler,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
            ..
        } = self;
        Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
        }
    }

    /// Sets the adaptive-limiter slot.
    pub fn limiter<L2: Policy>(self, limiter: L2) -> Pipeline<Rt, T, B, L2, H, Rl> {
        let Pipeline {
            retry,
            throttler,
            breaker,
            bulkhead,
            rate_limit,
            attempt_timeout,
            ..
        } = self;
        Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
        }
    }

    /// Sets the bulkhead slot.
    pub fn bulkhead<H2: Policy>(self, bulkhead: H2) -> Pipeline<Rt, T, B, L, H2, Rl> {
        let Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            rate_limit,
            attempt_timeout,
            ..
        } = self;
        Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
        }
    }

    /// Sets the rate-limit slot.
    pub fn rate_limit<Rl2: Policy>(self, rate_limit: Rl2) -> Pipeline<Rt, T, B, L, H, Rl2> {
        let Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            attempt_timeout,
            ..
        } = self;
        Pipeline {
            retry,
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            attempt_timeout,
        }
    }

    /// Sets the per-attempt timeout (the innermost slot). Each attempt's deadline is the
    /// tighter of this timeout and the call's overall deadline.
    ///
    /// # Panics
    ///
    /// On a zero timeout, with [`AttemptTimeoutError::Zero`]'s text: it would time out every
    /// attempt that awaits anything (as `tokio::time::interval` refuses a zero period). In a
    /// `const` or `static` the panic is a compile error. [`try_attempt_timeout`](Self::try_attempt_timeout)
    /// returns the error instead, for timeouts read at run time.
    ///
    /// ```should_panic
    /// use core::time::Duration;
    /// use resilix::pipeline::Pipeline;
    ///
    /// let _ = Pipeline::new().attempt_timeout(Duration::ZERO); // panics: every attempt would time out
    /// ```
    pub const fn attempt_timeout(mut self, timeout: Duration) -> Self {
        if timeout.is_zero() {
            panic!("{}", AttemptTimeoutError::ZERO_TEXT);
        }
        self.attempt_timeout = Some(timeout);
        self
    }

    /// Sets the per-attempt timeout, or says why it cannot be one.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::pipeline::{AttemptTimeoutError, Pipeline};
    ///
    /// let p = Pipeline::new().try_attempt_timeout(Duration::from_millis(250)).unwrap();
    /// assert_eq!(p.attempt_timeout_value(), Some(Duration::from_millis(250)));
    /// let zero = Pipeline::new().try_attempt_timeout(Duration::ZERO).unwrap_err();
    /// assert_eq!(zero, AttemptTimeoutError::Zero);
    /// assert!(zero.to_string().contains("leave it unset"));
    /// ```
    pub fn try_attempt_timeout(self, timeout: Duration) -> Result<Self, AttemptTimeoutError> {
        if timeout.is_zero() {
            return Err(AttemptTimeoutError::Zero);
        }
        Ok(self.attempt_timeout(timeout))
    }

    /// The retry policy.
    pub const fn retry_policy(&self) -> &Rt {
        &self.retry
    }

    /// The per-attempt timeout, if set.
    pub const fn attempt_timeout_value(&self) -> Option<Duration> {
        self.attempt_timeout
    }

    /// The throttler (`()` if absent). (`throttler(..)` is the setter; `Resilience` has the
    /// plain names.)
    pub const fn throttler_ref(&self) -> &T {
        &self.throttler
    }

    /// The circuit breaker (`()` if absent).
    ///
    /// ```
    /// use resilix::breaker::{Breaker, CircuitState};
    /// use resilix::pipeline::Pipeline;
    ///
    /// let pipeline = Pipeline::new().breaker(Breaker::default());
    /// assert_eq!(pipeline.breaker_ref().state(), CircuitState::Closed);
    /// ```
    pub const fn breaker_ref(&self) -> &B {
        &self.breaker
    }

    /// The adaptive limiter (`()` if absent).
    pub const fn limiter_ref(&self) -> &L {
        &self.limiter
    }

    /// The bulkhead (`()` if absent).
    pub const fn bulkhead_ref(&self) -> &H {
        &self.bulkhead
    }

    /// The rate limiter (`()` if absent).
    pub const fn rate_limit_ref(&self) -> &Rl {
        &self.rate_limit
    }
}

/// Anything that holds a [`Pipeline`]: the pipeline itself, a reference, a `Box` or an `Arc`
/// of one. This trait is the one place the pipeline's six slots are named as types; every
/// front end (the core's `Resilience`, the tower Layer) is generic over one `P: AsPipeline`.
///
/// ```
/// use resilix::bulkhead::Bulkhead;
/// use resilix::pipeline::{AsPipeline, Pipeline};
///
/// fn held<P: AsPipeline<Bulkhead = Bulkhead>>(p: &P) -> u32 {
///     p.as_pipeline().bulkhead_ref().held()
/// }
/// let pipeline = Pipeline::new().bulkhead(Bulkhead::default());
/// assert_eq!(held(&pipeline), 0);
/// assert_eq!(held(&&pipeline), 0);
/// # #[cfg(feature = "alloc")] // `Box` and `Arc` hold one with the core's `alloc` feature
/// assert_eq!(held(&std::sync::Arc::new(pipeline)), 0);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not hold a resilix `Pipeline`",
    label = "expected a `Pipeline`, a `&Pipeline`, a `Box<Pipeline>` or an `Arc<Pipeline>`",
    note = "every slot's policy must implement `Policy` (and the retry slot `RetryPolicy`)"
)]
pub trait AsPipeline {
    /// The retry slot.
    type Retry: RetryPolicy;
    /// The throttler slot.
    type Throttler: Policy;
    /// The circuit-breaker slot.
    type Breaker: Policy;
    /// The adaptive-limiter slot.
    type Limiter: Policy;
    /// The bulkhead slot.
    type Bulkhead: Policy;
    /// The rate-limit slot.
    type RateLimit: Policy;

    /// The pipeline.
    #[allow(clippy::type_complexity)] // the six slots, named here once
    fn as_pipeline(
        &self,
    ) -> &Pipeline<
        Self::Retry,
        Self::Throttler,
        Self::Breaker,
        Self::Limiter,
        Self::Bulkhead,
        Self::RateLimit,
    >;
}

impl<Rt, T, B, L, H, Rl> AsPipeline for Pipeline<Rt, T, B, L, H, Rl>
where
    Rt: RetryPolicy,
    T: Policy,
    B: Policy,
    L: Policy,
    H: Policy,
    Rl: Policy,
{
    type Retry = Rt;
    type Throttler = T;
    type Breaker = B;
    type Limiter = L;
    type Bulkhead = H;
    type RateLimit = Rl;

    #[inline(always)]
    fn as_pipeline(&self) -> &Self {
        self
    }
}

macro_rules! as_pipeline_through {
    ($($(#[$attr:meta])* $holder:ty),*) => {$(
        $(#[$attr])*
        impl<P: AsPipeline + ?Sized> AsPipeline for $holder {
            type Retry = P::Retry;
            type Throttler = P::Throttler;
            type Breaker = P::Breaker;
            type Limiter = P::Limiter;
            type Bulkhead = P::Bulkhead;
            type RateLimit = P::RateLimit;

            #[inline(always)]
            fn as_pipeline(
                &self,
            ) -> &Pipeline<P::Retry, P::Throttler, P::Breaker, P::Limiter, P::Bulkhead, P::RateLimit>
            {
                (**self).as_pipeline()
            }
        }
    )*};
}

as_pipeline_through!(
    &P,
    #[cfg(feature = "alloc")]
    alloc::boxed::Box<P>,
    #[cfg(feature = "alloc")]
    alloc::sync::Arc<P>,
    #[cfg(feature = "alloc")]
    alloc::rc::Rc<P>
);

impl<Rt, T: Policy, B: Policy, L: Policy, H: Policy, Rl: Policy> Pipeline<Rt, T, B, L, H, Rl> {
    /// Asks every policy, outermost first, whether this attempt may be sent.
    ///
    /// On the first refusal the permits already taken are dropped (cancelled: they record no
    /// outcome), the observer hears [`Event::Rejected`], and the rejection is returned. On
    /// admission the returned [`Attempt`] carries the instant the caller must race the call
    /// against: the tighter of the attempt timeout and `deadline`.
    #[inline]
    pub fn admit<'p, R: Random + ?Sized, O: Observer + ?Sized>(
        &'p self,
        env: &mut Env<'_, R, O>,
        deadline: Option<Deadline>,
    ) -> Result<Attempt<'p, T, B, L, H, Rl>, Rejection> {
        let admitted = (|| {
            let throttler = self.throttler.admit(env)?;
            let breaker = self.breaker.admit(env)?;
            let limiter = self.limiter.admit(env)?;
            let bulkhead = self.bulkhead.admit(env)?;
            let rate_limit = self.rate_limit.admit(env)?;
            Ok((throttler, breaker, limiter, bulkhead, rate_limit))
        })();
        match admitted {
            Ok((throttler, breaker, limiter, bulkhead, rate_limit)) => {
                let timeout = self.attempt_timeout.map(|t| Deadline::after(env.now, t));
                let deadline = match (timeout, deadline) {
                    (Some(t), d) => Some(t.min_opt(d)),
                    (None, d) => d,
                };
                Ok(Attempt {
                    throttler,
                    breaker,
                    limiter,
                    bulkhead,
                    rate_limit,
                    admitted_at: env.now,
                    deadline,
                })
            }
            Err(rejection) => {
                env.observer.on_event(&Event::Rejected { rejection });
                Err(rejection)
            }
        }
    }
}

/// One admitted attempt: the permits of every policy in the pipeline, and its deadline.
///
/// Settle it with the attempt's verdict, or drop it to cancel (every permit is given back and
/// nothing is recorded).
#[must_use = "an attempt must be settled with its verdict; dropping it records a cancellation"]
pub struct Attempt<
    'p,
    T: Policy + 'p,
    B: Policy + 'p,
    L: Policy + 'p,
    H: Policy + 'p,
    Rl: Policy + 'p,
> {
    // Field order is drop order: a dropped attempt releases innermost-last, but every permit's
    // release is independent, so the order only matters for settle (below).
    throttler: T::Permit<'p>,
    breaker: B::Permit<'p>,
    limiter: L::Permit<'p>,
    bulkhead: H::Permit<'p>,
    rate_limit: Rl::Permit<'p>,
    admitted_at: Instant,
    deadline: Option<Deadline>,
}

impl<'p, T: Policy, B: Policy, L: Policy, H: Policy, Rl: Policy> Attempt<'p, T, B, L, H, Rl> {
    /// The instant to race the call against, if there is one: the tighter of the attempt
    /// timeout and the call's deadline. When it fires, settle with [`Verdict::Timeout`].
    pub const fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// When the attempt was admitted.
    pub const fn admitted_at(&self) -> Instant {
        self.admitted_at
    }

    /// Settles every policy, innermost first, then reports the execution (unless the verdict
    /// is `Rejected`, which no statistic sees). Returns the attempt's duration.
    #[inline]
    pub fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) -> Duration {
        let Attempt {
            throttler,
            breaker,
            limiter,
            bulkhead,
            rate_limit,
            admitted_at,
            ..
        } = self;
        rate_limit.settle(verdict, env);
        bulkhead.settle(verdict, env);
        limiter.settle(verdict, env);
        breaker.settle(verdict, env);
        throttler.settle(verdict, env);
        let duration = env.now - admitted_at;
        if verdict.is_counted() {
            env.observer.on_event(&Event::Executed {
                verdict: *verdict,
                duration,
            });
        }
        duration
    }
}

/// An [`Attempt`]'s permits apart from the pipeline ([`Detach`]): what a future that owns its
/// pipeline keeps while the attempt runs. Attach it again with [`Pipeline::attach`] to settle
/// or cancel it; dropped detached, it would release nothing.
#[must_use = "attach it to its pipeline again: dropping it would leave what its permits hold taken"]
pub struct DetachedAttempt<T: Detach, B: Detach, L: Detach, H: Detach, Rl: Detach> {
    throttler: T::Detached,
    breaker: B::Detached,
    limiter: L::Detached,
    bulkhead: H::Detached,
    rate_limit: Rl::Detached,
    admitted_at: Instant,
    deadline: Option<Deadline>,
}

impl<T: Detach, B: Detach, L: Detach, H: Detach, Rl: Detach> fmt::Debug
    for DetachedAttempt<T, B, L, H, Rl>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetachedAttempt")
            .field("admitted_at", &self.admitted_at)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl<T: Detach, B: Detach, L: Detach, H: Detach, Rl: Detach> DetachedAttempt<T, B, L, H, Rl> {
    /// As [`Attempt::deadline`].
    pub const fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }
}

impl<'p, T: Detach, B: Detach, L: Detach, H: Detach, Rl: Detach> Attempt<'p, T, B, L, H, Rl> {
    /// Every permit's data, apart from the pipeline ([`Detach`]).
    #[inline]
    pub fn detach(self) -> DetachedAttempt<T, B, L, H, Rl> {
        DetachedAttempt {
            throttler: T::detach(self.throttler),
            breaker: B::detach(self.breaker),
            limiter: L::detach(self.limiter),
            bulkhead: H::detach(self.bulkhead),
            rate_limit: Rl::detach(self.rate_limit),
            admitted_at: self.admitted_at,
            deadline: self.deadline,
        }
    }
}

impl<Rt, T: Detach, B: Detach, L: Detach, H: Detach, Rl: Detach> Pipeline<Rt, T, B, L, H, Rl> {
    /// The attempt again, from what [`Attempt::detach`] took from one of this pipeline's.
    ///
    /// ```
    /// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resilix::pipeline::Pipeline;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    /// use resilix::Verdict;
    ///
    /// let pipeline = Pipeline::new().bulkhead(Bulkhead::new(BulkheadConfig::new(1)?));
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = resilix::permit::Env::new(Instant::ZERO, &mut rng);
    /// let detached = pipeline.admit(&mut env, None).unwrap().detach();
    /// assert!(pipeline.admit(&mut env, None).is_err(), "its slot is still held");
    /// pipeline.attach(detached).settle(&Verdict::Success, &mut env);
    /// assert!(pipeline.admit(&mut env, None).is_ok());
    /// # Ok::<(), resilix::bulkhead::BulkheadConfigError>(())
    /// ```
    #[inline]
    pub fn attach(&self, detached: DetachedAttempt<T, B, L, H, Rl>) -> Attempt<'_, T, B, L, H, Rl> {
        Attempt {
            throttler: self.throttler.attach(detached.throttler),
            breaker: self.breaker.attach(detached.breaker),
            limiter: self.limiter.attach(detached.limiter),
            bulkhead: self.bulkhead.attach(detached.bulkhead),
            rate_limit: self.rate_limit.attach(detached.rate_limit),
            admitted_at: detached.admitted_at,
            deadline: detached.deadline,
        }
    }
}

mod named;

#[cfg(all(test, not(loom)))]
mod tests;
