//! The adaptive limiter against its plain wide-time model (`resilix_reference::limiter`):
//! random long timelines (gaps log-uniform from 1 ns to ten years) over configs on every tick
//! scale a config can select (4 ns to 2 µs ticks: windows of nanoseconds to an hour), and a
//! sweep of the first decision after an idle gap of 0 to 3 circles of the window's tick word.
//! Single-threaded, where the real limiter is exact: every decision, the limit (to 1/256 of a
//! call), the in-flight and waiting counts and the baseline must be identical at every step.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::limiter::{Aimd, Algorithm, Gradient2, Limiter, LimiterConfig, Vegas};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::verdict::Verdict;
use resilix_reference::limiter::LimiterTwin;
use resilix_reference::timeline::sweep;
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, Twin, drive};

/// A config from raw choices, valid by construction. `max_window_ns` is clamped to 1 ns..1 h;
/// `min_window` is `max_window >> min_down` (at least 1 ns).
fn config(algo: u8, knobs: [u8; 8], max_window_ns: u64, min_down: u32) -> LimiterConfig {
    let pick = |i: usize, xs: &[f32]| xs[knobs[i] as usize % xs.len()];
    let algorithm = match algo % 3 {
        0 => Algorithm::Gradient2(Gradient2 {
            smoothing: pick(0, &[0.2, 0.5, 1.0]),
            queue_size: u32::from(knobs[1] % 6),
            long_window: [1, 10, 600][knobs[2] as usize % 3],
            rtt_tolerance: pick(3, &[1.0, 1.5, 2.0]),
            drop_backoff: pick(4, &[0.5, 0.9, 1.0]),
            drop_threshold: pick(5, &[0.0, 0.02, 0.5]),
        }),
        1 => Algorithm::Vegas(Vegas {
            smoothing: pick(0, &[0.5, 1.0]),
        }),
        _ => Algorithm::Aimd(Aimd {
            backoff_ratio: pick(4, &[0.5, 0.9]),
            timeout: [
                Duration::from_millis(1),
                Duration::from_secs(1),
                Duration::from_secs(5),
            ][knobs[2] as usize % 3],
        }),
    };
    let max_window = Duration::from_nanos(max_window_ns.clamp(1, 3_600_000_000_000));
    let min_limit = 1 + u32::from(knobs[6] % 4);
    let initial_limit = min_limit + u32::from(knobs[7] % 6);
    LimiterConfig {
        algorithm,
        min_limit,
        initial_limit,
        max_limit: initial_limit + u32::from(knobs[1] % 11),
        min_window: (max_window / 2u32.pow(min_down.min(20))).max(Duration::from_nanos(1)),
        max_window,
        window_samples: 1 + u32::from(knobs[3] % 12),
        min_rtt: [
            Duration::ZERO,
            Duration::from_micros(1),
            Duration::from_micros(100),
            Duration::from_millis(10),
        ][knobs[5] as usize % 4],
        probe_multiplier: u32::from(knobs[0] % 5),
        queue_factor: pick(6, &[1.0, 1.5, 2.0, 4.0]),
        queue_rungs: 1 + u32::from(knobs[7] % 4),
    }
}

/// A mix with drops often enough to cut, or mostly healthy.
fn mix(drops: bool) -> Mix {
    if drops {
        Mix {
            success: 120,
            transient: 20,
            timeout: 50,
            overload: 40,
            answered: 10,
        }
    } else {
        Mix::MOSTLY_HEALTHY
    }
}

