//! The async retry loop, written once for every runtime.
//!
//! [`execute`] drives a [`Call`](crate::call::Call) from async code: admit, race the attempt
//! against its deadline, classify, settle, ask retry, sleep (never past the deadline), loop. It
//! is `no_std` and allocation-free; a runtime contributes only a [`Timer`] (its clock and its
//! sleep). The tokio, embassy and async-std adapters are that `Timer` plus conveniences, so
//! every adapter has the same semantics by construction.
//!
//! The loop is one future with a name, [`Drive`], over an [`Engine`]: the parts it steps
//! through and how it keeps an admitted attempt. [`execute`] lends it the caller's parts
//! ([`Borrowed`]), `Resilience::execute` a `Resilience`
//! ([`Lent`](crate::resilience::Lent)); the tokio adapter's tower
//! Layer gives it an engine that owns its pipeline through an `Arc` and keeps the attempt
//! detached from it ([`Detach`](crate::permit::Detach)), so that a `Service::Future` can be
//! the loop itself, with no box.
//!
//! Cancellation safety: dropping the returned future at any await point drops the live
//! attempt, whose permits give back what they hold (bulkhead slot, in-flight count, half-open
//! probe) and record no outcome.
//!
//! ```
//! use core::future::{Future, Ready, ready};
//! use core::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::classify::ResultClassifier;
//! use resilix::execute::{execute, Timer};
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::time::{Clock, Instant, ManualClock};
//!
//! /// A timer on a manual clock whose sleeps complete at once by moving the clock.
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
//! let timer = Jump(ManualClock::new(Instant::ZERO));
//! let pipeline = Pipeline::new();
//! let mut rng = SeededRandom::new(3);
//! let classifier = ResultClassifier::new();
//! let fut = execute(&pipeline, &timer, &mut rng, &(), CallOptions::default(), &classifier,
//!     || ready(Ok::<u32, ()>(7)));
//! // Any executor runs it; this one completes on the first poll.
//! let out = poll_once(fut);
//! assert_eq!(out, Some(Ok(Ok(7))));
//! # fn poll_once<F: Future>(f: F) -> Option<F::Output> {
//! #     let mut f = core::pin::pin!(f);
//! #     let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
//! #     match f.as_mut().poll(&mut cx) { core::task::Poll::Ready(v) => Some(v), _ => None }
//! # }
//! ```
//!
//! Design notes: docs/design/pipeline-and-execute.md

use core::fmt;
use core::future::Future;
use core::ops::ControlFlow;

use crate::call::{CallOptions, Next, Stop};
use crate::classify::Classify;
use crate::observe::{Degradation, Observer};
use crate::pipeline::AsPipeline;
use crate::random::Random;
use crate::rejection::Rejection;
use crate::retry::GiveUpReason;
use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

mod drive;
pub(crate) mod engine;

pub use drive::{AttemptInfo, Drive, Operation, PerAttempt, with_attempt};
pub use engine::{Borrowed, Engine};

/// What a runtime lends the retry loop: its clock and its sleep.
///
/// `now` must be on the same timeline the sleeps use. Sleeping until an instant already past
/// must complete promptly.
pub trait Timer {
    /// The future `sleep_until` returns.
    type Sleep<'a>: Future<Output = ()>
    where
        Self: 'a;

    /// The current instant.
    fn now(&self) -> Instant;

    /// A future that completes at `at`.
    fn sleep_until(&self, at: Instant) -> Self::Sleep<'_>;
}

/// Holds each attempt back until it may be admitted: the adapter's side of a bounded wait
/// (a bulkhead slot, following the wait protocol in [`crate::bulkhead`]).
///
/// `ready` is awaited before every attempt, retries included. It completes with `Ok(())` when
/// the attempt may go to the pipeline (which can still refuse it), or with the rejection that
/// ends the call. It must not wait past `deadline`, and dropping its future must leave nothing
/// behind (a cancelled call). `()` is the gate that never waits.
///
/// A completed `Wait` is dropped right after the admission it let through is decided
/// (admitted, or refused by a policy, or the deadline passed), before the attempt runs: a
/// gate that lets waiters through on a wake-up resolves the wake-up in that drop, and passes
/// it on if the admission did not use it.
///
/// `Wait` does not borrow the gate, and is `Unpin`.
// Why: docs/design/pipeline-and-execute.md#gate-waits
pub trait Gate {
    /// The future `ready` returns.
    type Wait: Future<Output = Result<(), Rejection>> + Unpin;

    /// Wait, at `now`, until an attempt may be admitted.
    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> Self::Wait;
}

/// The gate that never waits.
impl Gate for () {
    type Wait = core::future::Ready<Result<(), Rejection>>;

    #[inline(always)]
    fn ready(&self, _now: Instant, _deadline: Option<Deadline>) -> Self::Wait {
        core::future::ready(Ok(()))
    }
}

/// A borrowed gate is the gate.
impl<G: Gate + ?Sized> Gate for &G {
    type Wait = G::Wait;

