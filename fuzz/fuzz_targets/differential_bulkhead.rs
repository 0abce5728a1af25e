//! The bulkhead against its plain model (`resilix_reference::bulkhead`), steered by the fuzzer:
//! the cap, then every gap (1 ns to ten years), arrival, verdict and cancellation come from the
//! input (then from a generator seeded by it, `timeline::Bytes`). Panics on the first decision
//! or count on which they differ.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::random::Random;
use resilix::time::Instant;
use resilix_reference::bulkhead::BulkheadTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, Twin, drive};

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let cap = 1 + rng.below(32) as u32;
    let real = Bulkhead::new(BulkheadConfig::new(cap).expect("a cap above zero"));
    let mut twin = BulkheadTwin::new(&real);
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), Gaps::LONG);
    let max_open = cap as usize + 1 + rng.below(8) as usize;
    if let Err(m) = drive(&mut twin, &mut timeline, &mut rng, 256, Mix::MOSTLY_HEALTHY, max_open) {
        panic!("bulkhead of {cap}: {m}");
    }
    assert_eq!(real.held() as usize, twin.open());
});
