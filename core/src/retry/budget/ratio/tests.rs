use super::*;

const T: VerdictKind = VerdictKind::Transient;

fn budget(permille: u32, floor: u32) -> RatioBudget<10> {
    RatioBudget::new(RatioBudgetConfig {
        max_retry_permille: permille,
        min_retries_per_window: floor,
        window: Duration::from_secs(10),
    })
    .unwrap()
}

fn spend_all(b: &RatioBudget<10>, now: Instant) -> usize {
    (0..10_000).take_while(|_| b.try_spend(now, T)).count()
}

#[test]
fn a_reset_forgets_the_window() {
    let b = budget(100, 0);
    for _ in 0..50 {
        b.record_first_attempt(Instant::ZERO);
    }
    assert_eq!(spend_all(&b, Instant::ZERO), 5);
    assert_eq!(b.counts(Instant::ZERO), (50, 5));
    let mut rng = crate::random::SeededRandom::new(1);
    b.reset(&mut Env::new(Instant::ZERO, &mut rng));
    assert_eq!(b.counts(Instant::ZERO), (0, 0));
    assert_eq!(
        spend_all(&b, Instant::ZERO),
        0,
        "no first attempts: no share"
    );
}

#[test]
fn invalid_configs_are_refused() {
    let zero_window = RatioBudgetConfig {
        window: Duration::ZERO,
        ..RatioBudgetConfig::DEFAULT
    };
    assert_eq!(
        RatioBudget::new(zero_window).err(),
        Some(BudgetConfigError::EmptyWindow)
    );
    assert_eq!(
        RatioBudget::<0>::with_buckets(RatioBudgetConfig::DEFAULT).err(),
        Some(BudgetConfigError::EmptyWindow)
    );
    let never = RatioBudgetConfig {
        max_retry_permille: 0,
        min_retries_per_window: 0,
        ..RatioBudgetConfig::DEFAULT
    };
    assert_eq!(
        RatioBudget::new(never).err(),
        Some(BudgetConfigError::NeverRetries)
    );
}

#[test]
fn a_ratio_above_one_is_refused() {
    // The case: 50,000 per mille, 500 retries per 10 first attempts.
    let config = |permille| RatioBudgetConfig {
        max_retry_permille: permille,
        ..RatioBudgetConfig::DEFAULT
    };
    assert_eq!(
        RatioBudget::new(config(50_000)).err(),
        Some(BudgetConfigError::RatioAboveOne)
    );
    assert_eq!(
        RatioBudget::new(config(1_001)).err(),
        Some(BudgetConfigError::RatioAboveOne)
    );
    let one = RatioBudget::new(config(RatioBudgetConfig::MAX_RETRY_PERMILLE)).unwrap();
    for _ in 0..10 {
        one.record_first_attempt(Instant::ZERO);
    }
    assert_eq!(
        (0..100)
            .take_while(|_| one.try_spend(Instant::ZERO, T))
            .count(),
        10,
        "one retry per first attempt"
    );
}

#[test]
fn a_window_shorter_than_its_buckets_is_refused() {
    let config = |nanos| RatioBudgetConfig {
        window: Duration::from_nanos(nanos),
        ..RatioBudgetConfig::DEFAULT
    };
    assert_eq!(
        RatioBudget::new(config(79)).err(),
        Some(BudgetConfigError::WindowShorterThanBuckets)
    );
    assert!(RatioBudget::new(config(80)).is_ok());
}

#[test]
fn a_floor_of_u32_max_grants_every_retry() {
    let b = budget(0, u32::MAX);
    assert_eq!(spend_all(&b, Instant::ZERO), 10_000);
    assert_eq!(b.counts(Instant::ZERO), (0, 10_000));
}

#[test]
fn the_floor_lets_a_quiet_service_retry() {
    let b = budget(100, 3);
    assert_eq!(
        spend_all(&b, Instant::from_secs(1)),
        3,
        "no traffic: the floor"
    );
    assert_eq!(b.counts(Instant::from_secs(1)), (0, 3));
}

