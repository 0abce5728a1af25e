//! The retry budgets against their reference models (`resilix_reference::budget`): identical
//! grants and books on random long timelines (gaps 1 ns to ten years) for the ratio budget,
//! over windows from the shortest a bucket count allows to days and several bucket counts,
//! and for the token bucket's presets and random settings; and the first retry decision after
//! an idle gap of 0 to 3 circles of the ratio budget's 31-bit period word.

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::VerdictKind;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, TokenBucket, TokenBucketConfig};
use resilix::time::Instant;
use resilix_reference::budget::{RatioModel, ratio_twin, token_bucket_twin};
use resilix_reference::timeline::{Gaps, Timeline, window_idle_gaps};
use resilix_reference::twin::{Mix, Twin};

use differential::{RETRIES_RUN_OUT, busy_retries, seeded_run, token_bucket, window};

/// Runs the twin of a `RatioBudget<B>`; answers the retries (granted, refused).
fn ratio_run<const B: usize>(
    config: RatioBudgetConfig,
    seed: u64,
    steps: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(u64, u64), String> {
    let real = RatioBudget::<B>::with_buckets(config).map_err(|e| format!("refused: {e}"))?;
    let mut twin = ratio_twin(&real, &config);
    seeded_run(&mut twin, seed, steps, gaps, mix)?;
    Ok(twin.grants())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn ratio_grants_match_the_model_on_long_timelines(
        window in window(),
        permille in prop_oneof![Just(0u32), Just(100), Just(1000), 0u32..=1000],
        floor in prop_oneof![Just(0u32), Just(3), 0u32..20],
        buckets in 0usize..5,
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        prop_assume!(permille > 0 || floor > 0);
        let c = RatioBudgetConfig { max_retry_permille: permille, min_retries_per_window: floor, window };
        let mix = if failing { RETRIES_RUN_OUT } else { Mix::MOSTLY_HEALTHY };
        let r = match buckets {
            0 => ratio_run::<1>(c, seed, 1_500, Gaps::LONG, mix),
            1 => ratio_run::<2>(c, seed, 1_500, Gaps::LONG, mix),
            2 => ratio_run::<7>(c, seed, 1_500, Gaps::LONG, mix),
            3 => ratio_run::<10>(c, seed, 1_500, Gaps::LONG, mix),
            _ => ratio_run::<20>(c, seed, 1_500, Gaps::LONG, mix),
        };
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn token_bucket_matches_the_model_on_long_timelines(
        config in prop_oneof![
            Just(TokenBucketConfig::GRPC_A6_EXAMPLE),
            Just(TokenBucketConfig::AWS_SDK_STANDARD),
            Just(TokenBucketConfig::BROOKER_2022),
            token_bucket(),
        ],
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let real = TokenBucket::new(config).unwrap();
        let mut twin = token_bucket_twin(&real, &config);
        let mut rng = SeededRandom::new(seed);
        let mut timeline = Timeline::new(Instant::from_nanos(rng.below(1 << 62)), Gaps::LONG);
        let mix = if failing { RETRIES_RUN_OUT } else { Mix::MOSTLY_HEALTHY };
        let r = resilix_reference::drive(&mut twin, &mut timeline, &mut rng, 1_500, mix, 16);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Busy stretches: gaps from 1 ns to a few windows, so windows are full and grants run out.
#[test]
fn ratio_grants_match_the_model_while_busy() {
    busy_retries(|seed, window, gaps| {
        let c = RatioBudgetConfig {
            max_retry_permille: [0, 100, 500, 1000][seed as usize % 4],
            min_retries_per_window: 1 + (seed % 4) as u32,
            window,
        };
        ratio_run::<10>(c, seed, 4_000, gaps, RETRIES_RUN_OUT)
    });
}

/// Spends the whole allowance at `t0` (40 first attempts, then retries until refused), waits
/// `gap`, and compares the first retry decision after it with the model's; once the gap is
/// longer than the window and a bucket, the full allowance must be back.
fn first_after_gap<const B: usize>(c: &RatioBudgetConfig, t0: Instant, gap: Duration) {
    let real = RatioBudget::<B>::with_buckets(*c).unwrap();
    let mut twin = ratio_twin(&real, c);
    for _ in 0..40 {
        twin.first_attempt(t0);
    }
    while twin.spend(t0, VerdictKind::Transient).unwrap() {}
    let now = t0.saturating_add(gap);
    twin.check(now)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    let granted = twin
        .spend(now, VerdictKind::Transient)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    let bucket = Duration::from_nanos(c.window.as_nanos().div_ceil(B as u128) as u64);
    if gap > c.window + bucket {
        assert!(
            granted,
            "gap {gap:?}: a retry must be granted after the window"
        );
        assert_eq!(real.counts(now), (0, 1), "gap {gap:?}");
    }
    if gap.is_zero() {
        assert!(!granted, "the allowance was spent");
    }
    let _: &RatioModel = twin.model();
}

/// The sweep of one config over `timeline::window_idle_gaps`.
fn sweep_config<const B: usize>(window: Duration, coarse_points: u32) {
    let c = RatioBudgetConfig {
        window,
        ..RatioBudgetConfig::DEFAULT
    };
    let t0 = Instant::from_nanos(98_765_432_101);
    for gap in window_idle_gaps(window, B, t0, coarse_points) {
        first_after_gap::<B>(&c, t0, gap);
    }
}

/// The finest scale: 8 ns buckets (an 80 ns window of 10), a circle of 17.2 s.
#[test]
fn first_retry_after_an_idle_gap_eight_nanosecond_buckets() {
    sweep_config::<10>(Duration::from_nanos(80), 20_000);
}

/// 1 ms buckets (a 10 ms window of 10): a circle of 24.9 days (the old word's was 49.7).
#[test]
fn first_retry_after_an_idle_gap_millisecond_buckets() {
    sweep_config::<10>(Duration::from_millis(10), 20_000);
}

/// The default: 1 s buckets over 10 s, a circle of 68 years: 0..3 circles (204 years) fit the
/// timeline; coarse over them, fine around each quarter circle.
#[test]
fn first_retry_after_an_idle_gap_default_window() {
    sweep_config::<10>(RatioBudgetConfig::DEFAULT.window, 5_000);
}

/// Seven buckets (a bucket count that does not divide the circle) of 3 µs.
#[test]
fn first_retry_after_an_idle_gap_seven_buckets() {
    sweep_config::<7>(Duration::from_micros(21), 20_000);
}
