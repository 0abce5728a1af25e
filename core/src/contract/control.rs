//! Operator controls: what a person on call can do to a running policy, and why each policy
//! has the controls it has and no others.
//!
//! A policy is its own handle: it is `Sync`, takes `&self`, and is shared by reference, `Arc`
//! or `static`, so the code that serves an admin endpoint holds the same object the pipeline
//! does (tower-resilience PR #412 had to add a separate controller because its breaker lived
//! inside a layer). Every control takes the same [`Env`] as `admit`, and every change it makes
//! is an event: the breaker's are [`Event::CircuitTransition`]s with cause
//! [`TransitionCause::Operator`] (so a state gauge follows them), every other policy's is one
//! [`Event::PolicyReset`].
//!
//! **Reset** means *a clean state, not old counts* (couchbase-net-client PR #177 shipped a
//! `Reset()` that restored them): what the policy learned is forgotten and it decides as one
//! built afresh from its config would. What is *true* is kept: calls in flight still hold
//! their slots and give them back when they end, so no reset can leak a permit or let a cap be
//! passed.
//!
//! | policy | force open (refuse all) | force closed / disable (admit all) | reset |
//! |---|---|---|---|
//! | [`Breaker`], [`KeyedBreaker`] (per key) | `force_open`: refuses with `circuit-open`, no retry-at | `disable`: admits all, counts nothing | `reset`: closed, empty window, no failure streak, base open wait, probes forgotten |
//! | [`Limiter`] | — | — | `reset`: the initial limit, an empty sample window, no baseline RTT; in-flight calls kept |
//! | [`Throttler`] | — | — | `reset`: an empty window, so shed probability 0 |
//! | [`TokenBucket`] | — | — | `reset`: the configured initial balance |
//! | [`RatioBudget`], [`RetryBreaker`] | — | — | `reset`: an empty window |
//! | [`RateLimiter`] | — | — | `reset`: a full bucket at `now` |
//! | [`Bulkhead`] | — | — | — |
//!
//! Why the empty cells are empty:
//!
//! * **Force open lives on the breaker only.** Refusing every call to an upstream is isolation,
//!   and the breaker is the policy whose state means that: its refusal (`circuit-open`) tells
//!   the caller and the dashboards what happened. A bulkhead or limiter refusing everything
//!   would report `bulkhead-full` while nothing is in flight, a lie in every log line.
//! * **Force closed is `disable` on the breaker.** resilience4j and Hystrix also have a
//!   "metrics only" state that keeps counting while it admits; here a disabled breaker counts
//!   nothing, because `reset` clears the window on the way back anyway and the counts would only
//!   cost the hot path. No other policy has it: a bulkhead or a rate limiter that admits past
//!   its cap has stopped being one (raise the cap by reconfiguring instead, which keeps the
//!   in-flight rule exact), and the limiter, throttler and budgets already admit everything an
//!   upstream can take; when one misjudges, `reset` is the lever.
//! * **The bulkhead has no reset**: its only state is the exact number of calls in flight,
//!   which is a fact, not something learned. Forgetting it would admit past the cap while the
//!   old calls still run.
//!
//! Concurrency: each control is one or a few atomic steps and never waits. What is exact: no
//! control leaks a permit or a slot (tests: `core/tests/control_stress.rs`); the token bucket
//! and the rate limiter are reset by a single store or compare-and-swap, so every spend or
//! admission lands wholly before or wholly after. What is approximate: an outcome settling at
//! the very instant of a reset may land in the cleared window (one call per racing settler,
//! as at any window boundary). [`Limiter::reset`] can find the limiter busy closing a window
//! and return [`Busy`] rather than wait.
//!
//! [`Breaker`]: crate::breaker::Breaker
//! [`KeyedBreaker`]: crate::breaker::KeyedBreaker
//! [`Limiter`]: crate::limiter::Limiter
//! [`Limiter::reset`]: crate::limiter::Limiter::reset
//! [`Throttler`]: crate::throttler::Throttler
//! [`TokenBucket`]: crate::retry::budget::TokenBucket
//! [`RatioBudget`]: crate::retry::budget::RatioBudget
//! [`RetryBreaker`]: crate::retry::budget::RetryBreaker
//! [`RateLimiter`]: crate::rate_limit::RateLimiter
//! [`Bulkhead`]: crate::bulkhead::Bulkhead
//! [`Env`]: crate::permit::Env
//! [`Event::CircuitTransition`]: crate::observe::Event::CircuitTransition
//! [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
//! [`TransitionCause::Operator`]: crate::observe::TransitionCause::Operator
//!
//! Design notes: docs/design/controls-and-reconfigure.md

use core::fmt;

use crate::observe::{Event, Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;

/// A control found the policy in the middle of a step only one thread may take (a limiter
/// closing its window) and changed nothing; try again. Controls never wait.
///
/// ```
/// use resilix::control::Busy;
///
/// assert!(Busy.to_string().contains("try again"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Busy;

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the policy was busy updating itself (a window closing) and nothing was changed; \
             try again",
        )
    }
}

impl core::error::Error for Busy {}

/// Reports that a `policy` took new settings in place at `env.now` (its `reconfigure`).
pub(crate) fn emit_reconfigured<R: Random + ?Sized, O: Observer + ?Sized>(
    policy: PolicyKind,
    env: &Env<'_, R, O>,
) {
    env.observer.on_event(&Event::PolicyReconfigured {
        policy,
        at: env.now,
    });
}

/// Reports an operator's reset of a `policy` at `env.now`.
pub(crate) fn emit_reset<R: Random + ?Sized, O: Observer + ?Sized>(
    policy: PolicyKind,
    env: &Env<'_, R, O>,
) {
    env.observer.on_event(&Event::PolicyReset {
        policy,
        at: env.now,
    });
}

/// Why a running policy's `reconfigure` changed nothing; the settings in force stay. One type
/// for every policy, over that policy's config error `E` (each policy names it:
/// `BreakerReconfigureError`, `LimiterReconfigureError`, …).
///
/// ```
/// use resilix::control::ReconfigureError;
/// use resilix::rate_limit::RateLimitConfigError;
///
/// let fixed: ReconfigureError<RateLimitConfigError> = ReconfigureError::Fixed { field: "window" };
/// assert!(fixed.to_string().contains("build a new one"));
/// assert!(ReconfigureError::<RateLimitConfigError>::Busy.to_string().contains("try again"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ReconfigureError<E> {
    /// The new config is invalid, as the policy's constructor would refuse it.
    Config(E),
    /// The new config changes a setting that cannot change in a running policy (its
    /// `reconfigure` documents which can); named here.
    Fixed {
        /// The field.
        field: &'static str,
    },
    /// Another reconfiguration of this policy is running; try again (none waits).
    Busy,
}

impl<E: core::fmt::Display> core::fmt::Display for ReconfigureError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReconfigureError::Config(e) => write!(f, "invalid config: {e}"),
            ReconfigureError::Fixed { field } => write!(
                f,
                "{field} cannot change in a running policy; build a new one with it"
            ),
            ReconfigureError::Busy => {
                f.write_str("another reconfiguration of this policy is running; try again")
            }
        }
    }
}

impl<E: core::fmt::Debug + core::fmt::Display> core::error::Error for ReconfigureError<E> {}
