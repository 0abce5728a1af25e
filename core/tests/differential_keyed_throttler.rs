//! The keyed throttler against its plain model (`resilix_reference::keyed_throttler`): tables
//! of 1, 4 and 8 entries shared by up to 24 keys (so homes collide, idle entries are reused
//! and the overflow throttler serves), on random timelines whose gaps run from 1 ns to ten
//! years, over windows on every tick scale (a few nanoseconds a bucket to days): every
//! decision (on the same draws), which throttler served it, `evict_idle`, `len`, each key's
//! counts and the overflow's must be identical. Plus the sweep of the first placement after
//! an idle gap over three circles of the window's period word.
#![cfg(not(loom))]

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::throttler::{KeyedThrottler, LocalRejections, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;
use resilix_reference::keyed::{Home, Table};
use resilix_reference::keyed_throttler::KeyedThrottlerTwin;
use resilix_reference::throttler::ThrottlerModel;
use resilix_reference::timeline::{Gaps, Timeline, window_idle_gaps};
use resilix_reference::twin::{Mix, drive};

use differential::{SHEDDING, window};

fn run<const N: usize, const B: usize>(
    config: &ThrottlerConfig,
    keys: u64,
    seed: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(), String> {
    let real = KeyedThrottler::<N, B>::with_buckets(*config).map_err(|e| e.to_string())?;
    let mut twin = KeyedThrottlerTwin::new(&real, config, keys, 16);
    let mut rng = SeededRandom::new(seed);
    let mut timeline = Timeline::new(Instant::from_nanos(seed >> 4), gaps);
    drive(&mut twin, &mut timeline, &mut rng, 600, mix, 8)
        .map(|_| ())
        .map_err(|m| m.to_string())?;
    assert!(real.len() <= N);
    Ok(())
}

fn run_all(
    config: &ThrottlerConfig,
    keys: u64,
    seed: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<(), String> {
    run::<1, 4>(config, keys, seed, gaps, mix)?;
    run::<4, 20>(config, keys, seed, gaps, mix)?;
    run::<8, 7>(config, keys, seed, gaps, mix)
}

fn config(window: Duration, k: f64, cap: f64, min: u32, ignore: bool) -> ThrottlerConfig {
    ThrottlerConfig {
        accepts_multiplier: k,
        max_rejection_rate: cap,
        window,
        min_requests: min,
        local_rejections: if ignore {
            LocalRejections::Ignore
        } else {
            LocalRejections::CountAsRequests
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Gaps from 1 ns to ten years: every circle of every word crossed, idle or busy.
    #[test]
    fn identical_to_the_model_on_long_timelines(
        window in window(),
        k in prop_oneof![Just(1.0), Just(2.0), 1.0f64..4.0],
        cap in prop_oneof![Just(0.9), 0.0f64..0.999],
        min in prop_oneof![Just(0u32), Just(10), 0u32..20],
        ignore in any::<bool>(),
        keys in 1u64..=24,
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let c = config(window, k, cap, min, ignore);
        let mix = if failing { SHEDDING } else { Mix::MOSTLY_HEALTHY };
        run_all(&c, keys, seed, Gaps::LONG, mix).map_err(TestCaseError::fail)?;
    }

    /// Gaps up to a fraction of the window, so keys fill their windows, shed, and go idle on
    /// the throttlers' own time scale.
    #[test]
    fn identical_to_the_model_on_busy_timelines(
        window in window(),
        min in 0u32..12,
        keys in 1u64..=24,
        seed in any::<u64>(),
    ) {
        let c = config(window, 1.5, 0.9, min, false);
        let gaps = Gaps::between(Duration::from_nanos(1), (window / 8).max(Duration::from_nanos(2)));
        run_all(&c, keys, seed, gaps, SHEDDING).map_err(TestCaseError::fail)?;
    }
}

/// A one-entry table: key A fails once at `t0`, then key B arrives after `gap`. Answers
/// whether B took A's entry, real and model alike (asserted).
fn placed_after<const B: usize>(c: &ThrottlerConfig, t0: Instant, gap: Duration) -> bool {
    let real = KeyedThrottler::<1, B>::with_buckets(*c).unwrap();
    let mut model = Table::new(ThrottlerModel::new(c, B), 1);
    let mut rng = SeededRandom::new(1);
    let p = real.admit(1, &mut Env::new(t0, &mut rng)).unwrap();
    p.settle(&Verdict::Transient, &mut Env::new(t0, &mut rng));
    let home = model.place(1, t0);
    model.model(home).settle(t0, &Verdict::Transient);
    let later = t0.saturating_add(gap);
    let p = real.admit(2, &mut Env::new(later, &mut rng)).unwrap();
    let home = model.place(2, later);
    assert_eq!(p.is_overflow(), home == Home::Overflow, "gap {gap:?}");
    assert_eq!(real.len(), model.len(), "gap {gap:?}");
    !p.is_overflow()
}

fn sweep<const B: usize>(window: Duration, coarse_points: u32) {
    // No low-traffic floor would shed B's first call in the overflow; min_requests keeps
    // every first call admitted.
    let c = config(window, 2.0, 0.9, 10, false);
    let t0 = Instant::from_nanos(12_345_678_901);
    let bucket = Duration::from_nanos(window.as_nanos().div_ceil(B as u128) as u64);
    let mut points = 0;
    for gap in window_idle_gaps(window, B, t0, coarse_points) {
        let placed = placed_after::<B>(&c, t0, gap);
        if gap > window + bucket {
            assert!(
                placed,
                "gap {gap:?}: A's failure is out of its {window:?} window"
            );
        } else if gap < window * 8 / 10 {
            assert!(!placed, "gap {gap:?}: A's window still holds its failure");
        }
        points += 1;
    }
    assert!(points >= 1000, "{points}");
}

/// 8 ns buckets: a circle of 17.2 s, three of them.
#[test]
fn sweep_the_first_placement_after_an_idle_gap_nanosecond_buckets() {
    sweep::<20>(Duration::from_nanos(160), 5_000);
}

/// 1 ms buckets (a 20 ms window): a circle of 24.9 days.
#[test]
fn sweep_the_first_placement_after_an_idle_gap_millisecond_buckets() {
    sweep::<20>(Duration::from_millis(20), 5_000);
}

/// The default two minutes in 20 buckets: a circle of 408 years, cut short by the timeline.
#[test]
fn sweep_the_first_placement_after_an_idle_gap_default_window() {
    sweep::<20>(ThrottlerConfig::DEFAULT.window, 2_000);
}
