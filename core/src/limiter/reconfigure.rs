//! Changing a running limiter's bounds.
//!
//! What may change in place is what does not change the meaning of the limiter's state:
//! `min_limit` and `max_limit`. The limit, the baseline RTT, the window and the calls in
//! flight are all kept. Everything else is refused with
//! [`LimiterReconfigureError::Fixed`] naming the field: the windows and their tick scale
//! (what the window's stored ticks mean), the algorithm and its parameters (what the baseline
//! means, and how it was learned), `window_samples`, `min_rtt`, `probe_multiplier`, the queue
//! zone's shape, and `initial_limit` (where a reset returns; kept so a reset lands inside
//! the bounds, which a valid config guarantees). Such a change needs a new limiter.
//!
//! **The rule for the limit: clamped in the same step.** The limit has one writer at a time,
//! the thread holding the window's right to close (the closer, a reset). A reconfiguration
//! takes that right too (one try: a close in progress makes it [`Busy`]), stores the bounds
//! and clamps the limit into them before giving the right back, so no close computed under
//! the old bounds can store after it, and every close after it computes under the new ones.
//! Admissions read the limit as before: one racing the reconfiguration sees the old limit or
//! the clamped one.
//!
//! **In flight.** A lowered limit below the calls in flight admits nobody until they drain
//! below it, as any fall of the limit does; their permits settle and feed the window as
//! usual. A raised `min_limit` lifts the limit at once, and with it the room for waiters.
//!
//! [`Busy`]: LimiterReconfigureError::Busy

