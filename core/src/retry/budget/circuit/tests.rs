use super::*;

const T: VerdictKind = VerdictKind::Transient;
const NOW: Instant = Instant::from_secs(1);

fn breaker(permille: u32, min: u32) -> RetryBreaker<10> {
    RetryBreaker::new(RetryBreakerConfig {
        max_failure_permille: permille,
        min_attempts: min,
        window: Duration::from_secs(10),
    })
    .unwrap()
}

fn firsts(b: &RetryBreaker<10>, now: Instant, n: u32) {
    for _ in 0..n {
        b.record_first_attempt(now);
    }
}

fn fails(b: &RetryBreaker<10>, now: Instant, n: u32) {
    for _ in 0..n {
        b.record_unretried_failure(now, T);
    }
}

#[test]
fn a_reset_forgets_the_failures_and_allows_retries_again() {
    let b = breaker(500, 10);
    firsts(&b, NOW, 20);
    fails(&b, NOW, 20);
    assert!(
        !b.try_spend(NOW, T),
        "every first attempt failed: retries off"
    );
    let mut rng = crate::random::SeededRandom::new(1);
    b.reset(&mut crate::permit::Env::new(NOW, &mut rng));
    assert_eq!(b.counts(NOW), (0, 0));
    assert!(
        b.try_spend(NOW, T),
        "after the reset, retries are allowed again"
    );
}

#[test]
fn a_reconfiguration_keeps_the_counts_and_judges_them_by_the_new_rule() {
    let b = breaker(100, 10);
    firsts(&b, NOW, 100);
    fails(&b, NOW, 20);
    assert!(b.is_tripped(NOW));
    let mut rng = crate::random::SeededRandom::new(1);
    let mut env = crate::permit::Env::new(NOW, &mut rng);
    let looser = RetryBreakerConfig {
        max_failure_permille: 300,
        min_attempts: 10,
        window: Duration::from_secs(10),
    };
    b.reconfigure(looser, &mut env).unwrap();
    assert_eq!(b.counts(NOW), (100, 20), "the window kept");
    assert!(!b.is_tripped(NOW));
    assert!(b.try_spend(NOW, T));
    // A minimum above the attempts seen: retries allowed whatever the rate.
    let patient = RetryBreakerConfig {
        max_failure_permille: 1,
        min_attempts: 1_000,
        ..looser
    };
    b.reconfigure(patient, &mut env).unwrap();
    assert!(b.try_spend(NOW, T));
    let other_window = RetryBreakerConfig {
        window: Duration::from_secs(20),
        ..looser
    };
    assert_eq!(
        b.reconfigure(other_window, &mut env),
        Err(RatioReconfigureError::Fixed { field: "window" })
    );
    let invalid = RetryBreakerConfig {
        max_failure_permille: 0,
        ..looser
    };
    assert_eq!(
        b.reconfigure(invalid, &mut env),
        Err(RatioReconfigureError::Config(
            BudgetConfigError::FailureThresholdZero
        ))
    );
    let held = b.settings.write().unwrap();
    assert_eq!(
        b.reconfigure(looser, &mut env),
        Err(RatioReconfigureError::Busy)
    );
    drop(held);
    assert_eq!(b.reconfigure(looser, &mut env), Ok(()));
}

#[test]
fn invalid_configs_are_refused() {
    let with = |permille, min, window| RetryBreakerConfig {
        max_failure_permille: permille,
        min_attempts: min,
        window,
    };
    let ten = Duration::from_secs(10);
    let cases = [
        (with(0, 10, ten), BudgetConfigError::FailureThresholdZero),
        (
            with(1000, 10, ten),
            BudgetConfigError::FailureThresholdNotBelowOne,
        ),
        (
            with(u32::MAX, 0, ten),
            BudgetConfigError::FailureThresholdNotBelowOne,
        ),
        (
            with(100, 10, Duration::ZERO),
            BudgetConfigError::EmptyWindow,
        ),
        (
            with(100, 0, Duration::from_nanos(79)),
            BudgetConfigError::WindowShorterThanBuckets,
        ),
        (
            with(100, 11, Duration::from_nanos(100)),
            BudgetConfigError::MinAttemptsUnreachable,
        ),
        (
            with(100, u32::MAX, Duration::MAX),
            BudgetConfigError::MinAttemptsUnreachable,
        ),
    ];
    for (config, error) in cases {
        assert_eq!(
            RetryBreaker::<10>::new(config).err(),
            Some(error),
            "{config:?}"
        );
    }
    assert_eq!(
        RetryBreaker::<0>::new(RetryBreakerConfig::DEFAULT).err(),
        Some(BudgetConfigError::EmptyWindow)
    );
    assert!(RetryBreaker::<10>::new(with(999, 10, Duration::from_nanos(100))).is_ok());
    assert!(RetryBreaker::<10>::new(with(1, 0, Duration::from_nanos(80))).is_ok());
    assert!(RetryBreaker::<10>::new(RetryBreakerConfig::BROOKER_2022).is_ok());
}