fn run(c: LimiterConfig, seed: u64, steps: u64, drops: bool, max_open: usize) {
    let real = Limiter::new(c).expect("valid by construction");
    let mut twin = LimiterTwin::new(&real, &c);
    let mut rng = SeededRandom::new(seed);
    let mut t = Timeline::new(Instant::ZERO, Gaps::LONG);
    if let Err(m) = drive(&mut twin, &mut t, &mut rng, steps, mix(drops), max_open) {
        panic!("{c:?}\nseed {seed}: {m}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn real_and_model_agree_on_long_timelines(
        algo in 0u8..3,
        knobs in any::<[u8; 8]>(),
        max_exp in 0u32..42,
        max_frac in any::<u64>(),
        min_down in 0u32..16,
        seed in any::<u64>(),
        drops in any::<bool>(),
        max_open in 1usize..24,
    ) {
        // Log-uniform window lengths from 1 ns to 1 h: every tick scale 4 ns .. 2 µs.
        let ns = (1u64 << max_exp) | (max_frac % (1u64 << max_exp));
        run(config(algo, knobs, ns, min_down), seed, 1_500, drops, max_open);
    }
}

/// Every tick scale the config can select (shift 2 for windows under 8.6 s, up to shift 11 for
/// the longest window, an hour), each algorithm, a few seeds: identical throughout.
#[test]
fn every_tick_scale_agrees() {
    for shift in 2u32..=11 {
        // The longest window on this scale, and a fifth of it.
        let top = ((1u64 << 31) << shift) - 1;
        for ns in [top.min(3_600_000_000_000), top / 5] {
            for algo in 0..3u8 {
                for seed in 0..3u64 {
                    let knobs = [seed as u8, 3, algo, 9, 1, 1, seed as u8 + 2, 5];
                    let c = config(algo, knobs, ns, 4);
                    let model = resilix_reference::limiter::Model::new(&c);
                    if ns == top.min(3_600_000_000_000) {
                        assert_eq!(model.tick_shift(), shift.max(2), "{ns} ns");
                    }
                    run(c, seed * 31 + u64::from(shift), 2_000, seed == 1, 12);
                }
            }
        }
    }
}

/// Sweeps the first decision after an idle gap. The first window closes at `t0` (20 calls of
/// `latency`) and reopens `length` long; after `gap`, 20 calls arrive `latency` before
/// `1.5 s + gap` and the busiest ends then: that settle closes the window iff `gap` reaches
/// its length in ticks. The model decides the same at every gap; independently of it, the
/// limit moves when `gap` is a tick past the length and not when it is a tick short.
fn sweep_first_settle(c: LimiterConfig, latency: Duration, gaps: impl Iterator<Item = Duration>) {
    let length = c.min_window.max((2 * latency).min(c.max_window));
    let tick = Duration::from_nanos(1 << resilix_reference::limiter::Model::new(&c).tick_shift());
    let mut points = 0;
    for gap in gaps {
        let real = Limiter::new(c).unwrap();
        let mut twin = LimiterTwin::new(&real, &c);
        let mut rng = SeededRandom::new(7);
        // The first window opens at 0, `min_window` long: it closes at its first settle after.
        let t0 = Instant::ZERO + c.min_window + Duration::from_millis(1_500);
        let step = |twin: &mut LimiterTwin<'_>, at: Instant, rng: &mut SeededRandom| {
            for _ in 0..20 {
                assert!(twin.arrive(at - latency, rng).unwrap().is_admitted());
            }
            let before = real.limit_fixed();
            // The busiest (last admitted) first: not app-limited.
            twin.end(at, twin.open() - 1, Some(Verdict::Success), rng)
                .and_then(|()| twin.check(at))
                .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
            let moved = real.limit_fixed() != before;
            while twin.open() > 0 {
                twin.end(at, 0, Some(Verdict::Success), rng).unwrap();
            }
            twin.check(at)
                .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
            moved
        };
        assert!(
            step(&mut twin, t0, &mut rng),
            "the first window closes at t0"
        );
        let moved = step(&mut twin, t0 + gap, &mut rng);
        if gap >= length + tick {
            assert!(
                moved,
                "gap {gap:?} ≥ window {length:?}: the first settle closes it"
            );
        }
        if gap + tick < length {
            assert!(!moved, "gap {gap:?} < window {length:?}: still open");
        }
        points += 1;
    }
    assert!(points > 50, "{points} points");
}

/// The circle of the window's tick word for `c`: 2^32 ticks.
fn circle(c: &LimiterConfig) -> Duration {
    Duration::from_nanos(1u64 << (32 + resilix_reference::limiter::Model::new(c).tick_shift()))
}

fn sweep_config(min_window: Duration, max_window: Duration) -> LimiterConfig {
    LimiterConfig {
        min_limit: 1,
        min_window,
        max_window,
        window_samples: 1,
        min_rtt: Duration::ZERO,
        probe_multiplier: 0,
        ..LimiterConfig::gradient2()
    }
}

/// Netflix's 1 s window on 4 ns ticks (17.18 s circle): 0 to 3 circles at 0.1 s, every point.
#[test]
fn sweep_default_window_over_three_circles() {
    let c = sweep_config(Duration::from_secs(1), Duration::from_secs(1));
    let three = circle(&c) * 3;
    sweep_first_settle(
        c,
        Duration::from_millis(10),
        sweep(three, Duration::from_millis(100)),
    );
}

/// The gaps around each `k·circle` (k = 0..=3), `±span` at `step`, and a coarse pass over all
/// three circles at `circle / coarse`: for scales whose circles are too long to sweep finely
/// throughout.
fn near_circles(
    circle: Duration,
    span: Duration,
    step: Duration,
    coarse: u32,
) -> impl Iterator<Item = Duration> {
    let fine = (0..=3u32).flat_map(move |k| {
        let centre = circle * k;
        let from = centre.saturating_sub(span);
        sweep(span * 2, step).map(move |d| from + d)
    });
    fine.chain(sweep(circle * 3, circle / coarse))
}

/// An hour's window at most (2 µs ticks, 2.44 h circle) with Netflix's 1 s minimum: the window
/// is 1 s long, so 0.1 s steps within ±5 s of each circle, and every 1/200 of a circle.
#[test]
fn sweep_hour_scale_near_each_circle() {
    let c = sweep_config(Duration::from_secs(1), Duration::from_secs(3_600));
    let gaps = near_circles(
        circle(&c),
        Duration::from_secs(5),
        Duration::from_millis(100),
        200,
    );
    sweep_first_settle(c, Duration::from_millis(10), gaps);
}

/// An hour-long window (2 µs ticks): 6 min steps over three circles (7.3 h), every point.
#[test]
fn sweep_hour_window_over_three_circles() {
    let c = sweep_config(Duration::from_secs(3_600), Duration::from_secs(3_600));
    sweep_first_settle(
        c,
        Duration::from_millis(10),
        sweep(circle(&c) * 3, Duration::from_secs(360)),
    );
}

/// A 10 µs window (4 ns ticks, 17.18 s circle): 1 µs steps within ±100 µs of each circle, and
/// every 1/500 of a circle.
#[test]
fn sweep_microsecond_window_near_each_circle() {
    let c = sweep_config(Duration::from_micros(10), Duration::from_micros(10));
    let gaps = near_circles(
        circle(&c),
        Duration::from_micros(100),
        Duration::from_micros(1),
        500,
    );
    sweep_first_settle(c, Duration::from_micros(2), gaps);
}
