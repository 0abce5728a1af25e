//! The keyed rate limiter (8 entries, up to 24 keys, so homes collide, entries are reused and
//! the overflow bucket serves) against its reference model on a fuzzer-steered timeline of
//! gaps from 1 ns to ten years: any difference in a decision, `evict_idle`, `len` or a key's
//! `available` panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::rate_limit::KeyedRateLimiter;
use resilix::time::Instant;
use resilix_reference::rate_limit::{KeyedTwin, Params, arbitrary_config};
use resilix_reference::timeline::Bytes;
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, drive};

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let config = arbitrary_config(&mut rng);
    let Ok(real) = KeyedRateLimiter::<8>::new(config) else {
        assert!(
            Params::of(config).is_err(),
            "{config:?}: refused by the real table only"
        );
        return;
    };
    let keys = 1 + rng.below(24);
    let mut twin = KeyedTwin::new(&real, config, keys, 16).expect("the model accepts it too");
    let start = Instant::from_nanos(rng.next_u64() >> 2);
    let mut timeline = Timeline::new(start, Gaps::LONG);
    if let Err(m) = drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        128,
        Mix::MOSTLY_HEALTHY,
        4,
    ) {
        panic!("{config:?}: {m}");
    }
});
