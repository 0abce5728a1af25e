//! One retry budget per process, owned by `Arc` by every pipeline, used from spawned tasks on
//! a multi-thread runtime: no `static`, no leak, no wrapper type (issue 14, point 4).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use resilix::Error;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix::retry::budget::{Charge, RetrySuccess, TokenBucket, TokenBucketConfig, Tokens};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig};
use resilix_tokio::Resilience;

const TASKS: u32 = 8;
const CALLS_PER_TASK: u32 = 4;
const ATTEMPTS: u32 = 3;
const COST: u32 = 5;
const INITIAL: u32 = 1_000;

/// A bucket where only granted retries move the balance: each costs `COST`, nothing is ever
/// deposited, so the balance after a run counts the retries exactly.
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

fn retry(budget: &Arc<TokenBucket>) -> Retry<Arc<TokenBucket>> {
    // No backoff: the runtime is multi-threaded (no paused time), and the test is about who
    // owns the budget, not about delays.
    let config = RetryConfig::new(ATTEMPTS, Backoff::NONE).unwrap();
    Retry::new(config, budget.clone())
}

/// Every call fails until its attempts run out: two granted retries each.
fn expected_balance() -> Tokens {
    let retries = TASKS * CALLS_PER_TASK * (ATTEMPTS - 1);
    Tokens::whole(INITIAL - retries * COST)
}

/// One pipeline, built once and owned by an `Arc`, cloned into 8 spawned tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_arc_pipeline_in_spawned_tasks_spends_from_one_budget() {
    let budget = budget();
    let bulkhead = Arc::new(Bulkhead::new(BulkheadConfig::new(64).unwrap()));
    let pipeline = Pipeline::new()
        .retry(retry(&budget))
        .bulkhead(bulkhead.clone());
    let resilience = Arc::new(Resilience::new(Arc::new(pipeline)));
    let attempts = Arc::new(AtomicU32::new(0));

    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let resilience = resilience.clone();
        let attempts = attempts.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..CALLS_PER_TASK {
                let outcome = resilience
                    .execute(CallOptions::default(), || async {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        tokio::task::yield_now().await;
                        Err::<(), _>("down")
                    })
                    .await;
                assert!(
                    matches!(
                        outcome,
                        Err(Error::Upstream {
                            gave_up: Some(GiveUpReason::AttemptsExhausted { attempts: ATTEMPTS }),
                            ..
                        })
                    ),
                    "{outcome:?}"
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }

    assert_eq!(
        attempts.load(Ordering::Relaxed),
        TASKS * CALLS_PER_TASK * ATTEMPTS
    );
    assert_eq!(budget.balance(), expected_balance());
    // Every permit came back: the shared bulkhead is whole again.
    assert_eq!(bulkhead.held(), 0);
    // The handle in the pipeline is the same bucket as ours, not a copy.
    let pipeline = resilience.pipeline();
    assert!(Arc::ptr_eq(pipeline.retry_policy().budget(), &budget));
}

/// A pipeline per task, each owning a clone of the one budget (and of one bulkhead), borrowed
/// by a `Resilience` inside the task: the "one budget per process" shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pipeline_per_task_shares_the_budget_by_arc() {
    let budget = budget();
    let bulkhead = Arc::new(Bulkhead::new(BulkheadConfig::new(64).unwrap()));

    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let pipeline = Pipeline::new()
            .retry(retry(&budget))
            .bulkhead(bulkhead.clone());
        tasks.push(tokio::spawn(async move {
            let resilience = Resilience::new(&pipeline);
            let mut gave_up = 0;
            for _ in 0..CALLS_PER_TASK {
                let outcome = resilience
                    .execute(CallOptions::default(), || async {
                        tokio::task::yield_now().await;
                        Err::<(), _>("down")
                    })
                    .await;
                gave_up += u32::from(matches!(
                    outcome,
                    Err(Error::Upstream {
                        gave_up: Some(_),
                        ..
                    })
                ));
            }
            gave_up
        }));
    }
    let mut gave_up = 0;
    for task in tasks {
        gave_up += task.await.unwrap();
    }

    assert_eq!(gave_up, TASKS * CALLS_PER_TASK);
    assert_eq!(budget.balance(), expected_balance());
    assert_eq!(bulkhead.held(), 0);
    // Every pipeline is gone with its task: ours is the last handle, nothing leaked.
    assert_eq!(Arc::strong_count(&budget), 1);
    assert_eq!(Arc::strong_count(&bulkhead), 1);
}

/// The budget is exact under contention: with room for fewer retries than the tasks want,
/// exactly that many are granted, and every other call gives up on the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_small_shared_budget_grants_exactly_its_balance() {
    const ROOM: u32 = 10; // retries the bucket can pay for
    let config = TokenBucketConfig {
        capacity: Tokens::whole(ROOM * COST),
        initial: Tokens::whole(ROOM * COST),
        retry_cost: Tokens::whole(COST),
        timeout_retry_cost: Tokens::whole(COST),
        first_try_success: Tokens::ZERO,
        retry_success: RetrySuccess::Deposit(Tokens::ZERO),
        floor: Tokens::ZERO,
        charge: Charge::GrantedRetry,
    };
    let budget = Arc::new(TokenBucket::new(config).unwrap());
    let resilience = Arc::new(Resilience::new(Arc::new(
        Pipeline::new().retry(retry(&budget)),
    )));
    let attempts = Arc::new(AtomicU32::new(0));
    let refused = Arc::new(AtomicU32::new(0));

    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let (resilience, attempts, refused) =
            (resilience.clone(), attempts.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..CALLS_PER_TASK {
                let outcome = resilience
                    .execute(CallOptions::default(), || async {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        tokio::task::yield_now().await;
                        Err::<(), _>("down")
                    })
                    .await;
                if let Err(Error::Upstream {
                    gave_up: Some(GiveUpReason::BudgetExceeded),
                    ..
                }) = outcome
                {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let calls = TASKS * CALLS_PER_TASK;
    // Every call's first attempt, plus exactly ROOM retries in all.
    assert_eq!(attempts.load(Ordering::Relaxed), calls + ROOM);
    assert_eq!(budget.balance(), Tokens::ZERO);
    assert!(refused.load(Ordering::Relaxed) >= calls - ROOM);
}
