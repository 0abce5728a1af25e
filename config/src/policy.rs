//! The policies a config chooses at run time, as types a pipeline can name: a breaker over a
//! time or a count window, a budget of any kind, a retry that may be absent.
//!
//! Each is a plain enum over the core's own types that forwards every call: nothing is
//! boxed, nothing is decided here.

use std::sync::Arc;

use resilix::breaker::{Breaker, BreakerPermit, CallRing, CircuitState, TimeBuckets};
use resilix::observe::Observer;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::Random;
use resilix::rejection::Rejection;
use resilix::retry::budget::{RatioBudget, RetryBreaker, RetryBudget, TokenBucket};
use resilix::retry::{AttemptOutcome, NoRetry, Retry, RetryDecision, RetryPolicy, RetryState};
use resilix::time::Instant;
use resilix::verdict::{Verdict, VerdictKind};

use crate::section::{COUNT_WINDOW_WORDS, TIME_WINDOW_BUCKETS};

/// The breaker's time window type.
pub type TimeWindow = TimeBuckets<TIME_WINDOW_BUCKETS>;
/// The breaker's count window type (the last 1,024 calls at most).
pub type CountWindow = CallRing<COUNT_WINDOW_WORDS>;

/// A breaker whose window kind the config chose.
///
/// ```
/// use resilix::breaker::CircuitState;
/// use resilix_config::section::BreakerSection;
///
/// let breaker = BreakerSection::default().build("breaker")?;
/// assert_eq!(breaker.state(), CircuitState::Closed);
/// # Ok::<(), resilix_config::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum ConfiguredBreaker {
    /// Counting the last stretch of time.
    Time(Breaker<TimeWindow>),
    /// Counting the last N calls.
    Count(Breaker<CountWindow>),
}

macro_rules! each_breaker {
    ($self:ident, $b:ident => $e:expr) => {
        match $self {
            ConfiguredBreaker::Time($b) => $e,
            ConfiguredBreaker::Count($b) => $e,
        }
    };
}

impl ConfiguredBreaker {
    /// The state now.
    pub fn state(&self) -> CircuitState {
        each_breaker!(self, b => b.state())
    }

    /// The configuration in force (see `Breaker::config`).
    pub fn config(&self) -> resilix::breaker::Config {
        each_breaker!(self, b => b.config())
    }

    /// Puts `config` in force in place (see `Breaker::reconfigure`).
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: resilix::breaker::Config,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), resilix::breaker::BreakerReconfigureError> {
        each_breaker!(self, b => b.reconfigure(config, env))
    }

    /// Whether `reconfigure` would take `config`, changing nothing (see
    /// `Breaker::check_reconfigure`).
    pub fn check_reconfigure(
        &self,
        config: &resilix::breaker::Config,
    ) -> Result<(), resilix::breaker::BreakerReconfigureError> {
        each_breaker!(self, b => b.check_reconfigure(config))
    }

    /// Holds the circuit open until [`reset`](Self::reset) (see `Breaker::force_open`).
    pub fn force_open<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        each_breaker!(self, b => b.force_open(env))
    }

    /// Admits everything and counts nothing until reset (see `Breaker::disable`).
    pub fn disable<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        each_breaker!(self, b => b.disable(env))
    }

    /// Closes afresh from any state (see `Breaker::reset`).
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        each_breaker!(self, b => b.reset(env))
    }
}

/// The permit of a [`ConfiguredBreaker`]: the inner breaker's own.
#[derive(Debug)]
pub enum ConfiguredBreakerPermit<'a> {
    /// From a time-window breaker.
    Time(BreakerPermit<'a, TimeWindow>),
    /// From a count-window breaker.
    Count(BreakerPermit<'a, CountWindow>),
}

impl Policy for ConfiguredBreaker {
    type Permit<'a> = ConfiguredBreakerPermit<'a>;

    #[inline]
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<ConfiguredBreakerPermit<'a>, Rejection> {
        match self {
            ConfiguredBreaker::Time(b) => b.admit(env).map(ConfiguredBreakerPermit::Time),
            ConfiguredBreaker::Count(b) => b.admit(env).map(ConfiguredBreakerPermit::Count),
        }
    }
}

