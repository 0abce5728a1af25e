//! The retry circuit breaker (Brooker 2022): retry only while the recent failure rate is at or
//! below a threshold; above it, do not retry at all. First attempts are never refused.
//!
//! Design notes: docs/design/retry-and-budgets.md

use core::time::Duration;

use crate::control::emit_reconfigured;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::retry::budget::ratio::RatioReconfigureError;
use crate::retry::budget::{BudgetConfigError, RetryBudget};
use crate::settings::Settings;
use crate::throttler::config::max_min_requests;
use crate::time::Instant;
use crate::verdict::VerdictKind;
use crate::window::{MIN_BUCKET_NANOS, TimeWindow};

const ATTEMPTS: usize = 0;
const FAILURES: usize = 1;

/// The retry circuit breaker's settings.
///
/// ```
/// use core::time::Duration;
/// use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig};
///
/// let config = RetryBreakerConfig { max_failure_permille: 200, ..RetryBreakerConfig::DEFAULT };
/// assert_eq!(config.window, Duration::from_secs(10));
/// let breaker: RetryBreaker = RetryBreaker::new(config)?;
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryBreakerConfig {
    /// The failure rate, in failures per thousand attempts over the window, at or below which
    /// retries are allowed. Default 100 (10%, Brooker 2022: his simulated breaker retries
    /// "if that failure rate is below a threshold", 0.1 in his code, which retries while
    /// `failures / calls ≤ 0.1`).
    ///
    /// Between 1 and 999, or [`BudgetConfigError::FailureThresholdZero`] (every retry follows
    /// a failure, so the rate is never zero: it would never retry) and
    /// [`BudgetConfigError::FailureThresholdNotBelowOne`] (a rate never exceeds 100%: it would
    /// never trip; use [`Unlimited`](super::Unlimited) for that).
    pub max_failure_permille: u32,
    /// Below this many attempts in the window, retries are allowed whatever the rate. Default
    /// 10 (ours, as the throttler's `min_requests`): with fewer, one failure is already a rate
    /// of 10% or more, and a client that sees few calls would stop retrying at its first
    /// failure. That is the effect Brooker measured when the same traffic is split over more
    /// clients ("the circuit breaker strategy is tripping too early"); 0 reproduces it.
    ///
    /// Must be reachable: at most one attempt per 10 ns of `window` and below `u32::MAX`
    /// ([`BudgetConfigError::MinAttemptsUnreachable`]), as for the throttler.
    pub min_attempts: u32,
    /// How far back the rate looks. Default 10 s (ours, as the ratio budget's window: long
    /// enough to hold a rate at a few calls a second, short enough that the breaker closes
    /// seconds after the upstream heals). Counted in `B` buckets of `window / B` (rounded up
    /// to a nanosecond), covering between `B − 1` and `B` bucket lengths. At least `B × 8 ns`
    /// ([`BudgetConfigError::WindowShorterThanBuckets`]).
    pub window: Duration,
}

impl RetryBreakerConfig {
    /// Retry while at most 10% of the last 10 s of attempts failed, or while fewer than 10
    /// attempts were made.
    pub const DEFAULT: RetryBreakerConfig = RetryBreakerConfig {
        max_failure_permille: 100,
        min_attempts: 10,
        window: Duration::from_secs(10),
    };

    /// Brooker's simulated breaker (2022, `CircuitBreakerRetryFactory(..., 0.1)`): a 10%
    /// threshold, no minimum, and counters that never decay (here: a one-hour window, longer
    /// than any of his runs).
    pub const BROOKER_2022: RetryBreakerConfig = RetryBreakerConfig {
        max_failure_permille: 100,
        min_attempts: 0,
        window: Duration::from_secs(3_600),
    };

    /// The largest threshold: 999 per mille (1000 would never trip).
    pub const MAX_FAILURE_PERMILLE: u32 = 999;
}

impl Default for RetryBreakerConfig {
    fn default() -> Self {
        RetryBreakerConfig::DEFAULT
    }
}

