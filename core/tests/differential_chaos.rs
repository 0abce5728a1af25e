//! Chaos against its reference model (`resilix_reference::chaos`): identical injections,
//! draws and events for every attempt of random long timelines (gaps 1 ns to ten years), with
//! the master switch flipped at random moments, over random rates (including 0 and every
//! attempt) and every verdict chaos may inject; and the decision after an idle gap of any
//! length (chaos stores no time: it must not matter).

use core::time::Duration;

use proptest::prelude::*;
use resilix::Verdict;
use resilix::chaos::{Chaos, ChaosConfig, MILLION};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix_reference::chaos::ChaosTwin;
use resilix_reference::timeline::{Gaps, Timeline, sweep};
use resilix_reference::twin::Mix;

fn rate() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(MILLION), Just(1), 0u32..=MILLION]
}

fn verdict() -> impl Strategy<Value = Verdict> {
    prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Answered),
        Just(Verdict::Transient),
        Just(Verdict::Uncertain),
        Just(Verdict::Timeout),
        (0u64..100_000).prop_map(|ms| Verdict::Overload {
            retry_after: Some(Duration::from_millis(ms))
        }),
        Just(Verdict::Overload { retry_after: None }),
    ]
}

fn config() -> impl Strategy<Value = ChaosConfig> {
    (rate(), 1u64..u64::MAX, rate(), verdict(), rate(), verdict()).prop_map(
        |(l, nanos, f, fv, o, ov)| {
            ChaosConfig::NONE
                .with_latency(l, Duration::from_nanos(nanos))
                .with_fault(f, fv)
                .with_outcome(o, ov)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn injections_match_the_model_on_long_timelines(
        c in config(),
        flip in prop_oneof![Just(0u64), 1u64..50],
        seed in any::<u64>(),
    ) {
        let real = Chaos::new(c).unwrap();
        let mut twin = ChaosTwin::new(&real, &c, flip);
        let mut rng = SeededRandom::new(seed);
        let mut timeline = Timeline::new(Instant::from_nanos(rng.below(1 << 62)), Gaps::LONG);
        let r = resilix_reference::drive(&mut twin, &mut timeline, &mut rng, 1_500, Mix::MOSTLY_HEALTHY, 16);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// Half rates, always on: injections happen often and the twin sees all of them.
#[test]
fn half_rates_inject_often_and_match() {
    let c = ChaosConfig::NONE
        .with_latency(MILLION / 2, Duration::from_millis(3))
        .with_fault(MILLION / 2, Verdict::Transient)
        .with_outcome(MILLION / 2, Verdict::Uncertain);
    let real = Chaos::new(c).unwrap();
    let mut twin = ChaosTwin::new(&real, &c, 0);
    let mut rng = SeededRandom::new(5);
    let mut timeline = Timeline::new(Instant::ZERO, Gaps::LONG);
    resilix_reference::drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        5_000,
        Mix::MOSTLY_HEALTHY,
        16,
    )
    .unwrap();
    let (decided, injected) = twin.counts();
    // Nothing injected only when all three miss (1/2 · 1/2 · 1/2).
    let share = injected as f64 / decided as f64;
    assert!(
        decided > 2_000 && (share - 0.875).abs() < 0.03,
        "{injected} of {decided}"
    );
}

/// The decision after an idle gap from 0 to ten years equals the model's, and with a
/// generator in the same state the same decision as without the gap.
#[test]
fn an_idle_gap_changes_nothing() {
    let c = ChaosConfig::NONE
        .with_latency(300_000, Duration::from_millis(1))
        .with_fault(200_000, Verdict::Timeout)
        .with_outcome(100_000, Verdict::Answered);
    let ten_years = Duration::from_secs(10 * 365 * 86_400);
    let t0 = Instant::from_secs(1);
    let mut baseline = None;
    for gap in sweep(ten_years, ten_years / 2_000) {
        let real = Chaos::new(c).unwrap();
        let mut twin = ChaosTwin::new(&real, &c, 0);
        let mut rng = SeededRandom::new(9);
        twin.decide(t0, &mut rng).unwrap();
        let after: Vec<_> = (0..8)
            .map(|_| twin.decide(t0.saturating_add(gap), &mut rng).unwrap())
            .collect();
        match &baseline {
            None => baseline = Some(after),
            Some(b) => assert_eq!(&after, b, "gap {gap:?}"),
        }
    }
}
