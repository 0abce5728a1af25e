//! The allocation proof on tokio with every policy: after warm-up, a call through
//! `Resilience::execute` with the full pipeline (retry with a budget, throttler, breaker,
//! limiter, bulkhead, rate limit) and a deadline allocates nothing per call, both when the
//! operation answers and when the deadline fires first and the call is retried. (`alloc.rs`
//! covers the seed paths and a failing-then-succeeding operation.)
//!
//! A counting global allocator lives in this test binary; its counter is per thread, and a
//! current-thread runtime polls every future on the thread that calls `block_on`.

use resilix_testkit::alloc::{CountingAllocator, allocations};
use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use resilix::Error;
use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::execute::Timer;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Deadline;
use resilix_tokio::Resilience;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const WARM_UP: u32 = 500;
const CALLS: u32 = 5_000;

/// Allocations per call of `calls(n)` after `calls(WARM_UP)`, all inside one runtime.
fn allocations_after_warm_up<F, Fut>(paused: bool, mut calls: F) -> u64
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(paused)
        .build()
        .unwrap();
    rt.block_on(async {
        calls(WARM_UP).await;
        let before = allocations();
        calls(CALLS).await;
        allocations() - before
    })
}

#[test]
fn the_counter_sees_an_allocation() {
    let before = allocations();
    drop(std::hint::black_box(Box::new(1u32)));
    assert_eq!(allocations() - before, 1);
}

#[test]
fn execute_with_a_deadline_allocates_nothing_per_call() {
    // The full pipeline, each policy with its defaults.
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let breaker = Breaker::new(BreakerConfig::DEFAULT).unwrap();
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
    let rate_limit = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000_000))).unwrap();
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .throttler(&throttler)
        .breaker(&breaker)
        .limiter(&limiter)
        .bulkhead(&bulkhead)
        .rate_limit(&rate_limit)
        .attempt_timeout(Duration::from_millis(200));
    let answered = Cell::new(0u32);
    let n = allocations_after_warm_up(false, |count| {
        let (pipeline, answered) = (&pipeline, &answered);
        async move {
            let resilience = Resilience::new(pipeline).seed(9);
            for i in 0..count {
                let now = resilience.timer().now();
                let deadline = Deadline::after(now, Duration::from_secs(1));
                let out = resilience
                    .execute(CallOptions::default().deadline(deadline), || async move {
                        Ok::<u32, ()>(i)
                    })
                    .await;
                assert_eq!(out, Ok(i));
                answered.set(answered.get() + 1);
            }
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} calls");
    assert_eq!(answered.get(), WARM_UP + CALLS);
}

#[test]
fn a_deadline_that_fires_allocates_nothing_per_call() {
    // Paused time: each attempt's sleep completes as soon as the runtime is idle, so the
    // timer wheel really registers and fires an entry on every call.
    // The breaker and the throttler count timeouts as failures: keep them out of the way
    // (their refusals would skip the timer path this test is about). The call is declared
    // idempotent, so timeouts are retried after a backoff sleep until the budget or the
    // attempts run out: both of the loop's sleeps are on the count.
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .limiter(&limiter)
        .bulkhead(&bulkhead)
        .attempt_timeout(Duration::from_millis(20));
    let timed_out = Cell::new(0u32);
    let attempts = Cell::new(0u32);
    let n = allocations_after_warm_up(true, |count| {
        let (pipeline, timed_out, attempts) = (&pipeline, &timed_out, &attempts);
        async move {
            // Per-thread entropy here (the other test uses a fixed seed).
            let resilience = Resilience::new(pipeline);
            for _ in 0..count {
                let out = resilience
                    .execute(
                        CallOptions::default().idempotent(true),
                        std::future::pending::<Result<u32, ()>>,
                    )
                    .await;
                assert!(matches!(out, Err(Error::TimedOut { .. })), "{out:?}");
                timed_out.set(timed_out.get() + 1);
                attempts.set(attempts.get() + out.unwrap_err().attempts().unwrap());
            }
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} timed-out calls");
    assert_eq!(timed_out.get(), WARM_UP + CALLS);
    assert!(
        attempts.get() > timed_out.get() + 100,
        "some timeouts were retried: {} attempts",
        attempts.get()
    );
    assert_eq!(bulkhead.held(), 0, "every slot given back");
}
