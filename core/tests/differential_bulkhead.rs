//! The bulkhead against its plain model (`resilix_reference::bulkhead`) on long random
//! timelines. The bulkhead keeps no time, so what is checked on every timeline is its whole
//! contract: admitted exactly while fewer than `cap` are held, every end (any verdict, or a
//! cancellation) gives its slot back, every release is counted for the wait protocol — and,
//! the issue-13 question for every policy, that no idle gap of any length changes the first
//! decision after it.

use core::time::Duration;

use proptest::prelude::*;
use resilix::Verdict;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix_reference::bulkhead::BulkheadTwin;
use resilix_reference::timeline::{Gaps, Timeline, sweep};
use resilix_reference::twin::{Decision, Mix, Twin, drive};

fn run(cap: u32, seed: u64, gaps: Gaps, steps: u64, max_open: usize) -> Result<(), String> {
    let real = Bulkhead::new(BulkheadConfig::new(cap).map_err(|e| e.to_string())?);
    let mut twin = BulkheadTwin::new(&real);
    let mut timeline = Timeline::new(Instant::from_secs(1), gaps);
    let mut rng = SeededRandom::new(seed);
    let report = drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        steps,
        Mix::MOSTLY_HEALTHY,
        max_open,
    )
    .map_err(|m| m.to_string())?;
    // Not vacuous: a run that can hold more than the cap open is refused sometimes.
    // (Calls end with even odds, so the count of open calls is a random walk: only small caps
    // are sure to be reached in 2,000 steps.)
    if cap <= 8 && max_open > cap as usize && steps >= 2_000 && report.refused == 0 {
        return Err(format!("cap {cap}: no refusal in {steps} steps"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn identical_to_the_model_on_long_timelines(cap in 1u32..64, seed in any::<u64>()) {
        prop_assert_eq!(run(cap, seed, Gaps::LONG, 2_000, cap as usize + 8), Ok(()));
    }

    #[test]
    fn identical_to_the_model_on_busy_timelines(cap in 1u32..64, seed in any::<u64>()) {
        let busy = Gaps::between(Duration::from_nanos(1), Duration::from_millis(5));
        prop_assert_eq!(run(cap, seed, busy, 2_000, cap as usize + 8), Ok(()));
    }
}

#[test]
fn a_wrong_model_is_caught() {
    // A real bulkhead of 4 beside the model of one of 5: the first time 5 are open, the twin
    // reports it.
    let real = Bulkhead::new(BulkheadConfig::new(4).unwrap());
    let mut twin = BulkheadTwin::with_model(&real, resilix_reference::bulkhead::Model::new(5));
    let mut rng = SeededRandom::new(3);
    let mut timeline = Timeline::new(Instant::ZERO, Gaps::LONG);
    assert!(
        drive(
            &mut twin,
            &mut timeline,
            &mut rng,
            1_000,
            Mix::MOSTLY_HEALTHY,
            9
        )
        .is_err()
    );
}

#[test]
fn the_first_decision_after_an_idle_gap() {
    // The bulkhead has no tick word; sweep the gap over the circles the other policies' words
    // have (4 ns ticks: 17.2 s; 1 ms periods: 49.7 days), a tenth of a second apart near each
    // and across the first, with the bulkhead full, then with one slot freed.
    let mut rng = SeededRandom::new(9);
    let circles = [
        Duration::from_nanos(4 << 32),
        Duration::from_millis(1 << 32),
    ];
    let mut gaps: Vec<Duration> =
        sweep(Duration::from_secs(60), Duration::from_millis(100)).collect();
    for c in circles {
        for k in 1..=3u32 {
            let at = c * k;
            gaps.extend(
                sweep(Duration::from_secs(2), Duration::from_millis(100))
                    .map(|d| at - Duration::from_secs(1) + d),
            );
        }
    }
    for gap in gaps {
        let real = Bulkhead::new(BulkheadConfig::new(2).unwrap());
        let mut twin = BulkheadTwin::new(&real);
        let t0 = Instant::from_secs(1);
        assert!(twin.arrive(t0, &mut rng).unwrap().is_admitted());
        assert!(twin.arrive(t0, &mut rng).unwrap().is_admitted());
        let later = t0 + gap;
        // Full, however long the silence: refused with no retry-at (no time is known).
        assert!(matches!(
            twin.arrive(later, &mut rng).unwrap(),
            Decision::Refused { retry_at: None, .. }
        ));
        twin.end(later, 0, Some(Verdict::Success), &mut rng)
            .unwrap();
        assert!(
            twin.arrive(later, &mut rng).unwrap().is_admitted(),
            "gap {gap:?}"
        );
    }
}
