//! `static` policies in pipelines whose calls are `tokio::spawn`ed: these compile only if
//! rustc can prove the spawned future `Send`, which is what this file checks (the assertions
//! check the calls really went through the `static`s). Through `Resilience::execute` a
//! `static` breaker or bulkhead needs `Static(&POLICY)` (its docs say why, with a
//! `compile_fail` example of the plain reference); a `static` retry budget by plain reference
//! does not (its trait has no borrowed associated type). Behind the tower Layer, plain
//! `&POLICY` works for every slot, waiting included.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use resilix::breaker::{Breaker, CircuitState};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix::retry::budget::TokenBucket;
use resilix::retry::{Retry, RetryConfig};
use resilix_tokio::{Resilience, Static};

static BULKHEAD: Bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
static BREAKER: LazyLock<Breaker> = LazyLock::new(Breaker::default);
static BUDGET: LazyLock<TokenBucket> = LazyLock::new(TokenBucket::default);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_policies_in_spawned_calls() {
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &*BUDGET))
        .breaker(Static(&*BREAKER))
        .bulkhead(Static(&BULKHEAD));
    let resilience = Arc::new(Resilience::new(pipeline));
    let tasks: Vec<_> = (0..16u32)
        .map(|i| {
            let resilience = resilience.clone();
            tokio::spawn(async move {
                let options = CallOptions::default().timeout(Duration::from_secs(1));
                resilience
                    .execute(options, || async move { Ok::<u32, std::io::Error>(i) })
                    .await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap().unwrap(), i as u32);
    }
    assert_eq!((BULKHEAD.held(), BULKHEAD.releases()), (0, 16));
    assert_eq!(BREAKER.state(), CircuitState::Closed);
}

#[cfg(feature = "tower")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_static_references_behind_the_tower_layer_in_spawned_requests() {
    use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
    use resilix_tokio::SlotWaiters;
    use resilix_tokio::tower::{BoxError, ResilienceLayer};
    use tower::{ServiceBuilder, ServiceExt, service_fn};

    static LAYER_BREAKER: LazyLock<Breaker> = LazyLock::new(Breaker::default);
    static LAYER_BULKHEAD: LazyLock<Bulkhead<SlotWaiters<64>>> = LazyLock::new(|| {
        let wait = WaitConfig::new(64, Duration::from_secs(60), WaitOrder::Fifo).unwrap();
        Bulkhead::with_hook(BulkheadConfig::new(2).unwrap(), SlotWaiters::new(wait))
    });
    let pipeline = Pipeline::new()
        .breaker(&*LAYER_BREAKER)
        .bulkhead(&*LAYER_BULKHEAD);
    let svc = ServiceBuilder::new()
        .layer(ResilienceLayer::new(Resilience::new(pipeline)).wait_for_bulkhead())
        .service(service_fn(|n: u32| async move { Ok::<_, BoxError>(n + 1) }));
    let tasks: Vec<_> = (0..16u32)
        .map(|i| {
            let svc = svc.clone();
            tokio::spawn(async move { svc.oneshot(i).await.unwrap() })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap(), i as u32 + 1);
    }
    assert_eq!(LAYER_BREAKER.state(), CircuitState::Closed);
    assert_eq!((LAYER_BULKHEAD.held(), LAYER_BULKHEAD.releases()), (0, 16));
}
