use super::*;

const T: VerdictKind = VerdictKind::Transient;
const NOW: Instant = Instant::ZERO;

fn drain(b: &TokenBucket, kind: VerdictKind) -> usize {
    (0..100_000).take_while(|_| b.try_spend(NOW, kind)).count()
}

#[test]
fn grpc_a6_from_ten_tokens_exactly_four_retries() {
    let b = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
    let mut seen = [0u32; 5];
    for s in &mut seen {
        let _ = b.try_spend(NOW, T);
        *s = b.balance().as_milli();
    }
    assert_eq!(seen, [9_000, 8_000, 7_000, 6_000, 5_000]);
    let fresh = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
    assert_eq!(drain(&fresh, T), 4);
    assert_eq!(
        fresh.balance(),
        Tokens::whole(5),
        "the refused failure was charged"
    );
}

#[test]
fn grpc_a6_recovery_from_five_takes_eleven_successes() {
    for (successes, retried) in [(10u32, false), (11, true)] {
        let b = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
        assert_eq!(drain(&b, T), 4);
        assert_eq!(b.balance(), Tokens::whole(5));
        for _ in 0..successes {
            b.record_success(NOW, None);
        }
        assert_eq!(b.try_spend(NOW, T), retried, "after {successes} successes");
    }
}

#[test]
fn grpc_failures_drain_to_zero_and_never_below() {
    let b = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
    for _ in 0..50 {
        b.record_unretried_failure(NOW, T);
    }
    assert_eq!(b.balance(), Tokens::ZERO);
    assert!(!b.try_spend(NOW, T));
    assert_eq!(b.balance(), Tokens::ZERO);
    // Deposits stop at capacity.
    for _ in 0..1_000 {
        b.record_success(NOW, Some(T));
    }
    assert_eq!(b.balance(), Tokens::whole(10));
}

#[test]
fn grpc_validation_follows_a6() {
    assert_eq!(
        TokenBucketConfig::grpc(Tokens::ZERO, Tokens::milli(1)),
        Err(BudgetConfigError::GrpcMaxTokensOutOfRange)
    );
    assert_eq!(
        TokenBucketConfig::grpc(Tokens::milli(1_000_001), Tokens::milli(1)),
        Err(BudgetConfigError::GrpcMaxTokensOutOfRange)
    );
    assert_eq!(
        TokenBucketConfig::grpc(Tokens::whole(10), Tokens::ZERO),
        Err(BudgetConfigError::GrpcZeroTokenRatio)
    );
    let max = TokenBucketConfig::grpc(Tokens::whole(1000), Tokens::milli(1)).unwrap();
    assert!(TokenBucket::new(max).is_ok());
    // An odd number of thousandths: 10.001 / 2 = 5.0005, so 5.001 is the first allowed.
    let odd = TokenBucketConfig::grpc(Tokens::milli(10_001), Tokens::milli(1)).unwrap();
    assert_eq!(odd.floor, Tokens::milli(5_001));
    // A one-token bucket can never retry (1 − 1 = 0 is not above 0.5): refused.
    let one = TokenBucketConfig::grpc(Tokens::whole(1), Tokens::milli(100)).unwrap();
    assert_eq!(
        TokenBucket::new(one).err(),
        Some(BudgetConfigError::FloorUnreachable)
    );
}

#[test]
fn aws_sdk_quota_is_100_retries_or_50_after_timeouts() {
    let b = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    assert_eq!(drain(&b, T), 100);
    assert_eq!(b.balance(), Tokens::ZERO);
    let b = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    assert_eq!(drain(&b, VerdictKind::Timeout), 50);
}

#[test]
fn aws_sdk_refill_five_first_try_successes_buy_one_retry() {
    let b = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    assert_eq!(drain(&b, T), 100);
    for _ in 0..4 {
        b.record_success(NOW, None);
    }
    assert!(!b.try_spend(NOW, T), "4 tokens do not pay for 5");
    assert_eq!(
        b.balance(),
        Tokens::whole(4),
        "a refused retry costs nothing"
    );
    b.record_success(NOW, None);
    assert!(b.try_spend(NOW, T));
    // A successful retry refunds its own cost (10 after a timeout).
    b.record_success(NOW, Some(VerdictKind::Timeout));
    assert_eq!(b.balance(), Tokens::whole(10));
    // Unretried failures cost nothing in this mode.
    b.record_unretried_failure(NOW, T);
    assert_eq!(b.balance(), Tokens::whole(10));
}

#[test]
fn brooker_needs_more_than_one_whole_token() {
    let b = TokenBucket::new(TokenBucketConfig::BROOKER_2022).unwrap();
    assert_eq!(drain(&b, T), 4, "5 → 1: a retry needs bucket > 1.0");
    for _ in 0..10 {
        b.record_success(NOW, None);
    }
    assert_eq!(b.balance(), Tokens::whole(2));
    assert!(b.try_spend(NOW, T));
    assert!(!b.try_spend(NOW, T));
}

