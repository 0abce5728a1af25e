//! The retry machine and both budgets under arbitrary operation sequences.
//!
//! Each input byte picks an operation: start a call (idempotent or not, with or without a
//! deadline), admit and settle an attempt with any verdict, move the clock (forwards, backwards,
//! a year, to the end of time), or act on the budgets directly. After each step the invariants
//! are asserted: a retry is never scheduled at or past the deadline nor before now, the verdict
//! rule holds, attempts never exceed the cap, "budget exceeded" happens exactly when the budget
//! refused, the token bucket matches an exact model and never exceeds its capacity, and the
//! ratio budget's grants never exceed its allowance.
#![no_main]

use core::cell::Cell;
use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig, Tokens,
};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig, Strategy, UncertainRetry};
use resilix::time::{Deadline, Instant};
use resilix::{RejectReason, Verdict, VerdictKind};

/// Both budgets at once: a retry needs both; remembers what was asked.
struct Both<'a> {
    bucket: &'a TokenBucket,
    ratio: &'a RatioBudget,
    asked: Cell<Option<bool>>,
    model: Cell<u64>,
}

impl RetryBudget for Both<'_> {
    fn record_first_attempt(&self, now: Instant) {
        self.ratio.record_first_attempt(now);
    }
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        // The ratio is asked first and only a granted ratio reaches the bucket, so a refusal
        // by either leaves the bucket's model unchanged.
        let ok = self.ratio.try_spend(now, after) && {
            let cost = if after == VerdictKind::Timeout { 10_000 } else { 5_000 };
            let granted = self.bucket.try_spend(now, after);
            let m = self.model.get();
            assert_eq!(granted, m >= cost, "bucket grant differs from the model");
            if granted {
                self.model.set(m - cost);
            }
            granted
        };
        if ok {
            let (f, r) = self.ratio.counts(now);
            assert!(r <= self.ratio.allowance(f), "ratio budget overspent");
        }
        self.asked.set(Some(ok));
        ok
    }
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        self.bucket.record_unretried_failure(now, after);
        self.ratio.record_unretried_failure(now, after);
    }
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        let amount = match retried_after {
            None => 1_000,
            Some(VerdictKind::Timeout) => 10_000,
            Some(_) => 5_000,
        };
        self.model.set((self.model.get() + amount).min(500_000));
        self.bucket.record_success(now, retried_after);
        self.ratio.record_success(now, retried_after);
    }
}

