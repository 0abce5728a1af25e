//! The breaker against its plain wide-time model (`resilix_reference::breaker`): on random
//! timelines whose gaps run from 1 ns to ten years, over configurations covering every tick
//! scale the config can select (open waits from nanoseconds to hours, growth caps up to days,
//! half-open bounds or none, count and time windows), every decision, retry-at and state must
//! be identical, also across random reconfigurations between the steps (accepted or refused
//! alike, by the same rule). Plus the deterministic sweep of the first decision after an idle
//! gap, from zero to three circles of each timer's tick word, with and without a wait lowered
//! while the circuit is open.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::Verdict;
use resilix::breaker::{
    Breaker, CallRing, CircuitState, Config, ConfigError, OpenBackoff, OutcomeWindow, SlowCalls,
    TimeBuckets,
};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix_reference::breaker::{BreakerTwin, Model};
use resilix_reference::timeline::{Gaps, Timeline, sweep};
use resilix_reference::twin::{Decision, Mix, Twin, drive};

/// Calls end badly often enough that the circuit opens, re-opens and closes many times.
const STORMY: Mix = Mix {
    success: 110,
    transient: 60,
    timeout: 30,
    overload: 25,
    answered: 15,
};

/// A duration drawn log-uniformly from 1 ns to 2^`max_bits` ns.
fn log_duration(max_bits: u32) -> impl Strategy<Value = Duration> {
    (0..max_bits, any::<u64>()).prop_map(|(bits, x)| {
        let lo = 1u64 << bits;
        Duration::from_nanos(lo + x % lo)
    })
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    Time10(Duration),
    Time3(Duration),
    Time1(Duration),
    Calls(u32),
}

fn config() -> impl Strategy<Value = (Config, Shape)> {
    let thresholds = (
        prop::option::of(0u8..100),
        1u32..=8,
        prop::option::of(1u32..=5),
        prop::option::of((log_duration(40), 0u8..100)),
    );
    let waits = (
        log_duration(45), // open wait: 1 ns .. 9.8 h
        prop::option::of((100u32..=400, 1u64..=2_000)),
        0u8..100,
        prop::option::of(log_duration(46)), // max half-open wait: 1 ns .. 19.5 h
    );
    let probes = (1u8..=15, any::<u8>());
    let shape = prop_oneof![
        log_duration(50).prop_map(Shape::Time10),
        log_duration(50).prop_map(Shape::Time3),
        log_duration(50).prop_map(Shape::Time1),
        (1u32..=CallRing::<7>::CAPACITY).prop_map(Shape::Calls),
    ];
    (thresholds, waits, probes, shape).prop_filter_map(
        "valid configurations only",
        |(
            (rate, minimum_calls, consecutive, slow),
            (wait, backoff, jitter, half),
            (n, k),
            shape,
        )| {
            let config = Config {
                failure_rate_above_percent: rate,
                minimum_calls,
                consecutive_failures: consecutive,
                slow_calls: slow.map(|(slower_than, above_percent)| SlowCalls {
                    slower_than,
                    above_percent,
                }),
                open_wait: wait,
                // Caps from the wait itself up to 2,000 times it: days for the longest waits.
                open_backoff: backoff.map(|(multiplier_percent, times)| OpenBackoff {
                    multiplier_percent,
                    max_wait: wait.saturating_mul(times as u32),
                }),
                open_jitter_percent: jitter,
                half_open_probes: n,
                probes_to_close: 1 + k % n,
                max_half_open_wait: half,
            };
            let shape = match shape {
                Shape::Calls(c) => Shape::Calls(c.max(minimum_calls.min(112))),
                s => s,
            };
            if let Shape::Calls(c) = shape
                && c < minimum_calls
            {
                return None;
            }
            config.validate().ok().map(|()| (config, shape))
        },
    )
}

