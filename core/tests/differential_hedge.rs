//! The hedge policy against its reference model (`resilix_reference::hedge`): identical plans
//! (copy sent, due later, refused by which limit, never), delays, local-cap balances, window
//! fills and shared-budget books on random long timelines (gaps 1 ns to ten years) and busy
//! ones, over the token bucket's presets and ratio budgets, both accountings, fixed and
//! quantile delays; and the first decision after an idle gap of 0 to 3 circles of a 32-bit
//! nanosecond word and of the 32-bit microsecond delay word.

use core::time::Duration;

use proptest::prelude::*;
use resilix::call::CallOptions;
use resilix::hedge::{BudgetAccounting, Hedge, HedgeConfig, NextCopy};
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, TokenBucket, TokenBucketConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;
use resilix_reference::budget::{Books, BudgetModel, RatioModel, TokenBucketModel};
use resilix_reference::hedge::{HedgeModel, HedgeTwin};
use resilix_reference::timeline::{Gaps, Timeline, sweep};
use resilix_reference::twin::Mix;

/// Gaps of a busy service: 1 ns to 20 ms, around the delays.
const BUSY: Gaps = Gaps::between(Duration::from_nanos(1), Duration::from_millis(20));

fn run<R: resilix::retry::budget::RetryBudget + Books, M: BudgetModel>(
    config: HedgeConfig,
    budget: &R,
    model: M,
    seed: u64,
    gaps: Gaps,
    steps: u64,
) -> Result<(u64, u64), String> {
    let mut twin = HedgeTwin::new(config, budget, model)?;
    let mut rng = SeededRandom::new(seed);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, gaps);
    resilix_reference::drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        steps,
        Mix::MOSTLY_HEALTHY,
        12,
    )
    .map(|_| twin.hedges())
    .map_err(|m| m.to_string())
}

fn config_strategy() -> impl Strategy<Value = HedgeConfig> {
    (
        prop_oneof![Just(50u32), Just(1), Just(999), 1u32..1000],
        0u32..40,
        prop_oneof![Just(None), (1u64..50_000_000).prop_map(Some)],
        prop_oneof![Just(0u64), Just(1_000_000), 0u64..5_000_000],
        1u32..=4,
        prop_oneof![Just(1u32), Just(10), 1u32..30],
        any::<bool>(),
    )
        .prop_map(|(load, extra, fixed, min_ns, hedges, burst, spend_only)| {
            HedgeConfig {
                max_extra_load_permille: load,
                // The shortest window the load allows, plus a little: windows fill in a run.
                window: 1000u32.div_ceil(load) + extra,
                fixed_delay: fixed.map(Duration::from_nanos),
                min_delay: Duration::from_nanos(min_ns),
                max_hedges: hedges,
                burst,
                accounting: if spend_only {
                    BudgetAccounting::SpendOnly
                } else {
                    BudgetAccounting::Calls
                },
            }
        })
}

