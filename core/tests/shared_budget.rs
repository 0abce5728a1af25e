//! One shared budget caps retries across three independent pipelines (spec §4, §10), driven
//! through the `Call` state machine exactly as an adapter drives it.
#![cfg(not(loom))]

use core::time::Duration;

use resilix::Verdict;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig, Tokens, Unlimited,
};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig, Strategy};
use resilix::time::{Deadline, Instant};

#[derive(Default, Debug, Clone, Copy)]
struct Tally {
    calls: u64,
    attempts: u64,
    successes: u64,
    budget_exceeded: u64,
    exhausted: u64,
}

fn config() -> RetryConfig {
    RetryConfig::new(
        3,
        Backoff::new(
            Strategy::FullJitter,
            Duration::from_millis(1),
            Duration::from_millis(50),
        )
        .unwrap(),
    )
    .unwrap()
}

/// Runs `calls_each` calls through each of three pipelines sharing `budget`, round-robin, with
/// an upstream that fails each attempt with probability `fail_permille / 1000`.
fn drive<B: RetryBudget>(budget: &B, calls_each: u64, fail_permille: u64, seed: u64) -> [Tally; 3] {
    let pipelines = [
        Pipeline::new().retry(Retry::new(config(), budget)),
        Pipeline::new().retry(Retry::new(config(), budget)),
        Pipeline::new().retry(Retry::new(config(), budget)),
    ];
    let mut upstream = SeededRandom::new(seed ^ 0xFA11);
    let mut rng = SeededRandom::new(seed);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    let mut tallies = [Tally::default(); 3];
    for _ in 0..calls_each {
        for (pipeline, tally) in pipelines.iter().zip(&mut tallies) {
            // Every call lasts well inside one window bucket: 1 ms per call.
            env.now = env.now + Duration::from_micros(10);
            let options =
                CallOptions::default().deadline(Deadline::after(env.now, Duration::from_secs(1)));
            let mut call = pipeline.call(env.now, options);
            tally.calls += 1;
            loop {
                let attempt = call
                    .admit(&mut env)
                    .expect("nothing in these pipelines refuses");
                tally.attempts += 1;
                let verdict = if upstream.below(1000) < fail_permille {
                    Verdict::Transient
                } else {
                    Verdict::Success
                };
                match call.settle(attempt, &verdict, &mut env) {
                    Next::Done => {
                        tally.successes += 1;
                        break;
                    }
                    Next::RetryAt(at) => env.now = at,
                    Next::GiveUp(GiveUpReason::BudgetExceeded) => {
                        tally.budget_exceeded += 1;
                        break;
                    }
                    Next::GiveUp(GiveUpReason::AttemptsExhausted { attempts }) => {
                        assert_eq!(attempts, 3);
                        tally.exhausted += 1;
                        break;
                    }
                    Next::GiveUp(other) => panic!("unexpected give-up: {other}"),
                }
            }
        }
    }
    tallies
}

fn retries(t: &[Tally; 3]) -> u64 {
    t.iter().map(|t| t.attempts - t.calls).sum()
}

#[test]
fn a_shared_token_bucket_caps_retries_across_three_pipelines() {
    // 50 tokens at 5 a retry: ten retries for the whole process, however they are split.
    let bucket = TokenBucket::new(TokenBucketConfig {
        capacity: Tokens::whole(50),
        initial: Tokens::whole(50),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let t = drive(&bucket, 100, 1000, 1);
    assert_eq!(retries(&t), 10, "{t:?}");
    assert_eq!(bucket.balance(), Tokens::ZERO);
    // Alone, each pipeline would have retried twice per call: 600 retries.
    let unbudgeted = drive(&Unlimited, 100, 1000, 1);
    assert_eq!(retries(&unbudgeted), 600);
    // Every pipeline wanted retries; those refused say "budget", not "not retried".
    for tally in &t {
        assert_eq!(tally.successes, 0);
        assert_eq!(tally.budget_exceeded + tally.exhausted, tally.calls);
        assert!(tally.budget_exceeded > 90, "{tally:?}");
    }
    assert_eq!(
        t.iter().map(|t| t.exhausted).sum::<u64>(),
        5,
        "10 retries = 5 calls × 2"
    );
}

#[test]
fn a_shared_ratio_budget_holds_retries_to_ten_percent_of_all_first_attempts() {
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig {
        min_retries_per_window: 0,
        window: Duration::from_secs(3_600),
        ..RatioBudgetConfig::DEFAULT
    })
    .unwrap();
    let t = drive(&budget, 200, 1000, 2);
    let firsts: u64 = t.iter().map(|t| t.calls).sum();
    let r = retries(&t);
    // 600 first attempts: at most 60 retries, and the budget lets every one of them through.
    assert_eq!(r, 60, "{t:?}");
    assert_eq!(budget.counts(Instant::from_secs(2)), (firsts as u32, 60));
    // All three pipelines drew on it.
    assert!(t.iter().all(|t| t.attempts > t.calls), "{t:?}");
}

/// Spec §10: an unbudgeted retry storm multiplies the load by ≈3 (1 + q + q² = 2.97 at
/// q = 0.99, Google SRE); the 10% budget holds it to ≈1.1.
#[test]
fn sre_amplification_three_times_unbudgeted_one_point_one_budgeted() {
    let load = |t: &[Tally; 3]| {
        let calls: u64 = t.iter().map(|t| t.calls).sum();
        let attempts: u64 = t.iter().map(|t| t.attempts).sum();
        attempts as f64 / calls as f64
    };
    let storm = load(&drive(&Unlimited, 3_000, 990, 3));
    assert!((storm - 2.9701).abs() < 0.02, "unbudgeted load {storm:.3}");
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let budgeted = load(&drive(&budget, 3_000, 990, 3));
    // 9 000 calls in about a second of simulated time: one 10 s window, so the floor adds
    // at most 3 retries.
    assert!(
        budgeted <= 1.1 + 3.0 / 9_000.0 + 1e-9,
        "budgeted load {budgeted:.4}"
    );
    assert!(
        budgeted >= 1.09,
        "the budget is used, not just refused: {budgeted:.4}"
    );
}