use super::{CALL, Limiter, LimiterConfig, LimiterConfigError};
use crate::control::emit_reconfigured;
use crate::observe::{Event, Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::sync::Ordering;

/// Why [`Limiter::reconfigure`] changed nothing: the one reconfigure error, over this policy's config error.
pub type LimiterReconfigureError = crate::control::ReconfigureError<LimiterConfigError>;

impl<H> Limiter<H> {
    /// Puts `config`'s `min_limit` and `max_limit` in force, clamping the current limit into
    /// them in the same step, and emits [`Event::LimitChanged`] if the whole-call limit moved,
    /// then [`Event::PolicyReconfigured`]. Every other field of `config` must equal the
    /// running limiter's ([`LimiterReconfigureError::Fixed`] otherwise): see the rules above.
    ///
    /// Never waits: a window closing at that instant makes it
    /// [`LimiterReconfigureError::Busy`], changing nothing.
    ///
    /// ```
    /// use resilix::limiter::{Limiter, LimiterConfig, LimiterReconfigureError};
    /// use resilix::permit::{Env, Policy};
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let config = LimiterConfig { initial_limit: 4, min_limit: 2, max_limit: 8, ..LimiterConfig::aimd() };
    /// let limiter = Limiter::new(config).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    /// let held: Vec<_> = (0..4).map(|_| limiter.admit(&mut env).unwrap()).collect();
    ///
    /// // Lifting the floor above the limit lifts the limit now.
    /// limiter.reconfigure(LimiterConfig { min_limit: 3, ..config }, &mut env).unwrap();
    /// assert_eq!(limiter.limit(), 4);
    /// limiter.reconfigure(LimiterConfig { max_limit: 4, ..config }, &mut env).unwrap();
    /// assert_eq!((limiter.limit(), limiter.in_flight()), (4, 4), "in flight kept");
    ///
    /// let other_window = LimiterConfig { max_window: core::time::Duration::from_secs(9), ..config };
    /// assert_eq!(
    ///     limiter.reconfigure(other_window, &mut env),
    ///     Err(LimiterReconfigureError::Fixed { field: "max_window" })
    /// );
    /// # drop(held);
    /// ```
    ///
    /// [`Event::LimitChanged`]: crate::observe::Event::LimitChanged
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: LimiterConfig,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), LimiterReconfigureError> {
        // The constructor validates and compiles; the comparison is on what it compiled.
        let next = Limiter::new(config).map_err(LimiterReconfigureError::Config)?;
        if let Some(field) = self.fixed_field_changed(&next) {
            return Err(LimiterReconfigureError::Fixed { field });
        }
        let (min, max) = (config.min_limit * CALL, config.max_limit * CALL);
        let closing = self
            .window
            .try_hold()
            .ok_or(LimiterReconfigureError::Busy)?;
        self.bounds[0].store(min, Ordering::Relaxed);
        self.bounds[1].store(max, Ordering::Relaxed);
        let old = self.limit.load(Ordering::Relaxed);
        let new = old.clamp(min, max);
        self.limit.store(new, Ordering::Release);
        // Release (the guard's drop): the next closer sees these bounds.
        drop(closing);
        if old / CALL != new / CALL {
            env.observer.on_event(&Event::LimitChanged {
                from: old / CALL,
                to: new / CALL,
            });
        }
        emit_reconfigured(PolicyKind::Limiter, env);
        Ok(())
    }

    /// The first setting other than the bounds in which `next` differs, by its config name.
    fn fixed_field_changed(&self, next: &Limiter) -> Option<&'static str> {
        let this = self.rule.with_bounds(0, 0);
        let that = next.rule.with_bounds(0, 0);
        [
            (this == that, "algorithm"),
            (self.initial_limit == next.initial_limit, "initial_limit"),
            (
                self.scale == next.scale && self.max_window == next.max_window,
                "max_window",
            ),
            (self.min_window == next.min_window, "min_window"),
            (self.window_samples == next.window_samples, "window_samples"),
            (self.min_rtt_us == next.min_rtt_us, "min_rtt"),
            (
                self.probe_multiplier == next.probe_multiplier,
                "probe_multiplier",
            ),
            (self.queue_factor == next.queue_factor, "queue_factor"),
            (self.queue_rungs == next.queue_rungs, "queue_rungs"),
        ]
        .into_iter()
        .find_map(|(same, field)| (!same).then_some(field))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use core::cell::RefCell;
    use core::time::Duration;
    use std::vec::Vec;

    use super::*;
    use crate::limiter::{Algorithm, Gradient2};
    use crate::permit::{Permit, Policy};
    use crate::random::SeededRandom;
    use crate::time::Instant;
    use crate::verdict::Verdict;

    struct Log(RefCell<Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }

    const BASE: LimiterConfig = LimiterConfig {
        initial_limit: 10,
        min_limit: 2,
        max_limit: 50,
        ..LimiterConfig::aimd()
    };

    fn apply(l: &Limiter, c: LimiterConfig) -> (Result<(), LimiterReconfigureError>, Vec<Event>) {
        let log = Log(RefCell::new(Vec::new()));
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(3), &mut rng).with_observer(&log);
        let r = l.reconfigure(c, &mut env);
        (r, log.0.into_inner())
    }

    #[test]
    fn a_lowered_max_clamps_the_limit_in_the_same_step_and_says_so() {
        let l = Limiter::new(BASE).unwrap();
        let (r, events) = apply(
            &l,
            LimiterConfig {
                max_limit: 10,
                ..BASE
            },
        );
        assert_eq!((r, l.limit()), (Ok(()), 10), "at the max: unchanged");
        assert_eq!(
            events,
            [Event::PolicyReconfigured {
                policy: PolicyKind::Limiter,
                at: Instant::from_secs(3)
            }]
        );
        l.limit.store(40 * CALL + 77, Ordering::Relaxed); // learned above the new bound
        let (r, events) = apply(
            &l,
            LimiterConfig {
                max_limit: 12,
                initial_limit: 10,
                ..BASE
            },
        );
        assert_eq!((r, l.limit_fixed()), (Ok(()), 12 * CALL));
        assert_eq!(events[0], Event::LimitChanged { from: 40, to: 12 });
    }

    #[test]
    fn a_raised_min_lifts_the_limit_at_once() {
        let l = Limiter::new(BASE).unwrap();
        l.limit.store(3 * CALL, Ordering::Relaxed);
        let (r, _) = apply(
            &l,
            LimiterConfig {
                min_limit: 6,
                ..BASE
            },
        );
        assert_eq!((r, l.limit()), (Ok(()), 6));
        assert!(l.has_room());
    }

    #[test]
    fn the_next_windows_are_bounded_by_the_new_bounds() {
        // AIMD adds one per window that saw its limit used; with max 10 it stops at 10.
        let c = LimiterConfig {
            initial_limit: 8,
            min_limit: 1,
            max_limit: 50,
            min_window: Duration::from_millis(1),
            window_samples: 1,
            ..LimiterConfig::aimd()
        };
        let l = Limiter::new(c).unwrap();
        let (r, _) = apply(&l, LimiterConfig { max_limit: 10, ..c });
        assert_eq!(r, Ok(()));
        let mut rng = SeededRandom::new(2);
        for i in 0..40u64 {
            let mut env = Env::new(Instant::from_millis(10 * i), &mut rng);
            let held: Vec<_> = (0..l.limit())
                .filter_map(|_| l.admit(&mut env).ok())
                .collect();
            env.now = Instant::from_millis(10 * i + 5);
            for p in held {
                p.settle(&Verdict::Success, &mut env);
            }
            assert!(l.limit() <= 10, "window {i}: limit {}", l.limit());
        }
        assert_eq!(l.limit(), 10, "it grew to the new max and no further");
    }

    /// Drives `windows` windows on a manual timeline, 20 ms apart from `from_ms`: each admits
    /// up to the limit and settles every call with `verdict` 5 ms later, which closes one
    /// window. The limit (whole calls) after each.
    fn drive(l: &Limiter, from_ms: u64, windows: u64, verdict: Verdict) -> Vec<u32> {
        let mut rng = SeededRandom::new(2);
        (0..windows)
            .map(|i| {
                let at = from_ms + 20 * i;
                let mut env = Env::new(Instant::from_millis(at), &mut rng);
                let held: Vec<_> = (0..l.limit())
                    .filter_map(|_| l.admit(&mut env).ok())
                    .collect();
                env.now = Instant::from_millis(at + 5);
                for p in held {
                    p.settle(&verdict, &mut env);
                }
                l.limit()
            })
            .collect()
    }

    /// Reconfigures a limiter built from `c` to `to`'s bounds, then drives 40 windows settled
    /// with `verdict`: every limit after a window lies in `to`'s bounds, and the last is
    /// `settles_at`. The same windows without the reconfiguration leave those bounds, so a
    /// rule that kept its old bound would too.
    fn assert_next_windows_stay_within(
        c: LimiterConfig,
        to: LimiterConfig,
        verdict: Verdict,
        settles_at: u32,
    ) {
        let unopposed = drive(&Limiter::new(c).unwrap(), 10, 40, verdict);
        let bounds = to.min_limit..=to.max_limit;
        assert!(
            unopposed.iter().any(|x| !bounds.contains(x)),
            "the windows alone push past {bounds:?}: {unopposed:?}"
        );
        let l = Limiter::new(c).unwrap();
        let (r, _) = apply(&l, to);
        assert_eq!(r, Ok(()));
        let limits = drive(&l, 10, 40, verdict);
        for (i, x) in limits.iter().enumerate() {
            assert!(
                bounds.contains(x),
                "window {i}: limit {x} outside {bounds:?}"
            );
        }
        assert_eq!(l.limit_fixed(), settles_at * CALL, "{limits:?}");
    }

    #[test]
    fn gradient2_after_a_lowered_max_grows_to_it_and_no_further() {
        // Equal RTTs: +0.8 of a call per window (queue_size 4, smoothing 0.2).
        let c = LimiterConfig {
            initial_limit: 8,
            min_limit: 1,
            max_limit: 50,
            min_window: Duration::from_millis(1),
            window_samples: 1,
            ..LimiterConfig::gradient2()
        };
        let to = LimiterConfig { max_limit: 10, ..c };
        assert_next_windows_stay_within(c, to, Verdict::Success, 10);
    }

    #[test]
    fn gradient2_after_a_raised_min_shrinks_to_it_and_no_further() {
        // Drop-only windows are congested: ×0.9 per window (drop_backoff).
        let c = LimiterConfig {
            initial_limit: 20,
            min_limit: 1,
            max_limit: 50,
            min_window: Duration::from_millis(1),
            window_samples: 1,
            ..LimiterConfig::gradient2()
        };
        let to = LimiterConfig { min_limit: 15, ..c };
        assert_next_windows_stay_within(c, to, Verdict::Timeout, 15);
    }

    #[test]
    fn vegas_after_a_lowered_max_grows_to_it_and_no_further() {
        // No queue over the baseline: +6 calls per window (beta, log10 L floored at 1).
        let c = LimiterConfig {
            initial_limit: 8,
            min_limit: 1,
            max_limit: 50,
            min_window: Duration::from_millis(1),
            window_samples: 1,
            ..LimiterConfig::vegas()
        };
        let to = LimiterConfig { max_limit: 10, ..c };
        assert_next_windows_stay_within(c, to, Verdict::Success, 10);
    }

    #[test]
    fn vegas_after_a_raised_min_shrinks_to_it_and_no_further() {
        // A window with a drop: −1 call per window (log10 L floored at 1).
        let c = LimiterConfig {
            initial_limit: 20,
            min_limit: 1,
            max_limit: 50,
            min_window: Duration::from_millis(1),
            window_samples: 1,
            ..LimiterConfig::vegas()
        };
        let to = LimiterConfig { min_limit: 12, ..c };
        assert_next_windows_stay_within(c, to, Verdict::Timeout, 12);
    }

    #[test]
    fn calls_in_flight_are_kept_and_a_limit_below_them_admits_nobody_until_they_drain() {
        let l = Limiter::new(BASE).unwrap();
        let mut rng = SeededRandom::new(3);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        let mut held: Vec<_> = (0..6).map(|_| l.admit(&mut env).unwrap()).collect();
        let c = LimiterConfig {
            max_limit: 10,
            ..BASE
        };
        l.reconfigure(c, &mut env).unwrap();
        l.limit.store(4 * CALL, Ordering::Relaxed);
        assert!(l.admit(&mut env).is_err(), "6 in flight, limit 4");
        held.truncate(3); // three drain
        assert_eq!(l.in_flight(), 3);
        held.push(l.admit(&mut env).unwrap());
        assert!(l.admit(&mut env).is_err());
        for p in held {
            p.settle(&Verdict::Success, &mut env);
        }
        assert_eq!(l.in_flight(), 0);
    }

    #[test]
    fn every_other_setting_is_refused_by_name() {
        let l = Limiter::new(BASE).unwrap();
        let gradient = LimiterConfig {
            algorithm: Algorithm::Gradient2(Gradient2::DEFAULT),
            ..BASE
        };
        let cases = [
            (gradient, "algorithm"),
            (
                LimiterConfig {
                    initial_limit: 11,
                    ..BASE
                },
                "initial_limit",
            ),
            (
                LimiterConfig {
                    max_window: Duration::from_secs(2),
                    ..BASE
                },
                "max_window",
            ),
            (
                LimiterConfig {
                    min_window: Duration::from_millis(3),
                    ..BASE
                },
                "min_window",
            ),
            (
                LimiterConfig {
                    window_samples: 7,
                    ..BASE
                },
                "window_samples",
            ),
            (
                LimiterConfig {
                    min_rtt: Duration::from_millis(9),
                    ..BASE
                },
                "min_rtt",
            ),
            (
                LimiterConfig {
                    probe_multiplier: 3,
                    ..BASE
                },
                "probe_multiplier",
            ),
            (
                LimiterConfig {
                    queue_factor: 3.5,
                    ..BASE
                },
                "queue_factor",
            ),
            (
                LimiterConfig {
                    queue_rungs: 9,
                    ..BASE
                },
                "queue_rungs",
            ),
        ];
        for (config, field) in cases {
            let (r, events) = apply(&l, config);
            assert_eq!(r, Err(LimiterReconfigureError::Fixed { field }));
            assert!(events.is_empty(), "{field}: a refusal is not an event");
        }
        let (r, _) = apply(
            &l,
            LimiterConfig {
                min_limit: 0,
                ..BASE
            },
        );
        assert_eq!(
            r,
            Err(LimiterReconfigureError::Config(
                LimiterConfigError::MinLimitZero
            ))
        );
        assert_eq!(l.limit(), 10);
    }

    /// The scenario of `loom_limiter_reconfigure.rs` without the reconfiguration: the close
    /// does raise the limit to 2, so the model's race is a real one.
    #[test]
    fn the_loom_scenario_grows_the_limit_when_unopposed() {
        let l = Limiter::new(LimiterConfig {
            min_limit: 1,
            initial_limit: 1,
            max_limit: 2,
            window_samples: 1,
            min_rtt: Duration::ZERO,
            probe_multiplier: 0,
            ..LimiterConfig::aimd()
        })
        .unwrap();
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(2), &mut rng);
        let p = l.admit(&mut env).unwrap();
        env.now = Instant::from_secs(3);
        p.settle(&Verdict::Success, &mut env);
        assert_eq!(l.limit(), 2);
    }

    #[test]
    fn a_window_closing_makes_it_busy_and_changes_nothing() {
        let l = Limiter::new(BASE).unwrap();
        let closer = l.window.try_hold().unwrap();
        let (r, events) = apply(
            &l,
            LimiterConfig {
                max_limit: 10,
                ..BASE
            },
        );
        assert_eq!(r, Err(LimiterReconfigureError::Busy));
        assert!(events.is_empty());
        assert_eq!(
            l.bounds[1].load(Ordering::Relaxed),
            50 * CALL,
            "nothing changed"
        );
        drop(closer);
        assert_eq!(
            apply(
                &l,
                LimiterConfig {
                    max_limit: 10,
                    ..BASE
                }
            )
            .0,
            Ok(())
        );
    }
}
