//! What a dashboard shows between events: each policy's state read as gauges.
//!
//! **Sampling.** Two paths, one per kind of value:
//!
//! * *On change*, from events: a breaker's state is set at every
//!   [`Event::CircuitTransition`](resilix::observe::Event::CircuitTransition) and the limiter's
//!   limit at every [`Event::LimitChanged`](resilix::observe::Event::LimitChanged), by the
//!   observer that hears them (`metrics::MetricsObserver`). Those change rarely and exactly.
//! * *On a `sample()` call*, for everything: the observer's `sample(&policy, now)` reads the
//!   current value of every gauge the policy has ([`Gauged`]). In-flight counts, a throttler's
//!   probability and a budget's balance change at every call, so reporting them per change
//!   would cost the hot path a metric update per admit; they are read when asked instead.
//!
//! Call `sample` once at start, so every gauge has a value before the first event (a breaker
//! that never trips would otherwise never report `closed`: failsafe-go #46), then on a timer
//! (`MetricsObserver::sample_every`) or at each scrape. A whole pipeline is [`Gauged`]: one
//! call reads each of its slots. A retry budget is shared by pipelines, so it is sampled on
//! its own.
//!
//! ```
//! use resilix::breaker::{Breaker, CircuitState};
//! use resilix::time::Instant;
//! use resilix_tokio::gauges::{Gauge, Gauged};
//!
//! let breaker = Breaker::default();
//! let mut seen = Vec::new();
//! breaker.gauges(Instant::ZERO, &mut |g| seen.push(g));
//! assert_eq!(seen, [Gauge::CircuitState(CircuitState::Closed)]);
//! ```

use std::sync::Arc;
use std::time::Duration;

use resilix::breaker::{Breaker, OutcomeWindow};
use resilix::bulkhead::Bulkhead;
use resilix::limiter::Limiter;
use resilix::observe::{CircuitState, DurationHistogram, TimeoutAdvice};
use resilix::pipeline::Pipeline;
use resilix::rate_limit::RateLimiter;
use resilix::retry::budget::{RatioBudget, TokenBucket};
use resilix::throttler::Throttler;
use resilix::time::Instant;

/// One reading of a policy's state.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Gauge {
    /// A breaker's state.
    CircuitState(CircuitState),
    /// An adaptive limiter's concurrency limit, in whole calls.
    ConcurrencyLimit(u32),
    /// Calls an adaptive limiter has admitted and not yet seen end.
    LimiterInFlight(u32),
    /// Bulkhead slots held.
    BulkheadInUse(u32),
    /// The probability with which a throttler sheds the next call, 0 to its cap.
    ThrottleProbability(f64),
    /// Retries a budget would grant now: tokens in a token bucket (thousandths kept), retries
    /// left in a ratio budget's window.
    BudgetBalance(f64),
    /// Whole cells a rate limiter could admit now.
    RateLimitAvailable(u32),
    /// The attempt timeout an upstream's latency suggests ([`TimeoutAdvice`]): only once the
    /// histogram holds the advice's minimum of samples.
    SuggestedTimeout(Duration),
}

impl Gauge {
    /// The gauge's metric name (the table in `metrics`).
    pub const fn name(&self) -> &'static str {
        match self {
            Gauge::CircuitState(_) => "resilix_circuit_state",
            Gauge::ConcurrencyLimit(_) => "resilix_concurrency_limit",
            Gauge::LimiterInFlight(_) => "resilix_limiter_in_flight",
            Gauge::BulkheadInUse(_) => "resilix_bulkhead_in_use",
            Gauge::ThrottleProbability(_) => "resilix_throttle_probability",
            Gauge::BudgetBalance(_) => "resilix_retry_budget_balance",
            Gauge::RateLimitAvailable(_) => "resilix_rate_limit_available",
            Gauge::SuggestedTimeout(_) => "resilix_suggested_attempt_timeout_seconds",
        }
    }

    /// The gauge's value. A breaker's state is its [`circuit_state_value`].
    pub fn value(&self) -> f64 {
        match *self {
            Gauge::CircuitState(s) => circuit_state_value(s),
            Gauge::ConcurrencyLimit(n)
            | Gauge::LimiterInFlight(n)
            | Gauge::BulkheadInUse(n)
            | Gauge::RateLimitAvailable(n) => f64::from(n),
            Gauge::ThrottleProbability(p) | Gauge::BudgetBalance(p) => p,
            Gauge::SuggestedTimeout(d) => d.as_secs_f64(),
        }
    }
}

/// A breaker's state as a label: `closed`, `open`, `half-open`, `forced-open`, `disabled` (the
/// metrics' and OpenTelemetry's `from`/`to`). No wildcard arm: a state added in the core fails
/// to compile here until it has its label.
///
/// ```
/// use resilix::observe::CircuitState;
/// assert_eq!(resilix_tokio::gauges::circuit_state_name(CircuitState::HalfOpen), "half-open");
/// ```
pub const fn circuit_state_name(s: CircuitState) -> &'static str {
    match s {
        CircuitState::Closed => "closed",
        CircuitState::Open => "open",
        CircuitState::HalfOpen => "half-open",
        CircuitState::ForcedOpen => "forced-open",
        CircuitState::Disabled => "disabled",
    }
}

