//! The keyed retry budget against its plain model (`resilix_reference::keyed_budget`): tables
//! of 1, 4 and 8 entries shared by up to 24 keys (so homes collide, idle entries are reused and
//! the overflow budget serves), under a shared ratio budget or token bucket, on random
//! timelines whose gaps run from 1 ns to ten years, over per-key windows from 8 ns buckets to
//! days: every grant, `evict_idle`, `len`, each key's books, the overflow's and the shared
//! budget's must be identical. Plus the sweep of the first decisions after an idle gap over
//! three circles of the window's 31-bit period word.
#![cfg(not(loom))]

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::VerdictKind;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{
    KeyedBudget, PER_KEY_DEFAULT, RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket,
    TokenBucketConfig, Unlimited,
};
use resilix::time::Instant;
use resilix_reference::budget::{Books, BudgetModel, RatioModel, TokenBucketModel};
use resilix_reference::keyed_budget::{KeyedBudgetModel, KeyedBudgetTwin};
use resilix_reference::timeline::{Gaps, Timeline, window_idle_gaps};
use resilix_reference::twin::{Mix, drive};

use differential::RETRIES_RUN_OUT;

/// Log-uniform from `lo` to `lo · 2^octaves`.
fn log_window(lo: u64, octaves: u32) -> impl Strategy<Value = Duration> {
    (0..octaves, any::<u64>()).prop_map(move |(octave, x)| {
        let from = lo << octave;
        Duration::from_nanos(from + x % from)
    })
}

fn ratio_config() -> impl Strategy<Value = RatioBudgetConfig> {
    (
        log_window(80, 40),
        prop_oneof![Just(0u32), Just(100), Just(1000), 0u32..=1000],
        prop_oneof![Just(0u32), Just(1), Just(3), 0u32..20],
    )
        .prop_filter_map("a valid ratio budget", |(window, permille, floor)| {
            let c = RatioBudgetConfig {
                max_retry_permille: permille,
                min_retries_per_window: floor,
                window,
            };
            RatioBudget::new(c).ok().map(|_| c)
        })
}

#[derive(Clone, Copy, Debug)]
enum Shared {
    Ratio(RatioBudgetConfig),
    Tokens(TokenBucketConfig),
}

fn shared() -> impl Strategy<Value = Shared> {
    prop_oneof![
        ratio_config().prop_map(Shared::Ratio),
        Just(Shared::Ratio(RatioBudgetConfig::DEFAULT)),
        Just(Shared::Tokens(TokenBucketConfig::GRPC_A6_EXAMPLE)),
        Just(Shared::Tokens(TokenBucketConfig::AWS_SDK_STANDARD)),
        Just(Shared::Tokens(TokenBucketConfig::BROOKER_2022)),
    ]
}

