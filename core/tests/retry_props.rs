//! Properties of the backoff formulas, the retry decision machine and both budgets.
#![cfg(not(loom))]

use core::cell::Cell;
use core::time::Duration;

use proptest::prelude::*;

use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::budget::{
    Charge, RatioBudget, RatioBudgetConfig, RetryBudget, RetrySuccess, TokenBucket,
    TokenBucketConfig, Tokens,
};
use resilix::retry::{
    Backoff, GiveUpReason, Retry, RetryConfig, Strategy as Formula, UncertainRetry,
};
use resilix::time::{Deadline, Instant};
use resilix::{RejectReason, Verdict, VerdictKind};

fn strategy() -> impl proptest::strategy::Strategy<Value = Formula> {
    prop_oneof![
        Just(Formula::None),
        Just(Formula::Exponential),
        Just(Formula::FullJitter),
        Just(Formula::EqualJitter),
        Just(Formula::Decorrelated),
    ]
}

/// A duration as the core's u64-nanosecond timeline holds it: past its end, the end.
fn on_timeline(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn verdict() -> impl proptest::strategy::Strategy<Value = Verdict> {
    prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Answered),
        Just(Verdict::Transient),
        Just(Verdict::Uncertain),
        Just(Verdict::Timeout),
        Just(Verdict::Rejected(RejectReason::CircuitOpen)),
        Just(Verdict::Overload { retry_after: None }),
        (0u64..5_000_000_000).prop_map(|n| Verdict::Overload {
            retry_after: Some(Duration::from_nanos(n))
        }),
        Just(Verdict::Overload {
            retry_after: Some(Duration::MAX)
        }),
    ]
}

proptest! {
    #[test]
    fn delays_respect_their_formula_and_never_exceed_the_cap(
        s in strategy(),
        base in 1u64..1_000_000_000_000,
        extra in 0u64..1_000_000_000_000,
        attempt in any::<u32>(),
        previous in any::<u64>(),
        seed in any::<u64>(),
    ) {
        let cap = base.saturating_add(extra);
        let b = Backoff::new(s, Duration::from_nanos(base), Duration::from_nanos(cap)).unwrap();
        let mut rng = SeededRandom::new(seed);
        let d = b.delay(attempt, Duration::from_nanos(previous), &mut rng);
        let ceiling = b.ceiling(attempt);
        prop_assert!(d <= b.cap());
        match s {
            Formula::None => prop_assert_eq!(d, Duration::ZERO),
            Formula::Exponential => prop_assert_eq!(d, ceiling),
            Formula::FullJitter => prop_assert!(d <= ceiling),
            Formula::EqualJitter => prop_assert!(d >= ceiling / 2 && d <= ceiling),
            Formula::Decorrelated => {
                prop_assert!(d >= Duration::from_nanos(base));
                let top = Duration::from_nanos(previous.max(base).saturating_mul(3));
                prop_assert!(d <= top);
            }
            _ => prop_assert!(false, "a formula this property does not know"),
        }
    }
}

/// Wraps a budget and remembers what the last `try_spend` answered, and how many it granted.
struct Watched<B> {
    inner: B,
    asked: Cell<Option<bool>>,
    granted: Cell<u32>,
}

impl<B: RetryBudget> RetryBudget for Watched<B> {
    fn record_first_attempt(&self, now: Instant) {
        self.inner.record_first_attempt(now)
    }
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        let ok = self.inner.try_spend(now, after);
        self.asked.set(Some(ok));
        self.granted.set(self.granted.get() + ok as u32);
        ok
    }
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        self.inner.record_unretried_failure(now, after)
    }
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        self.inner.record_success(now, retried_after)
    }
}