#[test]
fn the_threshold_is_inclusive_and_counts_the_failure_being_retried() {
    let b = breaker(100, 0);
    firsts(&b, NOW, 100);
    fails(&b, NOW, 9);
    // The tenth failure is the one being retried: 10 in 100 is at the threshold.
    assert!(b.try_spend(NOW, T));
    assert_eq!(b.counts(NOW), (101, 10));
    // 11 in 101 is above it (10.9%).
    assert!(!b.try_spend(NOW, T));
    assert_eq!(b.counts(NOW), (101, 11), "a refused retry is no attempt");
    assert!(b.is_tripped(NOW));
}

#[test]
fn without_a_minimum_the_first_failure_trips_a_fresh_breaker() {
    // Brooker's effect: one failure in one attempt is a 100% rate.
    let b = breaker(100, 0);
    firsts(&b, NOW, 1);
    assert!(!b.try_spend(NOW, T));
    let guarded = breaker(100, 10);
    firsts(&guarded, NOW, 1);
    assert!(guarded.try_spend(NOW, T), "below min_attempts: retried");
}

#[test]
fn below_the_minimum_every_retry_is_granted_whatever_the_rate() {
    let b = breaker(100, 10);
    firsts(&b, NOW, 3);
    // 3 firsts + 6 granted retries = 9 attempts, all failed.
    for i in 0..6 {
        assert!(b.try_spend(NOW, T), "retry {i}");
    }
    assert_eq!(b.counts(NOW), (9, 6));
    assert!(b.try_spend(NOW, T), "9 attempts < 10 when read");
    assert!(!b.try_spend(NOW, T), "10 attempts, 8 failures: tripped");
}

#[test]
fn first_attempts_and_successes_never_trip_nor_refuse() {
    let b = breaker(1, 0);
    firsts(&b, NOW, 10_000);
    for _ in 0..1_000 {
        b.record_success(NOW, Some(T));
    }
    assert_eq!(b.counts(NOW), (10_000, 0));
    assert!(!b.is_tripped(NOW));
    // 1 per mille of 10,000 attempts: ten failures are still at the threshold.
    fails(&b, NOW, 9);
    assert!(b.try_spend(NOW, T));
    assert!(!b.try_spend(NOW, T));
}

#[test]
fn the_window_forgets_and_the_breaker_closes() {
    let b = breaker(100, 0);
    firsts(&b, Instant::from_secs(0), 10);
    fails(&b, Instant::from_secs(0), 10);
    assert!(b.is_tripped(Instant::from_secs(5)));
    assert!(!b.try_spend(Instant::from_secs(9), T));
    // Ten 1 s buckets: at t = 10 s period 0 has slid out; the 9 s failure is still in.
    assert_eq!(b.counts(Instant::from_secs(10)), (0, 1));
    firsts(&b, Instant::from_secs(10), 10);
    assert!(
        !b.try_spend(Instant::from_secs(10), T),
        "2 failures in 10 attempts"
    );
    firsts(&b, Instant::from_secs(10), 20);
    assert!(
        b.try_spend(Instant::from_secs(10), T),
        "3 failures in 30 attempts: 10%"
    );
    assert_eq!(b.counts(Instant::from_secs(10)), (31, 3));
}

#[test]
fn no_idle_gap_keeps_it_tripped() {
    let b = breaker(100, 0);
    firsts(&b, NOW, 10);
    fails(&b, NOW, 10);
    for years in [1u64, 68, 136, 204] {
        let later = Instant::from_secs(1 + years * 365 * 86_400);
        assert_eq!(b.counts(later), (0, 0), "{years} years later");
        assert!(!b.is_tripped(later));
    }
}

#[test]
fn time_backwards_and_the_end_of_time_never_panic() {
    let b = breaker(100, 0);
    firsts(&b, Instant::MAX, 10);
    assert!(b.try_spend(Instant::MAX, T));
    assert_eq!(
        b.counts(Instant::ZERO),
        (0, 0),
        "the future is not in the window"
    );
    firsts(&b, Instant::ZERO, 1);
    assert!(!b.try_spend(Instant::ZERO, T));
}

#[test]
fn the_rule_cannot_overflow() {
    assert!(allows(u32::MAX, u32::MAX / 10, 100, 0));
    assert!(!allows(u32::MAX, u32::MAX, 999, 0));
    assert!(allows(0, u32::MAX, 1, 1));
    assert!(!allows(0, 1, 999, 0), "no attempts, one failure: 100%");
    assert!(allows(0, 0, 1, 0), "nothing seen: not tripped");
}

#[test]
fn its_debug_names_the_settings_in_force() {
    extern crate std;
    let b = breaker(250, 7);
    let shown = std::format!("{b:?}");
    assert!(shown.contains("max_failure_permille: 250"), "{shown}");
    assert!(shown.contains("min_attempts: 7"), "{shown}");
}