/// What a reconfiguration changes, relative to the configuration built with: the waits as
/// sixteenths of the old ones, so that some fit the timers' tick scales and some do not.
#[derive(Clone, Copy, Debug)]
struct Tweak {
    rate: Option<u8>,
    minimum_calls: u32,
    consecutive: Option<u32>,
    slow: Option<(Duration, u8)>,
    wait_16ths: u32,
    backoff: Option<(u32, u32)>,
    jitter: u8,
    probes: (u8, u8),
    half_16ths: Option<u32>,
}

fn tweak() -> impl Strategy<Value = Tweak> {
    (
        (
            prop::option::of(0u8..100),
            1u32..=8,
            prop::option::of(1u32..=5),
            prop::option::of((log_duration(40), 0u8..100)),
        ),
        (
            1u32..=24,
            prop::option::of((100u32..=400, 1u32..=40)),
            0u8..100,
            (1u8..=15, any::<u8>()),
            prop::option::weighted(0.9, 1u32..=24),
        ),
    )
        .prop_map(
            |(
                (rate, minimum_calls, consecutive, slow),
                (wait_16ths, backoff, jitter, probes, half_16ths),
            )| Tweak {
                rate,
                minimum_calls,
                consecutive,
                slow,
                wait_16ths,
                backoff,
                jitter,
                probes,
                half_16ths,
            },
        )
}

fn sixteenths(d: Duration, n: u32) -> Duration {
    (d.saturating_mul(n) / 16).max(Duration::from_nanos(1))
}

/// `base` changed by `t` (not always valid: an invalid one must be refused alike).
fn apply(base: &Config, t: Tweak) -> Config {
    let open_wait = sixteenths(base.open_wait, t.wait_16ths);
    let (n, k) = t.probes;
    Config {
        failure_rate_above_percent: t.rate,
        minimum_calls: t.minimum_calls,
        consecutive_failures: t.consecutive,
        slow_calls: t.slow.map(|(slower_than, above_percent)| SlowCalls {
            slower_than,
            above_percent,
        }),
        open_wait,
        open_backoff: t.backoff.map(|(multiplier_percent, cap)| OpenBackoff {
            multiplier_percent,
            max_wait: sixteenths(base.longest_open_wait(), cap).max(open_wait),
        }),
        open_jitter_percent: t.jitter,
        half_open_probes: n,
        probes_to_close: 1 + k % n,
        // Sometimes turned on or off: refused.
        max_half_open_wait: match (base.max_half_open_wait, t.half_16ths) {
            (Some(h), Some(f)) => Some(sixteenths(h, f)),
            (None, Some(f)) => Some(sixteenths(base.open_wait, f)),
            (_, None) => None,
        },
    }
}

fn run<W: OutcomeWindow>(
    real: &Breaker<W>,
    model: Model,
    seed: u64,
    gaps: Gaps,
    steps: u64,
    reconfigurations: &[Config],
) -> Result<(), String> {
    let mut twin = BreakerTwin::new(real, model);
    let mut timeline = Timeline::new(Instant::from_secs(1), gaps);
    let mut rng = SeededRandom::new(seed);
    // The steps in equal stretches, a reconfiguration between each two.
    let stretch = steps / (reconfigurations.len() as u64 + 1);
    for config in reconfigurations {
        drive(&mut twin, &mut timeline, &mut rng, stretch, STORMY, 6).map_err(|m| m.to_string())?;
        let _accepted_or_refused_alike = twin.reconfigure(*config, timeline.now())?;
        twin.check(timeline.now())?;
    }
    drive(&mut twin, &mut timeline, &mut rng, stretch, STORMY, 6)
        .map(|_| ())
        .map_err(|m| m.to_string())
}

