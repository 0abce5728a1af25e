//! The rate limiter's operator control: reset to a full bucket (see `crate::control`). A
//! child of `limiter.rs` (declared there by path), so it reaches the state word without
//! widening any field's visibility.

use super::{RateLimiter, SLOT_BIT};
use crate::control::emit_reset;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::rate_limit::gcra::{TICK_BITS, era_count};
use crate::sync::Ordering;

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
}
