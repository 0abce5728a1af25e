//! The throttler's `reconfigure` against its reference model: on random long timelines (gaps
//! 1 ns to ten years, `Gaps::LONG`) over windows from the shortest a bucket count allows to
//! days and every bucket count the other differential test uses, one arrival in sixteen first
//! reconfigures both to a config drawn from a pool. The pool mixes configs that change only K
//! and the cap (both must take them, and every later probability, decision and count must
//! agree) with ones that change the window, `local_rejections` or `min_requests` (both must
//! refuse them, naming the same field). And the first decision after an idle gap of 0 to 3
//! circles of the period word, when K and the cap changed just before the gap.

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::random::{Random, SeededRandom};
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;
use resilix_reference::throttler::ThrottlerTwin;
use resilix_reference::timeline::{Gaps, Timeline, window_idle_gaps};
use resilix_reference::twin::{Mix, Twin};

use differential::{SHEDDING, window};

fn k_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(1.0),
        Just(2.0),
        1.0f64..4.0,
        Just(5_000.0),
        Just(f64::INFINITY)
    ]
}

fn cap_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(0.9), 0.0f64..0.999]
}

/// What a pool entry changes besides K and the cap.
#[derive(Clone, Copy, Debug)]
enum Also {
    Nothing,
    Window,
    LocalRejections,
    MinRequests,
}

fn pool_strategy() -> impl Strategy<Value = Vec<(f64, f64, Also)>> {
    let also = prop_oneof![
        6 => Just(Also::Nothing),
        1 => Just(Also::Window),
        1 => Just(Also::LocalRejections),
        1 => Just(Also::MinRequests),
    ];
    prop::collection::vec((k_strategy(), cap_strategy(), also), 1..6)
}

fn entry(base: &ThrottlerConfig, (k, cap, also): (f64, f64, Also)) -> ThrottlerConfig {
    let c = ThrottlerConfig {
        accepts_multiplier: k,
        max_rejection_rate: cap,
        ..*base
    };
    match also {
        Also::Nothing => c,
        // Twice as long: a bucket twice as long, whatever the rounding.
        Also::Window => ThrottlerConfig {
            window: base.window * 2,
            ..c
        },
        Also::LocalRejections => ThrottlerConfig {
            local_rejections: match base.local_rejections {
                LocalRejections::CountAsRequests => LocalRejections::Ignore,
                LocalRejections::Ignore => LocalRejections::CountAsRequests,
            },
            ..c
        },
        Also::MinRequests => ThrottlerConfig {
            min_requests: base.min_requests + 1,
            ..c
        },
    }
}

/// Runs the reconfiguring twin of a `Throttler<B>`; answers (accepted, refused) changes.
fn run<const B: usize>(
    config: ThrottlerConfig,
    pool: Vec<ThrottlerConfig>,
    seed: u64,
    mix: Mix,
) -> Result<(u64, u64), String> {
    let real = Throttler::<B>::with_buckets(config).map_err(|e| format!("refused: {e}"))?;
    let mut twin = ThrottlerTwin::new(&real, &config).with_reconfigurations(pool, 16);
    let mut rng = SeededRandom::new(seed);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    resilix_reference::drive(&mut twin, &mut timeline, &mut rng, 1_500, mix, 12)
        .map_err(|m| m.to_string())?;
    Ok((twin.reconfigured, twin.refused))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn reconfigurations_match_the_model_on_long_timelines(
        window in window(),
        k in k_strategy(),
        cap in cap_strategy(),
        min in prop_oneof![Just(0u32), Just(10), 0u32..40],
        ignore in any::<bool>(),
        pool in pool_strategy(),
        buckets in 0usize..5,
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let base = ThrottlerConfig {
            accepts_multiplier: k,
            max_rejection_rate: cap,
            window,
            min_requests: min,
            local_rejections: if ignore { LocalRejections::Ignore } else { LocalRejections::CountAsRequests },
        };
        let pool: Vec<_> = pool.into_iter().map(|e| entry(&base, e)).collect();
        let mix = if failing { SHEDDING } else { Mix::MOSTLY_HEALTHY };
        let r = match buckets {
            0 => run::<1>(base, pool, seed, mix),
            1 => run::<2>(base, pool, seed, mix),
            2 => run::<7>(base, pool, seed, mix),
            3 => run::<10>(base, pool, seed, mix),
            _ => run::<20>(base, pool, seed, mix),
        };
        let (accepted, refused) = r.map_err(TestCaseError::fail)?;
        prop_assert!(accepted + refused > 0, "no reconfiguration was tried");
    }
}

/// 30 failing calls at `t0`, K and the cap changed at `t0`, then the first call after `gap`:
/// the twin compares counts, probability and decision with the model's.
fn first_after_gap<const B: usize>(c: &ThrottlerConfig, t0: Instant, gap: Duration) {
    let real = Throttler::<B>::with_buckets(*c).unwrap();
    let mut twin = ThrottlerTwin::new(&real, c);
    let mut rng = SeededRandom::new(gap.as_nanos() as u64);
    for _ in 0..30 {
        if twin.arrive(t0, &mut rng).unwrap().is_admitted() {
            let last = twin.open() - 1;
            twin.end(t0, last, Some(Verdict::Transient), &mut rng)
                .unwrap();
        }
    }
    let changed = ThrottlerConfig {
        accepts_multiplier: 1.25,
        max_rejection_rate: 0.5,
        ..*c
    };
    twin.reconfigure(&changed, t0).unwrap();
    assert_eq!(twin.reconfigured, 1);
    let now = t0.saturating_add(gap);
    twin.check(now)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    twin.arrive(now, &mut rng)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    if gap.is_zero() {
        assert_eq!(real.rejection_probability(now).as_f64(), 0.5, "the new cap");
    }
}

fn sweep_config<const B: usize>(window: Duration, coarse_points: u32) {
    let c = ThrottlerConfig {
        window,
        ..ThrottlerConfig::DEFAULT
    };
    let t0 = Instant::from_nanos(12_345_678_901);
    for gap in window_idle_gaps(window, B, t0, coarse_points) {
        first_after_gap::<B>(&c, t0, gap);
    }
}

/// 8 ns buckets: a circle of the period word is 17.2 s.
#[test]
fn first_decision_after_a_change_and_an_idle_gap_eight_nanosecond_buckets() {
    sweep_config::<20>(Duration::from_nanos(160), 5_000);
}

/// The default: 6 s buckets over two minutes.
#[test]
fn first_decision_after_a_change_and_an_idle_gap_default_window() {
    sweep_config::<20>(ThrottlerConfig::DEFAULT.window, 2_000);
}
