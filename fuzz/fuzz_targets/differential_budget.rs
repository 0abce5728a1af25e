//! The retry budgets beside their reference models on a timeline the fuzzer steers: the
//! config, every gap (1 ns to ten years), arrival and verdict come from the input bytes.
//! Panics on the first grant or book on which they differ.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, TokenBucket};
use resilix::time::Instant;
use resilix_reference::budget::{ratio_twin, token_bucket_twin};
use resilix_reference::configs::token_bucket_config;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, Twin};

fn mix(rng: &mut Bytes<'_>) -> Mix {
    Mix {
        success: rng.below(256) as u8,
        transient: 60,
        timeout: 40,
        overload: 40,
        answered: 16,
    }
}

fn go(twin: &mut dyn Twin, rng: &mut Bytes<'_>, steps: u64) {
    let mix = mix(rng);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    if let Err(m) = resilix_reference::drive(twin, &mut timeline, rng, steps, mix, 16) {
        panic!("{m}");
    }
}

fn ratio<const B: usize>(rng: &mut Bytes<'_>, steps: u64) {
    let octave = rng.below(49) as u32;
    let lo = ((B as u64) * 8) << octave;
    let config = RatioBudgetConfig {
        max_retry_permille: rng.below(1_001) as u32,
        min_retries_per_window: rng.below(20) as u32,
        window: Duration::from_nanos(lo + rng.below(lo)),
    };
    let Ok(real) = RatioBudget::<B>::with_buckets(config) else {
        return; // a zero ratio with a zero floor: refused
    };
    let mut twin = ratio_twin(&real, &config);
    go(&mut twin, rng, steps);
}

fn tokens(rng: &mut Bytes<'_>, steps: u64) {
    let config = token_bucket_config(rng);
    let Ok(real) = TokenBucket::new(config) else {
        return; // floor + cost above the capacity: refused
    };
    let mut twin = token_bucket_twin(&real, &config);
    go(&mut twin, rng, steps);
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let steps = (data.len() as u64 / 3).min(4_000);
    match rng.below(5) {
        0 => ratio::<1>(&mut rng, steps),
        1 => ratio::<2>(&mut rng, steps),
        2 => ratio::<7>(&mut rng, steps),
        3 => ratio::<10>(&mut rng, steps),
        _ => tokens(&mut rng, steps),
    }
});
