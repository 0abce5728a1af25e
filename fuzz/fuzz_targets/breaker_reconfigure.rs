//! The breaker against its plain wide-time model (`resilix_reference::breaker`) across
//! reconfigurations, steered by the fuzzer: a configuration and window, then stretches of
//! steps (gaps of 1 ns to ten years or on the breaker's own scale, arrivals, verdicts,
//! cancellations), each followed by a reconfiguration drawn from the input (thresholds, waits
//! as a share of the ones built with, some beyond what the timers hold, probe counts,
//! half-open bounds sometimes turned on or off). Panics on the first decision, retry-at,
//! state, reconfiguration answer or config in force on which they differ; and checks the
//! invariants a reconfiguration must keep: a refused one changes nothing, an accepted one is
//! the config in force.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::breaker::{
    Breaker, CallRing, Config, OpenBackoff, OutcomeWindow, SlowCalls, TimeBuckets,
};
use resilix::random::Random;
use resilix::time::Instant;
use resilix_reference::breaker::{BreakerTwin, Model};
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, drive};

const STORMY: Mix = Mix {
    success: 110,
    transient: 60,
    timeout: 30,
    overload: 25,
    answered: 15,
};

/// 1 ns .. 2^max_bits ns, log-uniform.
fn duration(rng: &mut Bytes<'_>, max_bits: u64) -> Duration {
    let bits = rng.below(max_bits);
    Duration::from_nanos((1u64 << bits) + rng.below(1u64 << bits))
}

/// `d × n / 16`, at least 1 ns.
fn sixteenths(d: Duration, n: u64) -> Duration {
    (d.saturating_mul(n as u32) / 16).max(Duration::from_nanos(1))
}

/// Thresholds and probes from the input; waits as sixteenths (1..=28) of `base`'s, so that
/// some fit the timers built for `base` and some do not.
fn config(rng: &mut Bytes<'_>, base: Option<&Config>) -> Config {
    let probes = 1 + rng.below(15) as u8;
    let open_wait = match base {
        Some(b) => sixteenths(b.open_wait, 1 + rng.below(28)),
        None => duration(rng, 45),
    };
    let cap_of = |rng: &mut Bytes<'_>| match base {
        Some(b) => sixteenths(b.longest_open_wait(), 1 + rng.below(28)).max(open_wait),
        None => open_wait.saturating_mul(1 + rng.below(2_000) as u32),
    };
    let half = match base.map(|b| b.max_half_open_wait) {
        // Kept on (or, once in eight, turned off: refused).
        Some(Some(h)) => (rng.below(8) != 0).then(|| sixteenths(h, 1 + rng.below(28))),
        // Kept off (or turned on: refused).
        Some(None) => (rng.below(8) == 0).then(|| duration(rng, 46)),
        None => (rng.below(4) != 0).then(|| duration(rng, 46)),
    };
    Config {
        failure_rate_above_percent: (rng.below(4) != 0).then(|| rng.below(100) as u8),
        minimum_calls: 1 + rng.below(8) as u32,
        consecutive_failures: (rng.below(2) == 0).then(|| 1 + rng.below(5) as u32),
        slow_calls: (rng.below(3) == 0).then(|| SlowCalls {
            slower_than: duration(rng, 40),
            above_percent: rng.below(100) as u8,
        }),
        open_wait,
        open_backoff: (rng.below(2) == 0).then(|| OpenBackoff {
            multiplier_percent: 100 + rng.below(301) as u32,
            max_wait: cap_of(rng),
        }),
        open_jitter_percent: rng.below(100) as u8,
        half_open_probes: probes,
        probes_to_close: 1 + rng.below(u64::from(probes)) as u8,
        max_half_open_wait: half,
    }
}

fn run<W: OutcomeWindow>(real: &Breaker<W>, model: Model, built: Config, rng: &mut Bytes<'_>) {
    let mut twin = BreakerTwin::new(real, model);
    let longest = built
        .longest_open_wait()
        .max(built.max_half_open_wait.unwrap_or(Duration::ZERO));
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(
            Duration::from_nanos(1),
            (longest / 4).max(Duration::from_nanos(2)),
        )
    };
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), gaps);
    for _ in 0..1 + rng.below(6) {
        let steps = rng.below(80);
        if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, STORMY, 6) {
            panic!("{m}");
        }
        let next = config(rng, Some(&built));
        let before = real.config();
        match twin.reconfigure(next, timeline.now()) {
            Err(m) => panic!("at {:?}: {m}", timeline.now()),
            Ok(Ok(())) => assert_eq!(real.config(), next),
            Ok(Err(e)) => {
                assert_eq!(real.config(), before, "refused ({e}) yet changed");
                assert!(!e.to_string().is_empty());
            }
        }
        if let Err(m) = resilix_reference::twin::Twin::check(&mut twin, timeline.now()) {
            panic!("after reconfiguring: {m}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let built = config(&mut rng, None);
    if built.validate().is_err() {
        return;
    }
    let length = duration(&mut rng, 50);
    match rng.below(4) {
        0 if length >= Duration::from_nanos(80) => run(
            &Breaker::<TimeBuckets<10>>::time_based(built, length).unwrap(),
            Model::time_based(built, length, 10),
            built,
            &mut rng,
        ),
        1 if length >= Duration::from_nanos(8) => run(
            &Breaker::<TimeBuckets<1>>::time_based(built, length).unwrap(),
            Model::time_based(built, length, 1),
            built,
            &mut rng,
        ),
        2 | 3 => {
            let calls = (built.minimum_calls + rng.below(112) as u32).min(112);
            run(
                &Breaker::<CallRing<7>>::count_based(built, calls).unwrap(),
                Model::count_based(built, calls),
                built,
                &mut rng,
            )
        }
        _ => {}
    }
});
