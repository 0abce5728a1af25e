//! Changing a running throttler's K and cap.
//!
//! What may change in place is what does not change the meaning of the window's counts: K
//! (`accepts_multiplier`) and the cap (`max_rejection_rate`), two terms of the formula applied
//! to them. They live in one settings block (`mechanism/settings.rs`) read once per admit, so
//! an admit racing a change decides with the old pair or the new one, never K of one and the
//! cap of the other. Refused by name ([`ThrottlerReconfigureError::Fixed`]): the `window`
//! (its bucket length is what the stored periods mean), `local_rejections` (the counts were
//! gathered under one rule for the throttler's own refusals; a window holding both would mean
//! neither) and `min_requests` (ours: it stays a plain field so the hot path reads three
//! words, not four; nothing in the issue asks for it).
//!
//! **In flight.** A throttler permit holds nothing; a call admitted under the old K settles
//! into the same window as every call, and from the next admit on the new pair decides over
//! the same counts: a raised K or a lowered cap sheds less at once, the reverse more.

use core::time::Duration;

use super::{Throttler, ThrottlerConfig, ThrottlerConfigError};
use crate::control::emit_reconfigured;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::window::bucket_nanos;

impl<const BUCKETS: usize> Throttler<BUCKETS> {
    /// Puts `config`'s K and cap in force at once, keeping the window's counts, and emits
    /// [`Event::PolicyReconfigured`]. K and the cap are read together once per admit, so an
    /// admit racing the change decides with the old pair or the new one, never a mix.
    ///
    /// Refused by name ([`ThrottlerReconfigureError::Fixed`]), a new throttler being needed:
    /// a change of `window` (its bucket length is what the stored periods mean), of
    /// `local_rejections` (the counts were gathered under one rule for the throttler's own
    /// refusals) or of `min_requests` (kept out of the settings block, so each admit reads
    /// three words).
    ///
    /// **In flight.** A permit holds nothing: a call admitted before the change settles into
    /// the same window, and from the next admit the new pair decides over the same counts (a
    /// raised K or a lowered cap sheds less at once). Reconfigurations do not queue: one
    /// racing another is [`ThrottlerReconfigureError::Busy`] (nothing waits).
    ///
    /// ```
    /// use resilix::permit::{Env, Permit, Policy};
    /// use resilix::random::SeededRandom;
    /// use resilix::throttler::{Throttler, ThrottlerConfig, ThrottlerReconfigureError};
    /// use core::time::Duration;
    /// use resilix::time::Instant;
    /// use resilix::Verdict;
    ///
    /// let config = ThrottlerConfig { max_rejection_rate: 0.5, ..ThrottlerConfig::DEFAULT };
    /// let throttler = Throttler::new(config).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::from_secs(1), &mut rng);
    /// for _ in 0..20 {
    ///     if let Ok(p) = throttler.admit(&mut env) {
    ///         p.settle(&Verdict::Transient, &mut env);
    ///     }
    /// }
    /// assert_eq!(throttler.rejection_probability(env.now).as_f64(), 0.5);
    /// let dry_run = ThrottlerConfig { max_rejection_rate: 0.0, ..config };
    /// throttler.reconfigure(dry_run, &mut env).unwrap();
    /// assert!(throttler.rejection_probability(env.now).is_zero(), "the same counts, capped at 0");
    /// let shorter = ThrottlerConfig { window: Duration::from_secs(60), ..config };
    /// assert_eq!(
    ///     throttler.reconfigure(shorter, &mut env),
    ///     Err(ThrottlerReconfigureError::Fixed { field: "window" })
    /// );
    /// ```
    ///
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: ThrottlerConfig,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), ThrottlerReconfigureError> {
        let next = Self::check(&config).map_err(ThrottlerReconfigureError::Config)?;
        let fixed = if Duration::from_nanos(bucket_nanos(config.window, BUCKETS))
            != self.window.bucket_length()
        {
            Some("window")
        } else if config.local_rejections != self.local_rejections {
            Some("local_rejections")
        } else if next.min_requests != self.min_requests {
            Some("min_requests")
        } else {
            None
        };
        if let Some(field) = fixed {
            return Err(ThrottlerReconfigureError::Fixed { field });
        }
        self.settings
            .replace(next.words())
            .map_err(|_| ThrottlerReconfigureError::Busy)?;
        emit_reconfigured(PolicyKind::Throttler, env);
        Ok(())
    }
}

