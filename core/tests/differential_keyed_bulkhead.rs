//! The keyed bulkhead against its plain model (`resilix_reference::keyed_bulkhead`): tables of
//! 1, 4 and 8 entries shared by up to 24 keys (so homes collide, idle entries are reused and
//! the overflow bulkhead serves), caps from 1 to 5, on random timelines whose gaps run from
//! 1 ns to ten years: every decision, which bulkhead served it, the count held at admission,
//! `evict_idle`, `len`, each key's `held` and the overflow's must be identical. A bulkhead
//! keeps no time (no method of the keyed bulkhead takes an instant), so no tick scale or idle
//! gap can change a decision and there is no first-decision-after-a-gap sweep to make; the
//! long timelines are kept so the twin runs on the same driver as every other.
#![cfg(not(loom))]

use proptest::prelude::*;
use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix_reference::keyed_bulkhead::KeyedBulkheadTwin;
use resilix_reference::timeline::{Gaps, Timeline};
use resilix_reference::twin::{Mix, drive};

fn run<const N: usize>(
    cap: u32,
    keys: u64,
    seed: u64,
    gaps: Gaps,
    max_open: usize,
) -> Result<(), String> {
    let real: KeyedBulkhead<N> = KeyedBulkhead::new(BulkheadConfig::new(cap).unwrap());
    let mut twin = KeyedBulkheadTwin::new(&real, keys, 16);
    let mut rng = SeededRandom::new(seed);
    let mut timeline = Timeline::new(Instant::from_nanos(seed >> 4), gaps);
    drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        800,
        Mix::MOSTLY_HEALTHY,
        max_open,
    )
    .map(|_| ())
    .map_err(|m| m.to_string())?;
    assert!(real.len() <= N);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn identical_to_the_model_on_long_timelines(
        cap in 1u32..=5,
        keys in 1u64..=24,
        seed in any::<u64>(),
        max_open in 1usize..40,
    ) {
        run::<1>(cap, keys, seed, Gaps::LONG, max_open).map_err(TestCaseError::fail)?;
        run::<4>(cap, keys, seed, Gaps::LONG, max_open).map_err(TestCaseError::fail)?;
        run::<8>(cap, keys, seed, Gaps::LONG, max_open).map_err(TestCaseError::fail)?;
    }
}
