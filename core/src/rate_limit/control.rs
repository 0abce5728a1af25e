//! The rate limiter's operator control, reset to a full bucket (see `crate::control`), and
//! the peek a waiting caller sleeps on (`crate::rate_wait`). A child of `limiter.rs` (declared there by path), so it reaches the state word without
//! widening any field's visibility.

use super::{RateLimiter, SLOT_BIT};
use crate::control::emit_reset;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::rate_limit::gcra::{Decision, TICK_BITS, TICK_MASK, era_count};
use crate::rejection::{RejectReason, Rejection};
use crate::sync::Ordering;
use crate::time::Instant;

impl RateLimiter {
    /// Fills the bucket at `env.now`: the cells spent are forgotten and the full burst is
    /// available, as in a limiter built afresh with the configuration in force. Emits
    /// [`Event::PolicyReset`].
    ///
    /// One compare-and-swap on the state word, keeping its configuration slot, after the era
    /// is raised to cover `now` (the era protocol of every TAT writer): an admission racing
    /// with it lands wholly before (and is forgotten) or wholly after (and takes from the full
    /// bucket), and a reconfiguration racing with it carries over whichever it read.
    ///
    /// ```
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
    /// use resilix::time::Instant;
    ///
    /// let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(3))).unwrap();
    /// let now = Instant::from_secs(5);
    /// while limiter.try_acquire(now).is_ok() {}
    /// assert_eq!(limiter.available(now), 0);
    /// let mut rng = SeededRandom::new(1);
    /// limiter.reset(&mut Env::new(now, &mut rng));
    /// assert_eq!(limiter.available(now), 3);
    /// ```
    ///
    /// [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        let era = era_count(env.now);
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            let seen = self.era.read();
            let g = self.slots[(word >> 31) as usize].load();
            // Era first: every reader of the new TAT widens it from an era covering `now`.
            self.era.cover(seen, era, TICK_BITS);
            let full = (word & SLOT_BIT) | g.full(g.now(env.now));
            match self
                .state
                .compare_exchange_weak(word, full, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => word = actual,
            }
        }
        emit_reset(PolicyKind::RateLimiter, env);
    }

    /// Whether one cell would be admitted at `now`, without taking it: the same decision as
    /// [`try_acquire`](Self::try_acquire), and its refusal carries the same retry-at (when a
    /// cell will be there, if nobody else takes it first). What a caller that waits for a
    /// cell sleeps on (`crate::rate_wait`). A snapshot: another caller may take the cell
    /// between the peek and an admission.
    ///
    /// ```
    /// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
    /// use resilix::time::Instant;
    ///
    /// let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1))).unwrap();
    /// let now = Instant::from_secs(5);
    /// assert!(limiter.peek(now).is_ok());
    /// assert!(limiter.peek(now).is_ok(), "a peek takes nothing");
    /// limiter.try_acquire(now).unwrap();
    /// let refused = limiter.peek(now).unwrap_err();
    /// assert_eq!(refused.retry_at(), limiter.try_acquire(now).unwrap_err().retry_at());
    /// ```
    pub fn peek(&self, now: Instant) -> Result<(), Rejection> {
        let (word, seen, g) = self.current();
        match g.decide(word & TICK_MASK, seen, g.now(now), 1) {
            Decision::Admit(_) => Ok(()),
            Decision::Wait(tick) => Err(Rejection::until(
                RejectReason::RateLimited,
                g.scale().instant_at(tick),
            )),
        }
    }
}
