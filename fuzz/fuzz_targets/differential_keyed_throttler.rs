//! The keyed throttler (1 or 8 entries, up to 24 keys, so homes collide, idle entries are
//! reused and the overflow throttler serves) against its reference model, steered by the
//! fuzzer: the config (windows from the shortest a bucket count allows to days), then every
//! gap (1 ns to ten years, or busy at the window's scale), key, verdict, cancellation, shed
//! draw and `evict_idle` come from the input. Panics on the first decision, choice of
//! throttler, `evict_idle` count, `len` or per-key counts on which they differ (an entry freed
//! while live would show as a key's counts or `len` differing from the model's).
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::throttler::KeyedThrottler;
use resilix::time::Instant;
use resilix_reference::configs::{accepts_multiplier, throttler_config, throttler_mix};
use resilix_reference::keyed_throttler::KeyedThrottlerTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::drive;

fn run<const N: usize, const B: usize>(rng: &mut Bytes<'_>, steps: u64) {
    let config = throttler_config(rng, B, accepts_multiplier, 20);
    let Ok(real) = KeyedThrottler::<N, B>::with_buckets(config) else {
        return; // refused as the single throttler refuses it
    };
    let keys = 1 + rng.below(24);
    let mut twin = KeyedThrottlerTwin::new(&real, &config, keys, 1 + rng.below(32));
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(
            Duration::from_nanos(1),
            (config.window / 4).max(Duration::from_nanos(2)),
        )
    };
    let mut timeline = Timeline::new(Instant::from_nanos(rng.below(1 << 62)), gaps);
    let mix = throttler_mix(rng);
    if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, mix, 8) {
        panic!("{m}");
    }
    assert!(real.len() <= N);
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let steps = (data.len() as u64 / 3).min(4_000);
    match rng.below(3) {
        0 => run::<1, 4>(&mut rng, steps),
        1 => run::<8, 7>(&mut rng, steps),
        _ => run::<8, 20>(&mut rng, steps),
    }
});
