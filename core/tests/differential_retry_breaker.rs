//! The retry circuit breaker against its reference model
//! (`resilix_reference::retry_breaker`): identical grants and books (attempts, failures in the
//! window) on random long timelines (gaps 1 ns to ten years) over windows from the shortest a
//! bucket count allows to days, several bucket counts, thresholds and minimums; while busy;
//! and the first retry decision after an idle gap of 0 to 3 circles of the window's 31-bit
//! period word.

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::VerdictKind;
use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig};
use resilix::time::Instant;
use resilix_reference::retry_breaker::retry_breaker_twin;
use resilix_reference::timeline::{Gaps, sweep};
use resilix_reference::twin::{Mix, Twin};

use differential::{RETRIES_RUN_OUT, busy_retries, seeded_run, window};

/// Circles of the period word: 2^31 bucket periods.
const CIRCLE_PERIODS: u64 = 1 << 31;

/// Runs the twin of a `RetryBreaker<B>`; answers the retries (granted, refused).
fn run<const B: usize>(
    config: RetryBreakerConfig,
    seed: u64,
    steps: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(u64, u64), String> {
    let real = RetryBreaker::<B>::new(config).map_err(|e| format!("refused: {e}"))?;
    let mut twin = retry_breaker_twin(&real, &config);
    seeded_run(&mut twin, seed, steps, gaps, mix)?;
    Ok(twin.grants())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn grants_match_the_model_on_long_timelines(
        window in window(),
        permille in prop_oneof![Just(1u32), Just(100), Just(500), Just(999), 1u32..=999],
        min in prop_oneof![Just(0u32), Just(10), 0u32..50],
        buckets in 0usize..5,
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let c = RetryBreakerConfig { max_failure_permille: permille, min_attempts: min, window };
        let mix = if failing { RETRIES_RUN_OUT } else { Mix::MOSTLY_HEALTHY };
        let r = match buckets {
            0 => run::<1>(c, seed, 1_500, Gaps::LONG, mix),
            1 => run::<2>(c, seed, 1_500, Gaps::LONG, mix),
            2 => run::<7>(c, seed, 1_500, Gaps::LONG, mix),
            3 => run::<10>(c, seed, 1_500, Gaps::LONG, mix),
            _ => run::<20>(c, seed, 1_500, Gaps::LONG, mix),
        };
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Busy stretches: gaps from 1 ns to a few windows, so windows are full, the breaker trips
/// and closes; both outcomes must occur often.
#[test]
fn grants_match_the_model_while_busy() {
    busy_retries(|seed, window, gaps| {
        let c = RetryBreakerConfig {
            max_failure_permille: [100, 250, 500, 999][seed as usize % 4],
            min_attempts: [0, 3, 5, 10][(seed / 4) as usize % 4],
            window,
        };
        run::<10>(c, seed, 4_000, gaps, RETRIES_RUN_OUT)
    });
}

/// Trips the breaker at `t0` (40 first attempts, then failures retried until refused), waits
/// `gap`, and compares the books and the first retry decision after it with the model's; once
/// the gap is longer than the window and a bucket, the breaker must have closed.
fn first_after_gap<const B: usize>(c: &RetryBreakerConfig, t0: Instant, gap: Duration) {
    let real = RetryBreaker::<B>::new(*c).unwrap();
    let mut twin = retry_breaker_twin(&real, c);
    for _ in 0..40 {
        twin.first_attempt(t0);
    }
    while twin.spend(t0, VerdictKind::Transient).unwrap() {}
    assert!(real.is_tripped(t0));
    let now = t0.saturating_add(gap);
    twin.check(now)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    let granted = twin
        .spend(now, VerdictKind::Transient)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    let bucket = Duration::from_nanos(c.window.as_nanos().div_ceil(B as u128) as u64);
    if gap > c.window + bucket {
        // Nothing left in the window: one failure in no attempts is a 100% rate, so the
        // first retry is refused only by a breaker with no minimum (Brooker's).
        assert_eq!(granted, c.min_attempts > 0, "gap {gap:?}");
        assert_eq!(real.counts(now), (u32::from(granted), 1), "gap {gap:?}");
        for _ in 0..21 {
            twin.first_attempt(now);
        }
        assert!(
            twin.spend(now, VerdictKind::Transient).unwrap(),
            "gap {gap:?}: 2 failures in 21 or more attempts is at most 10%"
        );
    }
    if gap.is_zero() {
        assert!(!granted, "still tripped");
    }
}

/// Coarse over 0..3 circles (as far as the timeline reaches), fine (a tenth of a bucket)
/// around every quarter circle ± two windows.
fn sweep_config<const B: usize>(window: Duration, min_attempts: u32, coarse_points: u32) {
    let c = RetryBreakerConfig {
        window,
        min_attempts,
        ..RetryBreakerConfig::DEFAULT
    };
    let bucket_nanos = window.as_nanos().div_ceil(B as u128) as u64;
    let circle = Duration::from_nanos(bucket_nanos.saturating_mul(CIRCLE_PERIODS));
    let t0 = Instant::from_nanos(98_765_432_101);
    let last = Instant::MAX.as_nanos() - t0.as_nanos();
    let three = circle.saturating_mul(3);
    for gap in sweep(three, three / coarse_points) {
        if gap.as_nanos() as u64 <= last {
            first_after_gap::<B>(&c, t0, gap);
        }
    }
    let step = Duration::from_nanos((bucket_nanos / 10).max(1));
    for quarter in 1..=12u32 {
        let centre = (circle / 4).saturating_mul(quarter);
        if centre.as_nanos() as u64 > last {
            break;
        }
        let from = centre.saturating_sub(window * 2);
        for gap in sweep(window * 4, step) {
            let g = from + gap;
            if g.as_nanos() as u64 <= last {
                first_after_gap::<B>(&c, t0, g);
            }
        }
    }
}

/// The finest scale: 8 ns buckets (an 80 ns window of 10), a circle of 17.2 s; Brooker's
/// breaker (no minimum).
#[test]
fn first_retry_after_an_idle_gap_eight_nanosecond_buckets() {
    sweep_config::<10>(Duration::from_nanos(80), 0, 20_000);
}

/// 1 ms buckets (a 10 ms window of 10): a circle of 24.9 days; the default minimum.
#[test]
fn first_retry_after_an_idle_gap_millisecond_buckets() {
    sweep_config::<10>(Duration::from_millis(10), 10, 20_000);
}

/// The default: 1 s buckets over 10 s, a circle of 68 years: 0..3 circles fit the timeline.
#[test]
fn first_retry_after_an_idle_gap_default_window() {
    sweep_config::<10>(RetryBreakerConfig::DEFAULT.window, 10, 5_000);
}

/// Seven buckets (a bucket count that does not divide the circle) of 3 µs, no minimum.
#[test]
fn first_retry_after_an_idle_gap_seven_buckets() {
    sweep_config::<7>(Duration::from_micros(21), 0, 20_000);
}
