use super::*;
use crate::random::SeededRandom;
use crate::rejection::RejectReason;
use crate::retry::backoff::Strategy;
use crate::retry::budget::{TokenBucket, TokenBucketConfig, Tokens};
use crate::time::Deadline;

const MS: Duration = Duration::from_millis(1);

fn exp(max_attempts: u32) -> RetryConfig {
    // No jitter, so delays are exact: 10, 20, 40 ms after attempts 1, 2, 3.
    RetryConfig::new(
        max_attempts,
        Backoff::new(Strategy::Exponential, 5 * MS, 2_000 * MS).unwrap(),
    )
    .unwrap()
}

fn outcome(verdict: Verdict, attempt: u32) -> AttemptOutcome {
    AttemptOutcome {
        verdict,
        attempt,
        idempotent: false,
        deadline: None,
    }
}

fn decide_at<B: RetryBudget>(
    retry: &Retry<B>,
    state: &mut RetryState,
    o: AttemptOutcome,
    now: Instant,
) -> RetryDecision {
    let mut rng = SeededRandom::new(9);
    let mut env = Env::new(now, &mut rng);
    retry.decide(state, &o, &mut env)
}

#[test]
fn answered_rejected_and_success_are_never_retried() {
    let r = Retry::unbudgeted(exp(10));
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Success, 1), Instant::ZERO),
        RetryDecision::Done
    );
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Answered, 1), Instant::ZERO),
        RetryDecision::Done
    );
    for reason in RejectReason::ALL {
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(
                &r,
                &mut s,
                outcome(Verdict::Rejected(reason), 1),
                Instant::ZERO
            ),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Rejected))
        );
    }
}

#[test]
fn timeout_is_retried_only_when_idempotent() {
    let r = Retry::unbudgeted(exp(3));
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Timeout, 1), Instant::ZERO),
        RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Timeout))
    );
    let mut s = r.begin(Instant::ZERO);
    let o = AttemptOutcome {
        idempotent: true,
        ..outcome(Verdict::Timeout, 1)
    };
    assert_eq!(
        decide_at(&r, &mut s, o, Instant::ZERO),
        RetryDecision::RetryAt(Instant::from_millis(10))
    );
}

#[test]
fn uncertain_is_retried_for_a_post_unless_set_idempotent_only() {
    use crate::retry::UncertainRetry;
    let post = outcome(Verdict::Uncertain, 1);
    let put = AttemptOutcome {
        idempotent: true,
        ..post
    };
    // Default (docs/design/spec.md §3.2): a POST answered 500 is retried after its backoff.
    let r = Retry::unbudgeted(exp(3));
    for o in [post, put] {
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, o, Instant::ZERO),
            RetryDecision::RetryAt(Instant::from_millis(10)),
            "{o:?}"
        );
    }
    // IdempotentOnly (RFC 9110 §9.2.2): the POST gives up, the PUT is still retried.
    let r = Retry::unbudgeted(exp(3).with_uncertain_retry(UncertainRetry::IdempotentOnly));
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, post, Instant::ZERO),
        RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Uncertain))
    );
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, put, Instant::ZERO),
        RetryDecision::RetryAt(Instant::from_millis(10))
    );
}

#[test]
fn exponential_schedule_then_attempts_exhausted() {
    let r = Retry::unbudgeted(exp(4));
    let mut s = r.begin(Instant::ZERO);
    let mut now = Instant::ZERO;
    for (attempt, wait) in [(1, 10), (2, 20), (3, 40)] {
        match decide_at(&r, &mut s, outcome(Verdict::Transient, attempt), now) {
            RetryDecision::RetryAt(at) => {
                assert_eq!(at - now, wait * MS);
                now = at;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Transient, 4), now),
        RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 4 })
    );
}

#[test]
fn one_attempt_means_no_retry() {
    let r = Retry::unbudgeted(exp(1));
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(
            &r,
            &mut s,
            outcome(Verdict::Overload { retry_after: None }, 1),
            Instant::ZERO
        ),
        RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 })
    );
}

#[test]
fn retry_after_is_a_floor_under_the_backoff() {
    let r = Retry::unbudgeted(exp(5));
    let long = Verdict::Overload {
        retry_after: Some(2 * Duration::from_secs(1)),
    };
    let short = Verdict::Overload {
        retry_after: Some(MS),
    };
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, outcome(long, 1), Instant::ZERO),
        RetryDecision::RetryAt(Instant::from_secs(2))
    );
    assert_eq!(
        s.previous_delay(),
        10 * MS,
        "the series continues from the backoff"
    );
    assert_eq!(
        decide_at(&r, &mut s, outcome(short, 2), Instant::from_secs(2)),
        RetryDecision::RetryAt(Instant::from_secs(2) + 20 * MS)
    );
}