fn run_shape(
    config: Config,
    shape: Shape,
    seed: u64,
    gaps: Gaps,
    steps: u64,
    reconfigurations: &[Config],
) -> Result<(), String> {
    // A time window shorter than 8 ns per bucket is refused (its own error, checked here).
    let too_short = |l: Duration, b: u32| l < Duration::from_nanos(8) * b;
    match shape {
        Shape::Time10(l) if too_short(l, 10) => {
            assert_eq!(
                Breaker::<TimeBuckets<10>>::time_based(config, l).err(),
                Some(ConfigError::WindowShorterThanBuckets)
            );
            Ok(())
        }
        Shape::Time3(l) if too_short(l, 3) => {
            assert_eq!(
                Breaker::<TimeBuckets<3>>::time_based(config, l).err(),
                Some(ConfigError::WindowShorterThanBuckets)
            );
            Ok(())
        }
        Shape::Time1(l) if too_short(l, 1) => {
            assert_eq!(
                Breaker::<TimeBuckets<1>>::time_based(config, l).err(),
                Some(ConfigError::WindowShorterThanBuckets)
            );
            Ok(())
        }
        Shape::Time10(l) => run(
            &Breaker::<TimeBuckets<10>>::time_based(config, l).unwrap(),
            Model::time_based(config, l, 10),
            seed,
            gaps,
            steps,
            reconfigurations,
        ),
        Shape::Time3(l) => run(
            &Breaker::<TimeBuckets<3>>::time_based(config, l).unwrap(),
            Model::time_based(config, l, 3),
            seed,
            gaps,
            steps,
            reconfigurations,
        ),
        Shape::Time1(l) => run(
            &Breaker::<TimeBuckets<1>>::time_based(config, l).unwrap(),
            Model::time_based(config, l, 1),
            seed,
            gaps,
            steps,
            reconfigurations,
        ),
        Shape::Calls(c) => run(
            &Breaker::<CallRing<7>>::count_based(config, c).unwrap(),
            Model::count_based(config, c),
            seed,
            gaps,
            steps,
            reconfigurations,
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// Gaps from 1 ns to ten years: every circle of every word crossed, idle or busy.
    #[test]
    fn identical_to_the_model_on_long_timelines((config, shape) in config(), seed in any::<u64>()) {
        run_shape(config, shape, seed, Gaps::LONG, 400, &[]).map_err(TestCaseError::fail)?;
    }

    /// The same, with one to four reconfigurations between the steps: thresholds, waits
    /// (shorter and longer than the timers were built for), probe counts and half-open bounds
    /// changed at random, each accepted or refused alike, and every decision after alike.
    #[test]
    fn identical_to_the_model_across_reconfigurations(
        (config, shape) in config(),
        tweaks in prop::collection::vec(tweak(), 1..=4),
        seed in any::<u64>(),
    ) {
        let reconfigurations: Vec<Config> = tweaks.iter().map(|t| apply(&config, *t)).collect();
        run_shape(config, shape, seed, Gaps::LONG, 400, &reconfigurations)
            .map_err(TestCaseError::fail)?;
    }

    /// Reconfigurations on the breaker's own time scale, where they land while it is open
    /// or half-open with probes out.
    #[test]
    fn identical_to_the_model_across_reconfigurations_on_busy_timelines(
        (config, shape) in config(),
        tweaks in prop::collection::vec(tweak(), 1..=4),
        seed in any::<u64>(),
    ) {
        let longest = config
            .longest_open_wait()
            .max(config.max_half_open_wait.unwrap_or(Duration::ZERO));
        let gaps = Gaps::between(Duration::from_nanos(1), (longest / 4).max(Duration::from_nanos(2)));
        let reconfigurations: Vec<Config> = tweaks.iter().map(|t| apply(&config, *t)).collect();
        run_shape(config, shape, seed, gaps, 600, &reconfigurations)
            .map_err(TestCaseError::fail)?;
    }

    /// Gaps up to a tenth of the longest timer, so the breaker also trips, waits, probes and
    /// closes on its own time scale, not only across idle years.
    #[test]
    fn identical_to_the_model_on_busy_timelines((config, shape) in config(), seed in any::<u64>()) {
        let longest = config
            .longest_open_wait()
            .max(config.max_half_open_wait.unwrap_or(Duration::ZERO));
        let gaps = Gaps::between(Duration::from_nanos(1), (longest / 4).max(Duration::from_nanos(2)));
        run_shape(config, shape, seed, gaps, 600, &[]).map_err(TestCaseError::fail)?;
    }
}

/// The circle of a 32-bit tick word on the scale a timer of longest run `longest` selects.
fn circle(longest: Duration) -> Duration {
    let n = longest.as_nanos().min(u128::from(u64::MAX)) as u64;
    let mut shift = 2;
    while shift < 63 && (n >> shift) >= 1 << 31 {
        shift += 1;
    }
    Duration::from_nanos(1 << (32 + shift))
}

/// Opens a fresh twin at `t0` (with `min` failures), optionally takes a probe that never ends,
/// then answers the first decision after `gap`, real and model alike.
fn first_after(config: Config, t0: Instant, gap: Duration, hang_probe: bool) -> Decision {
    let real = Breaker::new(config).unwrap();
    let model = Model::time_based(config, resilix::breaker::DEFAULT_WINDOW, 10);
    let mut twin = BreakerTwin::new(&real, model);
    let mut rng = SeededRandom::new(gap.as_nanos() as u64);
    for _ in 0..config.minimum_calls {
        assert_eq!(twin.arrive(t0, &mut rng), Ok(Decision::Admitted));
        twin.end(t0, 0, Some(Verdict::Transient), &mut rng).unwrap();
    }
    assert_eq!(real.state(), CircuitState::Open);
    let mut start = t0;
    if hang_probe {
        let Ok(Decision::Refused {
            retry_at: Some(end),
            ..
        }) = twin.arrive(t0, &mut rng)
        else {
            panic!("an open breaker refuses with its end")
        };
        assert_eq!(
            twin.arrive(end, &mut rng),
            Ok(Decision::Admitted),
            "the probe"
        );
        assert_eq!(real.state(), CircuitState::HalfOpen);
        start = end; // the probe is never ended
    }
    let decision = twin
        .arrive(start + gap, &mut rng)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    twin.check(start + gap).unwrap();
    decision
}

/// Sweeps the first decision after an idle gap of `0..=3` circles of the open-wait word, at a
/// tenth of the wait: where the wait is over the call is a probe, before it a refusal whose
/// retry-at is the wait's end; never a refusal after the end (the old alias).
fn sweep_open(config: Config) {
    let wait = config.open_wait;
    let t0 = Instant::from_secs(1);
    let mut points = 0;
    for gap in sweep(3 * circle(config.longest_open_wait()), wait / 10) {
        let d = first_after(config, t0, gap, false);
        if gap >= wait {
            assert_eq!(d, Decision::Admitted, "gap {gap:?} after a {wait:?} wait");
        } else {
            assert!(!d.is_admitted(), "gap {gap:?} before the wait ended");
        }
        points += 1;
    }
    assert!(points >= 30, "{points}");
}

#[test]
fn sweep_the_default_five_second_wait_over_three_circles() {
    // 4 ns ticks: the word's circle is 17.18 s; the sweep is 51.5 s at 0.5 s.
    sweep_open(Config {
        open_jitter_percent: 0,
        ..Config::DEFAULT
    });
    // With jitter the end moves, the model draws alike, and the decisions still agree.
    let jittered = Config::DEFAULT;
    for gap in sweep(3 * circle(jittered.open_wait), jittered.open_wait / 10) {
        let d = first_after(jittered, Instant::from_secs(1), gap, false);
        if gap >= jittered.open_wait {
            assert_eq!(d, Decision::Admitted, "{gap:?}");
        }
    }
}

#[test]
fn sweep_a_wait_growing_to_five_minutes_over_three_circles() {
    // A 300 s cap selects 256 ns ticks: the circle is 1,099.5 s, the sweep 55 min at 0.5 s
    // (6,597 first calls). On the base the call 855 s after opening was refused 249.5 s more.
    sweep_open(Config {
        open_jitter_percent: 0,
        open_backoff: Some(OpenBackoff {
            multiplier_percent: 200,
            max_wait: Duration::from_secs(300),
        }),
        ..Config::DEFAULT
    });
}

#[test]
fn sweep_a_minute_growing_to_four_hours_over_three_circles() {
    // 8,192 ns ticks: a 9.77 h circle, swept over 29.3 h at 6 s (17,592 first calls).
    sweep_open(Config {
        open_wait: Duration::from_secs(60),
        open_jitter_percent: 0,
        open_backoff: Some(OpenBackoff {
            multiplier_percent: 150,
            max_wait: Duration::from_secs(4 * 3600),
        }),
        ..Config::DEFAULT
    });
}

#[test]
fn sweep_the_hung_probes_half_open_period_over_three_circles() {
    // The default 60 s half-open bound selects 32 ns ticks: a 137.4 s circle, swept at 6 s.
    // Before the bound the call is refused with no retry-at (the probe may answer at any
    // moment); from the bound on the circuit re-opens and the call is refused until the new
    // wait ends.
    for config in [
        Config {
            open_jitter_percent: 0,
            ..Config::DEFAULT
        },
        Config {
            open_jitter_percent: 0,
            max_half_open_wait: Some(Duration::from_secs(3 * 3600)),
            ..Config::DEFAULT
        },
    ] {
        let bound = config.max_half_open_wait.unwrap();
        let mut points = 0;
        for gap in sweep(3 * circle(bound), bound / 10) {
            let d = first_after(config, Instant::from_secs(1), gap, true);
            let Decision::Refused { retry_at, .. } = d else {
                panic!("gap {gap:?}: {d:?}")
            };
            let probe_at = Instant::from_secs(6);
            // The bound is measured from the start of the probe's tick (8,192 ns for 3 h).
            let tick = Duration::from_nanos(8_192);
            if gap >= bound {
                assert_eq!(
                    retry_at,
                    Some(probe_at + gap + config.open_wait),
                    "re-opened at {gap:?}"
                );
            } else if bound - gap >= tick {
                assert_eq!(retry_at, None, "the probe is out at {gap:?}");
            }
            points += 1;
        }
        assert!(points >= 30, "{points}");
    }
}

/// Opens a fresh twin at 1 s (5 s wait, no jitter: the end is 6 s), lowers the wait to
/// `lowered` at `at`, then answers the first decision `gap` later, real and model alike.
fn first_after_lowering(lowered: Duration, at: Instant, gap: Duration) -> Decision {
    let config = Config {
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    let real = Breaker::new(config).unwrap();
    let model = Model::time_based(config, resilix::breaker::DEFAULT_WINDOW, 10);
    let mut twin = BreakerTwin::new(&real, model);
    let mut rng = SeededRandom::new(gap.as_nanos() as u64);
    let t0 = Instant::from_secs(1);
    for _ in 0..config.minimum_calls {
        assert_eq!(twin.arrive(t0, &mut rng), Ok(Decision::Admitted));
        twin.end(t0, 0, Some(Verdict::Transient), &mut rng).unwrap();
    }
    let lower = Config {
        open_wait: lowered,
        ..config
    };
    assert_eq!(twin.reconfigure(lower, at), Ok(Ok(())));
    let decision = twin
        .arrive(at + gap, &mut rng)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    twin.check(at + gap).unwrap();
    decision
}

#[test]
fn sweep_an_open_wait_lowered_in_flight_over_three_circles() {
    // At 3 s, 3 s of the wait remain. Lowered to 1 s or 4 s, the wait in progress stands:
    // refused until 6 s, then a probe, after any idle gap.
    let at = Instant::from_secs(3);
    let end = Instant::from_secs(6);
    let mut points = 0;
    for gap in sweep(
        3 * circle(Config::DEFAULT.open_wait),
        Duration::from_millis(250),
    ) {
        for lowered in [Duration::from_secs(1), Duration::from_secs(4)] {
            match first_after_lowering(lowered, at, gap) {
                Decision::Admitted => assert!(at + gap >= end, "gap {gap:?}: admitted early"),
                Decision::Refused { retry_at, .. } => {
                    assert!(at + gap < end, "gap {gap:?}: refused after the end");
                    assert_eq!(retry_at, Some(end));
                }
            }
        }
        points += 1;
    }
    assert!(points >= 200, "{points}");
}
