//! The allocation count for the tower Layer: after warm-up, a request through
//! `ResilienceLayer` (full pipeline owned by the Layer, a per-request deadline) allocates
//! exactly one block, its boxed future (the core's retry loop over the service's shared
//! pipeline: see the tower module's "Cost"), and nothing else beyond the inner service, which
//! here allocates nothing: both when the inner service answers and when every attempt times
//! out and is retried after a backoff. (`alloc_full_pipeline.rs` covers
//! `Resilience::execute`, which allocates nothing.)
//!
//! The counter is per thread; a current-thread runtime polls every future on the thread that
//! calls `block_on`.

use resilix_testkit::alloc::{CountingAllocator, allocations};
use std::future::{Ready, ready};
use std::sync::Arc;
use std::time::Duration;

use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix_testkit::{Counting as Gate, FixedRetry};
use resilix_tokio::Resilience;
use resilix_tokio::tower::{BoxError, ResilienceLayer, ServiceError};
use tower::{Service, ServiceBuilder, ServiceExt};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const WARM_UP: u32 = 500;
const CALLS: u32 = 5_000;

/// An inner service that answers at once and allocates nothing (`service_fn` over an
/// `async` block would too; this keeps the future's type plain).
#[derive(Clone)]
struct Echo;

impl Service<u32> for Echo {
    type Response = u32;
    type Error = BoxError;
    type Future = Ready<Result<u32, BoxError>>;
    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, n: u32) -> Self::Future {
        ready(Ok(n + 1))
    }
}

#[test]
fn the_counter_sees_an_allocation() {
    let before = allocations();
    drop(std::hint::black_box(Box::new(1u32)));
    assert_eq!(allocations() - before, 1);
}

#[test]
fn a_layered_request_allocates_only_its_boxed_future() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        // The full pipeline, each policy with its defaults, owned by the Layer.
        let pipeline = Pipeline::new()
            .retry(Retry::new(
                RetryConfig::DEFAULT,
                RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap(),
            ))
            .throttler(Throttler::new(ThrottlerConfig::DEFAULT).unwrap())
            .breaker(Breaker::new(BreakerConfig::DEFAULT).unwrap())
            .limiter(Limiter::new(LimiterConfig::gradient2()).unwrap())
            .bulkhead(Bulkhead::new(BulkheadConfig::DEFAULT))
            .attempt_timeout(Duration::from_millis(200));
        let layer = ResilienceLayer::new(Resilience::new(Box::new(pipeline)).seed(3))
            .timeout(Duration::from_secs(1));
        let mut svc = ServiceBuilder::new().layer(layer).service(Echo);
        let mut calls = async |n: u32| {
            for i in 0..n {
                let out = svc.ready().await.unwrap().call(i).await.unwrap();
                assert_eq!(out, i + 1);
            }
        };
        calls(WARM_UP).await;
        let before = allocations();
        calls(CALLS).await;
        let n = allocations() - before;
        assert_eq!(n, u64::from(CALLS), "{n} allocations in {CALLS} requests");
    });
}

#[test]
fn timeouts_and_retries_through_the_layer_allocate_nothing_per_attempt() {
    // Paused time: every attempt's deadline really fires, and every retry really sleeps.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let gate: &'static Gate = Box::leak(Box::default());
    rt.block_on(async {
        let pipeline = Pipeline::new()
            .retry(FixedRetry {
                max: 3,
                delay: Duration::from_millis(5),
            })
            .bulkhead(gate)
            .attempt_timeout(Duration::from_millis(20));
        let layer = ResilienceLayer::new(Resilience::new(Arc::new(pipeline))).idempotent(true);
        let mut svc = ServiceBuilder::new()
            .layer(layer)
            .service_fn(|_: u32| std::future::pending::<Result<u32, BoxError>>());
        let mut calls = async |n: u32| {
            for i in 0..n {
                let err = svc.ready().await.unwrap().call(i).await.unwrap_err();
                // Building the error is the one allocation a failed request makes: count it
                // out by checking it is the typed error, then subtract it below.
                assert!(err.downcast_ref::<ServiceError>().is_some(), "{err}");
            }
        };
        calls(50).await;
        let before = allocations();
        calls(500).await;
        let n = allocations() - before;
        // Per failed request: its boxed future and one `Box<ServiceError>` (tower's error type
        // is boxed); nothing for the three attempts, three deadlines and two backoff sleeps.
        assert_eq!(n, 2 * 500, "{n} allocations in 500 failed requests");
    });
    let counts = gate.counts();
    assert_eq!(counts.admitted, 550 * 3);
    assert_eq!(counts.held, 0);
}
