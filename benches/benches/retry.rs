//! Retry: one backoff delay beside backon's, the retry budget beside tower's `TpsBudget`, and
//! one whole retry decision (verdict rule, attempts, deadline, backoff, budget).
//!
//! Backoff: the same schedule on both sides (100 ms base doubling to a 10 s cap, jittered,
//! attempts 1 to 4 in turn). backon's is an iterator, rebuilt every four delays as a retry loop
//! does for each call, so its per-delay figure carries a quarter of a build; its jitter seed is
//! fixed so neither side asks the OS for entropy. Ours is full jitter (AWS), with the caller's
//! generator.
//!
//! Budget: a request deposits, a failed one asks to withdraw a retry: tower's `TpsBudget`
//! (`deposit` + `withdraw`) and our `RatioBudget` (`record_first_attempt` + `try_spend`), both
//! with a 10 s window. `TpsBudget` reads tokio's clock on each of the two calls and cannot be
//! given the time, so its figure includes two clock reads (clock/tokio-instant-now in
//! floor.rs is one); ours take `now` from the caller. The token bucket (AWS SDK standard) is
//! shown for reference.
//!
//! Retry breaker (Brooker 2022, `RetryBreaker`): a first attempt, then a failure that asks for
//! a retry, on both of its paths. Granted: a 99.9% threshold, so one failure per two attempts
//! always passes (three window operations: the failure, the read, the attempt). Refused: the
//! default 10%, which that traffic trips for good (two). No peer crate ships a retry breaker.
use std::hint::black_box;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use criterion::{Criterion, criterion_group, criterion_main};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBreaker, RetryBreakerConfig, RetryBudget, TokenBucket,
    TokenBucketConfig,
};
use resilix::retry::{AttemptOutcome, Backoff, Retry, RetryConfig, RetryPolicy, Strategy};
use resilix::time::{Deadline, Instant};
use resilix::{Verdict, VerdictKind};
use tower::retry::budget::{Budget, TpsBudget};

mod common;
use common::{one_thread, two_threads};

const BASE: Duration = Duration::from_millis(100);
const CAP: Duration = Duration::from_secs(10);

fn backoff(c: &mut Criterion) {
    let ours = Backoff::new(Strategy::FullJitter, BASE, CAP).unwrap();
    let mut rng = SeededRandom::new(7);
    c.bench_function("retry/resilix/backoff-delay/1t", |b| {
        one_thread(b, |i| {
            let attempt = (i % 4) as u32 + 1;
            black_box(black_box(&ours).delay(attempt, ours.first_previous(), &mut rng));
        })
    });

    let builder = ExponentialBuilder::default()
        .with_min_delay(BASE)
        .with_max_delay(CAP)
        .without_max_times()
        .with_jitter_seed(7);
    let mut backoff = builder.build();
    c.bench_function("retry/backon/backoff-delay/1t", |b| {
        one_thread(b, |i| {
            if i.is_multiple_of(4) {
                backoff = black_box(&builder).build();
            }
            black_box(backoff.next());
        })
    });
}

fn ratio_deposit_withdraw(budget: &RatioBudget, _: &mut (), i: u64) {
    let now = Instant::from_nanos(i * 1_000);
    black_box(budget).record_first_attempt(now);
    black_box(black_box(budget).try_spend(now, black_box(VerdictKind::Transient)));
}

fn budgets(c: &mut Criterion) {
    let ratio: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    c.bench_function("retry/resilix/budget/deposit+withdraw/1t", |b| {
        one_thread(b, |i| ratio_deposit_withdraw(&ratio, &mut (), i))
    });
    c.bench_function("retry/resilix/budget/deposit+withdraw/2t", |b| {
        two_threads(b, &ratio, |_| (), ratio_deposit_withdraw)
    });

    let bucket = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    c.bench_function("retry/resilix/token-bucket/spend+refund/1t", |b| {
        one_thread(b, |_| {
            // A retry refunded by its success: the balance stays put, so every iteration
            // takes the same path.
            let granted = bucket.try_spend(Instant::ZERO, black_box(VerdictKind::Transient));
            bucket.record_success(Instant::ZERO, Some(VerdictKind::Transient));
            black_box(granted);
        })
    });

    // tower's defaults, "taken from finagle": 10 s window, 10 retries/s floor, 20 % of calls.
    let tps = TpsBudget::new(Duration::from_secs(10), 10, 0.2);
    c.bench_function("retry/tower-tpsbudget/deposit+withdraw/1t", |b| {
        one_thread(b, |_| {
            black_box(&tps).deposit();
            black_box(black_box(&tps).withdraw());
        })
    });
    c.bench_function("retry/tower-tpsbudget/deposit+withdraw/2t", |b| {
        two_threads(
            b,
            &tps,
            |_| (),
            |budget, _, _| {
                black_box(budget).deposit();
                black_box(black_box(budget).withdraw());
            },
        )
    });
}

fn breaker_first_spend(breaker: &RetryBreaker, _: &mut (), i: u64) {
    let now = Instant::from_nanos(i * 1_000);
    black_box(breaker).record_first_attempt(now);
    black_box(black_box(breaker).try_spend(now, black_box(VerdictKind::Transient)));
}

fn retry_breaker(c: &mut Criterion) {
    let open: RetryBreaker = RetryBreaker::new(RetryBreakerConfig {
        max_failure_permille: RetryBreakerConfig::MAX_FAILURE_PERMILLE,
        ..RetryBreakerConfig::DEFAULT
    })
    .unwrap();
    c.bench_function("retry/resilix/retry-breaker/first+spend-granted/1t", |b| {
        one_thread(b, |i| breaker_first_spend(&open, &mut (), i))
    });
    c.bench_function("retry/resilix/retry-breaker/first+spend-granted/2t", |b| {
        two_threads(b, &open, |_| (), breaker_first_spend)
    });
    let tripped: RetryBreaker = RetryBreaker::new(RetryBreakerConfig::DEFAULT).unwrap();
    c.bench_function("retry/resilix/retry-breaker/first+spend-refused/1t", |b| {
        one_thread(b, |i| breaker_first_spend(&tripped, &mut (), i))
    });
}

fn decision(c: &mut Criterion) {
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let retry = Retry::new(RetryConfig::DEFAULT, &budget);
    let mut rng = SeededRandom::new(3);
    let verdicts = [
        Verdict::Transient,
        Verdict::Success,
        Verdict::Success,
        Verdict::Success,
    ];
    c.bench_function("retry/resilix/decide/1t", |b| {
        one_thread(b, |i| {
            let now = Instant::from_nanos(i * 1_000);
            let mut env = Env::new(now, &mut rng);
            let mut state = retry.begin(now);
            let outcome = AttemptOutcome {
                verdict: verdicts[(i % 4) as usize],
                attempt: 1,
                idempotent: false,
                deadline: Some(Deadline::after(now, Duration::from_secs(30))),
            };
            black_box(black_box(&retry).decide(&mut state, &outcome, &mut env));
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = backoff, budgets, retry_breaker, decision
}
criterion_main!(benches);