proptest! {
    /// Any sequence of verdicts and clock steps (backwards, huge, to the end of time): every
    /// decision follows the verdict rule, the deadline, Retry-After, the attempt cap and the
    /// budget, and "budget said no" happens exactly when the budget refused.
    #[test]
    fn the_retry_machine_keeps_every_rule(
        max_attempts in 1u32..6,
        s in strategy(),
        idempotent in any::<bool>(),
        deadline_ms in proptest::option::of(0u64..20_000),
        initial_tokens in 0u32..30,
        steps in proptest::collection::vec((verdict(), any::<i32>(), any::<bool>()), 1..40),
        seed in any::<u64>(),
        cap in prop_oneof![
            Just(RetryConfig::DEFAULT_MAX_RETRY_AFTER),
            Just(Duration::MAX),
            (0u64..5_000_000_000).prop_map(Duration::from_nanos),
        ],
        uncertain in prop_oneof![Just(UncertainRetry::Always), Just(UncertainRetry::IdempotentOnly)],
    ) {
        let bucket = TokenBucket::new(TokenBucketConfig {
            initial: Tokens::whole(initial_tokens),
            ..TokenBucketConfig::AWS_SDK_STANDARD
        }).unwrap();
        let budget = Watched { inner: bucket, asked: Cell::new(None), granted: Cell::new(0) };
        let backoff = Backoff::new(s, Duration::from_millis(5), Duration::from_secs(2)).unwrap();
        let config = RetryConfig::new(max_attempts, backoff)
            .unwrap()
            .with_max_retry_after(cap)
            .with_uncertain_retry(uncertain);
        let pipeline = Pipeline::new().retry(Retry::new(config, &budget));
        let mut rng = SeededRandom::new(seed);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        let deadline = deadline_ms.map(|ms| Deadline::at(Instant::from_millis(ms)));
        let mut options = CallOptions::default().idempotent(idempotent);
        if let Some(d) = deadline {
            options = options.deadline(d);
        }
        let mut call = pipeline.call(env.now, options);
        let mut scheduled = 0u32;
        for (v, step, jump_to_end) in steps {
            let attempt = match call.admit(&mut env) {
                Ok(a) => a,
                Err(_) => {
                    prop_assert!(deadline.is_some_and(|d| d.has_passed(env.now)));
                    break;
                }
            };
            // Time moves during the attempt: forwards, backwards, or to the end of time.
            env.now = if jump_to_end {
                Instant::MAX
            } else if step >= 0 {
                env.now + Duration::from_micros(step as u64)
            } else {
                env.now - Duration::from_micros(step.unsigned_abs() as u64)
            };
            budget.asked.set(None);
            let now = env.now;
            let next = call.settle(attempt, &v, &mut env);
            let retryable = matches!(v, Verdict::Transient | Verdict::Overload { .. })
                || (matches!(v, Verdict::Timeout) && idempotent)
                || (matches!(v, Verdict::Uncertain) && (idempotent || uncertain == UncertainRetry::Always));
            match next {
                Next::Done => {
                    prop_assert!(matches!(v, Verdict::Success | Verdict::Answered));
                    break;
                }
                Next::RetryAt(at) => {
                    prop_assert!(retryable);
                    prop_assert!(call.attempts() < max_attempts);
                    prop_assert!(at >= now);
                    prop_assert!(at - now <= Duration::from_secs(2).max(v.retry_after().unwrap_or_default()));
                    if let Some(ra) = v.retry_after() {
                        prop_assert!(at >= now + ra);
                        prop_assert!(on_timeline(ra) <= on_timeline(config.max_retry_after()), "waited beyond the cap");
                    }
                    if let Some(d) = deadline {
                        prop_assert!(at < d.instant(), "scheduled at or after the deadline");
                    }
                    prop_assert_eq!(budget.asked.get(), Some(true));
                    scheduled += 1;
                    env.now = at;
                }
                Next::GiveUp(reason) => {
                    match reason {
                        GiveUpReason::NotRetryable(kind) => {
                            prop_assert!(!retryable);
                            prop_assert_eq!(kind, v.kind());
                        }
                        GiveUpReason::AttemptsExhausted { attempts } => {
                            prop_assert!(retryable);
                            prop_assert_eq!(attempts, max_attempts);
                        }
                        GiveUpReason::BudgetExceeded => {
                            prop_assert!(retryable);
                            prop_assert_eq!(budget.asked.get(), Some(false));
                        }
                        GiveUpReason::DeadlineWouldPass => prop_assert!(deadline.is_some()),
                        GiveUpReason::RetryAfterBeyondDeadline => {
                            prop_assert!(deadline.is_some() && v.retry_after().is_some());
                            prop_assert!(v.retry_after().map(on_timeline) <= Some(on_timeline(config.max_retry_after())));
                        }
                        GiveUpReason::RetryAfterTooLong => {
                            prop_assert!(retryable && call.attempts() < max_attempts);
                            prop_assert!(v.retry_after().map(on_timeline) > Some(on_timeline(config.max_retry_after())));
                        }
                        _ => prop_assert!(false, "a give-up reason this property does not know: {:?}", reason),
                    }
                    if reason != GiveUpReason::BudgetExceeded {
                        prop_assert_eq!(budget.asked.get(), None, "budget asked needlessly");
                    }
                    break;
                }
            }
        }
        prop_assert_eq!(scheduled, budget.granted.get());
        prop_assert!(call.attempts() <= max_attempts);
    }
}

#[derive(Clone, Copy, Debug)]
enum BucketOp {
    Spend(VerdictKind),
    Unretried(VerdictKind),
    Success(Option<VerdictKind>),
}

fn kind() -> impl proptest::strategy::Strategy<Value = VerdictKind> {
    prop_oneof![
        Just(VerdictKind::Transient),
        Just(VerdictKind::Overload),
        Just(VerdictKind::Timeout)
    ]
}

fn bucket_op() -> impl proptest::strategy::Strategy<Value = BucketOp> {
    prop_oneof![
        kind().prop_map(BucketOp::Spend),
        kind().prop_map(BucketOp::Unretried),
        proptest::option::of(kind()).prop_map(BucketOp::Success),
    ]
}