#[test]
fn ten_percent_of_first_attempts_above_the_floor() {
    let b = budget(100, 3);
    let now = Instant::from_secs(1);
    for _ in 0..250 {
        b.record_first_attempt(now);
    }
    assert_eq!(spend_all(&b, now), 25);
    // One more first attempt is not enough for another (25.1 rounds down)...
    b.record_first_attempt(now);
    assert!(!b.try_spend(now, T));
    // ...ten more are.
    for _ in 0..9 {
        b.record_first_attempt(now);
    }
    assert!(b.try_spend(now, T));
}

#[test]
fn zero_ratio_means_only_the_floor() {
    let b = budget(0, 2);
    for _ in 0..1_000 {
        b.record_first_attempt(Instant::ZERO);
    }
    assert_eq!(spend_all(&b, Instant::ZERO), 2);
}

#[test]
fn spent_retries_slide_out_of_the_window() {
    let b = budget(100, 1);
    assert!(b.try_spend(Instant::from_secs(0), T));
    assert!(!b.try_spend(Instant::from_secs(5), T));
    assert!(
        b.try_spend(Instant::from_secs(10), T),
        "the first retry has slid out"
    );
    assert_eq!(
        spend_all(&b, Instant::from_secs(365 * 86_400)),
        1,
        "a year later"
    );
}

#[test]
fn time_backwards_and_the_end_of_time_never_panic_nor_overspend() {
    let b = budget(100, 1);
    assert!(b.try_spend(Instant::MAX, T));
    assert!(!b.try_spend(Instant::MAX, T));
    assert!(
        b.try_spend(Instant::ZERO, T),
        "an earlier period is its own bucket"
    );
    assert!(!b.try_spend(Instant::ZERO, T));
}

#[test]
fn allowance_saturates_and_takes_the_larger() {
    assert_eq!(allowance(u32::MAX, 1000, 0), u32::MAX);
    assert_eq!(allowance(u32::MAX, u32::MAX, 0), u32::MAX);
    assert_eq!(allowance(9, 100, 0), 0);
    assert_eq!(allowance(10, 100, 0), 1);
    assert_eq!(allowance(10, 100, 5), 5);
    assert_eq!(budget(100, 3).allowance(1_000), 100);
}

#[test]
fn only_first_attempts_and_granted_retries_are_counted() {
    let b = budget(100, 3);
    b.record_unretried_failure(Instant::ZERO, T);
    b.record_success(Instant::ZERO, Some(T));
    assert_eq!(b.counts(Instant::ZERO), (0, 0));
    b.record_first_attempt(Instant::ZERO);
    assert!(b.try_spend(Instant::ZERO, T));
    assert_eq!(b.counts(Instant::ZERO), (1, 1));
}

mod reconfigure {
    extern crate std;
    use super::*;
    use crate::observe::Event;
    use crate::random::SeededRandom;
    use core::cell::RefCell;
    use std::vec::Vec;

    struct Log(RefCell<Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }

    fn config(permille: u32, floor: u32) -> RatioBudgetConfig {
        RatioBudgetConfig {
            max_retry_permille: permille,
            min_retries_per_window: floor,
            window: Duration::from_secs(10),
        }
    }

