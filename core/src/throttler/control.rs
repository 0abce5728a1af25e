//! The throttler's one operator control: reset (see `crate::control` for why it has no other).

use super::Throttler;
use crate::control::emit_reset;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;

impl<const BUCKETS: usize> Throttler<BUCKETS> {
    /// Forgets every count: the rejection probability is zero again, as in a throttler built
    /// afresh, and the window fills from `env.now`. Emits [`Event::PolicyReset`].
    ///
    /// For the moment after an incident is over: the window would otherwise keep shedding on
    /// two minutes of old failures. Calls in flight settle into the new window.
    ///
    /// ```
    /// use resilix::observe::Event;
    /// use resilix::permit::{Env, Permit, Policy};
    /// use resilix::random::SeededRandom;
    /// use resilix::throttler::Throttler;
    /// use resilix::time::Instant;
    /// use resilix::Verdict;
    ///
    /// let throttler = Throttler::with_defaults();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::from_secs(1), &mut rng);
    /// for _ in 0..50 {
    ///     if let Ok(p) = throttler.admit(&mut env) {
    ///         p.settle(&Verdict::Transient, &mut env);
    ///     }
    /// }
    /// assert!(!throttler.rejection_probability(env.now).is_zero());
    /// throttler.reset(&mut env);
    /// assert!(throttler.rejection_probability(env.now).is_zero());
    /// ```
    ///
    /// [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.window.clear();
        emit_reset(PolicyKind::Throttler, env);
    }
}