fn run<const N: usize, S: RetryBudget + Books, const B: usize, M: BudgetModel>(
    real: &KeyedBudget<N, S, B>,
    per_key: &RatioBudgetConfig,
    model: M,
    keys: u64,
    seed: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(u64, u64), String> {
    let mut twin = KeyedBudgetTwin::new(real, per_key, model, keys, 16);
    let mut rng = SeededRandom::new(seed);
    let mut timeline = Timeline::new(Instant::from_nanos(rng.below(1 << 62)), gaps);
    drive(&mut twin, &mut timeline, &mut rng, 1_200, mix, 12)
        .map(|_| twin.grants())
        .map_err(|m| m.to_string())?;
    assert!(real.len() <= N);
    Ok(twin.grants())
}

/// Runs one table size and bucket count under `shared`.
fn run_with<const N: usize, const B: usize>(
    per_key: RatioBudgetConfig,
    shared: Shared,
    keys: u64,
    seed: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(u64, u64), String> {
    if RatioBudget::<B>::with_buckets(per_key).is_err() {
        return Ok((0, 0)); // a window too short for B buckets: refused, as tested elsewhere
    }
    match shared {
        Shared::Ratio(c) => {
            let real = KeyedBudget::<N, RatioBudget, B>::with_buckets(
                per_key,
                RatioBudget::new(c).unwrap(),
            )
            .unwrap();
            run(
                &real,
                &per_key,
                RatioModel::new(&c, 10),
                keys,
                seed,
                gaps,
                mix,
            )
        }
        Shared::Tokens(c) => {
            let real = KeyedBudget::<N, TokenBucket, B>::with_buckets(
                per_key,
                TokenBucket::new(c).unwrap(),
            )
            .unwrap();
            let model = TokenBucketModel::new(&c);
            run(&real, &per_key, model, keys, seed, gaps, mix)
        }
    }
}

fn run_all(
    per_key: RatioBudgetConfig,
    shared: Shared,
    keys: u64,
    seed: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(u64, u64), String> {
    let a = run_with::<1, 10>(per_key, shared, keys, seed, gaps, mix)?;
    let b = run_with::<4, 4>(per_key, shared, keys, seed, gaps, mix)?;
    let c = run_with::<8, 10>(per_key, shared, keys, seed, gaps, mix)?;
    Ok((a.0 + b.0 + c.0, a.1 + b.1 + c.1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Gaps from 1 ns to ten years: every circle of every period word crossed, idle or busy.
    #[test]
    fn identical_to_the_model_on_long_timelines(
        per_key in ratio_config(),
        shared in shared(),
        keys in 1u64..=24,
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let mix = if failing { RETRIES_RUN_OUT } else { Mix::MOSTLY_HEALTHY };
        run_all(per_key, shared, keys, seed, Gaps::LONG, mix).map_err(TestCaseError::fail)?;
    }

    /// Gaps up to a fraction of the per-key window, so keys fill their windows, run out, go
    /// idle and are replaced on the budgets' own time scale.
    #[test]
    fn identical_to_the_model_on_busy_timelines(
        per_key in ratio_config(),
        shared in shared(),
        keys in 1u64..=24,
        seed in any::<u64>(),
    ) {
        let longest = (per_key.window / 4).max(Duration::from_nanos(2));
        let gaps = Gaps::between(Duration::from_nanos(1), longest);
        run_all(per_key, shared, keys, seed, gaps, RETRIES_RUN_OUT).map_err(TestCaseError::fail)?;
    }
}

/// Busy and failing, with the defaults: the grants and refusals both happen, many times over.
#[test]
fn the_defaults_grant_and_refuse_on_busy_timelines() {
    let (mut granted, mut refused) = (0, 0);
    for seed in 0..24u64 {
        let gaps = Gaps::between(Duration::from_nanos(1), Duration::from_millis(500));
        let (g, r) = run_all(
            PER_KEY_DEFAULT,
            Shared::Ratio(RatioBudgetConfig::DEFAULT),
            1 + seed % 24,
            seed,
            gaps,
            RETRIES_RUN_OUT,
        )
        .unwrap_or_else(|m| panic!("seed {seed}: {m}"));
        granted += g;
        refused += r;
    }
    assert!(
        granted > 1_000 && refused > 1_000,
        "{granted} granted, {refused} refused"
    );
}

/// A one-entry table: key 1 spends its whole allowance at `t0` (40 first attempts, then
/// retries until refused); after `gap`, key 2's first attempt and key 1's next retry, real and
/// model alike (asserted). Answers whether key 2 took the entry.
fn first_after_gap<const B: usize>(
    per_key: &RatioBudgetConfig,
    t0: Instant,
    gap: Duration,
) -> bool {
    let real = KeyedBudget::<1, Unlimited, B>::with_buckets(*per_key, Unlimited).unwrap();
    let mut model = KeyedBudgetModel::new(per_key, B, 1, Unlimited);
    for _ in 0..40 {
        real.for_key(1).record_first_attempt(t0);
        model.record_first_attempt(1, t0);
    }
    loop {
        let r = real.for_key(1).try_spend(t0, VerdictKind::Transient);
        assert_eq!(r, model.try_spend(1, t0, VerdictKind::Transient));
        if !r {
            break;
        }
    }
    let now = t0.saturating_add(gap);
    real.for_key(2).record_first_attempt(now);
    model.record_first_attempt(2, now);
    let took = real.placed(2);
    assert_eq!(real.len(), model.len(), "gap {gap:?}");
    assert_eq!(
        real.counts(2, now)
            .map(|(f, r)| (u64::from(f), u64::from(r))),
        model.counts(2, now),
        "gap {gap:?}"
    );
    let r = real.for_key(1).try_spend(now, VerdictKind::Transient);
    assert_eq!(
        r,
        model.try_spend(1, now, VerdictKind::Transient),
        "gap {gap:?}"
    );
    // Key 1 keeps its entry (its allowance spent) or, if key 2 took it, retries from the
    // overflow's fresh window: the floor of one.
    assert_eq!(r, took, "gap {gap:?}");
    took
}

fn sweep<const B: usize>(window: Duration, coarse_points: u32) {
    let per_key = RatioBudgetConfig {
        window,
        ..PER_KEY_DEFAULT
    };
    let t0 = Instant::from_nanos(98_765_432_101);
    let bucket = Duration::from_nanos(window.as_nanos().div_ceil(B as u128) as u64);
    let mut points = 0;
    for gap in window_idle_gaps(window, B, t0, coarse_points) {
        let took = first_after_gap::<B>(&per_key, t0, gap);
        if gap >= window + bucket {
            assert!(took, "gap {gap:?}: key 1's window is empty");
        } else if gap + bucket < window {
            assert!(!took, "gap {gap:?}: key 1 is still in its window");
        }
        points += 1;
    }
    assert!(points >= 1_000, "{points}");
}

/// The finest scale: 8 ns buckets (an 80 ns window of 10), a circle of 17.2 s.
#[test]
fn first_decisions_after_an_idle_gap_eight_nanosecond_buckets() {
    sweep::<10>(Duration::from_nanos(80), 10_000);
}

/// 1 ms buckets (a 10 ms window of 10): a circle of 24.9 days.
#[test]
fn first_decisions_after_an_idle_gap_millisecond_buckets() {
    sweep::<10>(Duration::from_millis(10), 10_000);
}

/// The default: 1 s buckets over 10 s, a circle of 68 years.
#[test]
fn first_decisions_after_an_idle_gap_default_window() {
    sweep::<10>(PER_KEY_DEFAULT.window, 4_000);
}

/// Four buckets of 3 µs (a bucket count that does not divide the circle into tens).
#[test]
fn first_decisions_after_an_idle_gap_four_buckets() {
    sweep::<4>(Duration::from_micros(12), 10_000);
}