#[test]
fn invalid_configs_are_refused() {
    let base = TokenBucketConfig::AWS_SDK_STANDARD;
    let cases = [
        (
            TokenBucketConfig {
                capacity: Tokens::ZERO,
                initial: Tokens::ZERO,
                ..base
            },
            BudgetConfigError::ZeroCapacity,
        ),
        (
            TokenBucketConfig {
                initial: Tokens::whole(501),
                ..base
            },
            BudgetConfigError::InitialAboveCapacity,
        ),
        (
            TokenBucketConfig {
                retry_cost: Tokens::ZERO,
                ..base
            },
            BudgetConfigError::ZeroCost,
        ),
        (
            TokenBucketConfig {
                timeout_retry_cost: Tokens::ZERO,
                ..base
            },
            BudgetConfigError::ZeroCost,
        ),
        (
            TokenBucketConfig {
                floor: Tokens::whole(496),
                ..base
            },
            BudgetConfigError::FloorUnreachable,
        ),
    ];
    for (config, error) in cases {
        assert_eq!(TokenBucket::new(config).err(), Some(error), "{config:?}");
    }
    let edge = TokenBucketConfig {
        floor: Tokens::whole(495),
        ..base
    };
    let b = TokenBucket::new(edge).unwrap();
    assert_eq!(
        drain(&b, T),
        1,
        "floor + cost = capacity: exactly one retry"
    );
}

#[test]
fn extreme_amounts_saturate() {
    let max = TokenBucketConfig::MAX_CAPACITY;
    let huge = TokenBucketConfig {
        capacity: max,
        initial: max,
        retry_cost: max,
        timeout_retry_cost: Tokens::milli(1),
        first_try_success: Tokens::milli(u32::MAX),
        retry_success: RetrySuccess::RefundCost,
        floor: Tokens::ZERO,
        charge: Charge::EveryFailure,
    };
    let b = TokenBucket::new(huge).unwrap();
    // A deposit of u32::MAX onto a full bucket stops at the capacity, below the slot bit.
    b.record_success(NOW, None);
    assert_eq!(b.balance(), max);
    assert_eq!(b.config(), huge, "the slot bit untouched");
    assert!(b.try_spend(NOW, T));
    assert!(!b.try_spend(NOW, T));
    assert!(!b.try_spend(NOW, VerdictKind::Timeout));
    // A cost of u32::MAX drains a full bucket to zero, never below.
    let dearest = TokenBucket::new(TokenBucketConfig {
        retry_cost: Tokens::milli(u32::MAX),
        ..huge
    })
    .unwrap();
    dearest.record_unretried_failure(NOW, T);
    assert_eq!(dearest.balance(), Tokens::ZERO);
    assert_eq!(dearest.config().charge, Charge::EveryFailure);
    assert_eq!(Tokens::whole(u32::MAX), Tokens::milli(u32::MAX));
}

#[test]
fn a_capacity_above_the_balance_word_is_refused() {
    let above = TokenBucketConfig {
        capacity: Tokens::milli(TokenBucketConfig::MAX_CAPACITY.as_milli() + 1),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    };
    assert_eq!(
        TokenBucket::new(above).err(),
        Some(BudgetConfigError::CapacityAboveMax)
    );
    assert_eq!(
        TokenBucketConfig::MAX_CAPACITY,
        Tokens::milli((1 << 31) - 1)
    );
}

#[test]
fn every_config_reads_back_whole_from_its_slot() {
    let presets = [
        TokenBucketConfig::AWS_SDK_STANDARD,
        TokenBucketConfig::BROOKER_2022,
        TokenBucketConfig::GRPC_A6_EXAMPLE,
    ];
    for c in presets {
        assert_eq!(TokenBucket::new(c).unwrap().config(), c);
        let flipped = TokenBucketConfig {
            charge: match c.charge {
                Charge::EveryFailure => Charge::GrantedRetry,
                Charge::GrantedRetry => Charge::EveryFailure,
            },
            retry_success: match c.retry_success {
                RetrySuccess::RefundCost => RetrySuccess::Deposit(Tokens::milli(7)),
                RetrySuccess::Deposit(_) => RetrySuccess::RefundCost,
            },
            ..c
        };
        assert_eq!(TokenBucket::new(flipped).unwrap().config(), flipped);
    }
}

#[test]
fn pure_rules() {
    assert_eq!(spend(10, 1, 5, Charge::EveryFailure), (9, true));
    assert_eq!(spend(5, 1, 5, Charge::EveryFailure), (4, false));
    assert_eq!(spend(0, 1, 0, Charge::EveryFailure), (0, false));
    assert_eq!(spend(5, 5, 0, Charge::GrantedRetry), (0, true));
    assert_eq!(spend(4, 5, 0, Charge::GrantedRetry), (4, false));
    assert_eq!(
        spend(u32::MAX, u32::MAX, u32::MAX, Charge::GrantedRetry),
        (u32::MAX, false)
    );
    assert_eq!(deposit(9, 5, 10), 10);
    assert_eq!(deposit(u32::MAX, 5, u32::MAX), u32::MAX);
}
