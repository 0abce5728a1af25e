//! Retry: one budget deposit+withdraw, and one backoff delay. (Peers — tower's `TpsBudget`,
//! backon — join these in the later peer-bench task.)
use std::hint::black_box;

use core::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::VerdictKind;
use resilix::random::SeededRandom;
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig,
};
use resilix::retry::{Backoff, Strategy};
use resilix::time::Instant;

fn budgets(c: &mut Criterion) {
    let bucket = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    c.bench_function("retry/token_bucket/deposit+withdraw", |b| {
        b.iter(|| {
            // A retry refunded by its success: the balance stays put, so every iteration
            // takes the same path.
            let granted = bucket.try_spend(Instant::ZERO, black_box(VerdictKind::Transient));
            bucket.record_success(Instant::ZERO, Some(VerdictKind::Transient));
            black_box(granted)
        })
    });

    let ratio: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let mut now = 0u64;
    c.bench_function("retry/ratio_budget/first_attempt+withdraw", |b| {
        b.iter(|| {
            now += 1_000;
            let t = Instant::from_nanos(now);
            ratio.record_first_attempt(t);
            black_box(ratio.try_spend(t, black_box(VerdictKind::Transient)))
        })
    });
}

fn backoff(c: &mut Criterion) {
    let mut rng = SeededRandom::new(1);
    for strategy in [Strategy::FullJitter, Strategy::Decorrelated] {
        let b = Backoff::new(
            strategy,
            Duration::from_millis(100),
            Duration::from_secs(20),
        )
        .unwrap();
        let mut previous = b.first_previous();
        let name = format!("retry/backoff/{}", strategy).replace(' ', "_");
        c.bench_function(&name, |bench| {
            bench.iter(|| {
                previous = b.delay(black_box(3), previous, &mut rng);
                black_box(previous)
            })
        });
    }
}

criterion_group!(benches, budgets, backoff);
criterion_main!(benches);
