//! The retry circuit breaker, plainly: attempts and failures per bucket period in a map keyed
//! by the full `u64` period number, summed over the last `B` periods (bucketed as the real
//! window is: `window / B`, rounded up to a nanosecond). A retry is asked for after a failure,
//! which counts first; it is granted while `attempts < min_attempts` or
//! `failures × 1000 ≤ permille × attempts`, and a granted retry is an attempt.
//!
//! [`RetryBreakerTwin`] is the budgets' [`BudgetTwin`]: it plays the
//! retry policy's part, so the real breaker and this model hear the same calls at the same
//! instants, and their grants and books (attempts, failures in the window) must agree.

use crate::window::Periods;
use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig};
use resilix::time::Instant;
use resilix::verdict::VerdictKind;

use crate::budget::{Books, BudgetModel, BudgetTwin};

impl<const B: usize> Books for RetryBreaker<B> {
    fn books(&self, now: Instant) -> (u64, u64) {
        let (a, f) = self.counts(now);
        (u64::from(a), u64::from(f))
    }
}

/// The retry breaker's semantics in wide time.
#[derive(Clone, Debug)]
pub struct RetryBreakerModel {
    permille: u64,
    min_attempts: u64,
    /// (attempts, failures) per bucket period.
    window: Periods,
}

impl RetryBreakerModel {
    /// The model of a `RetryBreaker<buckets>` with `config` (one the real breaker accepts).
    pub fn new(config: &RetryBreakerConfig, buckets: usize) -> RetryBreakerModel {
        RetryBreakerModel {
            permille: u64::from(config.max_failure_permille),
            min_attempts: u64::from(config.min_attempts),
            window: Periods::new(config.window, buckets),
        }
    }

    fn totals(&self, now: Instant) -> (u64, u64) {
        self.window.totals(now)
    }

    fn add(&mut self, now: Instant, attempts: u64, failures: u64) {
        self.window.add(now, attempts, failures);
    }

    /// Whether the window at `now` allows a retry (its counts already hold the failure).
    pub fn allows(&self, now: Instant) -> bool {
        let (attempts, failures) = self.totals(now);
        attempts < self.min_attempts || failures * 1000 <= self.permille * attempts
    }
}

impl BudgetModel for RetryBreakerModel {
    fn record_first_attempt(&mut self, now: Instant) {
        self.add(now, 1, 0);
    }

    fn try_spend(&mut self, now: Instant, _after: VerdictKind) -> bool {
        self.add(now, 0, 1);
        let granted = self.allows(now);
        if granted {
            self.add(now, 1, 0);
        }
        granted
    }

    fn record_unretried_failure(&mut self, now: Instant, _after: VerdictKind) {
        self.add(now, 0, 1);
    }

    fn record_success(&mut self, _now: Instant, _retried_after: Option<VerdictKind>) {}

    fn books(&self, now: Instant) -> (u64, u64) {
        self.totals(now)
    }
}

/// A budget twin over a [`RetryBreaker`].
pub type RetryBreakerTwin<'a, const B: usize> = BudgetTwin<'a, RetryBreaker<B>, RetryBreakerModel>;

/// Twins a retry breaker built with `config` and its fresh model.
pub fn retry_breaker_twin<'a, const B: usize>(
    real: &'a RetryBreaker<B>,
    config: &RetryBreakerConfig,
) -> RetryBreakerTwin<'a, B> {
    BudgetTwin::new(real, RetryBreakerModel::new(config, B))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_threshold_is_inclusive_and_a_grant_is_an_attempt() {
        let c = RetryBreakerConfig {
            max_failure_permille: 100,
            min_attempts: 0,
            window: Duration::from_secs(10),
        };
        let mut model = RetryBreakerModel::new(&c, 10);
        let now = Instant::from_secs(3);
        for _ in 0..100 {
            model.record_first_attempt(now);
        }
        for _ in 0..9 {
            model.record_unretried_failure(now, VerdictKind::Transient);
        }
        assert!(model.try_spend(now, VerdictKind::Transient));
        assert!(!model.try_spend(now, VerdictKind::Transient));
        assert_eq!(model.books(now), (101, 11));
        assert_eq!(model.books(Instant::from_secs(13)), (0, 0));
    }
}
