//! The token bucket's `reconfigure` beside its reference model on a timeline the fuzzer
//! steers: the config, a pool of configs to change to, when each change comes, every gap
//! (1 ns to ten years), arrival and verdict come from the input bytes. Panics on the first
//! grant or balance on which they differ, if the config in force after a change is not the
//! one given, or if the balance is ever above the capacity in force.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
use resilix::time::Instant;
use resilix_reference::budget::{ReconfiguringBucketTwin, token_bucket_twin};
use resilix_reference::configs::token_bucket_config;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::Mix;

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let steps = (data.len() as u64 / 3).min(4_000);
    let config = token_bucket_config(&mut rng);
    let Ok(real) = TokenBucket::new(config) else {
        return; // floor + cost above the capacity: refused
    };
    let pool: Vec<TokenBucketConfig> = (0..1 + rng.below(5))
        .map(|_| token_bucket_config(&mut rng))
        .filter(|c| TokenBucket::new(*c).is_ok())
        .collect();
    let mut twin = ReconfiguringBucketTwin::new(token_bucket_twin(&real, &config), pool, 8);
    let mut timeline = Timeline::new(Instant::from_nanos(rng.below(1 << 62)), Gaps::LONG);
    let mix = Mix {
        success: rng.below(256) as u8,
        transient: 70,
        timeout: 40,
        overload: 40,
        answered: 16,
    };
    if let Err(m) = resilix_reference::drive(&mut twin, &mut timeline, &mut rng, steps, mix, 16) {
        panic!("{m}");
    }
    assert!(real.balance() <= real.config().capacity);
});