/// The token bucket as its sources state it, in plain u64 arithmetic, one op at a time.
fn model_step(c: &TokenBucketConfig, balance: &mut u64, op: BucketOp) -> Option<bool> {
    let cost = |k: VerdictKind| {
        u64::from(
            if k == VerdictKind::Timeout {
                c.timeout_retry_cost
            } else {
                c.retry_cost
            }
            .as_milli(),
        )
    };
    let floor = u64::from(c.floor.as_milli());
    let cap = u64::from(c.capacity.as_milli());
    match op {
        BucketOp::Spend(k) => Some(match c.charge {
            Charge::EveryFailure => {
                let before = *balance;
                *balance = before.saturating_sub(cost(k));
                before >= cost(k) + floor
            }
            Charge::GrantedRetry => {
                if *balance >= cost(k) + floor {
                    *balance -= cost(k);
                    true
                } else {
                    false
                }
            }
        }),
        BucketOp::Unretried(k) => {
            if c.charge == Charge::EveryFailure {
                *balance = balance.saturating_sub(cost(k));
            }
            None
        }
        BucketOp::Success(after) => {
            let amount = match (after, c.retry_success) {
                (None, _) => u64::from(c.first_try_success.as_milli()),
                (Some(_), RetrySuccess::Deposit(t)) => u64::from(t.as_milli()),
                (Some(k), RetrySuccess::RefundCost) => cost(k),
            };
            *balance = (*balance + amount).min(cap);
            None
        }
    }
}

fn bucket_config() -> impl proptest::strategy::Strategy<Value = TokenBucketConfig> {
    prop_oneof![
        Just(TokenBucketConfig::GRPC_A6_EXAMPLE),
        Just(TokenBucketConfig::AWS_SDK_STANDARD),
        Just(TokenBucketConfig::BROOKER_2022),
        (1u32..=1_000_000, 1u32..5_000).prop_filter_map("valid gRPC", |(max, ratio)| {
            TokenBucketConfig::grpc(Tokens::milli(max), Tokens::milli(ratio)).ok()
        }),
    ]
}

proptest! {
    #[test]
    fn the_token_bucket_matches_its_model_to_the_thousandth(
        config in bucket_config(),
        ops in proptest::collection::vec(bucket_op(), 0..300),
    ) {
        let Ok(bucket) = TokenBucket::new(config) else { return Ok(()) };
        let mut model = u64::from(config.initial.as_milli());
        for op in ops {
            let expected = model_step(&config, &mut model, op);
            let got = match op {
                BucketOp::Spend(k) => Some(bucket.try_spend(Instant::ZERO, k)),
                BucketOp::Unretried(k) => { bucket.record_unretried_failure(Instant::ZERO, k); None }
                BucketOp::Success(a) => { bucket.record_success(Instant::ZERO, a); None }
            };
            prop_assert_eq!(got, expected, "{:?}", op);
            prop_assert_eq!(u64::from(bucket.balance().as_milli()), model);
            prop_assert!(bucket.balance() <= config.capacity);
        }
    }

    /// Within one bucket period the ratio budget is exact: a retry is granted iff
    /// retries + 1 ≤ max(floor, ⌊firsts · permille / 1000⌋).
    #[test]
    fn the_ratio_budget_matches_its_model_within_a_period(
        permille in 0u32..2_000,
        floor in 0u32..10,
        ops in proptest::collection::vec(any::<bool>(), 0..500),
        at in any::<u64>(),
    ) {
        let config = RatioBudgetConfig { max_retry_permille: permille, min_retries_per_window: floor, window: Duration::from_secs(10) };
        let Ok(budget) = RatioBudget::new(config) else {
            prop_assert!((permille == 0 && floor == 0) || permille > RatioBudgetConfig::MAX_RETRY_PERMILLE);
            return Ok(());
        };
        let now = Instant::from_nanos(at);
        let (mut firsts, mut retries) = (0u64, 0u64);
        for first in ops {
            if first {
                budget.record_first_attempt(now);
                firsts += 1;
            } else {
                let allowed = (firsts * u64::from(permille) / 1000).max(u64::from(floor));
                let expected = retries < allowed;
                prop_assert_eq!(budget.try_spend(now, VerdictKind::Transient), expected);
                retries += expected as u64;
            }
            prop_assert_eq!(budget.counts(now), (firsts as u32, retries as u32));
        }
    }

    /// Across periods, time jumps and backwards steps: every grant leaves the window's
    /// retries within its allowance, and nothing panics.
    #[test]
    fn the_ratio_budget_stays_within_its_allowance_as_time_moves(
        ops in proptest::collection::vec((any::<bool>(), any::<i64>()), 0..300),
    ) {
        let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
        let mut now = Instant::from_secs(100);
        for (first, step) in ops {
            now = if step >= 0 { now + Duration::from_millis((step % 30_000) as u64) }
                  else { now - Duration::from_millis(step.unsigned_abs() % 30_000) };
            if first {
                budget.record_first_attempt(now);
            } else if budget.try_spend(now, VerdictKind::Transient) {
                let (f, r) = budget.counts(now);
                prop_assert!(r <= budget.allowance(f), "{} retries > allowance of {} firsts", r, f);
            }
        }
    }
}
