//! The allocation count for the tower Layer: after warm-up, a request through
//! `ResilienceLayer` (full pipeline owned by the Layer, a per-request deadline) allocates
//! nothing, its future included (the core's retry loop, boxed in a box an answered request
//! gave back to the service's pool: see the tower module's "Cost"), beyond the inner service,
//! which here allocates nothing: both when the inner service answers and when every attempt
//! times out and is retried after a backoff. Then what the pool keeps: nothing alive (a pooled
//! box holds no `Arc`), no cancelled request's box, no more than its bound, and it serves many
//! concurrent requests on a multi-thread runtime; and a request that outlives its service frees
//! what the service's clones shared once it answers. (`alloc_full_pipeline.rs` covers
//! `Resilience::execute`, which allocates nothing.)
//!
//! The counter is per thread; a current-thread runtime polls every future on the thread that
//! calls `block_on`, and `block_on` runs its future on the calling thread in a multi-thread
//! runtime too, where the requests' futures are made (`Service::call`).

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
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

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
fn a_layered_request_allocates_nothing_after_warm_up() {
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
        assert_eq!(n, 0, "{n} allocations in {CALLS} requests");
    });
}

#[test]
fn timeouts_and_retries_through_the_layer_allocate_nothing_per_attempt() {
    // Paused time: every attempt's deadline really fires, and every retry really sleeps.
    let rt = paused();
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
                // out by checking it is the typed error.
                assert!(err.downcast_ref::<ServiceError>().is_some(), "{err}");
            }
        };
        calls(50).await;
        let before = allocations();
        calls(500).await;
        let n = allocations() - before;
        // Per failed request: one `Box<ServiceError>` (tower's error type is boxed); nothing
        // for its future (a pooled box), three attempts, three deadlines, two backoff sleeps.
        assert_eq!(n, 500, "{n} allocations in 500 failed requests");
    });
    let counts = gate.counts();
    assert_eq!(counts.admitted, 550 * 3);
    assert_eq!(counts.held, 0);
}

/// A current-thread runtime on paused time.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// An inner service that answers after 10 ms, each of whose clones holds `token`.
fn holding(
    token: &Arc<()>,
) -> impl Service<u32, Response = u32, Error = BoxError, Future: Send> + Clone + Send + 'static {
    let held = Arc::clone(token);
    tower::service_fn(move |n: u32| {
        let _held = Arc::clone(&held);
        async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok::<_, BoxError>(n)
        }
    })
}

/// An answered request's box goes back to the pool holding nothing: the `async` block dropped
/// its captures (the inner service's clones) and handed over the service's shared state when
/// it returned, so the pool keeps neither policies nor services alive; and a request that
/// outlives every service frees what they shared once it answers.
#[test]
fn a_pooled_box_holds_nothing_alive() {
    paused().block_on(async {
        let resilience = Arc::new(Resilience::new(
            Pipeline::new().attempt_timeout(Duration::from_secs(1)),
        ));
        let token = Arc::new(());
        let mut svc = ServiceBuilder::new()
            .layer(ResilienceLayer::shared(Arc::clone(&resilience)))
            .service(holding(&token));
        let (policies, services) = (Arc::strong_count(&resilience), Arc::strong_count(&token));
        let mut request = std::pin::pin!(svc.ready().await.unwrap().call(1));
        assert!(poll_once(request.as_mut()).is_pending());
        // In flight: the future holds the inner service's clones, and the policies through the
        // service's shared state (not an `Arc` of the `Resilience` of its own).
        assert!(Arc::strong_count(&token) > services);
        assert_eq!(Arc::strong_count(&resilience), policies);
        assert_eq!(request.await.unwrap(), 1);
        assert_eq!(
            svc.future_pool().len(),
            1,
            "the answered request's box is pooled"
        );
        assert_eq!(Arc::strong_count(&resilience), policies);
        assert_eq!(Arc::strong_count(&token), services);

        // A request in flight keeps the service's shared state (policies and pool) alive after
        // every service is dropped, answers, and then frees it: its box goes back to the pool
        // and the pool goes with the last reference, so nothing outlives the request.
        let mut request = std::pin::pin!(svc.ready().await.unwrap().call(2));
        assert!(poll_once(request.as_mut()).is_pending());
        drop(svc);
        // The service's own inner service is gone; the request's clones are not.
        assert!(Arc::strong_count(&token) > 1);
        assert_eq!(
            Arc::strong_count(&resilience),
            2,
            "the shared state is alive"
        );
        assert_eq!(request.await.unwrap(), 2);
        assert_eq!(
            Arc::strong_count(&resilience),
            1,
            "the shared state is freed"
        );
        assert_eq!(Arc::strong_count(&token), 1);
    });
}