/// A retry budget that is all or nothing: every retry the policy wants while the recent
/// failure rate is at or below a threshold, none above it (Brooker's "retry circuit
/// breaker", 2022).
///
/// **What is counted.** Attempts: every first attempt that settles (never `Rejected`) and every
/// granted retry. Failures: every retryable failure the retry policy reports, whether it asks
/// for a retry ([`try_spend`](RetryBudget::try_spend), the failure counted before the rate is
/// read) or not ([`record_unretried_failure`](RetryBudget::record_unretried_failure)). The
/// rate is failures ÷ attempts, the upstream's failure rate as this client sees it. (Brooker's
/// code divides by first tries only; the two agree while retries are rare, and ours stays a
/// rate, at most 100%, when they are not.) A failure the retry policy never offers to a budget
/// (a `Timeout` of a call not declared idempotent) is not counted.
///
/// **Neither ideal.** Brooker found that a retry breaker bounds load best (above the threshold
/// the system does no extra work at all) but gives up availability at low failure rates when
/// each client breaks on its own small sample, increasingly so as the same traffic is split
/// over more clients; the token bucket keeps availability but converges on plain N retries.
/// `min_attempts` is our guard against the small sample; share one breaker across pipelines
/// (pass `&breaker`) so it sees enough traffic.
///
/// **Concurrency.** The counts are the shared sliding window's (`window.rs`): exact within a
/// bucket period, approximate only at bucket boundaries. The decision itself is statistical:
/// racing callers may each be granted a retry against the same rate, which is a threshold, not
/// a cap. `B` is the number of buckets (default 10: one-second buckets for the 10 s window).
///
/// ```
/// use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig, RetryBudget};
/// use resilix::time::Instant;
/// use resilix::VerdictKind;
///
/// let breaker: RetryBreaker = RetryBreaker::new(RetryBreakerConfig::DEFAULT)?;
/// let now = Instant::from_secs(1);
/// for _ in 0..100 {
///     breaker.record_first_attempt(now);
/// }
/// // Ten failures in a hundred attempts: 10%, still at the threshold.
/// for _ in 0..9 {
///     breaker.record_unretried_failure(now, VerdictKind::Transient);
/// }
/// assert!(breaker.try_spend(now, VerdictKind::Transient));
/// // The granted retry is an attempt (101); two more failures make 12 in 101: tripped.
/// breaker.record_unretried_failure(now, VerdictKind::Transient);
/// assert!(!breaker.try_spend(now, VerdictKind::Transient));
/// // Ten seconds later the window has forgotten: retries again.
/// assert!(breaker.try_spend(Instant::from_secs(12), VerdictKind::Transient));
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
pub struct RetryBreaker<const B: usize = 10> {
    pub(super) window: TimeWindow<B, 2>,
    /// `[max_failure_permille, min_attempts]`, changed together by `reconfigure`.
    settings: Settings<2>,
}

impl<const B: usize> RetryBreaker<B> {
    crate::sync::const_fn_unless_loom! {
        /// A retry breaker with `config`, refusing a threshold that could never retry or never
        /// trip, an unreachable minimum and an empty or too short window.
        pub fn new(config: RetryBreakerConfig) -> Result<Self, BudgetConfigError> {
            if B == 0 || config.window.is_zero() {
                return Err(BudgetConfigError::EmptyWindow);
            }
            if crate::time::duration_as_nanos_saturating(config.window)
                < (B as u64).saturating_mul(MIN_BUCKET_NANOS)
            {
                return Err(BudgetConfigError::WindowShorterThanBuckets);
            }
            if config.max_failure_permille == 0 {
                return Err(BudgetConfigError::FailureThresholdZero);
            }
            if config.max_failure_permille > RetryBreakerConfig::MAX_FAILURE_PERMILLE {
                return Err(BudgetConfigError::FailureThresholdNotBelowOne);
            }
            if config.min_attempts > max_min_requests(config.window) {
                return Err(BudgetConfigError::MinAttemptsUnreachable);
            }
            Ok(RetryBreaker {
                window: TimeWindow::new(config.window),
                settings: Settings::new([config.max_failure_permille, config.min_attempts]),
            })
        }
    }

    /// Attempts and failures in the window ending at `now` (a snapshot).
    pub fn counts(&self, now: Instant) -> (u32, u32) {
        let t = self.window.totals(now);
        (t[ATTEMPTS], t[FAILURES])
    }