#[test]
fn the_delay_counts_against_the_deadline() {
    let r = Retry::unbudgeted(exp(5));
    let with = |deadline_ms: u64| AttemptOutcome {
        deadline: Some(Deadline::at(Instant::from_millis(deadline_ms))),
        ..outcome(Verdict::Transient, 1)
    };
    // The retry would start at 100 + 10 = 110 ms.
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, with(111), Instant::from_millis(100)),
        RetryDecision::RetryAt(Instant::from_millis(110))
    );
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, with(110), Instant::from_millis(100)),
        RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass),
        "an attempt cannot start at the instant the deadline passes"
    );
}

#[test]
fn retry_after_beyond_the_deadline_gives_up_at_once() {
    let r = Retry::unbudgeted(exp(5));
    let o = |ra_ms: u32| AttemptOutcome {
        deadline: Some(Deadline::at(Instant::from_millis(500))),
        ..outcome(
            Verdict::Overload {
                retry_after: Some(ra_ms * MS),
            },
            1,
        )
    };
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, o(500), Instant::ZERO),
        RetryDecision::GiveUp(GiveUpReason::RetryAfterBeyondDeadline)
    );
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, o(499), Instant::ZERO),
        RetryDecision::RetryAt(Instant::from_millis(499))
    );
    // Without a deadline, and with no cap, any Retry-After is honoured, even one to the
    // end of time.
    let uncapped = Retry::unbudgeted(exp(5).with_max_retry_after(Duration::MAX));
    let mut s = uncapped.begin(Instant::ZERO);
    let forever = outcome(
        Verdict::Overload {
            retry_after: Some(Duration::MAX),
        },
        1,
    );
    assert_eq!(
        decide_at(&uncapped, &mut s, forever, Instant::from_secs(1)),
        RetryDecision::RetryAt(Instant::MAX)
    );
}

#[test]
fn retry_after_beyond_the_cap_gives_up_at_once() {
    let cap = Duration::from_secs(300);
    let r = Retry::unbudgeted(exp(5));
    assert_eq!(r.config().max_retry_after(), cap);
    let o = |ra: Duration, deadline: Option<Deadline>| AttemptOutcome {
        deadline,
        ..outcome(
            Verdict::Overload {
                retry_after: Some(ra),
            },
            1,
        )
    };
    let now = Instant::from_secs(10);
    // At the cap: honoured. One nanosecond more: gives up, deadline or not.
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, o(cap, None), now),
        RetryDecision::RetryAt(now + cap)
    );
    for deadline in [
        None,
        Some(Deadline::at(Instant::from_secs(5))),
        Some(Deadline::at(Instant::MAX)),
    ] {
        let mut s = r.begin(Instant::ZERO);
        assert_eq!(
            decide_at(&r, &mut s, o(cap + Duration::from_nanos(1), deadline), now),
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong),
            "{deadline:?}"
        );
        // Still before the budget and the backoff: nothing drawn, nothing spent.
        assert_eq!(s.previous_delay(), 5 * MS);
    }
    // Issue 13 point 5: a 364-day Retry-After and no deadline.
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, o(Duration::from_secs(364 * 86_400), None), now),
        RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong)
    );
    // A cap of zero honours only "Retry-After: 0".
    let r0 = Retry::unbudgeted(exp(5).with_max_retry_after(Duration::ZERO));
    let mut s = r0.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r0, &mut s, o(Duration::ZERO, None), now),
        RetryDecision::RetryAt(now + 10 * MS)
    );
    let mut s = r0.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r0, &mut s, o(Duration::from_nanos(1), None), now),
        RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong)
    );
    // Attempts run out first: that is the reason, not the Retry-After.
    let r1 = Retry::unbudgeted(exp(1));
    let mut s = r1.begin(Instant::ZERO);
    assert_eq!(
        decide_at(&r1, &mut s, o(Duration::MAX, None), now),
        RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 })
    );
}

#[test]
fn the_budget_is_asked_only_when_a_retry_would_happen() {
    let grpc = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
    let aws = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    let r_aws = Retry::new(exp(2), &aws);
    let mut s = r_aws.begin(Instant::ZERO);
    assert!(matches!(
        decide_at(
            &r_aws,
            &mut s,
            outcome(Verdict::Transient, 1),
            Instant::ZERO
        ),
        RetryDecision::RetryAt(_)
    ));
    assert_eq!(aws.balance(), Tokens::whole(495));
    // Attempts exhausted: not a budget matter, nothing spent.
    assert_eq!(
        decide_at(
            &r_aws,
            &mut s,
            outcome(Verdict::Transient, 2),
            Instant::ZERO
        ),
        RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 2 })
    );
    assert_eq!(aws.balance(), Tokens::whole(495));
    // A gRPC bucket is charged for that last failure all the same.
    let r_grpc = Retry::new(exp(1), &grpc);
    let mut s = r_grpc.begin(Instant::ZERO);
    let _ = decide_at(
        &r_grpc,
        &mut s,
        outcome(Verdict::Transient, 1),
        Instant::ZERO,
    );
    assert_eq!(grpc.balance(), Tokens::whole(9));
    // Not retryable: charged nothing.
    let mut s = r_grpc.begin(Instant::ZERO);
    let _ = decide_at(&r_grpc, &mut s, outcome(Verdict::Timeout, 1), Instant::ZERO);
    assert_eq!(grpc.balance(), Tokens::whole(9));
}

