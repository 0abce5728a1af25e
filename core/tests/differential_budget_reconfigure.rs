//! The token bucket's `reconfigure` against its reference model: on random long timelines
//! (gaps 1 ns to ten years, `Gaps::LONG`; the bucket never reads the time, so every gap must
//! leave it as it was), one arrival in twelve first reconfigures both to a config drawn from a
//! pool of random valid buckets and the presets. After each change the config in force must be
//! the one given and the balance the model's (carried over, clamped to a lowered capacity);
//! every later grant and balance must agree. And the first retry decision after an idle gap,
//! right after a change of capacity and cost.

#[path = "support/differential.rs"]
mod differential;

use core::time::Duration;

use proptest::prelude::*;
use resilix::VerdictKind;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig, Tokens};
use resilix::time::Instant;
use resilix_reference::budget::{ReconfiguringBucketTwin, token_bucket_twin};
use resilix_reference::timeline::{Gaps, Timeline};
use resilix_reference::twin::Mix;

use differential::{RETRIES_RUN_OUT, token_bucket};

fn any_bucket() -> impl Strategy<Value = TokenBucketConfig> {
    prop_oneof![
        Just(TokenBucketConfig::GRPC_A6_EXAMPLE),
        Just(TokenBucketConfig::AWS_SDK_STANDARD),
        Just(TokenBucketConfig::BROOKER_2022),
        token_bucket(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn reconfigurations_match_the_model_on_long_timelines(
        config in any_bucket(),
        pool in prop::collection::vec(any_bucket(), 1..6),
        seed in any::<u64>(),
        failing in any::<bool>(),
    ) {
        let real = TokenBucket::new(config).unwrap();
        let mut twin = ReconfiguringBucketTwin::new(token_bucket_twin(&real, &config), pool, 12);
        let mut rng = SeededRandom::new(seed);
        let mut timeline = Timeline::new(Instant::from_nanos(rng.below(1 << 62)), Gaps::LONG);
        let mix = if failing { RETRIES_RUN_OUT } else { Mix::MOSTLY_HEALTHY };
        let r = resilix_reference::drive(&mut twin, &mut timeline, &mut rng, 1_500, mix, 16);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
        prop_assert!(twin.reconfigured > 0, "no reconfiguration in 1500 steps");
    }
}

/// A bucket drained at `t0`, reconfigured at `t0` to a smaller capacity and a new cost, then
/// the first retry after `gap`: the same decision and balance as the model's, for gaps from
/// none to centuries (the bucket has no clock: none may change it).
#[test]
fn first_retry_after_a_change_and_an_idle_gap() {
    let t0 = Instant::from_nanos(98_765_432_101);
    let smaller = TokenBucketConfig {
        capacity: Tokens::whole(12),
        initial: Tokens::whole(12),
        retry_cost: Tokens::whole(4),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    };
    let mut gap = Duration::ZERO;
    let mut checked = 0;
    while gap < Duration::from_secs(500 * 365 * 86_400) {
        let real = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
        let mut twin = ReconfiguringBucketTwin::new(
            token_bucket_twin(&real, &TokenBucketConfig::AWS_SDK_STANDARD),
            Vec::new(),
            0,
        );
        let mut bucket = twin.twin_mut();
        for _ in 0..97 {
            assert!(bucket.spend(t0, VerdictKind::Transient).unwrap());
        }
        twin.reconfigure(&smaller, t0).unwrap();
        assert_eq!(real.balance(), Tokens::whole(12), "15 left, clamped to 12");
        let now = t0.saturating_add(gap);
        bucket = twin.twin_mut();
        for expected in [true, true, true, false] {
            assert_eq!(
                bucket.spend(now, VerdictKind::Transient),
                Ok(expected),
                "gap {gap:?}"
            );
        }
        assert_eq!(real.balance(), Tokens::ZERO);
        real.record_success(now, Some(VerdictKind::Transient));
        assert_eq!(
            real.balance(),
            Tokens::whole(4),
            "refunded at the cost in force"
        );
        gap = gap * 3 + Duration::from_nanos(1 + gap.as_nanos() as u64 % 7);
        checked += 1;
    }
    assert!(checked > 40, "{checked} gaps");
}
