//! The retry loop as a state machine: what every adapter and the simulator drive.
//!
//! A [`Call`] is one logical call through a [`Pipeline`]: it admits attempts, settles them,
//! and asks the pipeline's retry policy what to do next. It never sleeps and never reads a
//! clock: the driver (an async adapter, the simulator, a firmware loop) waits until the
//! instant it is given, races each attempt against [`Attempt::deadline`], and classifies.
//!
//! ```
//! use resilix::call::{CallOptions, Next};
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::permit::Env;
//! use resilix::retry::GiveUpReason;
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! let pipeline = Pipeline::new(); // no retry: one attempt
//! let mut rng = SeededRandom::new(5);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let mut call = pipeline.call(env.now, CallOptions::default());
//! let attempt = call.admit(&mut env).unwrap();
//! let next = call.settle(attempt, &Verdict::Transient, &mut env);
//! assert_eq!(next, Next::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 }));
//! ```
//!
//! Design notes: docs/design/pipeline-and-execute.md

use crate::inbound::Priority;
use crate::observe::{Event, Observer};
use crate::permit::{Env, Policy};
use crate::pipeline::{Attempt, Pipeline};
use crate::random::Random;
use crate::rejection::Rejection;
use crate::retry::{AttemptOutcome, RetryDecision, RetryPolicy};
use core::time::Duration;

use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

pub use crate::retry::RetryDecision as Next;

/// How a caller describes one logical call.
///
/// A timeout is relative: [`CallOptions::timeout`] counts from the moment the call starts
/// (the driver's first clock read), so it needs no clock of the caller's own. A deadline is an
/// instant on the driver's timeline: build it from the same clock the driver
/// reads (`Deadline::after(clock.now(), timeout)`; with an adapter, `resilix_tokio::deadline_in`
/// or `Resilience::deadline_in`). A deadline from another timeline (anchored at
/// [`Instant::ZERO`](crate::time::Instant::ZERO), or read from a clock of your own) passes at
/// a moment unrelated to the timeout, and every call then ends in `DeadlinePassed`.
///
/// ```
/// use core::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::time::{Clock, Deadline, Instant, ManualClock};
///
/// let clock = ManualClock::new(Instant::from_secs(3_600)); // the driver's clock
/// let opts = CallOptions::default()
///     .deadline(Deadline::after(clock.now(), Duration::from_secs(2)))
///     .idempotent(true);
/// assert!(opts.is_idempotent());
/// assert_eq!(opts.deadline_value().unwrap().remaining(clock.now()), Duration::from_secs(2));
///
/// // The same budget as a relative timeout: resolved when the call starts.
/// let relative = CallOptions::default().timeout(Duration::from_secs(2));
/// assert_eq!(relative.deadline_from(clock.now()), opts.deadline_value());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallOptions {
    deadline: Option<Deadline>,
    timeout: Option<Duration>,
    idempotent: bool,
    criticality: Option<Priority>,
}

impl CallOptions {
    /// The call must finish within `timeout` of its start, retry delays included: a deadline
    /// the driver sets from its own clock when the call starts. With [`Self::deadline`] too,
    /// the earlier of the two applies.
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The relative timeout, if any.
    pub const fn timeout_value(&self) -> Option<Duration> {
        self.timeout
    }

    /// The call's deadline if it starts at `now`: the tighter of the deadline and `now` plus
    /// the timeout.
    pub const fn deadline_from(&self, now: Instant) -> Option<Deadline> {
        match (self.timeout, self.deadline) {
            (Some(timeout), deadline) => Some(Deadline::after(now, timeout).min_opt(deadline)),
            (None, deadline) => deadline,
        }
    }

