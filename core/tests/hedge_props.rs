//! Properties of the hedge policy over random call sequences: hedges never exceed the calls'
//! earned share plus the burst; every delay lies on or above its floor and within the
//! histogram's error of the window's exact nearest-rank quantile; a copy leaves only when due;
//! a refusal is final for its call and changes no copy already sent.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::hedge::{Hedge, HedgeConfig, NextCopy};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig, Unlimited};
use resilix::time::Instant;

fn idem() -> CallOptions {
    CallOptions::default().idempotent(true)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn hedges_stay_within_the_earned_share_plus_burst(
        load in 1u32..1000,
        burst in 1u32..20,
        slow in proptest::collection::vec(any::<bool>(), 1..400),
    ) {
        let config = HedgeConfig {
            max_extra_load_permille: load,
            burst,
            window: 1000u32.div_ceil(load),
            fixed_delay: Some(Duration::from_millis(1)),
            ..HedgeConfig::DEFAULT
        };
        let h = Hedge::new(config, Unlimited).unwrap();
        let mut sent = 0u64;
        for (i, slow) in slow.iter().enumerate() {
            let t = Instant::from_secs(i as u64);
            let mut call = h.begin(t, idem());
            let end = if *slow { t + Duration::from_millis(5) } else { t + Duration::from_micros(100) };
            let mut taken = 1;
            if *slow && let NextCopy::Send { copy } = call.poll(&h, t + Duration::from_millis(1), &()) {
                sent += 1;
                taken = copy;
            }
            call.finish(&h, end, taken, &Verdict::Success, &());
            let calls = i as u64 + 1;
            prop_assert!(
                sent * 1000 <= u64::from(burst) * 1000 + calls * u64::from(load),
                "{sent} hedges after {calls} calls"
            );
        }
    }

    #[test]
    fn the_delay_is_the_windows_quantile_within_the_histogram_error(
        load in 1u32..500,
        extra in 0u32..50,
        min_us in 0u64..3_000,
        latencies in proptest::collection::vec(0u64..10_000_000_000, 2_000),
    ) {
        let window = 1000u32.div_ceil(load) + extra;
        let config = HedgeConfig {
            max_extra_load_permille: load,
            window,
            min_delay: Duration::from_micros(min_us),
            ..HedgeConfig::DEFAULT
        };
        let h = Hedge::new(config, Unlimited).unwrap();
        let w = window as usize;
        for (i, ns) in latencies.iter().take(w * (2_000 / w)).enumerate() {
            let t = Instant::from_secs(i as u64 * 20);
            h.begin(t, idem()).finish(&h, t + Duration::from_nanos(*ns), 1, &Verdict::Success, &());
            if (i + 1) % w == 0 {
                let mut sorted = latencies[i + 1 - w..=i].to_vec();
                sorted.sort_unstable();
                let rank = (u64::from(window) * u64::from(1000 - load)).div_ceil(1000).max(1);
                let exact = sorted[rank as usize - 1] as f64;
                let delay = h.delay().unwrap();
                let floor = Duration::from_micros(min_us.max(1));
                prop_assert!(delay >= floor);
                let d = delay.as_nanos() as f64;
                if delay > floor {
                    // Never below the exact quantile; above it by at most the midpoint error
                    // (1/16) raised by 16/15, plus the round-up to a microsecond.
                    prop_assert!(d >= exact && d <= exact * 17.0 / 15.0 + 1000.0,
                        "window {w}: {d} vs exact {exact}");
                } else {
                    prop_assert!(exact <= floor.as_nanos() as f64);
                }
            }
        }
    }

    #[test]
    fn copies_leave_only_when_due_and_refusals_are_final(
        delay_us in 1u64..100_000,
        hedges in 1u32..5,
        tokens in 0u32..40,
        polls in proptest::collection::vec(0u64..500_000, 1..30),
    ) {
        let budget = TokenBucket::new(TokenBucketConfig {
            initial: resilix::retry::budget::Tokens::whole(tokens),
            ..TokenBucketConfig::AWS_SDK_STANDARD
        }).unwrap();
        let config = HedgeConfig {
            fixed_delay: Some(Duration::from_micros(delay_us)),
            min_delay: Duration::ZERO,
            max_hedges: hedges,
            ..HedgeConfig::DEFAULT
        };
        let h = Hedge::new(config, &budget).unwrap();
        let t0 = Instant::from_secs(3);
        let mut call = h.begin(t0, idem());
        let mut polls = polls;
        polls.sort_unstable();
        let mut refused = false;
        for p in polls {
            let now = t0 + Duration::from_micros(p);
            let before = call.sent();
            let due = t0 + Duration::from_micros(delay_us) * before;
            match call.poll(&h, now, &()) {
                NextCopy::Send { copy } => {
                    prop_assert!(!refused && now >= due && copy == before + 1);
                    prop_assert!(copy <= hedges + 1);
                }
                NextCopy::Wait { until } => prop_assert!(!refused && until == due && now < due),
                NextCopy::Refused(_) => { prop_assert!(!refused); refused = true; }
                NextCopy::Never => prop_assert!(refused || before == hedges + 1),
            }
            prop_assert!(call.sent() >= before, "nothing in flight is taken back");
        }
    }
}