/// Why [`Throttler::reconfigure`] changed nothing: the one reconfigure error, over this policy's config error.
pub type ThrottlerReconfigureError = crate::control::ReconfigureError<ThrottlerConfigError>;

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use crate::observe::Event;
    use crate::permit::{Permit, Policy};
    use crate::random::SeededRandom;
    use crate::throttler::{LocalRejections, Probability};
    use crate::time::Instant;
    use crate::verdict::Verdict;
    use core::cell::RefCell;
    use std::string::ToString;
    use std::vec::Vec;

    struct Log(RefCell<Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }

    const AT: Instant = Instant::from_secs(5);

    fn config(k: f64, cap: f64) -> ThrottlerConfig {
        ThrottlerConfig {
            accepts_multiplier: k,
            max_rejection_rate: cap,
            min_requests: 0,
            ..ThrottlerConfig::DEFAULT
        }
    }

    /// A throttler whose window holds `requests` settled calls, `accepts` of them accepted.
    fn loaded(c: ThrottlerConfig, requests: u32, accepts: u32) -> Throttler {
        let t = Throttler::new(c).unwrap();
        let mut rng = SeededRandom::new(0);
        let mut env = Env::new(AT, &mut rng);
        for i in 0..requests {
            let verdict = if i < accepts {
                Verdict::Success
            } else {
                Verdict::Transient
            };
            super::super::ThrottlerPermit { throttler: &t }.settle(&verdict, &mut env);
        }
        t
    }

    fn apply(
        t: &Throttler,
        c: ThrottlerConfig,
    ) -> (Result<(), ThrottlerReconfigureError>, Vec<Event>) {
        let log = Log(RefCell::new(Vec::new()));
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(AT, &mut rng).with_observer(&log);
        let r = t.reconfigure(c, &mut env);
        (r, log.0.into_inner())
    }

    #[test]
    fn a_raised_k_sheds_less_at_once_over_the_same_counts_and_is_an_event() {
        let t = loaded(config(2.0, 0.9), 100, 40);
        assert_eq!(t.rejection_probability(AT), Probability::new(20, 101));
        let (r, events) = apply(&t, config(2.25, 0.9));
        assert_eq!(r, Ok(()));
        assert_eq!(
            events,
            [Event::PolicyReconfigured {
                policy: PolicyKind::Throttler,
                at: AT
            }]
        );
        assert_eq!(t.counts(AT), (100, 40), "the window is kept");
        assert_eq!(t.rejection_probability(AT), Probability::new(10, 101));
        assert_eq!(apply(&t, config(3.0, 0.9)).0, Ok(()));
        assert!(t.rejection_probability(AT).is_zero(), "100 ≤ 3 × 40");
        assert_eq!(apply(&t, config(1.0, 0.9)).0, Ok(()));
        assert_eq!(t.rejection_probability(AT), Probability::new(60, 101));
    }

    #[test]
    fn the_cap_binds_from_the_next_decision() {
        let t = loaded(config(2.0, 0.9), 100, 0);
        assert_eq!(t.rejection_probability(AT), Probability::new(9, 10));
        assert_eq!(apply(&t, config(2.0, 0.25)).0, Ok(()));
        assert_eq!(t.rejection_probability(AT), Probability::new(1, 4));
        // A cap of zero is the dry run: the counts go on, nothing is shed, no draw is made.
        assert_eq!(apply(&t, config(2.0, 0.0)).0, Ok(()));
        let mut rng = SeededRandom::new(3);
        let mut env = Env::new(AT, &mut rng);
        for _ in 0..50 {
            t.admit(&mut env)
                .expect("a zero cap sheds nothing")
                .settle(&Verdict::Transient, &mut env);
        }
        assert_eq!(t.counts(AT), (150, 0));
        assert_eq!(apply(&t, config(2.0, 0.5)).0, Ok(()));
        assert_eq!(t.rejection_probability(AT), Probability::new(1, 2));
    }

    #[test]
    fn an_infinite_k_and_a_large_one_survive_the_split_into_words() {
        let t = loaded(config(2.0, 0.9), 1_000, 1);
        assert_eq!(apply(&t, config(f64::INFINITY, 0.9)).0, Ok(()));
        assert_eq!(t.formula().k_millionths, u64::MAX);
        assert!(t.rejection_probability(AT).is_zero(), "one accept: never");
        // 5000 × 10^6 needs the high word: K × accepts = 5000 > 1000 requests.
        assert_eq!(apply(&t, config(5_000.0, 0.9)).0, Ok(()));
        assert_eq!(t.formula().k_millionths, 5_000_000_000);
        assert!(t.rejection_probability(AT).is_zero());
        assert_eq!(apply(&t, config(500.0, 0.9)).0, Ok(()));
        assert_eq!(t.rejection_probability(AT), Probability::new(500, 1001));
    }

    #[test]
    fn fixed_fields_invalid_configs_and_a_racing_writer_change_nothing() {
        let base = config(2.0, 0.9);
        let t = loaded(base, 100, 40);
        let before = t.formula();
        let cases = [
            (
                ThrottlerConfig {
                    window: Duration::from_secs(60),
                    ..config(3.0, 0.9)
                },
                ThrottlerReconfigureError::Fixed { field: "window" },
            ),
            (
                ThrottlerConfig {
                    local_rejections: LocalRejections::Ignore,
                    ..config(3.0, 0.9)
                },
                ThrottlerReconfigureError::Fixed {
                    field: "local_rejections",
                },
            ),
            (
                ThrottlerConfig {
                    min_requests: 5,
                    ..config(3.0, 0.9)
                },
                ThrottlerReconfigureError::Fixed {
                    field: "min_requests",
                },
            ),
            (
                config(0.5, 0.9),
                ThrottlerReconfigureError::Config(ThrottlerConfigError::AcceptsMultiplierBelowOne),
            ),
            (
                config(2.0, 1.0),
                ThrottlerReconfigureError::Config(ThrottlerConfigError::MaxRejectionRateAtLeastOne),
            ),
        ];
        for (c, e) in cases {
            assert_eq!(apply(&t, c), (Err(e), Vec::new()), "{c:?}");
        }
        let writer = t.settings.write().unwrap();
        assert_eq!(
            apply(&t, config(3.0, 0.9)),
            (Err(ThrottlerReconfigureError::Busy), Vec::new())
        );
        drop(writer);
        assert_eq!(t.formula(), before, "nothing changed");
        assert!(
            ThrottlerReconfigureError::Busy
                .to_string()
                .contains("try again")
        );
        assert!(
            ThrottlerReconfigureError::Config(ThrottlerConfigError::ZeroWindow)
                .to_string()
                .contains("window must be longer than zero")
        );
    }

    #[test]
    fn a_window_with_the_same_buckets_is_the_same_window() {
        // 120 s − 1 ns over 20 buckets rounds up to the same 6 s buckets.
        let t = loaded(config(2.0, 0.9), 10, 0);
        let c = ThrottlerConfig {
            window: Duration::from_secs(120) - Duration::from_nanos(1),
            ..config(4.0, 0.9)
        };
        assert_eq!(apply(&t, c).0, Ok(()));
        assert_eq!(t.formula().k_millionths, 4_000_000);
    }

    #[test]
    fn a_call_admitted_before_the_change_settles_into_the_same_window() {
        let t = loaded(config(2.0, 0.9), 0, 0);
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(AT, &mut rng);
        let permit = t.admit(&mut env).unwrap();
        assert_eq!(apply(&t, config(1.5, 0.5)).0, Ok(()));
        permit.settle(&Verdict::Success, &mut env);
        assert_eq!(t.counts(AT), (1, 1));
    }

    /// Two configs alternate under readers of the formula in force: every read is one of
    /// them, whole (K's two words and the cap from one write).
    #[test]
    fn many_threads_never_read_k_of_one_config_with_the_cap_of_another() {
        use std::sync::atomic::{AtomicBool, Ordering as O};
        let (a, b) = (config(1.0, 0.5), config(5_000.0, 0.95));
        let t = loaded(a, 0, 0);
        let fa = Throttler::<20>::check(&a).unwrap();
        let fb = Throttler::<20>::check(&b).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (t, done) = (&t, &done);
            scope.spawn(move || {
                let mut rng = SeededRandom::new(1);
                let mut env = Env::new(AT, &mut rng);
                for i in 0..20_000 {
                    t.reconfigure(if i % 2 == 0 { b } else { a }, &mut env)
                        .unwrap();
                }
                done.store(true, O::Release);
            });
            for _ in 0..2 {
                scope.spawn(move || {
                    let mut reads = 0u32;
                    while !done.load(O::Acquire) || reads < 1000 {
                        let f = t.formula();
                        assert!(f == fa || f == fb, "a torn formula: {f:?}");
                        reads += 1;
                    }
                });
            }
        });
    }
}