    fn apply(
        b: &RatioBudget<10>,
        c: RatioBudgetConfig,
    ) -> (Result<(), RatioReconfigureError>, Vec<Event>) {
        let log = Log(RefCell::new(Vec::new()));
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(2), &mut rng).with_observer(&log);
        let r = b.reconfigure(c, &mut env);
        (r, log.0.into_inner())
    }

    #[test]
    fn a_reconfiguration_is_an_event_and_keeps_the_counts() {
        let b = budget(100, 0);
        let now = Instant::from_secs(1);
        for _ in 0..100 {
            b.record_first_attempt(now);
        }
        assert_eq!(spend_all(&b, now), 10);
        let (r, events) = apply(&b, config(300, 0));
        assert_eq!(r, Ok(()));
        assert_eq!(
            events,
            [Event::PolicyReconfigured {
                policy: PolicyKind::RetryBudget,
                at: Instant::from_secs(2)
            }]
        );
        assert_eq!(b.counts(now), (100, 10), "the window is kept");
        assert_eq!(
            spend_all(&b, now),
            20,
            "a raised ratio grants at once, over the same counts"
        );
    }

    #[test]
    fn a_lowered_ratio_under_the_spent_retries_grants_nothing_until_firsts_catch_up() {
        let b = budget(500, 0);
        let now = Instant::from_secs(1);
        for _ in 0..100 {
            b.record_first_attempt(now);
        }
        assert_eq!(spend_all(&b, now), 50);
        assert_eq!(apply(&b, config(100, 0)).0, Ok(()));
        assert_eq!(spend_all(&b, now), 0, "50 spent, 10 allowed now");
        for _ in 0..400 {
            b.record_first_attempt(now);
        }
        assert_eq!(spend_all(&b, now), 0, "500 firsts allow 50: all spent");
        for _ in 0..10 {
            b.record_first_attempt(now);
        }
        assert_eq!(spend_all(&b, now), 1);
    }

    #[test]
    fn the_floor_changes_with_the_ratio() {
        let b = budget(0, 2);
        assert_eq!(b.allowance(0), 2);
        assert_eq!(apply(&b, config(0, 9)).0, Ok(()));
        assert_eq!((b.allowance(0), spend_all(&b, Instant::ZERO)), (9, 9));
    }

    #[test]
    fn a_new_window_an_invalid_config_and_a_racing_writer_change_nothing() {
        let b = budget(100, 3);
        let longer = RatioBudgetConfig {
            window: Duration::from_secs(11),
            ..config(200, 3)
        };
        assert_eq!(
            apply(&b, longer),
            (
                Err(RatioReconfigureError::Fixed { field: "window" }),
                Vec::new()
            )
        );
        assert_eq!(
            apply(&b, config(1001, 3)).0,
            Err(RatioReconfigureError::Config(
                BudgetConfigError::RatioAboveOne
            ))
        );
        let writer = b.settings.write().unwrap();
        assert_eq!(
            apply(&b, config(200, 3)),
            (Err(RatioReconfigureError::Busy), Vec::new())
        );
        drop(writer);
        assert_eq!(b.allowance(1000), 100, "nothing changed");
        assert_eq!(apply(&b, config(200, 3)).0, Ok(()));
        assert_eq!(b.allowance(1000), 200);
    }

    /// The ratio and the floor change together: with `(1000, 0)` and `(0, 5)` alternating
    /// under readers, `allowance(100)` is 100 or 5; a torn pair `(0, 0)` would read 0.
    #[test]
    fn many_threads_never_see_the_ratio_of_one_config_with_the_floor_of_another() {
        use std::sync::atomic::{AtomicBool, Ordering as O};
        let b = budget(1000, 0);
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (b, done) = (&b, &done);
            scope.spawn(move || {
                let mut rng = SeededRandom::new(1);
                let mut env = Env::new(Instant::ZERO, &mut rng);
                for i in 0..20_000 {
                    let c = if i % 2 == 0 {
                        config(0, 5)
                    } else {
                        config(1000, 0)
                    };
                    b.reconfigure(c, &mut env).unwrap();
                }
                done.store(true, O::Release);
            });
            for _ in 0..2 {
                scope.spawn(move || {
                    let mut reads = 0u32;
                    while !done.load(O::Acquire) || reads < 1000 {
                        let a = b.allowance(100);
                        assert!(a == 100 || a == 5, "a torn pair: allowance {a}");
                        reads += 1;
                    }
                });
            }
        });
    }
}
