//! One pipeline built once, held in an axum-style state struct, cloned into 64 tasks spawned
//! on a multi-thread runtime; afterwards every policy's counts are read through the
//! `Resilience` getters (issue 14: "an integration test ... checks the policies' counts
//! afterwards via getters"). No `static`, no leak, no wrapper type.
//!
//! The multi-thread test sleeps nowhere (no backoff); the one sleep is on paused time, exact.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::breaker::{Breaker, CircuitState};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{Charge, RetrySuccess, TokenBucket, TokenBucketConfig, Tokens};
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix::throttler::Throttler;
use resilix_tokio::Resilience;

const TASKS: u32 = 64;
/// Every fourth task's first attempt fails, and its retry succeeds.
const FLAKY: u32 = TASKS / 4;
const ATTEMPTS: u32 = TASKS + FLAKY;
const COST: u32 = 5;
const INITIAL: u32 = 1_000;
const BURST: u32 = 100;

/// The service's pipeline, named once, as an application names its state's field types.
type Upstream =
    Pipeline<Retry<Arc<TokenBucket>>, Throttler, Breaker, Limiter, Bulkhead, RateLimiter>;

#[derive(Clone)]
struct AppState {
    upstream: Arc<Resilience<Upstream>>,
}

/// A bucket where only granted retries move the balance, so it counts them exactly.
fn budget() -> Arc<TokenBucket> {
    let config = TokenBucketConfig {
        capacity: Tokens::whole(INITIAL),
        initial: Tokens::whole(INITIAL),
        retry_cost: Tokens::whole(COST),
        timeout_retry_cost: Tokens::whole(COST),
        first_try_success: Tokens::ZERO,
        retry_success: RetrySuccess::Deposit(Tokens::ZERO),
        floor: Tokens::ZERO,
        charge: Charge::GrantedRetry,
    };
    Arc::new(TokenBucket::new(config).unwrap())
}

fn state(budget: &Arc<TokenBucket>) -> AppState {
    // No backoff: real time on a multi-thread runtime, and the test is about ownership.
    let retry = Retry::new(RetryConfig::new(2, Backoff::NONE).unwrap(), budget.clone());
    // One token an hour: nothing refills while the test runs, so the bucket counts attempts.
    let rate = RateLimitConfig::new(Rate::per_hour(1)).with_burst(BURST);
    let limiter = LimiterConfig {
        initial_limit: TASKS,
        min_limit: TASKS,
        ..LimiterConfig::default()
    };
    let pipeline = Pipeline::new()
        .retry(retry)
        .throttler(Throttler::default())
        .breaker(Breaker::default())
        // Room for every task at once: the limit adapts, but not below what 64 tasks need
        // (the test counts releases, not shedding).
        .limiter(Limiter::new(limiter).unwrap())
        .bulkhead(Bulkhead::new(BulkheadConfig::new(TASKS).unwrap()))
        .rate_limit(RateLimiter::new(rate).unwrap());
    AppState {
        upstream: Arc::new(Resilience::new(pipeline)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_tasks_share_one_pipeline_held_in_app_state() {
    let budget = budget();
    let app = state(&budget);
    let sent = Arc::new(AtomicU32::new(0));

    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let app = app.clone();
            let sent = sent.clone();
            tokio::spawn(async move {
                let tries = AtomicU32::new(0);
                let options = CallOptions::default().timeout(Duration::from_secs(30));
                app.upstream
                    .execute(options, || async {
                        sent.fetch_add(1, Ordering::Relaxed);
                        let attempt = tries.fetch_add(1, Ordering::Relaxed);
                        tokio::task::yield_now().await;
                        if i % 4 == 0 && attempt == 0 {
                            Err("reset by peer")
                        } else {
                            Ok(i)
                        }
                    })
                    .await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let answer = task.await.expect("the task ran").expect("not stopped");
        assert_eq!(answer, i as u32);
    }

    let upstream = &app.upstream;
    let now = resilix_tokio::now();
    assert_eq!(sent.load(Ordering::Relaxed), ATTEMPTS);
    // The throttler saw every attempt as a request and every success as an accept.
    assert_eq!(upstream.throttler().counts(now), (ATTEMPTS, TASKS));
    // 16 failures in 80 calls (20 %) stay below the breaker's 50 %.
    assert_eq!(upstream.breaker().state(), CircuitState::Closed);
    assert_eq!(upstream.breaker().probes_in_flight(), 0);
    // Every slot and in-flight count was given back, one release per attempt.
    assert_eq!(upstream.bulkhead().held(), 0);
    assert_eq!(upstream.bulkhead().releases(), ATTEMPTS);
    assert_eq!(upstream.limiter().in_flight(), 0);
    assert_eq!(upstream.limiter().releases(), ATTEMPTS);
    // One token per attempt, none refilled.
    assert_eq!(upstream.rate_limit().available(now), BURST - ATTEMPTS);
    // One granted retry per flaky task, spent from the one budget the state's pipeline owns.
    let balance = Tokens::whole(INITIAL - FLAKY * COST);
    assert_eq!(upstream.retry().budget().balance(), balance);
    assert_eq!(
        budget.balance(),
        balance,
        "the same bucket as the caller's `Arc`"
    );
}

/// Bounded waiting on the pipeline's own bulkhead (an `Arc` in the slot), from spawned tasks:
/// the policy waited on cannot be another one than the one that admits.
#[tokio::test(start_paused = true)]
async fn spawned_calls_wait_on_the_pipelines_own_bulkhead() {
    use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
    use resilix_tokio::SlotWaiters;

    let wait = WaitConfig::new(4, Duration::from_millis(100), WaitOrder::Fifo).unwrap();
    let bulkhead = Arc::new(Bulkhead::with_hook(
        BulkheadConfig::new(1).unwrap(),
        SlotWaiters::<4>::new(wait),
    ));
    let pipeline = Pipeline::new().bulkhead(bulkhead.clone());
    let resilience = Arc::new(Resilience::new(pipeline));
    let start = tokio::time::Instant::now();
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let resilience = resilience.clone();
            tokio::spawn(async move {
                resilience
                    .call(CallOptions::default())
                    .wait_for_bulkhead()
                    .run(|| async {
                        tokio::time::sleep(Duration::from_millis(30)).await;
                        Ok::<_, ()>(tokio::time::Instant::now())
                    })
                    .await
            })
        })
        .collect();
    let mut finished = Vec::new();
    for task in tasks {
        finished.push(task.await.unwrap().expect("the second waited, not refused") - start);
    }
    finished.sort();
    // One slot: the second ran after the first, instead of being refused.
    assert_eq!(
        finished,
        [Duration::from_millis(30), Duration::from_millis(60)]
    );
    assert_eq!(bulkhead.held(), 0);
    assert_eq!(bulkhead.releases(), 2);
}
