//! The keyed breaker (1 or 8 entries, up to 24 keys, so homes collide, idle entries are reused
//! and the overflow breaker serves) against its reference model, steered by the fuzzer: the
//! configuration (open waits from 1 ns to hours, half-open bounds or none, count or time
//! windows, slow calls), then every gap (1 ns to ten years), key, verdict, cancellation and
//! `evict_idle` come from the input. Panics on the first decision, choice of breaker,
//! `evict_idle` count, `len` or state on which they differ (an entry freed while live would
//! show as a key's state or `len` differing from the model's).
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::breaker::{CallRing, Config, KeyedBreaker, OutcomeWindow, SlowCalls, TimeBuckets};
use resilix::random::Random;
use resilix::time::Instant;
use resilix_reference::breaker::Model;
use resilix_reference::keyed_breaker::KeyedBreakerTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, drive};

const STORMY: Mix = Mix {
    success: 140,
    transient: 45,
    timeout: 20,
    overload: 20,
    answered: 15,
};

/// 1 ns .. 2^max_bits ns, log-uniform.
fn duration(rng: &mut Bytes<'_>, max_bits: u64) -> Duration {
    let bits = rng.below(max_bits);
    Duration::from_nanos((1u64 << bits) + rng.below(1u64 << bits))
}

fn run<const N: usize, W: OutcomeWindow>(
    real: &KeyedBreaker<N, W>,
    model: Model,
    rng: &mut Bytes<'_>,
    steps: u64,
) {
    let keys = 1 + rng.below(24);
    let mut twin = KeyedBreakerTwin::new(real, model, keys, 1 + rng.below(32));
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(Duration::from_nanos(1), duration(rng, 50))
    };
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), gaps);
    if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, STORMY, 6) {
        panic!("{m}");
    }
    // Every check passed; the table can never hold more than its entries.
    assert!(real.len() <= N);
}

fuzz_target!(|data: &[u8]| {
    let steps = (data.len() / 3) as u64;
    let mut rng = Bytes::new(data);
    let probes = 1 + rng.below(3) as u8;
    let config = Config {
        failure_rate_above_percent: (rng.below(4) != 0).then(|| rng.below(100) as u8),
        minimum_calls: 1 + rng.below(6) as u32,
        consecutive_failures: (rng.below(2) == 0).then(|| 1 + rng.below(4) as u32),
        slow_calls: (rng.below(3) == 0).then(|| SlowCalls {
            slower_than: duration(&mut rng, 40),
            above_percent: rng.below(100) as u8,
        }),
        open_wait: duration(&mut rng, 45),
        open_jitter_percent: rng.below(100) as u8,
        half_open_probes: probes,
        probes_to_close: 1 + rng.below(u64::from(probes)) as u8,
        max_half_open_wait: (rng.below(2) == 0).then(|| duration(&mut rng, 46)),
        ..Config::DEFAULT
    };
    if config.validate().is_err() {
        return;
    }
    match rng.below(3) {
        0 => {
            let calls = config.minimum_calls.max(1 + rng.below(16) as u32);
            let real = KeyedBreaker::<8, CallRing<1>>::count_based(config, calls).unwrap();
            run(&real, Model::count_based(config, calls), &mut rng, steps);
        }
        n => {
            let window = duration(&mut rng, 50).max(Duration::from_nanos(80));
            let model = Model::time_based(config, window, 10);
            if n == 1 {
                let real = KeyedBreaker::<1, TimeBuckets<10>>::time_based(config, window).unwrap();
                run(&real, model, &mut rng, steps);
            } else {
                let real = KeyedBreaker::<8, TimeBuckets<10>>::time_based(config, window).unwrap();
                run(&real, model, &mut rng, steps);
            }
        }
    }
});
