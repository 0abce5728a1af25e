//! The allocation count for the tower Layer: a request through `ResilienceLayer` (full
//! pipeline owned by the Layer, a per-request deadline) allocates nothing, from the first
//! request on: its future is the core's retry loop itself, with no box (see the tower module's
//! "Cost"), and the inner service here allocates nothing; both when the inner service answers
//! and when every attempt times out and is retried after a backoff. Then what a request holds:
//! the policies through the service's `Arc` until it answers or is dropped (then its permits
//! come back), and many concurrent requests on a multi-thread runtime allocate nothing either.
//! (`alloc_full_pipeline.rs` covers `Resilience::execute`, which allocates nothing.)
//!
//! The counter is per thread; a current-thread runtime polls every future on the thread that
//! calls `block_on`, and `block_on` runs its future on the calling thread in a multi-thread
//! runtime too, where the requests' futures are made (`Service::call`).
//!
//! Every sleep here runs on a paused runtime (exact virtual time); the real-time runtimes'
//! services answer at once.

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
        // The first request already allocates nothing of the Layer's (a box for the loop
        // would be one).
        let before = allocations();
        calls(1).await;
        assert_eq!(allocations() - before, 0, "the first request");
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
        // for its future, three attempts, three deadlines, two backoff sleeps.
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

/// A request holds the policies (the service's `Arc` of its `Resilience`) and the inner
/// service's clones while it runs, and nothing once it answers; a request that outlives every
/// service keeps the policies alive until it answers, then frees them.
#[test]
fn a_request_holds_the_policies_until_it_answers() {
    paused().block_on(async {
        let resilience = Arc::new(Resilience::new(
            Pipeline::new().attempt_timeout(Duration::from_secs(1)),
        ));
        let token = Arc::new(());
        let mut svc = ServiceBuilder::new()
            .layer(ResilienceLayer::shared(Arc::clone(&resilience)))
            .service(holding(&token));
        let (policies, services) = (Arc::strong_count(&resilience), Arc::strong_count(&token));
        let mut request = Box::pin(svc.ready().await.unwrap().call(1));
        assert!(poll_once(request.as_mut()).is_pending());
        // In flight: the future holds the inner service's clones, and the policies.
        assert!(Arc::strong_count(&token) > services);
        assert_eq!(Arc::strong_count(&resilience), policies + 1);
        assert_eq!(request.await.unwrap(), 1);
        assert_eq!(Arc::strong_count(&resilience), policies);
        assert_eq!(Arc::strong_count(&token), services);

        // A request in flight keeps the policies alive after every service is dropped,
        // answers, and then frees them: nothing outlives the request.
        let mut request = Box::pin(svc.ready().await.unwrap().call(2));
        assert!(poll_once(request.as_mut()).is_pending());
        drop(svc);
        // The service's own inner service is gone; the request's clones are not.
        assert!(Arc::strong_count(&token) > 1);
        assert_eq!(Arc::strong_count(&resilience), 2, "the policies are alive");
        assert_eq!(request.await.unwrap(), 2);
        assert_eq!(Arc::strong_count(&resilience), 1, "the policies are freed");
        assert_eq!(Arc::strong_count(&token), 1);
    });
}

/// A request dropped while its attempt runs gives back the attempt's permits (its bulkhead
/// slot, here) and its `Arc` of the policies at once, and records nothing: the loop keeps its
/// attempt detached from the pipeline it owns, and attaches it again to cancel it.
#[test]
fn a_cancelled_request_gives_back_its_permits_and_the_policies() {
    paused().block_on(async {
        let counting = Arc::new(Gate::default());
        let resilience = Arc::new(Resilience::new(
            Pipeline::new()
                .bulkhead(Bulkhead::new(BulkheadConfig::new(1).unwrap()))
                .breaker(Arc::clone(&counting)),
        ));
        let mut svc = ServiceBuilder::new()
            .layer(ResilienceLayer::shared(Arc::clone(&resilience)))
            .service_fn(|slow: bool| async move {
                if slow {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Ok::<_, BoxError>(())
            });
        svc.ready().await.unwrap().call(false).await.unwrap();
        let policies = Arc::strong_count(&resilience);
        let before = allocations();
        let mut request = Box::pin(svc.ready().await.unwrap().call(true));
        assert!(poll_once(request.as_mut()).is_pending());
        assert_eq!(
            resilience.pipeline().bulkhead_ref().held(),
            1,
            "the attempt runs"
        );
        assert_eq!(Arc::strong_count(&resilience), policies + 1);
        // Refused while it runs: the one slot is its.
        let refused = svc.ready().await.unwrap().call(false).await.unwrap_err();
        assert!(
            refused.downcast_ref::<ServiceError>().is_some(),
            "{refused}"
        );
        let before_drop = allocations();
        drop(request);
        assert_eq!(allocations() - before_drop, 0);
        assert_eq!(
            resilience.pipeline().bulkhead_ref().held(),
            0,
            "its slot is back"
        );
        assert_eq!(Arc::strong_count(&resilience), policies);
        let counts = counting.counts();
        assert_eq!(
            (
                counts.admitted,
                counts.settled,
                counts.cancelled,
                counts.held
            ),
            (3, 1, 2, 0),
            "the first request settled, the refused one's permit was dropped at the bulkhead \
             (cancelled), and the dropped request's was given back: cancelled, recorded nowhere"
        );
        // The test's own `Box::pin` of the request and the refused request's boxed error: none
        // for either request's future.
        assert_eq!(allocations() - before, 2);
    });
}

/// A service's clones, and every service a Layer makes, share the Layer's policies; a request
/// through any of them allocates nothing.
#[test]
fn clones_and_layer_calls_share_the_policies() {
    paused().block_on(async {
        let layer = ResilienceLayer::new(Resilience::new(Pipeline::new()));
        let mut first = layer.layer(Echo);
        let other = layer.layer(Echo);
        let mut clone = first.clone();
        let before = allocations();
        assert_eq!(clone.ready().await.unwrap().call(1).await.unwrap(), 2);
        assert_eq!(first.ready().await.unwrap().call(2).await.unwrap(), 3);
        assert_eq!(allocations() - before, 0);
        assert!(Arc::ptr_eq(first.resilience(), other.resilience()));
        assert!(Arc::ptr_eq(first.resilience(), clone.resilience()));
    });
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// Many requests in flight at once on a multi-thread runtime: making their futures allocates
/// nothing, not even for the first burst (only the test's own `Vec` and the spawned tasks
/// allocate), all answer right, and every slot comes back.
#[test]
fn concurrent_requests_on_a_multi_thread_runtime_allocate_no_futures() {
    const IN_FLIGHT: u32 = 1_000;
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
        let layer = ResilienceLayer::shared(Arc::clone(&resilience));
        let mut svc = ServiceBuilder::new()
            .layer(layer)
            .service_fn(|n: u32| async move {
                // Pending a few times, so requests interleave over both workers.
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                Ok::<_, BoxError>(n * 2)
            });
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
        assert_eq!(burst(IN_FLIGHT).await, 0, "the first burst");
        assert_eq!(burst(IN_FLIGHT).await, 0, "the second burst");
        assert_eq!(resilience.bulkhead().held(), 0);
        assert_eq!(resilience.bulkhead().releases(), 2 * IN_FLIGHT);
    });
}
