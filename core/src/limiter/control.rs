//! The limiter's operator control: reset to what a limiter built afresh from its config has
//! learned, which is nothing (see `crate::control`).

use super::{CALL, Limiter, NO_RTT, first_refresh};
use crate::control::{Busy, emit_reset};
use crate::observe::{Event, Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::sync::Ordering;

impl<H> Limiter<H> {
    /// Forgets what the limiter learned: the limit returns to the configured initial limit,
    /// the sample window restarts empty at `env.now` with its shortest length, the baseline
    /// RTT is dropped (the next windows measure it again) and the baseline refresh starts its
    /// count again. Calls in flight and waiting places are kept: they are calls that exist,
    /// and each gives its slot back when it ends, so in-flight stays exact.
    ///
    /// For after an upstream's deploy or migration, when the latency the limit was learned
    /// on no longer holds (a Vegas baseline never rises by itself). Emits
    /// [`Event::LimitChanged`] if the whole-call limit moved, then [`Event::PolicyReset`].
    ///
    /// The limit and baseline have one writer, the thread that closes a window; the reset
    /// takes that right with one compare-and-swap and returns [`Busy`] (changing nothing) if
    /// a window is closing at that instant. It never waits.
    ///
    /// ```
    /// use resilix::limiter::{Limiter, LimiterConfig};
    /// use resilix::permit::{Env, Policy};
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let config = LimiterConfig { initial_limit: 4, min_limit: 1, ..LimiterConfig::aimd() };
    /// let limiter = Limiter::new(config).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    /// let held = limiter.admit(&mut env).unwrap();
    /// limiter.reset(&mut env).unwrap();
    /// assert_eq!(limiter.limit(), 4);
    /// assert_eq!(limiter.in_flight(), 1, "a reset keeps the calls that exist");
    /// drop(held);
    /// assert_eq!(limiter.in_flight(), 0);
    /// ```
    ///
    /// [`Event::LimitChanged`]: crate::observe::Event::LimitChanged
    /// [`Event::PolicyReset`]: crate::observe::Event::PolicyReset
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), Busy> {
        let now = self.scale.wide(env.now);
        let closing = self.window.try_restart(now, self.min_window).ok_or(Busy)?;
        let old = self.limit.load(Ordering::Relaxed);
        self.baseline_rtt.store(0, Ordering::Relaxed);
        self.baseline_count.store(0, Ordering::Relaxed);
        self.recent_min_rtt.store(NO_RTT, Ordering::Relaxed);
        self.windows_to_refresh.store(
            first_refresh(self.probe_multiplier, self.initial_limit),
            Ordering::Relaxed,
        );
        self.limit
            .store(self.initial_limit * CALL, Ordering::Release);
        drop(closing);
        if old / CALL != self.initial_limit {
            env.observer.on_event(&Event::LimitChanged {
                from: old / CALL,
                to: self.initial_limit,
            });
        }
        emit_reset(PolicyKind::Limiter, env);
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::limiter::LimiterConfig;
    use crate::random::SeededRandom;
    use crate::time::Instant;

    #[test]
    fn a_reset_while_a_window_closes_changes_nothing_and_says_busy() {
        let l = Limiter::new(LimiterConfig::aimd()).unwrap();
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        l.limit.store(7 * CALL, Ordering::Relaxed);
        let closer = l.window.try_restart(0, 1).unwrap();
        assert_eq!(l.reset(&mut env), Err(Busy));
        assert_eq!(l.limit(), 7, "nothing changed");
        drop(closer);
        assert_eq!(l.reset(&mut env), Ok(()));
        assert_eq!(l.limit(), 20);
    }

    #[test]
    fn a_reset_says_the_limit_changed_only_when_it_did() {
        extern crate std;
        use crate::observe::Event;
        use std::vec::Vec;
        struct Log(core::cell::RefCell<Vec<Event>>);
        impl Observer for Log {
            fn on_event(&self, e: &Event) {
                self.0.borrow_mut().push(*e);
            }
        }
        let changes = |l: &Limiter| {
            let log = Log(core::cell::RefCell::new(Vec::new()));
            let mut rng = SeededRandom::new(1);
            let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&log);
            assert_eq!(l.reset(&mut env), Ok(()));
            log.0
                .into_inner()
                .into_iter()
                .filter(|e| matches!(e, Event::LimitChanged { .. }))
                .collect::<Vec<_>>()
        };
        let l = Limiter::new(LimiterConfig::aimd()).unwrap();
        // Seven calls and a fraction: the event speaks in whole calls.
        l.limit.store(7 * CALL + 100, Ordering::Relaxed);
        assert_eq!(changes(&l), [Event::LimitChanged { from: 7, to: 20 }]);
        assert_eq!(changes(&l), [], "already at the initial limit");
    }
}
