//! The throttler beside its reference model on a timeline the fuzzer steers: the config, every
//! gap (1 ns to ten years), arrival, verdict and shed draw come from the input bytes. Panics on
//! the first decision, probability or count on which they differ.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::throttler::Throttler;
use resilix::time::Instant;
use resilix_reference::configs::{accepts_multiplier, throttler_config, throttler_mix};
use resilix_reference::throttler::ThrottlerTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};

fn run<const B: usize>(rng: &mut Bytes<'_>, steps: u64) {
    let config = throttler_config(rng, B, accepts_multiplier, 40);
    let Ok(real) = Throttler::<B>::with_buckets(config) else {
        return; // min_requests beyond a tiny window's reach: refused, as documented
    };
    let mut twin = ThrottlerTwin::new(&real, &config);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    let mix = throttler_mix(rng);
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
