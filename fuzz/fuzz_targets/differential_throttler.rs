//! The throttler beside its reference model on a timeline the fuzzer steers: the config, every
//! gap (1 ns to ten years), arrival, verdict and shed draw come from the input bytes. Panics on
//! the first decision, probability or count on which they differ.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix_reference::throttler::ThrottlerTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::Mix;

fn run<const B: usize>(rng: &mut Bytes<'_>, steps: u64) {
    // A window from B × 8 ns (the shortest) to about four days, log-uniform.
    let octave = rng.below(49) as u32;
    let lo = ((B as u64) * 8) << octave;
    let window = Duration::from_nanos(lo + rng.below(lo));
    let config = ThrottlerConfig {
        accepts_multiplier: match rng.below(4) {
            0 => 2.0,
            1 => f64::INFINITY,
            _ => 1.0 + rng.below(4_000_000) as f64 / 1e6,
        },
        max_rejection_rate: rng.below(1_000_000) as f64 / 1e6,
        window,
        min_requests: rng.below(40) as u32,
        local_rejections: if rng.below(2) == 0 {
            LocalRejections::CountAsRequests
        } else {
            LocalRejections::Ignore
        },
    };
    let Ok(real) = Throttler::<B>::with_buckets(config) else {
        return; // min_requests beyond a tiny window's reach: refused, as documented
    };
    let mut twin = ThrottlerTwin::new(&real, &config);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    let mix = Mix {
        success: rng.below(256) as u8,
        transient: 60,
        timeout: 30,
        overload: 30,
        answered: 20,
    };
    if let Err(m) = resilix_reference::drive(&mut twin, &mut timeline, rng, steps, mix, 12) {
        panic!("{m}");
    }
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
