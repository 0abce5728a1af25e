//! The keyed breaker against its plain model (`resilix_reference::keyed_breaker`): tables of
//! 1, 4 and 8 entries shared by up to 24 keys (so homes collide, idle entries are reused and
//! the overflow breaker serves), on random timelines whose gaps run from 1 ns to ten years,
//! over open waits and windows on every tick scale: every decision, which breaker served it,
//! `evict_idle`, `len`, each key's state and the overflow's must be identical. Plus the sweep
//! of the first placement after an idle gap over three circles of the window's word.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::Verdict;
use resilix::breaker::{CallRing, Config, KeyedBreaker, OutcomeWindow, TimeBuckets};
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix_reference::breaker::Model;
use resilix_reference::keyed_breaker::{Home, KeyedBreakerTwin, KeyedModel};
use resilix_reference::timeline::{Gaps, Timeline, window_idle_gaps};
use resilix_reference::twin::{Mix, drive};

/// Failures often enough that entries open, stay live and force the overflow to serve.
const STORMY: Mix = Mix {
    success: 140,
    transient: 45,
    timeout: 20,
    overload: 20,
    answered: 15,
};

fn log_duration(max_bits: u32) -> impl Strategy<Value = Duration> {
    (0..max_bits, any::<u64>()).prop_map(|(bits, x)| {
        let lo = 1u64 << bits;
        Duration::from_nanos(lo + x % lo)
    })
}

fn config() -> impl Strategy<Value = Config> {
    (
        prop::option::of(0u8..100),
        1u32..=6,
        prop::option::of(1u32..=4),
        log_duration(45),
        0u8..100,
        prop::option::of(log_duration(46)),
        1u8..=3,
    )
        .prop_filter_map(
            "valid configurations only",
            |(rate, minimum_calls, consecutive, wait, jitter, half, probes)| {
                let c = Config {
                    failure_rate_above_percent: rate,
                    minimum_calls,
                    consecutive_failures: consecutive,
                    open_wait: wait,
                    open_jitter_percent: jitter,
                    half_open_probes: probes,
                    probes_to_close: 1,
                    max_half_open_wait: half,
                    ..Config::DEFAULT
                };
                c.validate().ok().map(|()| c)
            },
        )
}

fn run<const N: usize, W: OutcomeWindow>(
    real: &KeyedBreaker<N, W>,
    fresh: Model,
    keys: u64,
    seed: u64,
    gaps: Gaps,
) -> Result<(), String> {
    let mut twin = KeyedBreakerTwin::new(real, fresh, keys, 16);
    let mut timeline = Timeline::new(Instant::from_secs(1), gaps);
    let mut rng = SeededRandom::new(seed);
    drive(&mut twin, &mut timeline, &mut rng, 400, STORMY, 6)
        .map(|_| ())
        .map_err(|m| m.to_string())
}

fn run_all(
    config: Config,
    window: Duration,
    keys: u64,
    seed: u64,
    gaps: Gaps,
) -> Result<(), String> {
    if window >= Duration::from_nanos(80) {
        let model = Model::time_based(config, window, 10);
        run(
            &KeyedBreaker::<4, TimeBuckets<10>>::time_based(config, window).unwrap(),
            model.clone(),
            keys,
            seed,
            gaps,
        )?;
        run(
            &KeyedBreaker::<1, TimeBuckets<10>>::time_based(config, window).unwrap(),
            model,
            keys,
            seed,
            gaps,
        )?;
    }
    let calls = config.minimum_calls.max(8);
    run(
        &KeyedBreaker::<8, CallRing<1>>::count_based(config, calls).unwrap(),
        Model::count_based(config, calls),
        keys,
        seed,
        gaps,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// Gaps from 1 ns to ten years: every circle of every word crossed, idle or busy.
    #[test]
    fn identical_to_the_model_on_long_timelines(
        config in config(),
        window in log_duration(50),
        keys in 1u64..=24,
        seed in any::<u64>(),
    ) {
        run_all(config, window, keys, seed, Gaps::LONG).map_err(TestCaseError::fail)?;
    }

    /// Gaps up to a fraction of the window, so keys trip, wait, probe, close and go idle on
    /// the breakers' own time scale.
    #[test]
    fn identical_to_the_model_on_busy_timelines(
        config in config(),
        window in log_duration(50),
        keys in 1u64..=24,
        seed in any::<u64>(),
    ) {
        let longest = config.longest_open_wait().max(window);
        let gaps = Gaps::between(Duration::from_nanos(1), (longest / 8).max(Duration::from_nanos(2)));
        run_all(config, window, keys, seed, gaps).map_err(TestCaseError::fail)?;
    }
}

/// A one-entry table: key A fails once at `t0`, then key B arrives after `gap`. Answers
/// whether B took A's entry, real and model alike (asserted).
fn placed_after(window: Duration, t0: Instant, gap: Duration) -> bool {
    let config = Config {
        minimum_calls: 50,
        ..Config::DEFAULT
    };
    let real = KeyedBreaker::<1>::time_based(config, window).unwrap();
    let mut model = KeyedModel::new(Model::time_based(config, window, 10), 1);
    let (mut r1, mut r2) = (SeededRandom::new(1), SeededRandom::new(1));
    let p = real.admit(1, &mut Env::new(t0, &mut r1)).unwrap();
    p.settle(&Verdict::Transient, &mut Env::new(t0, &mut r1));
    let (home, ticket) = model.admit(1, t0, &mut r2).unwrap();
    model.end(home, ticket, t0, Some(Verdict::Transient), &mut r2);
    let later = t0 + gap;
    let p = real.admit(2, &mut Env::new(later, &mut r1)).unwrap();
    let (home, _) = model.admit(2, later, &mut r2).unwrap();
    assert_eq!(p.is_overflow(), home == Home::Overflow, "gap {gap:?}");
    assert_eq!(real.len(), model.len(), "gap {gap:?}");
    !p.is_overflow()
}

fn sweep_window(window: Duration, coarse_points: u32) {
    let t0 = Instant::from_secs(1);
    let mut points = 0;
    for gap in window_idle_gaps(window, 10, t0, coarse_points) {
        let placed = placed_after(window, t0, gap);
        if gap >= window {
            assert!(
                placed,
                "gap {gap:?}: A's failure is out of its {window:?} window"
            );
        } else if gap < window * 8 / 10 {
            assert!(!placed, "gap {gap:?}: A is still counting a failure");
        }
        points += 1;
    }
    assert!(points >= 1000, "{points}");
}

#[test]
fn sweep_the_first_placement_after_an_idle_gap_default_window() {
    // One-second buckets: a 68-year circle, cut short by the end of the timeline.
    sweep_window(resilix::breaker::DEFAULT_WINDOW, 2000);
}

#[test]
fn sweep_the_first_placement_after_an_idle_gap_millisecond_window() {
    // 100 µs buckets: a 2.5-day circle, three of them, and ± two windows round each era.
    sweep_window(Duration::from_millis(1), 2000);
}
