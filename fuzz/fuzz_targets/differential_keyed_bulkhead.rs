//! The keyed bulkhead (1 or 8 entries, up to 24 keys, so homes collide, idle entries are
//! reused and the overflow bulkhead serves) against its reference model, steered by the
//! fuzzer: the cap, then every gap (1 ns to ten years), key, verdict, cancellation and
//! `evict_idle` come from the input. Panics on the first decision, choice of bulkhead, count
//! held at admission, `evict_idle` count, `len` or per-key `held` on which they differ; and
//! asserts that no key holds more than the cap and every slot is back once every call ends.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
use resilix::random::Random;
use resilix::time::Instant;
use resilix_reference::keyed_bulkhead::KeyedBulkheadTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, Twin, drive};

fn run<const N: usize>(cap: u32, rng: &mut Bytes<'_>, steps: u64) {
    let real: KeyedBulkhead<N> = KeyedBulkhead::new(BulkheadConfig::new(cap).unwrap());
    let keys = 1 + rng.below(24);
    let mut twin = KeyedBulkheadTwin::new(&real, keys, 1 + rng.below(32));
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), Gaps::LONG);
    let max_open = 1 + rng.below(48) as usize;
    if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, Mix::MOSTLY_HEALTHY, max_open) {
        panic!("cap {cap}: {m}");
    }
    assert!(real.len() <= N);
    assert!(real.overflow().held() <= cap);
    let in_table: u32 = (0..keys)
        .map(|i| {
            let held = real.held(resilix_reference::keyed::key(i)).unwrap_or(0);
            assert!(held <= cap, "key {i}: {held} held, cap {cap}");
            held
        })
        .sum();
    assert_eq!((in_table + real.overflow().held()) as usize, twin.open());
    // End every call: every slot comes back, and every entry is idle.
    while twin.open() > 0 {
        if let Err(e) = twin.end(Instant::ZERO, 0, None, rng) {
            panic!("{e}");
        }
    }
    if let Err(e) = twin.check(Instant::ZERO) {
        panic!("{e}");
    }
    assert_eq!(real.overflow().held(), 0);
    real.evict_idle();
    assert!(real.is_empty());
}

fuzz_target!(|data: &[u8]| {
    let steps = (data.len() / 3) as u64;
    let mut rng = Bytes::new(data);
    let cap = 1 + rng.below(6) as u32;
    if rng.below(2) == 0 {
        run::<1>(cap, &mut rng, steps);
    } else {
        run::<8>(cap, &mut rng, steps);
    }
});
