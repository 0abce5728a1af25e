//! The throttler against its reference model (`resilix_reference::throttler`): identical
//! decisions, probabilities and counts on random long timelines (gaps 1 ns to ten years), over
//! configs whose windows run from the shortest a bucket count allows to days, for several
//! bucket counts; and the first decision after an idle gap of 0 to 3 circles of the 31-bit
//! period word.

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::random::SeededRandom;
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;
use resilix_reference::throttler::ThrottlerTwin;
use resilix_reference::timeline::{Gaps, Timeline, window_idle_gaps};
use resilix_reference::twin::{Mix, Twin};

use differential::{SHEDDING, window};

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

/// Runs the twin of a `Throttler<B>`; `None` if the config is refused.
fn run<const B: usize>(
    config: ThrottlerConfig,
    seed: u64,
    steps: u64,
    mix: Mix,
) -> Option<Result<(), String>> {
    let real = Throttler::<B>::with_buckets(config).ok()?;
    let mut twin = ThrottlerTwin::new(&real, &config);
    let mut rng = SeededRandom::new(seed);
    let start = Instant::from_nanos(rng.next_u64_below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    Some(
        resilix_reference::drive(&mut twin, &mut timeline, &mut rng, steps, mix, 12)
            .map(|_| ())
            .map_err(|m| m.to_string()),
    )
}

trait Below {
    fn next_u64_below(&mut self, n: u64) -> u64;
}

impl Below for SeededRandom {
    fn next_u64_below(&mut self, n: u64) -> u64 {
        use resilix::random::Random;
        self.below(n)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn decisions_match_the_model_on_long_timelines(
        window in window(),
        k in prop_oneof![Just(1.0), Just(2.0), 1.0f64..4.0, Just(f64::INFINITY)],
        cap in prop_oneof![Just(0.0), Just(0.9), 0.0f64..0.999],
        min in prop_oneof![Just(0u32), Just(10), 0u32..40],
        ignore in any::<bool>(),
        buckets in 0usize..5,
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let c = config(window, k, cap, min, ignore);
        let mix = if failing { SHEDDING } else { Mix::MOSTLY_HEALTHY };
        let result = match buckets {
            0 => run::<1>(c, seed, 1_500, mix),
            1 => run::<2>(c, seed, 1_500, mix),
            2 => run::<7>(c, seed, 1_500, mix),
            3 => run::<10>(c, seed, 1_500, mix),
            _ => run::<20>(c, seed, 1_500, mix),
        };
        let result = result.expect("every generated config is valid");
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// Busy stretches at fine scales: gaps from 1 ns to a few windows, so the window is mostly
/// full and shedding happens, with the long gaps of the other test interleaved by the seed.
#[test]
fn decisions_match_the_model_while_busy() {
    for seed in 0..40u64 {
        let window = Duration::from_nanos(200 << (seed % 30));
        let c = config(window, 1.5, 0.9, (seed % 12) as u32, seed % 3 == 0);
        let real = Throttler::new(c).unwrap();
        let mut twin = ThrottlerTwin::new(&real, &c);
        let mut rng = SeededRandom::new(seed);
        let gaps = Gaps::between(Duration::from_nanos(1), window * 3);
        let mut timeline = Timeline::new(Instant::from_secs(seed), gaps);
        let report =
            resilix_reference::drive(&mut twin, &mut timeline, &mut rng, 4_000, SHEDDING, 12)
                .unwrap_or_else(|m| panic!("seed {seed}: {m}"));
        assert!(
            report.refused > 0,
            "seed {seed}: the runs must shed: {report:?}"
        );
    }
}

/// 30 calls at `t0` that all fail (shedding starts once the window holds `min_requests`),
/// then the first call after `gap`: the twin compares the counts, the probability and the
/// decision with the model's; and once the gap is longer than the window and a bucket, the
/// window must read empty.
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
    let now = t0.saturating_add(gap);
    twin.check(now)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    twin.arrive(now, &mut rng)
        .unwrap_or_else(|e| panic!("gap {gap:?}: {e}"));
    let bucket = real_bucket(c, B);
    if gap > c.window + bucket {
        assert_eq!(
            real.counts(now),
            (0, 0),
            "gap {gap:?}: the window must be empty"
        );
        assert!(real.rejection_probability(now).is_zero());
    }
}

fn real_bucket(c: &ThrottlerConfig, buckets: usize) -> Duration {
    Duration::from_nanos(c.window.as_nanos().div_ceil(buckets as u128) as u64)
}

/// The sweep of one config over `timeline::window_idle_gaps`.
fn sweep_config<const B: usize>(window: Duration, coarse_points: u32) {
    let c = config(window, 2.0, 0.9, 10, false);
    let t0 = Instant::from_nanos(12_345_678_901);
    for gap in window_idle_gaps(window, B, t0, coarse_points) {
        first_after_gap::<B>(&c, t0, gap);
    }
}

/// The finest scale: 8 ns buckets, a circle of 17.2 s: swept coarsely at 1/20,000 of three
/// circles, finely (0.8 ns steps, i.e. every nanosecond) around each quarter circle.
#[test]
fn first_decision_after_an_idle_gap_eight_nanosecond_buckets() {
    sweep_config::<20>(Duration::from_nanos(160), 20_000);
}

/// 1 ms buckets (a 20 ms window): the circle is 24.9 days (and the old 32-bit word's 49.7).
#[test]
fn first_decision_after_an_idle_gap_millisecond_buckets() {
    sweep_config::<20>(Duration::from_millis(20), 20_000);
}

/// The default: 6 s buckets over two minutes, a circle of 408 years, of which only the first
/// fits the timeline (2^64 ns is 584 years): coarse over the timeline, fine around each
/// quarter circle that fits.
#[test]
fn first_decision_after_an_idle_gap_default_window() {
    sweep_config::<20>(ThrottlerConfig::DEFAULT.window, 5_000);
}

/// Ten buckets of 100 µs: a circle of 59.7 hours.
#[test]
fn first_decision_after_an_idle_gap_ten_buckets() {
    sweep_config::<10>(Duration::from_millis(1), 20_000);
}