fn gaps_strategy() -> impl Strategy<Value = Gaps> {
    prop_oneof![Just(Gaps::LONG), Just(BUSY)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn hedges_match_the_model_over_a_token_bucket(
        config in config_strategy(),
        bucket in prop_oneof![
            Just(TokenBucketConfig::AWS_SDK_STANDARD),
            Just(TokenBucketConfig::GRPC_A6_EXAMPLE),
            Just(TokenBucketConfig::BROOKER_2022),
        ],
        gaps in gaps_strategy(),
        seed in any::<u64>(),
    ) {
        let real = TokenBucket::new(bucket).unwrap();
        let r = run(config, &real, TokenBucketModel::new(&bucket), seed, gaps, 1_500);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn hedges_match_the_model_over_a_ratio_budget(
        config in config_strategy(),
        permille in prop_oneof![Just(100u32), 0u32..=1000],
        floor in 0u32..5,
        window_ns in 80u64..10_000_000_000,
        gaps in gaps_strategy(),
        seed in any::<u64>(),
    ) {
        prop_assume!(permille > 0 || floor > 0);
        let budget = RatioBudgetConfig {
            max_retry_permille: permille,
            min_retries_per_window: floor,
            window: Duration::from_nanos(window_ns),
        };
        let real = RatioBudget::<10>::new(budget).unwrap();
        let r = run(config, &real, RatioModel::new(&budget, 10), seed, gaps, 1_500);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Busy runs reach every outcome: copies sent, refused by the local cap and by the budget.
#[test]
fn busy_runs_send_and_refuse_hedges() {
    let (mut sent, mut refused) = (0u64, 0u64);
    for seed in 0..30u64 {
        let config = HedgeConfig {
            window: 20 + seed as u32,
            burst: 1 + (seed % 3) as u32,
            max_hedges: 1 + (seed % 2) as u32,
            min_delay: Duration::from_micros(seed * 37),
            ..HedgeConfig::DEFAULT
        };
        let bucket = TokenBucketConfig::BROOKER_2022;
        let real = TokenBucket::new(bucket).unwrap();
        let (s, r) = run(
            config,
            &real,
            TokenBucketModel::new(&bucket),
            seed,
            BUSY,
            4_000,
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        sent += s;
        refused += r;
    }
    assert!(sent > 100, "sent {sent}");
    assert!(refused > 100, "refused {refused}");
}

/// 32-bit words of nanoseconds and of microseconds (the delay's unit) wrap at these.
const NS_CIRCLE: u64 = 1 << 32;
const US_CIRCLE: u64 = 1000 << 32;

/// A window filled at the start of time, then an idle gap, then one call: its plan, polled at
/// its start and at its due time, is the model's and the same as with no gap at all.
fn first_plan_after(gap: Duration) -> Result<[NextCopy; 2], String> {
    let config = HedgeConfig {
        window: 20,
        ..HedgeConfig::DEFAULT
    };
    let bucket = TokenBucketConfig::AWS_SDK_STANDARD;
    let budget = TokenBucket::new(bucket).unwrap();
    let hedge = Hedge::new(config, &budget).unwrap();
    let mut model = HedgeModel::new(config, TokenBucketModel::new(&bucket));
    let idem = CallOptions::default().idempotent(true);
    let mut t = Instant::from_nanos(12_345);
    for i in 0..20u64 {
        let latency = Duration::from_millis(1 + i % 7);
        let real = hedge.begin(t, idem);
        let m = model.begin(t, idem);
        t = t + latency;
        real.finish(&hedge, t, 1, &Verdict::Success, &());
        model.finish(m, t, 1, &Verdict::Success);
    }
    let start = t + gap;
    let mut real = hedge.begin(start, idem);
    let mut m = model.begin(start, idem);
    let mut plan = [NextCopy::Never; 2];
    let due = hedge.delay().map_or(start, |d| start + d);
    for (slot, now) in plan.iter_mut().zip([start, due]) {
        let r = real.poll(&hedge, now, &());
        let mm = model.poll(&mut m, now);
        if r != mm {
            return Err(format!("gap {gap:?} at {now:?}: real {r:?}, model {mm:?}"));
        }
        // Relative to the call's start, so plans after different gaps compare.
        *slot = match r {
            NextCopy::Wait { until } => NextCopy::Wait {
                until: Instant::from_nanos(until.as_nanos() - start.as_nanos()),
            },
            other => other,
        };
    }
    Ok(plan)
}

#[test]
fn no_idle_gap_changes_the_first_plan() {
    let base = first_plan_after(Duration::ZERO).unwrap();
    assert!(matches!(base[0], NextCopy::Wait { .. }), "{base:?}");
    assert_eq!(base[1], NextCopy::Send { copy: 2 });
    for circle in [NS_CIRCLE, US_CIRCLE] {
        // 0 to 3 circles in ~4000 steps, offset so the steps hit every residue class.
        for gap in sweep(
            Duration::from_nanos(3 * circle),
            Duration::from_nanos(circle / 1361),
        ) {
            for nudge in [0u64, 1, 999] {
                let gap = gap + Duration::from_nanos(nudge);
                assert_eq!(first_plan_after(gap).unwrap(), base, "gap {gap:?}");
            }
        }
    }
    for years in [1u64, 10, 100, 500] {
        let gap = Duration::from_secs(years * 31_557_600);
        assert_eq!(first_plan_after(gap).unwrap(), base, "{years} years");
    }
}