/// A breaker's state as a number: 0 closed, 1 open, 2 half-open, 3 forced open, 4 disabled.
/// Closed is 0 so that a sum over upstreams counts the ones not closed.
///
/// ```
/// use resilix::observe::{CircuitState, DurationHistogram, TimeoutAdvice};
/// assert_eq!(resilix_tokio::gauges::circuit_state_value(CircuitState::HalfOpen), 2.0);
/// ```
pub const fn circuit_state_value(state: CircuitState) -> f64 {
    // No wildcard: a state added in the core fails to compile here until it has its number.
    match state {
        CircuitState::Closed => 0.0,
        CircuitState::Open => 1.0,
        CircuitState::HalfOpen => 2.0,
        CircuitState::ForcedOpen => 3.0,
        CircuitState::Disabled => 4.0,
    }
}

/// A policy whose state can be read as gauges.
pub trait Gauged {
    /// Passes each of the policy's gauges, as they read at `now`, to `read`.
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge));
}

/// The absent policy has no gauges.
impl Gauged for () {
    fn gauges(&self, _now: Instant, _read: &mut dyn FnMut(Gauge)) {}
}

impl<P: Gauged + ?Sized> Gauged for &P {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        (**self).gauges(now, read)
    }
}

impl<P: Gauged + ?Sized> Gauged for Box<P> {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        (**self).gauges(now, read)
    }
}

impl<P: Gauged + ?Sized> Gauged for Arc<P> {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        (**self).gauges(now, read)
    }
}

/// A policy in shadow mode reads as the policy itself: its state is real, only its refusals
/// are let through.
impl<P: Gauged> Gauged for resilix::shadow::Shadow<P> {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        self.policy().gauges(now, read)
    }
}

impl<W: OutcomeWindow> Gauged for Breaker<W> {
    fn gauges(&self, _now: Instant, read: &mut dyn FnMut(Gauge)) {
        read(Gauge::CircuitState(self.state()));
    }
}

impl<H> Gauged for Limiter<H> {
    fn gauges(&self, _now: Instant, read: &mut dyn FnMut(Gauge)) {
        read(Gauge::ConcurrencyLimit(self.limit()));
        read(Gauge::LimiterInFlight(self.in_flight()));
    }
}

impl<H> Gauged for Bulkhead<H> {
    fn gauges(&self, _now: Instant, read: &mut dyn FnMut(Gauge)) {
        read(Gauge::BulkheadInUse(self.held()));
    }
}

impl<const B: usize> Gauged for Throttler<B> {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        read(Gauge::ThrottleProbability(
            self.rejection_probability(now).as_f64(),
        ));
    }
}

impl Gauged for TokenBucket {
    fn gauges(&self, _now: Instant, read: &mut dyn FnMut(Gauge)) {
        read(Gauge::BudgetBalance(
            f64::from(self.balance().as_milli()) / 1000.0,
        ));
    }
}

impl<const B: usize> Gauged for RatioBudget<B> {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        let (firsts, retries) = self.counts(now);
        let left = self.allowance(firsts).saturating_sub(retries);
        read(Gauge::BudgetBalance(f64::from(left)));
    }
}

impl Gauged for RateLimiter {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        read(Gauge::RateLimitAvailable(self.available(now)));
    }
}

/// The attempt timeout the recorded latency suggests, by [`TimeoutAdvice::DEFAULT`] (the p99
/// plus 25 %, from 100 samples); nothing before that. For other advice, [`Advised`].
impl<const P: u32, const B: usize> Gauged for DurationHistogram<P, B> {
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        Advised(self, TimeoutAdvice::DEFAULT).gauges(now, read)
    }
}

/// A latency histogram read with a chosen [`TimeoutAdvice`].
///
/// ```
/// use std::time::Duration;
/// use resilix::observe::{DurationHistogram, TimeoutAdvice};
/// use resilix::time::Instant;
/// use resilix_tokio::gauges::{Advised, Gauge, Gauged};
///
/// let latency = DurationHistogram::new();
/// latency.record(Duration::from_millis(40));
/// let p50 = TimeoutAdvice::new(0.5, 0, 1).unwrap();
/// let mut seen = Vec::new();
/// Advised(&latency, p50).gauges(Instant::ZERO, &mut |g| seen.push(g));
/// assert_eq!(seen, [Gauge::SuggestedTimeout(Duration::from_millis(40))]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Advised<H>(pub H, pub TimeoutAdvice);

impl<const P: u32, const B: usize> Gauged for Advised<&DurationHistogram<P, B>> {
    fn gauges(&self, _now: Instant, read: &mut dyn FnMut(Gauge)) {
        if let Some(t) = self.1.suggest(self.0) {
            read(Gauge::SuggestedTimeout(t));
        }
    }
}

/// Every slot's gauges, outermost first (throttler, breaker, limiter, bulkhead, rate limit).
/// The retry slot's budget is shared across pipelines: sample it on its own.
impl<Rt, T: Gauged, B: Gauged, L: Gauged, H: Gauged, Rl: Gauged> Gauged
    for Pipeline<Rt, T, B, L, H, Rl>
{
    fn gauges(&self, now: Instant, read: &mut dyn FnMut(Gauge)) {
        self.throttler_ref().gauges(now, read);
        self.breaker_ref().gauges(now, read);
        self.limiter_ref().gauges(now, read);
        self.bulkhead_ref().gauges(now, read);
        self.rate_limit_ref().gauges(now, read);
    }
}