impl Permit for ConfiguredBreakerPermit<'_> {
    #[inline]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        match self {
            ConfiguredBreakerPermit::Time(p) => p.settle(verdict, env),
            ConfiguredBreakerPermit::Count(p) => p.settle(verdict, env),
        }
    }
}

/// A retry budget of the kind the config chose.
#[derive(Debug)]
pub enum Budget {
    /// A token bucket (AWS SDK, Brooker, gRPC A6).
    TokenBucket(TokenBucket),
    /// A ratio of first attempts (Google SRE).
    Ratio(RatioBudget),
    /// Brooker's retry circuit breaker.
    RetryBreaker(RetryBreaker),
}

macro_rules! each_budget {
    ($self:ident, $b:ident => $e:expr) => {
        match $self {
            Budget::TokenBucket($b) => $e,
            Budget::Ratio($b) => $e,
            Budget::RetryBreaker($b) => $e,
        }
    };
}

impl RetryBudget for Budget {
    #[inline]
    fn record_first_attempt(&self, now: Instant) {
        each_budget!(self, b => b.record_first_attempt(now))
    }
    #[inline]
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        each_budget!(self, b => b.try_spend(now, after))
    }
    #[inline]
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        each_budget!(self, b => b.record_unretried_failure(now, after))
    }
    #[inline]
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        each_budget!(self, b => b.record_success(now, retried_after))
    }
}

/// The budget a configured retry spends from: a shared [`Budget`], or none (every retry the
/// attempts allow is granted, as the core's `Unlimited`).
#[derive(Clone, Debug)]
pub struct ConfiguredBudget(Option<Arc<Budget>>);

impl ConfiguredBudget {
    /// No budget.
    pub const UNLIMITED: ConfiguredBudget = ConfiguredBudget(None);

    /// Spend from `budget`, shared with every other holder of the `Arc`.
    pub fn shared(budget: Arc<Budget>) -> ConfiguredBudget {
        ConfiguredBudget(Some(budget))
    }

    /// The shared budget, if any.
    pub fn get(&self) -> Option<&Arc<Budget>> {
        self.0.as_ref()
    }
}

impl RetryBudget for ConfiguredBudget {
    #[inline]
    fn record_first_attempt(&self, now: Instant) {
        if let Some(b) = &self.0 {
            b.record_first_attempt(now)
        }
    }
    #[inline]
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        self.0.as_ref().is_none_or(|b| b.try_spend(now, after))
    }
    #[inline]
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        if let Some(b) = &self.0 {
            b.record_unretried_failure(now, after)
        }
    }
    #[inline]
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        if let Some(b) = &self.0 {
            b.record_success(now, retried_after)
        }
    }
}

/// The retry slot of a configured pipeline: a [`Retry`] when the config has a `retry` table,
/// the core's [`NoRetry`] when it has none.
#[derive(Clone, Debug)]
pub struct ConfiguredRetry(Option<Retry<ConfiguredBudget>>);

impl ConfiguredRetry {
    /// No retries: one attempt per call.
    pub const NONE: ConfiguredRetry = ConfiguredRetry(None);

    /// Retry with `retry`.
    pub fn new(retry: Retry<ConfiguredBudget>) -> ConfiguredRetry {
        ConfiguredRetry(Some(retry))
    }

    /// The retry policy, if the pipeline retries.
    pub fn get(&self) -> Option<&Retry<ConfiguredBudget>> {
        self.0.as_ref()
    }
}

impl RetryPolicy for ConfiguredRetry {
    type State = Option<RetryState>;

    #[inline]
    fn begin(&self, now: Instant) -> Option<RetryState> {
        self.0.as_ref().map(|r| r.begin(now))
    }

    #[inline]
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        state: &mut Option<RetryState>,
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        match (&self.0, state) {
            (Some(retry), Some(state)) => retry.decide(state, outcome, env),
            // `begin` pairs a retry with a state; a state from another policy decides as
            // no retry rather than inventing one.
            _ => NoRetry.decide(&mut (), outcome, env),
        }
    }
}