#[test]
fn budget_exceeded_is_its_own_reason() {
    let aws = TokenBucket::new(TokenBucketConfig {
        initial: Tokens::whole(5),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let r = Retry::new(exp(3), &aws);
    let mut s = r.begin(Instant::ZERO);
    assert!(matches!(
        decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO),
        RetryDecision::RetryAt(_)
    ));
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Transient, 2), Instant::ZERO),
        RetryDecision::GiveUp(GiveUpReason::BudgetExceeded)
    );
}

#[test]
fn success_after_a_retry_refunds_its_cost() {
    let aws = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    let r = Retry::new(exp(3), &aws);
    let mut s = r.begin(Instant::ZERO);
    let o = AttemptOutcome {
        idempotent: true,
        ..outcome(Verdict::Timeout, 1)
    };
    let _ = decide_at(&r, &mut s, o, Instant::ZERO);
    assert_eq!(aws.balance(), Tokens::whole(490));
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Success, 2), Instant::ZERO),
        RetryDecision::Done
    );
    assert_eq!(aws.balance(), Tokens::whole(500));
}

#[test]
fn rejected_first_attempts_are_not_requests() {
    let ratio: crate::retry::budget::RatioBudget =
        crate::retry::budget::RatioBudget::new(Default::default()).unwrap();
    let r = Retry::new(exp(3), &ratio);
    let mut s = r.begin(Instant::ZERO);
    let _ = decide_at(
        &r,
        &mut s,
        outcome(Verdict::Rejected(RejectReason::CircuitOpen), 1),
        Instant::ZERO,
    );
    assert_eq!(ratio.counts(Instant::ZERO), (0, 0));
    let mut s = r.begin(Instant::ZERO);
    let _ = decide_at(&r, &mut s, outcome(Verdict::Answered, 1), Instant::ZERO);
    assert_eq!(ratio.counts(Instant::ZERO), (1, 0));
}

#[test]
fn decorrelated_state_carries_the_previous_draw() {
    let cfg = RetryConfig::new(
        10,
        Backoff::new(Strategy::Decorrelated, 5 * MS, 2_000 * MS).unwrap(),
    )
    .unwrap();
    let r = Retry::unbudgeted(cfg);
    let mut s = r.begin(Instant::ZERO);
    assert_eq!(s.previous_delay(), 5 * MS);
    let mut now = Instant::ZERO;
    for attempt in 1..10 {
        let prev = s.previous_delay();
        match decide_at(&r, &mut s, outcome(Verdict::Transient, attempt), now) {
            RetryDecision::RetryAt(at) => {
                let d = at - now;
                assert!(
                    d >= 5 * MS && d <= (3 * prev).min(2_000 * MS),
                    "{d:?} after {prev:?}"
                );
                assert_eq!(s.previous_delay(), d);
                now = at;
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn time_edges_never_panic() {
    let r = Retry::unbudgeted(RetryConfig::DEFAULT);
    for now in [
        Instant::ZERO,
        Instant::MAX,
        Instant::from_secs(365 * 86_400),
    ] {
        let mut s = r.begin(now);
        let o = AttemptOutcome {
            deadline: Some(Deadline::at(Instant::ZERO)),
            ..outcome(Verdict::Transient, 1)
        };
        assert_eq!(
            decide_at(&r, &mut s, o, now),
            RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass)
        );
        let mut s = r.begin(now);
        let d = decide_at(&r, &mut s, outcome(Verdict::Transient, 1), now);
        assert!(
            matches!(d, RetryDecision::RetryAt(at) if at >= now),
            "{d:?}"
        );
    }
    // A driver repeating attempt numbers cannot stall the count.
    let r = Retry::unbudgeted(exp(3));
    let mut s = r.begin(Instant::ZERO);
    let _ = decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO);
    let _ = decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO);
    assert_eq!(
        decide_at(&r, &mut s, outcome(Verdict::Transient, 1), Instant::ZERO),
        RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 3 })
    );
}
