//! The breaker against its plain wide-time model (`resilix_reference::breaker`), steered by the
//! fuzzer: the configuration (open waits from 1 ns to hours, growth caps to days, half-open
//! bounds or none, count or time windows, every threshold) and then every gap (1 ns to ten
//! years), arrival, verdict and cancellation come from the input (then from a generator seeded
//! by it). Panics on the first decision,
//! retry-at or state on which they differ.
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

fn run<W: OutcomeWindow>(real: &Breaker<W>, model: Model, rng: &mut Bytes<'_>, steps: u64) {
    let mut twin = BreakerTwin::new(real, model);
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(Duration::from_nanos(1), duration(rng, 50))
    };
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), gaps);
    if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, STORMY, 6) {
        panic!("{m}");
    }
}

fuzz_target!(|data: &[u8]| {
    let steps = (data.len() / 3) as u64;
    let mut rng = Bytes::new(data);
    let probes = 1 + rng.below(15) as u8;
    let open_wait = duration(&mut rng, 45);
    let config = Config {
        failure_rate_above_percent: (rng.below(4) != 0).then(|| rng.below(100) as u8),
        minimum_calls: 1 + rng.below(8) as u32,
        consecutive_failures: (rng.below(2) == 0).then(|| 1 + rng.below(5) as u32),
        slow_calls: (rng.below(3) == 0).then(|| SlowCalls {
            slower_than: duration(&mut rng, 40),
            above_percent: rng.below(100) as u8,
        }),
        open_wait,
        open_backoff: (rng.below(2) == 0).then(|| OpenBackoff {
            multiplier_percent: 100 + rng.below(301) as u32,
            max_wait: open_wait.saturating_mul(1 + rng.below(2_000) as u32),
        }),
        open_jitter_percent: rng.below(100) as u8,
        half_open_probes: probes,
        probes_to_close: 1 + rng.below(u64::from(probes)) as u8,
        max_half_open_wait: (rng.below(4) != 0).then(|| duration(&mut rng, 46)),
    };
    if config.validate().is_err() {
        return;
    }
    let length = duration(&mut rng, 50);
    let shape = rng.below(4);
    // A time window shorter than 8 ns per bucket is refused with its own error.
    let buckets = [10u32, 3, 1, 0][shape as usize];
    if buckets > 0 && length < Duration::from_nanos(8) * buckets {
        let refused = match shape {
            0 => Breaker::<TimeBuckets<10>>::time_based(config, length).err(),
            1 => Breaker::<TimeBuckets<3>>::time_based(config, length).err(),
            _ => Breaker::<TimeBuckets<1>>::time_based(config, length).err(),
        };
        assert_eq!(refused, Some(resilix::breaker::ConfigError::WindowShorterThanBuckets));
        return;
    }
    match shape {
        0 => run(
            &Breaker::<TimeBuckets<10>>::time_based(config, length).unwrap(),
            Model::time_based(config, length, 10),
            &mut rng,
            steps,
        ),
        1 => run(
            &Breaker::<TimeBuckets<3>>::time_based(config, length).unwrap(),
            Model::time_based(config, length, 3),
            &mut rng,
            steps,
        ),
        2 => run(
            &Breaker::<TimeBuckets<1>>::time_based(config, length).unwrap(),
            Model::time_based(config, length, 1),
            &mut rng,
            steps,
        ),
        _ => {
            let calls = (config.minimum_calls + rng.below(112) as u32).min(112);
            run(
                &Breaker::<CallRing<7>>::count_based(config, calls).unwrap(),
                Model::count_based(config, calls),
                &mut rng,
                steps,
            )
        }
    }
});
