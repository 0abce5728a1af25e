//! The full pipeline's admit+settle with time injected, on one thread and with two threads on
//! one shared pipeline; the refused path; and the `Call` driver (admit, settle, retry decision)
//! around it. "Full" is every admission policy, each with its defaults: throttler (Google
//! SRE, 2 min window), breaker (10 s time window), adaptive limiter (gradient2), bulkhead
//! (25), rate limiter (1 M/s, so every call here is admitted). A call every 5 µs, taking 2.5 µs. The `Call`
//! bench adds the retry policy (3 attempts, full jitter) with a ratio budget.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;

mod common;
use common::clock::{CLOCK, PIPELINE_STEP};
use common::{Refusals, one_thread, two_threads};

fn empty(c: &mut Criterion) {
    let pipeline = Pipeline::new();
    let mut rng = SeededRandom::new(1);
    c.bench_function("pipeline/resilix/empty/admit+settle/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i * 1_000), &mut rng);
            let attempt = pipeline.admit(&mut env, None).unwrap();
            black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
        })
    });
}

/// Every admission policy, with its defaults.
struct Policies {
    throttler: Throttler,
    breaker: Breaker,
    limiter: Limiter,
    bulkhead: Bulkhead,
    rate_limit: RateLimiter,
    budget: RatioBudget,
}

impl Policies {
    fn new(bulkhead: BulkheadConfig) -> Self {
        Policies {
            throttler: Throttler::new(ThrottlerConfig::DEFAULT).unwrap(),
            breaker: Breaker::new(BreakerConfig::DEFAULT).unwrap(),
            limiter: Limiter::new(LimiterConfig::gradient2()).unwrap(),
            bulkhead: Bulkhead::new(bulkhead),
            rate_limit: RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000_000)))
                .unwrap(),
            budget: RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap(),
        }
    }
}

/// The full pipeline over `$p`'s policies (a macro: the pipeline's type names every slot).
macro_rules! full_pipeline {
    ($p:expr) => {
        Pipeline::new()
            .retry(Retry::new(RetryConfig::DEFAULT, &$p.budget))
            .throttler(&$p.throttler)
            .breaker(&$p.breaker)
            .limiter(&$p.limiter)
            .bulkhead(&$p.bulkhead)
            .rate_limit(&$p.rate_limit)
    };
}

const CALL_NANOS: u64 = 5_000;

fn full(c: &mut Criterion) {
    let policies = Policies::new(BulkheadConfig::DEFAULT);
    let pipeline = full_pipeline!(policies);
    let mut rng = SeededRandom::new(1);
    let refusals = Refusals::default();
    c.bench_function("pipeline/resilix/full/admit+settle/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i * CALL_NANOS), &mut rng);
            if let Some(attempt) = refusals.note(black_box(&pipeline).admit(&mut env, None)) {
                env.now = Instant::from_nanos(i * CALL_NANOS + CALL_NANOS / 2);
                black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
            }
        })
    });
    refusals.check("pipeline/resilix/full/admit+settle/1t");
    // The same on the shared advancing clock (`common/clock.rs`): 5 µs per call, a load per
    // clock read (two per call: admit and settle), a `fetch_add` every 64 calls.
    let refusals = Refusals::default();
    c.bench_function("pipeline/resilix/full-clock/admit+settle/1t", |b| {
        one_thread(b, |i| {
            CLOCK.advance(i, PIPELINE_STEP);
            let mut env = Env::new(CLOCK.now(), &mut rng);
            if let Some(attempt) = refusals.note(black_box(&pipeline).admit(&mut env, None)) {
                env.now = CLOCK.now();
                black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
            }
        })
    });
    refusals.check("pipeline/resilix/full-clock/admit+settle/1t");
    c.bench_function("pipeline/resilix/full-clock/admit+settle/2t", |b| {
        two_threads(
            b,
            &pipeline,
            |t| SeededRandom::new(t as u64),
            |p, rng, i| {
                CLOCK.advance(i, PIPELINE_STEP);
                let mut env = Env::new(CLOCK.now(), rng);
                if let Ok(attempt) = black_box(p).admit(&mut env, None) {
                    env.now = CLOCK.now();
                    black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
                }
            },
        )
    });
    c.bench_function("pipeline/resilix/full/admit+settle/2t", |b| {
        two_threads(
            b,
            &pipeline,
            |t| SeededRandom::new(t as u64),
            |p, rng, i| {
                let mut env = Env::new(Instant::from_nanos(i * CALL_NANOS), rng);
                // When one thread runs far ahead of the other (it had a core, the other did
                // not), the laggard's time is in the rate limiter's past and it is refused:
                // that refusal is the cost of this iteration.
                if let Ok(attempt) = black_box(p).admit(&mut env, None) {
                    env.now = Instant::from_nanos(i * CALL_NANOS + CALL_NANOS / 2);
                    black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
                }
            },
        )
    });
    let refusals = Refusals::default();
    c.bench_function("pipeline/resilix/full/call/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i * CALL_NANOS), &mut rng);
            let mut call = black_box(&pipeline).call(env.now, CallOptions::default());
            if let Some(attempt) = refusals.note(call.admit(&mut env)) {
                env.now = Instant::from_nanos(i * CALL_NANOS + CALL_NANOS / 2);
                black_box(call.settle(attempt, black_box(&Verdict::Success), &mut env));
            }
        })
    });
    refusals.check("pipeline/resilix/full/call/1t");

    // Refused by the innermost policy: every other one admits and is then given back.
    let refusing_policies = Policies::new(BulkheadConfig::new(1).unwrap());
    let _holder = refusing_policies.bulkhead.try_admit().unwrap();
    let refusing = full_pipeline!(refusing_policies);
    c.bench_function("pipeline/resilix/full/refused/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i * 1_000), &mut rng);
            black_box(black_box(&refusing).admit(&mut env, None).is_err());
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = empty, full
}
criterion_main!(benches);