    /// Whether a retry would be allowed at these counts: the rule, with the settings in force.
    pub fn allows(&self, attempts: u32, failures: u32) -> bool {
        let [permille, min_attempts] = self.settings.read();
        allows(attempts, failures, permille, min_attempts)
    }

    /// Puts `config`'s threshold and minimum in force at once, keeping the window's counts,
    /// and emits [`Event::PolicyReconfigured`](crate::observe::Event::PolicyReconfigured). A
    /// retry asked for while it runs is judged by the old pair or the new one, never a mix
    /// (one settings block, read once per decision).
    ///
    /// The window cannot change in place ([`RatioReconfigureError::Fixed`]): its buckets'
    /// length is what its stored periods mean. Reconfigurations do not queue: one racing
    /// another is [`RatioReconfigureError::Busy`].
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig, RetryBudget};
    /// use resilix::time::Instant;
    /// use resilix::VerdictKind;
    ///
    /// let breaker: RetryBreaker = RetryBreaker::new(RetryBreakerConfig::DEFAULT)?;
    /// let now = Instant::from_secs(1);
    /// for _ in 0..100 { breaker.record_first_attempt(now); }
    /// for _ in 0..20 { breaker.record_unretried_failure(now, VerdictKind::Transient); }
    /// assert!(breaker.is_tripped(now), "20% is above the 10% threshold");
    /// let mut rng = SeededRandom::new(1);
    /// let looser = RetryBreakerConfig { max_failure_permille: 300, ..RetryBreakerConfig::DEFAULT };
    /// breaker.reconfigure(looser, &mut Env::new(now, &mut rng)).unwrap();
    /// assert!(!breaker.is_tripped(now), "the same counts, judged by the new threshold");
    /// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
    /// ```
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: RetryBreakerConfig,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), RatioReconfigureError> {
        let next = Self::new(config).map_err(RatioReconfigureError::Config)?;
        if next.window.bucket_length() != self.window.bucket_length() {
            return Err(RatioReconfigureError::Fixed { field: "window" });
        }
        self.settings
            .replace(next.settings.read())
            .map_err(|_| RatioReconfigureError::Busy)?;
        emit_reconfigured(PolicyKind::RetryBudget, env);
        Ok(())
    }

    /// Whether the breaker is tripped at `now`: the window's failure rate is above the
    /// threshold (with at least `min_attempts` attempts). A retry is asked for after a
    /// failure, which counts first, so an untripped breaker may still refuse it.
    pub fn is_tripped(&self, now: Instant) -> bool {
        let (attempts, failures) = self.counts(now);
        !self.allows(attempts, failures)
    }
}

/// The settings by name (as the config that made them), and the window.
impl<const B: usize> core::fmt::Debug for RetryBreaker<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let [max_failure_permille, min_attempts] = self.settings.read();
        f.debug_struct("RetryBreaker")
            .field("max_failure_permille", &max_failure_permille)
            .field("min_attempts", &min_attempts)
            .field("window", &self.window)
            .finish()
    }
}

/// `attempts < min || failures / attempts ≤ permille / 1000`, in u64 so it cannot overflow.
const fn allows(attempts: u32, failures: u32, permille: u32, min_attempts: u32) -> bool {
    attempts < min_attempts || failures as u64 * 1000 <= permille as u64 * attempts as u64
}

impl<const B: usize> RetryBudget for RetryBreaker<B> {
    fn record_first_attempt(&self, now: Instant) {
        self.window.add(now, [1, 0]);
    }

    fn try_spend(&self, now: Instant, _after: VerdictKind) -> bool {
        self.window.add(now, [0, 1]);
        let t = self.window.totals(now);
        let granted = self.allows(t[ATTEMPTS], t[FAILURES]);
        if granted {
            self.window.add(now, [1, 0]);
        }
        granted
    }

    fn record_unretried_failure(&self, now: Instant, _after: VerdictKind) {
        self.window.add(now, [0, 1]);
    }

    fn record_success(&self, _now: Instant, _retried_after: Option<VerdictKind>) {}
}

#[cfg(all(test, not(loom)))]
mod tests;
