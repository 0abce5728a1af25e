//! The rate limiter and its keyed table against the plain reference model
//! (`resilix_reference::rate_limit`), on long random timelines (gaps 1 ns .. 10 years), for
//! rates from one a day to ten million a second and bursts up to a million, so every tick scale
//! a config can select; reconfiguration at random steps. The model is exact (it holds the same
//! rounded interval and resolution), so every decision, refusal instant and `available` must
//! be identical; the twin also checks `burst + elapsed · count / period` in real nanoseconds.
//! Then a deterministic sweep of the first decision after an idle gap of 0 to 3 circles.
#![cfg(not(loom))]

use std::time::Duration;

use proptest::prelude::*;
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{KeyedRateLimiter, RateLimitConfig, RateLimiter};
use resilix::time::Instant;
use resilix_reference::rate_limit::{
    KeyedTwin, Params, RateLimitModel, RateLimitTwin, arbitrary_config, config,
};
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, drive};

fn run(seed: u64, steps: u64) -> Result<(u64, u64), String> {
    let mut rng = SeededRandom::new(seed);
    let first = arbitrary_config(&mut rng);
    let real = match RateLimiter::new(first) {
        Ok(l) => l,
        Err(e) => {
            // Refused alike, for the same reason.
            return match Params::of(first) {
                Err(m) if m == e => Ok((0, 0)),
                other => Err(format!("{first:?}: real refuses {e:?}, model {other:?}")),
            };
        }
    };
    let pool: Vec<_> = (0..4).map(|_| arbitrary_config(&mut rng)).collect();
    let mut twin = RateLimitTwin::new(&real, first, pool, 64).map_err(|e| format!("{e:?}"))?;
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    let report = drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        steps,
        Mix::MOSTLY_HEALTHY,
        4,
    )
    .map_err(|m| format!("{first:?}: {m}"))?;
    Ok((report.admitted, twin.reconfigured))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn decisions_match_the_model_on_long_timelines(seed in any::<u64>()) {
        run(seed, 2_000).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn keyed_decisions_match_the_model(seed in any::<u64>(), keys in 1u64..24) {
        let mut rng = SeededRandom::new(seed);
        let c = arbitrary_config(&mut rng);
        let Ok(real) = KeyedRateLimiter::<8>::new(c) else {
            prop_assert!(Params::of(c).is_err());
            return Ok(());
        };
        let mut twin = KeyedTwin::new(&real, c, keys, 16).unwrap();
        let start = Instant::from_nanos(rng.below(1 << 62));
        let mut timeline = Timeline::new(start, Gaps::LONG);
        drive(&mut twin, &mut timeline, &mut rng, 1_500, Mix::MOSTLY_HEALTHY, 4)
            .map_err(|m| TestCaseError::fail(format!("{c:?}: {m}")))?;
    }
}

/// Not vacuous: across seeds the runs admit, refuse and reconfigure, and cover fine and
/// coarse scales.
#[test]
fn the_runs_exercise_every_scale() {
    let mut admitted = 0;
    let mut reconfigured = 0;
    let mut shifts = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let (a, r) = run(seed, 500).unwrap();
        admitted += a;
        reconfigured += r;
        let c = arbitrary_config(&mut SeededRandom::new(seed));
        if let Ok(p) = Params::of(c) {
            shifts.insert(p.resolution.trailing_zeros());
        }
    }
    assert!(admitted > 10_000, "{admitted}");
    assert!(reconfigured > 100, "{reconfigured}");
    assert!(shifts.contains(&3), "8 ns ticks: {shifts:?}");
    assert!(shifts.len() > 20, "{shifts:?}");
}

/// The first decision after an idle gap, from 0 to 3 circles of the tick word, at a tenth of
/// the burst time: drain (or half-use) the bucket at `t0`, wait, call once. For scales whose
/// circles are longer than 600,000 steps (circles of days, years: coarse rates), only
/// around each whole circle (±5 burst times) and the first 10 burst times are swept.
fn sweep(c: RateLimitConfig) -> u64 {
    let p = Params::of(c).unwrap();
    let circle = p.circle();
    let step = (p.span / 10).max(1);
    let timeline_end = u128::from(u64::MAX) - 2 * circle.min(u128::from(u64::MAX) / 4);
    let mut windows = Vec::new();
    if 3 * circle / step <= 600_000 {
        windows.push((0, 3 * circle));
    } else {
        windows.push((0, 10 * p.span));
        for k in 1..=3u128 {
            let centre = k * circle;
            if centre < timeline_end {
                windows.push((centre.saturating_sub(5 * p.span), centre + 5 * p.span));
            }
        }
    }
    let t0 = Instant::from_secs(1_000);
    let mut checked = 0;
    for (from, to) in windows {
        let mut gap = from;
        while gap <= to {
            for used in [c.burst, c.burst.div_ceil(2)] {
                let real = RateLimiter::new(c).unwrap();
                let mut model = RateLimitModel::new(c).unwrap();
                assert_eq!(real.try_acquire_n(t0, used), model.try_acquire_n(t0, used));
                let now = Instant::from_nanos((u128::from(t0.as_nanos()) + gap) as u64);
                let (r, m) = (real.try_acquire(now), model.try_acquire_n(now, 1));
                let r = r.map_err(|x| x.retry_at());
                let m = m.map_err(|e| match e {
                    resilix::rate_limit::AcquireError::Limited(x) => x.retry_at(),
                    other => panic!("{other:?}"),
                });
                assert_eq!(r, m, "{c:?}: used {used}, first call {gap} ns later");
                if gap >= p.span {
                    assert!(r.is_ok(), "{c:?}: refused {gap} ns after draining");
                }
                checked += 1;
            }
            gap += step;
        }
    }
    checked
}

#[test]
fn the_first_call_after_any_idle_gap_matches_the_model() {
    // The 100k/s (8 ns ticks, a 17.2 s circle) with a small burst, so the sweep's
    // step (a tenth of the burst time) lands in every alias window.
    assert!(sweep(config(100_000, Duration::from_secs(1), 100)) > 1_000_000);
    // 1,000 a second, burst 100 (ticks of 256 ns, a 9.2 min circle).
    assert!(sweep(config(1_000, Duration::from_secs(1), 100)) > 300_000);
    // 10 a second, burst 10: a 19.55 h circle, swept around each circle.
    sweep(config(10, Duration::from_secs(1), 10));
    // One a day, burst 3: circles of millennia (only the start and none within the timeline).
    sweep(config(1, Duration::from_secs(86_400), 3));
    // A million a second (8 ns ticks, 1%), burst 1000.
    sweep(config(1_000_000, Duration::from_secs(1), 1_000));
}