/// A duration as the core's u64-nanosecond timeline holds it: past its end, the end.
fn on_timeline(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn verdict(b: u8) -> Verdict {
    match b % 10 {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Transient,
        3 => Verdict::Uncertain,
        9 => Verdict::Overload { retry_after: Some(Duration::from_secs(u64::from(b) * 3)) },
        4 => Verdict::Timeout,
        5 => Verdict::Rejected(RejectReason::ALL[(b as usize / 9) % 6]),
        6 => Verdict::Overload { retry_after: None },
        7 => Verdict::Overload { retry_after: Some(Duration::from_millis(u64::from(b) * 40)) },
        _ => Verdict::Overload { retry_after: Some(Duration::MAX) },
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, ops)) = data.split_first() else { return };
    let strategy = [
        Strategy::None,
        Strategy::Exponential,
        Strategy::FullJitter,
        Strategy::EqualJitter,
        Strategy::Decorrelated,
    ][head as usize % 5];
    let max_attempts = u32::from(head / 5 % 6) + 1;
    let backoff = Backoff::new(strategy, Duration::from_millis(5), Duration::from_secs(2)).unwrap();
    // The Retry-After cap: the default, none, or a short one the fuzzer's waits cross.
    let cap = match head / 30 % 3 {
        0 => RetryConfig::DEFAULT_MAX_RETRY_AFTER,
        1 => Duration::MAX,
        _ => Duration::from_millis(u64::from(head) * 20),
    };
    // Whether a 500 (`Uncertain`) is retried for a call not declared idempotent.
    let uncertain = match head / 90 % 2 {
        0 => UncertainRetry::Always,
        _ => UncertainRetry::IdempotentOnly,
    };
    let config = RetryConfig::new(max_attempts, backoff)
        .unwrap()
        .with_max_retry_after(cap)
        .with_uncertain_retry(uncertain);
    let bucket = TokenBucket::new(TokenBucketConfig {
        initial: Tokens::whole(u32::from(head) % 40),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let ratio: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let both = Both {
        bucket: &bucket,
        ratio: &ratio,
        asked: Cell::new(None),
        model: Cell::new(u64::from(head) % 40 * 1_000),
    };
    let pipeline = Pipeline::new().retry(Retry::new(config, &both));
    let mut rng = SeededRandom::new(u64::from(head));
    let mut env = Env::new(Instant::from_secs(1), &mut rng);

    let mut i = 0;
    while i < ops.len() {
        let op = ops[i];
        let arg = ops.get(i + 1).copied().unwrap_or(0);
        i += 2;
        match op % 4 {
            // A whole call: attempts until it ends, each with the next byte's verdict.
            0 | 1 => {
                let idempotent = op & 0x10 != 0;
                let deadline = (op & 0x20 != 0)
                    .then(|| Deadline::after(env.now, Duration::from_millis(u64::from(arg) * 20)));
                let mut options = CallOptions::default().idempotent(idempotent);
                if let Some(d) = deadline {
                    options = options.deadline(d);
                }
                let mut call = pipeline.call(env.now, options);
                loop {
                    let Ok(attempt) = call.admit(&mut env) else {
                        assert!(deadline.is_some_and(|d| d.has_passed(env.now)));
                        break;
                    };
                    assert!(call.attempts() <= max_attempts);
                    let vb = ops.get(i).copied().unwrap_or(0);
                    i += 1;
                    let v = verdict(vb);
                    env.now = env.now + Duration::from_micros(u64::from(vb) * 97);
                    both.asked.set(None);
                    let now = env.now;
                    let retryable = matches!(v, Verdict::Transient | Verdict::Overload { .. })
                        || (matches!(v, Verdict::Timeout) && idempotent)
                        || (matches!(v, Verdict::Uncertain) && uncertain.permits(idempotent));
                    match call.settle(attempt, &v, &mut env) {
                        Next::Done => {
                            assert!(matches!(v, Verdict::Success | Verdict::Answered));
                            break;
                        }
                        Next::RetryAt(at) => {
                            assert!(retryable && at >= now);
                            assert!(call.attempts() < max_attempts);
                            if let Some(d) = deadline {
                                assert!(at < d.instant());
                            }
                            if let Some(ra) = v.retry_after() {
                                assert!(at >= now + ra);
                                assert!(on_timeline(ra) <= on_timeline(config.max_retry_after()));
                            }
                            assert_eq!(both.asked.get(), Some(true));
                            env.now = at;
                        }
                        Next::GiveUp(reason) => {
                            match reason {
                                GiveUpReason::NotRetryable(k) => assert!(!retryable && k == v.kind()),
                                GiveUpReason::AttemptsExhausted { attempts } => {
                                    assert!(retryable && attempts == max_attempts)
                                }
                                GiveUpReason::BudgetExceeded => {
                                    assert_eq!(both.asked.get(), Some(false))
                                }
                                GiveUpReason::DeadlineWouldPass => assert!(deadline.is_some()),
                                GiveUpReason::RetryAfterBeyondDeadline => {
                                    assert!(deadline.is_some() && v.retry_after().is_some());
                                    assert!(v.retry_after().map(on_timeline) <= Some(on_timeline(config.max_retry_after())));
                                }
                                GiveUpReason::RetryAfterTooLong => {
                                    assert!(retryable);
                                    assert!(v.retry_after().map(on_timeline) > Some(on_timeline(config.max_retry_after())));
                                }
                                _ => panic!("a give-up reason this target does not know: {reason:?}"),
                            }
                            if reason != GiveUpReason::BudgetExceeded {
                                assert_eq!(both.asked.get(), None);
                            }
                            break;
                        }
                    }
                }
            }
            // Move the clock.
            2 => {
                env.now = match arg % 5 {
                    0 => env.now + Duration::from_millis(u64::from(arg) * 13),
                    1 => env.now - Duration::from_millis(u64::from(arg) * 29),
                    2 => env.now + Duration::from_secs(365 * 86_400),
                    3 => Instant::MAX,
                    _ => Instant::from_nanos(u64::from(arg)),
                };
            }
            // Act on the budgets directly, as hedges or other pipelines would.
            _ => {
                let kind = [VerdictKind::Transient, VerdictKind::Overload, VerdictKind::Timeout]
                    [arg as usize % 3];
                match arg % 3 {
                    0 => {
                        let _ = both.try_spend(env.now, kind);
                    }
                    1 => both.record_success(env.now, (arg & 8 != 0).then_some(kind)),
                    _ => both.record_first_attempt(env.now),
                }
            }
        }
        assert_eq!(u64::from(bucket.balance().as_milli()), both.model.get());
        assert!(bucket.balance() <= Tokens::whole(500));
    }
});
