//! The throttler's `reconfigure` beside its reference model on a timeline the fuzzer steers:
//! the config, a pool of configs to change to (K and the cap from the bytes; some also change
//! the window, `local_rejections` or `min_requests`, which both must refuse by the same name),
//! when each change comes, every gap (1 ns to ten years), arrival, verdict and shed draw come
//! from the input bytes. Panics on the first decision, probability, count or reconfiguration
//! result on which they differ.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix_reference::configs::{max_rejection_rate, throttler_config, throttler_mix};
use resilix_reference::throttler::ThrottlerTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};

fn k(rng: &mut Bytes<'_>) -> f64 {
    match rng.below(5) {
        0 => 2.0,
        1 => f64::INFINITY,
        2 => 4_000.0 + rng.below(10_000) as f64,
        _ => 1.0 + rng.below(4_000_000) as f64 / 1e6,
    }
}

fn run<const B: usize>(rng: &mut Bytes<'_>, steps: u64) {
    let config = throttler_config(rng, B, k, 40);
    let Ok(real) = Throttler::<B>::with_buckets(config) else {
        return; // min_requests beyond a tiny window's reach: refused, as documented
    };
    let pool: Vec<ThrottlerConfig> = (0..1 + rng.below(5))
        .map(|_| {
            let c = ThrottlerConfig {
                accepts_multiplier: k(rng),
                max_rejection_rate: max_rejection_rate(rng),
                ..config
            };
            match rng.below(8) {
                0 => ThrottlerConfig {
                    window: config.window * 2,
                    ..c
                },
                1 => ThrottlerConfig {
                    min_requests: c.min_requests + 1,
                    ..c
                },
                _ => c,
            }
        })
        .filter(|c| Throttler::<B>::with_buckets(*c).is_ok())
        .collect();
    let mut twin = ThrottlerTwin::new(&real, &config).with_reconfigurations(pool, 8);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    let mix = throttler_mix(rng);
    if let Err(m) = resilix_reference::drive(&mut twin, &mut timeline, rng, steps, mix, 12) {
        panic!("{m}");
    }
    // Every probability was checked equal to the model's, which caps it; the cap itself:
    assert!(real.rejection_probability(Instant::MAX).as_f64() < 1.0);
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let steps = (data.len() as u64 / 3).min(4_000);
    match rng.below(4) {
        0 => run::<1>(&mut rng, steps),
        1 => run::<2>(&mut rng, steps),
        2 => run::<7>(&mut rng, steps),
        _ => run::<20>(&mut rng, steps),
    }
});