    #[inline(always)]
    fn ready(&self, now: Instant, deadline: Option<Deadline>) -> G::Wait {
        (**self).ready(now, deadline)
    }
}

/// What the last attempt produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempted<T> {
    /// The operation returned this (and it was classified as a failure).
    Output(T),
    /// The attempt's deadline fired first; the operation's future was dropped.
    TimedOut,
}

/// Why [`execute`] returned without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecuteError<T> {
    /// A policy refused an attempt. Never retried: retrying at once just re-refuses.
    Refused {
        /// Which policy, and when it would admit again.
        rejection: Rejection,
        /// How many attempts had been made before the refusal.
        attempts: u32,
        /// The previous attempt's outcome, when the refusal came on a retry.
        last: Option<Attempted<T>>,
    },
    /// The retry policy gave up.
    GaveUp {
        /// Why it did not try again.
        reason: GiveUpReason,
        /// How many attempts were made.
        attempts: u32,
        /// What the last attempt produced.
        last: Attempted<T>,
    },
    /// The call's deadline passed before another attempt could start.
    DeadlinePassed {
        /// How many attempts were made.
        attempts: u32,
        /// The previous attempt's outcome, if there was one.
        last: Option<Attempted<T>>,
    },
}

impl<T> ExecuteError<T> {
    /// The same error with every attempt's output mapped by `f` (a tower service keeps the
    /// inner error and drops the response, say), its variant and counts unchanged.
    ///
    /// ```
    /// use resilix::execute::{Attempted, ExecuteError};
    /// use resilix::retry::GiveUpReason;
    ///
    /// let e = ExecuteError::GaveUp {
    ///     reason: GiveUpReason::AttemptsExhausted { attempts: 3 },
    ///     attempts: 3,
    ///     last: Attempted::Output(503u16),
    /// };
    /// let mapped = e.map(|status| status / 100);
    /// assert!(matches!(mapped, ExecuteError::GaveUp { last: Attempted::Output(5), attempts: 3, .. }));
    /// ```
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> ExecuteError<U> {
        let mut keep = |a: Attempted<T>| match a {
            Attempted::Output(t) => Attempted::Output(f(t)),
            Attempted::TimedOut => Attempted::TimedOut,
        };
        match self {
            ExecuteError::Refused {
                rejection,
                attempts,
                last,
            } => ExecuteError::Refused {
                rejection,
                attempts,
                last: last.map(keep),
            },
            ExecuteError::GaveUp {
                reason,
                attempts,
                last,
            } => ExecuteError::GaveUp {
                reason,
                attempts,
                last: keep(last),
            },
            ExecuteError::DeadlinePassed { attempts, last } => ExecuteError::DeadlinePassed {
                attempts,
                last: last.map(keep),
            },
        }
    }

    /// The rejection, if a policy refused: one of the pipeline's policies refused an attempt,
    /// or the retry budget refused a retry (`budget-exceeded`).
    pub fn rejection(&self) -> Option<Rejection> {
        match self {
            ExecuteError::Refused { rejection, .. } => Some(*rejection),
            ExecuteError::GaveUp { reason, .. } => reason.as_rejection(),
            ExecuteError::DeadlinePassed { .. } => None,
        }
    }

    /// What a fallback answering in place of this error reports
    /// ([`Event::FallbackServed`](crate::observe::Event::FallbackServed)).
    pub fn degradation(&self) -> Degradation {
        match self {
            ExecuteError::Refused { rejection, .. } => Degradation::Refused(*rejection),
            ExecuteError::GaveUp { reason, .. } => Degradation::GaveUp(*reason),
            ExecuteError::DeadlinePassed { .. } => Degradation::DeadlinePassed,
        }
    }

    /// How many attempts reached the upstream.
    pub fn attempts(&self) -> u32 {
        match self {
            ExecuteError::Refused { attempts, .. }
            | ExecuteError::GaveUp { attempts, .. }
            | ExecuteError::DeadlinePassed { attempts, .. } => *attempts,
        }
    }
}

impl<T> fmt::Display for ExecuteError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecuteError::Refused {
                rejection,
                attempts,
                ..
            } => {
                write!(f, "refused after {attempts} attempt(s): {rejection}")
            }
            ExecuteError::GaveUp {
                reason,
                attempts,
                last,
            } => {
                let last = match last {
                    Attempted::Output(_) => "a failure",
                    Attempted::TimedOut => "a timeout",
                };
                write!(
                    f,
                    "gave up after {attempts} attempt(s), the last {last}: {reason}"
                )
            }
            ExecuteError::DeadlinePassed { attempts, .. } => {
                write!(f, "the deadline passed after {attempts} attempt(s)")
            }
        }
    }
}

impl<T: fmt::Debug> core::error::Error for ExecuteError<T> {}

