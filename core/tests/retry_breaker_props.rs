//! Properties of the retry circuit breaker over random sequences of budget calls: a grant
//! happens exactly when the rate (with the failure being retried) is at most the threshold or
//! the attempts are below the minimum; a refusal adds no attempt; the books equal what was
//! recorded; more first attempts never turn a grant into a refusal (without a minimum); and
//! the window always forgets.

use core::time::Duration;

use proptest::prelude::*;
use resilix::VerdictKind;
use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig, RetryBudget};
use resilix::time::Instant;

#[derive(Clone, Copy, Debug)]
enum Op {
    First,
    Failure,
    Spend,
    Success,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::First),
        1 => Just(Op::Failure),
        2 => Just(Op::Spend),
        2 => Just(Op::Success),
    ]
}

fn config() -> impl Strategy<Value = RetryBreakerConfig> {
    (1u32..=999, 0u32..30).prop_map(|(permille, min)| RetryBreakerConfig {
        max_failure_permille: permille,
        min_attempts: min,
        window: Duration::from_secs(10),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// In one bucket period: every grant obeys the rule, a refusal adds only the failure, and
    /// the books are the sums of what was recorded.
    #[test]
    fn every_grant_obeys_the_rule_and_the_books_add_up(
        c in config(),
        ops in proptest::collection::vec(op(), 1..400),
    ) {
        let b: RetryBreaker = RetryBreaker::new(c).unwrap();
        let now = Instant::from_secs(2);
        let (mut attempts, mut failures) = (0u32, 0u32);
        for op in ops {
            match op {
                Op::First => { b.record_first_attempt(now); attempts += 1; }
                Op::Failure => { b.record_unretried_failure(now, VerdictKind::Transient); failures += 1; }
                Op::Success => b.record_success(now, None),
                Op::Spend => {
                    failures += 1;
                    let rule = attempts < c.min_attempts
                        || u64::from(failures) * 1000 <= u64::from(c.max_failure_permille) * u64::from(attempts);
                    let granted = b.try_spend(now, VerdictKind::Transient);
                    prop_assert_eq!(granted, rule, "at {} attempts, {} failures", attempts, failures);
                    if granted { attempts += 1; }
                }
            }
            prop_assert_eq!(b.counts(now), (attempts, failures));
            prop_assert_eq!(b.is_tripped(now), !b.allows(attempts, failures));
        }
    }

    /// More first attempts never hurt a breaker without a minimum: one that heard extra first
    /// attempts grants at least every retry the other grants, given the same failures. (With a
    /// minimum they can: the quieter breaker is still below it and grants anything.)
    #[test]
    fn first_attempts_only_ever_help(
        c in config(),
        ops in proptest::collection::vec(op(), 1..300),
        extra in 1u32..50,
    ) {
        let c = RetryBreakerConfig { min_attempts: 0, ..c };
        let plain: RetryBreaker = RetryBreaker::new(c).unwrap();
        let more: RetryBreaker = RetryBreaker::new(c).unwrap();
        let now = Instant::from_secs(4);
        for _ in 0..extra {
            more.record_first_attempt(now);
        }
        for op in ops {
            match op {
                Op::First => { plain.record_first_attempt(now); more.record_first_attempt(now); }
                Op::Failure => {
                    plain.record_unretried_failure(now, VerdictKind::Overload);
                    more.record_unretried_failure(now, VerdictKind::Overload);
                }
                Op::Success => {}
                Op::Spend => {
                    let p = plain.try_spend(now, VerdictKind::Overload);
                    // The other hears the same failure; a grant of its own is one more attempt,
                    // which only helps it further.
                    let m = more.try_spend(now, VerdictKind::Overload);
                    prop_assert!(m || !p, "the better-informed breaker refused what the other granted");
                }
            }
        }
    }

    /// The window forgets: whatever happened, a window and a bucket later nothing is counted
    /// and the breaker is not tripped.
    #[test]
    fn the_window_always_forgets(
        c in config(),
        ops in proptest::collection::vec(op(), 1..200),
        later in 11_000u64..10_000_000_000,
    ) {
        let b: RetryBreaker = RetryBreaker::new(c).unwrap();
        let now = Instant::from_secs(1);
        for op in ops {
            match op {
                Op::First => b.record_first_attempt(now),
                Op::Failure => b.record_unretried_failure(now, VerdictKind::Timeout),
                Op::Spend => { let _ = b.try_spend(now, VerdictKind::Timeout); }
                Op::Success => b.record_success(now, Some(VerdictKind::Timeout)),
            }
        }
        let then = now.saturating_add(Duration::from_millis(later));
        prop_assert_eq!(b.counts(then), (0, 0));
        prop_assert!(!b.is_tripped(then));
    }
}
