//! The budgets' operator control: reset to the state a budget built afresh from its config
//! has (see `crate::control`).

use super::{RatioBudget, RetryBreaker, TokenBucket};
use crate::control::emit_reset;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;

impl TokenBucket {
    /// Puts the configured initial balance back ([`TokenBucketConfig::initial`] of the config
    /// in force, what a new bucket built from it holds), forgetting every deposit and
    /// withdrawal. One compare-and-swap: every spend racing with it lands wholly before (and
    /// is forgotten) or wholly after. Emits
    /// [`Event::PolicyReset`].
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::retry::budget::{RetryBudget, TokenBucket, Tokens};
    /// use resilix::time::Instant;
    /// use resilix::VerdictKind;
    ///
    /// let budget = TokenBucket::aws_sdk_standard();
    /// while budget.try_spend(Instant::ZERO, VerdictKind::Transient) {}
    /// assert!(budget.balance() < Tokens::whole(500));
    /// let mut rng = SeededRandom::new(1);
    /// budget.reset(&mut Env::new(Instant::ZERO, &mut rng));
    /// assert_eq!(budget.balance(), Tokens::whole(500));
    /// ```
    ///
    /// [`TokenBucketConfig::initial`]: super::TokenBucketConfig::initial
    /// [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.reset_balance();
        emit_reset(PolicyKind::RetryBudget, env);
    }
}

impl<const B: usize> RatioBudget<B> {
    /// Forgets the window's first attempts and retries: the next window starts empty, with
    /// only the per-window floor of retries allowed until first attempts earn more. Emits
    /// [`Event::PolicyReset`].
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::retry::budget::{RatioBudget, RetryBudget};
    /// use resilix::time::Instant;
    ///
    /// let budget = RatioBudget::with_defaults();
    /// budget.record_first_attempt(Instant::ZERO);
    /// let mut rng = SeededRandom::new(1);
    /// budget.reset(&mut Env::new(Instant::ZERO, &mut rng));
    /// assert_eq!(budget.counts(Instant::ZERO), (0, 0));
    /// ```
    ///
    /// [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.window.clear();
        emit_reset(PolicyKind::RetryBudget, env);
    }
}

impl<const B: usize> RetryBreaker<B> {
    /// Forgets the window's attempts and failures: retries are allowed again until the window
    /// refills with failures. For the moment after an incident, when the old failure rate
    /// would keep retries off for a whole window. Emits [`Event::PolicyReset`].
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig, RetryBudget};
    /// use resilix::time::Instant;
    /// use resilix::VerdictKind;
    ///
    /// let breaker: RetryBreaker = RetryBreaker::new(RetryBreakerConfig::DEFAULT).unwrap();
    /// for _ in 0..20 {
    ///     breaker.record_first_attempt(Instant::ZERO);
    ///     breaker.record_unretried_failure(Instant::ZERO, VerdictKind::Transient);
    /// }
    /// assert!(!breaker.try_spend(Instant::ZERO, VerdictKind::Transient));
    /// let mut rng = SeededRandom::new(1);
    /// breaker.reset(&mut Env::new(Instant::ZERO, &mut rng));
    /// assert_eq!(breaker.counts(Instant::ZERO), (0, 0));
    /// assert!(breaker.try_spend(Instant::ZERO, VerdictKind::Transient));
    /// ```
    ///
    /// [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.window.clear();
        emit_reset(PolicyKind::RetryBudget, env);
    }
}