/// Runs `operation` through `pipeline` until it succeeds, is refused, or retry gives up.
///
/// `pipeline` is anything that holds a [`Pipeline`](crate::pipeline::Pipeline) ([`AsPipeline`]:
/// the pipeline itself, a reference, a `Box` or an `Arc`), so the six slots are named once, by
/// the pipeline's type, and not again here.
///
/// `operation` is called once per attempt and returns a future (it may borrow the caller's
/// state). Each attempt is raced against its deadline (the tighter of the pipeline's attempt
/// timeout and the call's deadline); when the deadline wins, the attempt's future is dropped and
/// it settles as [`Verdict::Timeout`]. `classifier` turns each output into a verdict; `Success`
/// and `Answered` end the call with `Ok(output)`.
///
/// The future is the loop itself, a [`Drive`]: nothing runs until it is first polled.
#[allow(clippy::too_many_arguments)] // each argument is one thing the caller owns
pub fn execute<'a, P, Tm, R, O, C, Op>(
    pipeline: &'a P,
    timer: &'a Tm,
    rng: &'a mut R,
    observer: &'a O,
    options: CallOptions,
    classifier: &'a C,
    operation: Op,
) -> Drive<Borrowed<'a, P, Tm, R, O, C>, (), Op>
where
    P: AsPipeline + ?Sized,
    Tm: Timer + ?Sized,
    R: Random + ?Sized,
    O: Observer + ?Sized,
    C: Classify<<Op::Future as Future>::Output> + ?Sized,
    Op: Operation,
{
    let engine = Borrowed::new(pipeline, timer, rng, observer, classifier);
    Drive::new(engine, (), options, operation)
}

/// [`execute`], with every attempt held at `gate` until it may be admitted: how an adapter
/// adds a bounded wait for a bulkhead slot (see [`Gate`]). A gate's refusal ends the call as
/// [`ExecuteError::Refused`] and reaches the observer as [`Event::Rejected`](crate::observe::Event::Rejected),
/// exactly as a policy's does.
#[allow(clippy::too_many_arguments)] // each argument is one thing the caller owns
pub fn execute_gated<'a, P, Tm, R, O, C, G, Op>(
    pipeline: &'a P,
    timer: &'a Tm,
    rng: &'a mut R,
    observer: &'a O,
    options: CallOptions,
    classifier: &'a C,
    gate: &'a G,
    operation: Op,
) -> Drive<Borrowed<'a, P, Tm, R, O, C>, &'a G, Op>
where
    P: AsPipeline + ?Sized,
    Tm: Timer + ?Sized,
    R: Random + ?Sized,
    O: Observer + ?Sized,
    C: Classify<<Op::Future as Future>::Output> + ?Sized,
    G: Gate + ?Sized,
    Op: Operation,
{
    let engine = Borrowed::new(pipeline, timer, rng, observer, classifier);
    Drive::new(engine, gate, options, operation)
}

impl<T> ExecuteError<T> {
    /// The error for an attempt that could not start ([`Call::admit`](crate::call::Call::admit)
    /// returned `stop`), after `attempts` attempts whose last produced `last`.
    pub fn stopped(stop: Stop, attempts: u32, last: Option<Attempted<T>>) -> Self {
        match stop {
            Stop::Refused(rejection) => ExecuteError::Refused {
                rejection,
                attempts,
                last,
            },
            Stop::DeadlinePassed => ExecuteError::DeadlinePassed { attempts, last },
        }
    }
}

/// What a settled attempt's decision means for the call: its result (`Break`), or a retry at
/// an instant, carrying what the attempt produced (`Continue`): the loop's ([`Drive`]), public
/// for a driver that steps a [`Call`](crate::call::Call) by hand (the simulator's), so the
/// mapping from decision to error is written once.
///
/// ```
/// use core::ops::ControlFlow;
/// use resilix::call::Next;
/// use resilix::execute::{conclude, Attempted};
/// let done = conclude(Next::Done, Attempted::Output(3), 1);
/// assert_eq!(done, ControlFlow::Break(Ok(3)));
/// ```
#[allow(clippy::type_complexity)] // the two outcomes of one decision, spelled out
pub fn conclude<T>(
    next: Next,
    attempted: Attempted<T>,
    attempts: u32,
) -> ControlFlow<Result<T, ExecuteError<T>>, (Instant, Attempted<T>)> {
    match next {
        Next::Done => ControlFlow::Break(match attempted {
            Attempted::Output(output) => Ok(output),
            // A classifier cannot call a timeout an answer; treat it as one that gave up.
            Attempted::TimedOut => Err(ExecuteError::GaveUp {
                reason: GiveUpReason::NotRetryable(Verdict::Timeout.kind()),
                attempts,
                last: Attempted::TimedOut,
            }),
        }),
        Next::GiveUp(reason) => ControlFlow::Break(Err(ExecuteError::GaveUp {
            reason,
            attempts,
            last: attempted,
        })),
        Next::RetryAt(at) => ControlFlow::Continue((at, attempted)),
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