/// A request dropped before it answers drops its future at once (the `Arc` and the inner
/// service with it) and frees its box rather than pool it: the next request allocates a box.
#[test]
fn a_cancelled_request_frees_its_box() {
    paused().block_on(async {
        let resilience = Arc::new(Resilience::new(Pipeline::new()));
        let mut svc = ServiceBuilder::new()
            .layer(ResilienceLayer::shared(Arc::clone(&resilience)))
            .service_fn(|slow: bool| async move {
                if slow {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Ok::<_, BoxError>(())
            });
        // Warm: one box in the pool.
        svc.ready().await.unwrap().call(false).await.unwrap();
        let policies = Arc::strong_count(&resilience);
        let before = allocations();
        let mut request = Box::pin(svc.ready().await.unwrap().call(true));
        assert!(poll_once(request.as_mut()).is_pending());
        assert!(
            svc.future_pool().is_empty(),
            "the request took the pooled box"
        );
        drop(request);
        assert_eq!(Arc::strong_count(&resilience), policies);
        assert!(
            svc.future_pool().is_empty(),
            "a cancelled request's box is not pooled"
        );
        // One for the test's own `Box::pin` of the request; none for its future (pooled).
        assert_eq!(allocations() - before, 1);
        let before = allocations();
        svc.ready().await.unwrap().call(false).await.unwrap();
        assert_eq!(
            allocations() - before,
            1,
            "the next request boxes its future anew"
        );
        assert_eq!(svc.future_pool().len(), 1);
    });
}

/// A service's clones share one pool, and each `Layer::layer` call makes its own: a box given
/// back through a clone serves the original's next request, never another layer call's.
#[test]
fn clones_share_a_pool_and_each_layer_call_has_its_own() {
    paused().block_on(async {
        let layer = ResilienceLayer::new(Resilience::new(Pipeline::new())).future_pool(4);
        let mut first = layer.layer(Echo);
        let other = layer.layer(Echo);
        let mut clone = first.clone();
        clone.ready().await.unwrap().call(1).await.unwrap();
        assert_eq!(
            first.future_pool().len(),
            1,
            "the clone's box is the service's"
        );
        assert!(other.future_pool().is_empty(), "another layer call's pool");
        assert_eq!(other.future_pool().max(), 4);
        let before = allocations();
        first.ready().await.unwrap().call(2).await.unwrap();
        assert_eq!(allocations() - before, 0, "the clone's box is reused");
        assert!(Arc::ptr_eq(first.resilience(), other.resilience()));
    });
}

/// `future_pool(0)` keeps no box: every request allocates its future, as before the pool.
#[test]
fn a_pool_of_zero_keeps_nothing() {
    paused().block_on(async {
        let layer = ResilienceLayer::new(Resilience::new(Pipeline::new())).future_pool(0);
        let mut svc = ServiceBuilder::new().layer(layer).service(Echo);
        for i in 0..10 {
            svc.ready().await.unwrap().call(i).await.unwrap();
        }
        let before = allocations();
        for i in 0..100 {
            svc.ready().await.unwrap().call(i).await.unwrap();
        }
        assert_eq!(allocations() - before, 100);
        assert!(svc.future_pool().is_empty());
    });
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// Many requests in flight at once on a multi-thread runtime: each gets a box of its own (the
/// pool was empty, and the first request made its queue), all answer right, and the pool keeps only its bound of the boxes they give
/// back from the workers; a later burst reuses exactly that many and allocates the rest.
#[test]
fn concurrent_requests_on_a_multi_thread_runtime_keep_the_pool_bounded() {
    const IN_FLIGHT: u32 = 1_000;
    const POOLED: usize = 64;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let resilience = Arc::new(Resilience::new(
            Pipeline::new()
                .bulkhead(Bulkhead::new(BulkheadConfig::new(2 * IN_FLIGHT).unwrap()))
                .attempt_timeout(Duration::from_secs(30)),
        ));
        let layer = ResilienceLayer::shared(Arc::clone(&resilience)).future_pool(POOLED);
        let mut svc = ServiceBuilder::new()
            .layer(layer)
            .service_fn(|n: u32| async move {
                // Pending a few times, so requests interleave over both workers.
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                Ok::<_, BoxError>(n * 2)
            });
        // A clone shares the pool: it watches the one the requests use.
        let probe = svc.clone();
        let mut burst = async |n: u32| {
            let mut requests = Vec::with_capacity(n as usize);
            let before = allocations();
            for i in 0..n {
                requests.push((i, svc.ready().await.unwrap().call(i)));
            }
            let made = allocations() - before;
            let tasks: Vec<_> = requests
                .into_iter()
                .map(|(i, request)| (i, tokio::spawn(request)))
                .collect();
            for (i, task) in tasks {
                assert_eq!(task.await.unwrap().unwrap(), i * 2);
            }
            made
        };
        let first = burst(IN_FLIGHT).await;
        assert_eq!(
            first,
            u64::from(IN_FLIGHT) + 2,
            "an empty pool: one box per request, and the pool's queue (its slots and its box) \
             made by the service's first request"
        );
        assert_eq!(probe.future_pool().len(), POOLED);
        let extra = 10;
        let second = burst(POOLED as u32 + extra).await;
        assert_eq!(
            second,
            u64::from(extra),
            "{POOLED} boxes reused, {extra} allocated"
        );
        assert_eq!(probe.future_pool().len(), POOLED);
        assert_eq!(resilience.bulkhead().held(), 0);
        assert_eq!(
            resilience.bulkhead().releases(),
            IN_FLIGHT + POOLED as u32 + extra
        );
    });
}