    /// The call must finish by `deadline`, an instant on the driver's clock; retry delays
    /// count against it.
    pub const fn deadline(mut self, deadline: Deadline) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Declares the operation safe to repeat after a timeout (the first attempt may still be
    /// running upstream). Without this, a `Timeout` is never retried.
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// The overall deadline, if one was given as an instant (a [`Self::timeout`] becomes one
    /// only when the call starts: [`Self::deadline_from`], [`Call::options`]).
    pub const fn deadline_value(&self) -> Option<Deadline> {
        self.deadline
    }

    /// Whether the operation was declared idempotent.
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// How important the call is (Google SRE's criticality), for the next hop: each attempt
    /// carries it ([`AttemptInfo`](crate::execute::AttemptInfo)) so that an integration can
    /// send it on (`x-criticality`), taken from the inbound request that caused the call or
    /// set here. Unset, nothing is sent and the next hop applies its own default.
    pub const fn criticality(mut self, criticality: Priority) -> Self {
        self.criticality = Some(criticality);
        self
    }

    /// The criticality set with [`Self::criticality`], if any.
    pub const fn criticality_value(&self) -> Option<Priority> {
        self.criticality
    }
}

/// Why an attempt could not even start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stop {
    /// A policy refused it (never retried: retrying immediately just re-refuses).
    Refused(Rejection),
    /// The call's deadline has already passed; sending it would spend upstream capacity on an
    /// answer nobody waits for.
    DeadlinePassed,
}

/// One logical call in progress. See the [module docs](self).
pub struct Call<'p, Rt: RetryPolicy, T, B, L, H, Rl> {
    pipeline: &'p Pipeline<Rt, T, B, L, H, Rl>,
    state: CallState<Rt::State>,
}

/// A [`Call`]'s progress apart from its pipeline: the retry policy's state, the attempts made
/// and the options. What a driver that cannot keep a borrow of the pipeline keeps between
/// steps (the tower Layer's future, which owns its pipeline through an `Arc`), advancing it
/// with [`Pipeline::admit_next`] and [`Pipeline::settle_attempt`].
///
/// ```
/// use resilix::call::{CallOptions, Next};
/// use resilix::pipeline::Pipeline;
/// use resilix::random::SeededRandom;
/// use resilix::permit::Env;
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let pipeline = Pipeline::new();
/// let mut rng = SeededRandom::new(5);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let mut call = pipeline.begin(env.now, CallOptions::default());
/// let attempt = pipeline.admit_next(&mut call, &mut env).unwrap();
/// assert_eq!(pipeline.settle_attempt(&mut call, attempt, &Verdict::Success, &mut env), Next::Done);
/// assert_eq!(call.attempts(), 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CallState<S> {
    state: S,
    attempts: u32,
    options: CallOptions,
}

impl<S> CallState<S> {
    /// How many attempts have been admitted so far.
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The options the call was started with, its timeout resolved into its deadline.
    pub const fn options(&self) -> CallOptions {
        self.options
    }
}

impl<Rt: RetryPolicy, T: Policy, B: Policy, L: Policy, H: Policy, Rl: Policy>
    Pipeline<Rt, T, B, L, H, Rl>
{
    /// Starts one logical call at `now`.
    #[inline]
    pub fn call(&self, now: Instant, options: CallOptions) -> Call<'_, Rt, T, B, L, H, Rl> {
        Call {
            pipeline: self,
            state: self.begin(now, options),
        }
    }

    /// Starts one logical call at `now`, its progress kept apart from the pipeline
    /// ([`CallState`]).
    #[inline]
    pub fn begin(&self, now: Instant, options: CallOptions) -> CallState<Rt::State> {
        // The relative timeout becomes a deadline here, once: every attempt and every retry
        // delay is then measured against the same instant.
        let options = CallOptions {
            deadline: options.deadline_from(now),
            timeout: None,
            idempotent: options.idempotent,
            criticality: options.criticality,
        };
        CallState {
            state: self.retry_policy().begin(now),
            attempts: 0,
            options,
        }
    }

    /// [`Call::admit`] for a call kept apart from the pipeline.
    #[inline]
    pub fn admit_next<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        call: &mut CallState<Rt::State>,
        env: &mut Env<'_, R, O>,
    ) -> Result<Attempt<'_, T, B, L, H, Rl>, Stop> {
        if call.options.deadline.is_some_and(|d| d.has_passed(env.now)) {
            return Err(Stop::DeadlinePassed);
        }
        let attempt = self
            .admit(env, call.options.deadline)
            .map_err(Stop::Refused)?;
        call.attempts += 1;
        Ok(attempt)
    }

    /// [`Call::settle`] for a call kept apart from the pipeline.
    #[inline]
    pub fn settle_attempt<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        call: &mut CallState<Rt::State>,
        attempt: Attempt<'_, T, B, L, H, Rl>,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) -> Next {
        attempt.settle(verdict, env);
        let outcome = AttemptOutcome {
            verdict: *verdict,
            attempt: call.attempts,
            idempotent: call.options.idempotent,
            deadline: call.options.deadline,
        };
        let decision = self.retry_policy().decide(&mut call.state, &outcome, env);
        match decision {
            RetryDecision::Done => {}
            RetryDecision::RetryAt(at) => env.observer.on_event(&Event::RetryScheduled {
                attempt: call.attempts + 1,
                delay: at - env.now,
                after: *verdict,
            }),
            RetryDecision::GiveUp(reason) => env.observer.on_event(&Event::RetryRefused {
                reason,
                after: *verdict,
            }),
        }
        decision
    }
}

impl<'p, Rt: RetryPolicy, T: Policy, B: Policy, L: Policy, H: Policy, Rl: Policy>
    Call<'p, Rt, T, B, L, H, Rl>
{
    /// Admits the next attempt through the whole pipeline.
    #[inline]
    pub fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &mut self,
        env: &mut Env<'_, R, O>,
    ) -> Result<Attempt<'p, T, B, L, H, Rl>, Stop> {
        self.pipeline.admit_next(&mut self.state, env)
    }

    /// Settles the attempt with its verdict and decides what happens next. Reports
    /// [`Event::RetryScheduled`] or [`Event::RetryRefused`] for failures.
    #[inline]
    pub fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        &mut self,
        attempt: Attempt<'p, T, B, L, H, Rl>,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) -> Next {
        self.pipeline
            .settle_attempt(&mut self.state, attempt, verdict, env)
    }

    /// How many attempts have been admitted so far.
    pub const fn attempts(&self) -> u32 {
        self.state.attempts
    }

    /// The options the call was started with, its timeout resolved into its deadline.
    pub const fn options(&self) -> CallOptions {
        self.state.options
    }
}

/// How a driver that hands each attempt its own request (the tower Layer: a service takes its
/// request by value) gets the request for the next attempt, by the retry policy's type: a
/// pipeline that never retries moves the one request into its one attempt, so the request
/// need not be `Clone` (`reqwest::Request` is not); a retrying one clones it per attempt.
///
/// ```
/// use resilix::call::Replay;
/// use resilix::retry::{NoRetry, Retry};
///
/// struct NotClone(u32);
/// let mut kept = Some(NotClone(7));
/// let first = <NoRetry as Replay<NotClone>>::next_request(&mut kept);
/// assert_eq!(first.map(|r| r.0), Some(7));
/// assert!(kept.is_none(), "moved into the one attempt");
///
/// let mut kept = Some(3u32);
/// assert_eq!(<Retry as Replay<u32>>::next_request(&mut kept), Some(3));
/// assert_eq!(kept, Some(3), "kept for the next attempt");
/// ```
pub trait Replay<Req> {
    /// The request for the next attempt, from the one `kept` (`None` once it is gone).
    fn next_request(kept: &mut Option<Req>) -> Option<Req>;
}

/// One attempt: the request moves into it.
impl<Req> Replay<Req> for crate::retry::NoRetry {
    #[inline]
    fn next_request(kept: &mut Option<Req>) -> Option<Req> {
        kept.take()
    }
}

/// Every attempt gets a clone.
impl<Req: Clone, B> Replay<Req> for crate::retry::Retry<B> {
    #[inline]
    fn next_request(kept: &mut Option<Req>) -> Option<Req> {
        kept.clone()
    }
}

impl<Req, P: Replay<Req> + ?Sized> Replay<Req> for &P {
    #[inline]
    fn next_request(kept: &mut Option<Req>) -> Option<Req> {
        P::next_request(kept)
    }
}

#[cfg(feature = "alloc")]
impl<Req, P: Replay<Req> + ?Sized> Replay<Req> for alloc::sync::Arc<P> {
    #[inline]
    fn next_request(kept: &mut Option<Req>) -> Option<Req> {
        P::next_request(kept)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
