//! What a resilience stack adds to one async call, over the bare call, in a current-thread
//! tokio runtime: resilix-tokio's `execute` and its tower Layer (full pipeline, a deadline
//! raced on every attempt; see `overhead` for the one policy left out) beside
//! a bare `tokio::time::timeout`, a five-layer tower `ServiceBuilder` stack (load shed,
//! concurrency limit, rate limit, retry with `TpsBudget`, timeout) and tower-resilience's four
//! layers (retry, circuit breaker, bulkhead, time limiter).
//!
//! Each sample runs `iters` calls inside one `block_on`, so the runtime's entry cost is not in
//! the per-call figure. The operation is ready at once: what is measured is the wrapping.
//!
//! Before the timings, each stack runs a while and then its heap allocations per call are
//! counted by this binary's global allocator and written beside criterion's output
//! (`allocations.txt`), for the summary.
use resilix_testkit::alloc::{CountingAllocator, allocations};
use std::future::{Ready, ready};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::classify::ResultClassifier;
use resilix::execute::execute;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::{AsPipeline, Pipeline};
use resilix::random::SeededRandom;
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix_tokio::tower::ResilienceLayer;
use resilix_tokio::{Resilience, TokioTimer};
use tokio::runtime::Runtime;
use tower::retry::budget::{Budget, TpsBudget};
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

mod common;
use common::Stamp;

// ---- allocation counting -------------------------------------------------------------------

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

// ---- the stacks ----------------------------------------------------------------------------

/// The call every stack wraps: ready at once.
async fn operation(x: u32) -> Result<u32, BoxError> {
    Ok(black_box(x))
}

/// The call, pending once before it answers (a real I/O call is pending at least once): the
/// deadline's timer entry, made only when an attempt is first pending, is then on the bill.
async fn operation_pending_once(x: u32) -> Result<u32, BoxError> {
    let mut pending = true;
    std::future::poll_fn(|cx| {
        if std::mem::take(&mut pending) {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    Ok(black_box(x))
}

/// tower's retry policy with its `TpsBudget`: successes deposit, failures withdraw.
#[derive(Clone)]
struct BudgetPolicy(Arc<TpsBudget>);

impl<E> tower::retry::Policy<u32, u32, E> for BudgetPolicy {
    type Future = Ready<()>;
    fn retry(&mut self, _req: &mut u32, result: &mut Result<u32, E>) -> Option<Ready<()>> {
        match result {
            Ok(_) => {
                self.0.deposit();
                None
            }
            Err(_) => self.0.withdraw().then(|| ready(())),
        }
    }
    fn clone_request(&mut self, req: &u32) -> Option<u32> {
        Some(*req)
    }
}

const DEADLINE: Duration = Duration::from_secs(1);

/// One way of making the call: bare, or through a stack.
trait Stack {
    async fn call(&mut self, x: u32) -> u32;
}

struct Bare;
impl Stack for Bare {
    async fn call(&mut self, x: u32) -> u32 {
        operation(x).await.unwrap()
    }
}

struct BarePendingOnce;
impl Stack for BarePendingOnce {
    async fn call(&mut self, x: u32) -> u32 {
        operation_pending_once(x).await.unwrap()
    }
}

struct TokioTimeoutPendingOnce;
impl Stack for TokioTimeoutPendingOnce {
    async fn call(&mut self, x: u32) -> u32 {
        tokio::time::timeout(DEADLINE, operation_pending_once(x))
            .await
            .unwrap()
            .unwrap()
    }
}

/// resilix-tokio's `execute` over [`operation_pending_once`].
struct ResilixTokioPendingOnce<'p, P>(Resilience<&'p P>);

impl<P: AsPipeline> Stack for ResilixTokioPendingOnce<'_, P> {
    async fn call(&mut self, x: u32) -> u32 {
        self.0
            .execute(CallOptions::default(), || operation_pending_once(x))
            .await
            .unwrap()
    }
}

struct TokioTimeout;
impl Stack for TokioTimeout {
    async fn call(&mut self, x: u32) -> u32 {
        tokio::time::timeout(DEADLINE, operation(x))
            .await
            .unwrap()
            .unwrap()
    }
}

/// resilix-tokio's `execute`: the core's retry loop on tokio's clock and timer.
struct ResilixTokio<'p, P>(Resilience<&'p P>);

impl<P: AsPipeline> Stack for ResilixTokio<'_, P> {
    async fn call(&mut self, x: u32) -> u32 {
        self.0
            .execute(CallOptions::default(), || operation(x))
            .await
            .unwrap()
    }
}

/// The core's `execute` driven directly with resilix-tokio's timer: the adapter's
/// `Resilience` minus its conveniences (per-call generator, observer and classifier it holds).
struct CoreExecute<'p, P> {
    pipeline: &'p P,
    timer: TokioTimer,
    classifier: ResultClassifier,
    rng: SeededRandom,
}

impl<Rt, T, B, L, H, Rl> Stack for CoreExecute<'_, Pipeline<Rt, T, B, L, H, Rl>>
where
    Rt: resilix::retry::RetryPolicy,
    T: resilix::permit::Policy,
    B: resilix::permit::Policy,
    L: resilix::permit::Policy,
    H: resilix::permit::Policy,
    Rl: resilix::permit::Policy,
{
    async fn call(&mut self, x: u32) -> u32 {
        execute(
            self.pipeline,
            &self.timer,
            &mut self.rng,
            &(),
            CallOptions::default(),
            &self.classifier,
            || operation(x),
        )
        .await
        .unwrap()
        .unwrap()
    }
}

/// Any tower service: `ready`, then `call`.
struct Tower<S>(S);
impl<S> Stack for Tower<S>
where
    S: Service<u32, Response = u32>,
    S::Error: std::fmt::Debug,
{
    async fn call(&mut self, x: u32) -> u32 {
        let svc = self.0.ready().await.unwrap();
        svc.call(x).await.unwrap()
    }
}

/// Runs `iters` calls inside one `block_on`, timed on the bench clock.
fn time_calls<S: Stack>(rt: &Runtime, iters: u64, stack: &mut S) -> Duration {
    rt.block_on(async {
        let start = Stamp::now();
        for i in 0..iters {
            black_box(stack.call(black_box(i as u32)).await);
        }
        start.elapsed()
    })
}

/// Heap allocations per call once the stack is warm.
fn allocs_per_call<S: Stack>(rt: &Runtime, stack: &mut S) -> f64 {
    const CALLS: u64 = 10_000;
    time_calls(rt, 1_000, stack);
    rt.block_on(async {
        let before = allocations();
        for i in 0..CALLS {
            black_box(stack.call(i as u32).await);
        }
        (allocations() - before) as f64 / CALLS as f64
    })
}

/// Counts the stack's allocations, then benches it as `async/<name>/call/1t`.
fn run<S: Stack>(
    c: &mut Criterion,
    rt: &Runtime,
    allocs: &mut Vec<(String, f64)>,
    name: &str,
    mut stack: S,
) {
    allocs.push((format!("async/{name}"), allocs_per_call(rt, &mut stack)));
    c.bench_function(&format!("async/{name}/call/1t"), |b| {
        b.iter_custom(|iters| time_calls(rt, iters, &mut stack))
    });
}

fn overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut allocs = Vec::new();

    run(c, &rt, &mut allocs, "bare", Bare);
    run(c, &rt, &mut allocs, "tokio-timeout", TokioTimeout);

    // The full pipeline, each policy with its defaults: retry (3 attempts, full jitter) with a
    // ratio budget, throttler, breaker, adaptive limiter, bulkhead, and a deadline on every
    // attempt. The rate limiter is left out: at most 1 M cells/s fit its 32-bit word to 0.1 %,
    // and this loop makes several million calls a second, so it would refuse most of them.
    // The summary adds its measured allowed path (rate_limit/resilix/allowed/1t) instead.
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let breaker = Breaker::new(BreakerConfig::DEFAULT).unwrap();
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .throttler(&throttler)
        .breaker(&breaker)
        .limiter(&limiter)
        .bulkhead(&bulkhead)
        .attempt_timeout(DEADLINE);
    let resilience = rt.block_on(async { Resilience::new(&pipeline).seed(1) });
    run(
        c,
        &rt,
        &mut allocs,
        "resilix-tokio-execute",
        ResilixTokio(resilience),
    );

    // The same over a call that is pending once: what a real I/O call pays, the deadline's
    // timer entry included. Compare with `bare-pending-once`.
    run(c, &rt, &mut allocs, "bare-pending-once", BarePendingOnce);
    run(
        c,
        &rt,
        &mut allocs,
        "tokio-timeout-pending-once",
        TokioTimeoutPendingOnce,
    );
    let resilience = rt.block_on(async { Resilience::new(&pipeline).seed(1) });
    run(
        c,
        &rt,
        &mut allocs,
        "resilix-tokio-execute-pending-once",
        ResilixTokioPendingOnce(resilience),
    );

    let core = rt.block_on(async {
        CoreExecute {
            pipeline: &pipeline,
            timer: TokioTimer::new(),
            classifier: ResultClassifier::new(),
            rng: SeededRandom::new(1),
        }
    });
    run(c, &rt, &mut allocs, "resilix-core-execute", core);

    // The same without a deadline: no timer entry is made, so the difference is what racing
    // each attempt against its deadline costs.
    let no_deadline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .throttler(&throttler)
        .breaker(&breaker)
        .limiter(&limiter)
        .bulkhead(&bulkhead);
    let resilience = rt.block_on(async { Resilience::new(&no_deadline).seed(1) });
    run(
        c,
        &rt,
        &mut allocs,
        "resilix-tokio-execute-no-deadline",
        ResilixTokio(resilience),
    );

    // resilix-tokio's tower Layer over the same policies (owned by the pipeline: a Layer needs
    // `'static`), with a per-request deadline.
    let layered = rt.block_on(async {
        let pipeline = Pipeline::new()
            .retry(Retry::new(
                RetryConfig::DEFAULT,
                RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap(),
            ))
            .throttler(Throttler::new(ThrottlerConfig::DEFAULT).unwrap())
            .breaker(Breaker::new(BreakerConfig::DEFAULT).unwrap())
            .limiter(Limiter::new(LimiterConfig::gradient2()).unwrap())
            .bulkhead(Bulkhead::new(BulkheadConfig::DEFAULT));
        let layer =
            ResilienceLayer::new(Resilience::new(Box::new(pipeline)).seed(1)).timeout(DEADLINE);
        ServiceBuilder::new().layer(layer).service_fn(operation)
    });
    run(c, &rt, &mut allocs, "resilix-tokio-layer", Tower(layered));

    let budget = Arc::new(TpsBudget::new(Duration::from_secs(10), 10, 0.2));
    let tower_stack = rt.block_on(async {
        ServiceBuilder::new()
            .load_shed()
            .concurrency_limit(BulkheadConfig::DEFAULT_MAX_CONCURRENT as usize)
            .rate_limit(1_000_000_000, Duration::from_secs(1))
            .retry(BudgetPolicy(budget))
            .timeout(DEADLINE)
            .service_fn(operation)
    });
    run(c, &rt, &mut allocs, "tower-stack", Tower(tower_stack));

    run(
        c,
        &rt,
        &mut allocs,
        "tower-resilience",
        tower_resilience(&rt),
    );

    write_allocations(&allocs);
}

/// tower-resilience's four layers, outermost first: retry, circuit breaker, bulkhead, time
/// limiter.
fn tower_resilience(rt: &Runtime) -> impl Stack {
    use tower_resilience::bulkhead::BulkheadLayer;
    use tower_resilience::circuitbreaker::CircuitBreakerLayer;
    use tower_resilience::retry::RetryLayer;
    use tower_resilience::timelimiter::TimeLimiterLayer;

    rt.block_on(async {
        let inner = ServiceBuilder::new()
            .layer(CircuitBreakerLayer::builder().build().unwrap())
            .layer(
                BulkheadLayer::builder()
                    .max_concurrent_calls(BulkheadConfig::DEFAULT_MAX_CONCURRENT as usize)
                    .build()
                    .unwrap(),
            )
            .layer(
                TimeLimiterLayer::builder()
                    .timeout_duration(DEADLINE)
                    .build(),
            )
            .service_fn(operation);
        let retry = RetryLayer::builder()
            .max_attempts(3)
            .exponential_backoff(Duration::from_millis(100))
            .build();
        Tower(ServiceBuilder::new().layer(retry).service(inner))
    })
}

/// Writes `name allocations-per-call` lines beside criterion's output, for `bench-summary`.
fn write_allocations(allocs: &[(String, f64)]) {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("criterion");
    let text: String = allocs
        .iter()
        .map(|(name, n)| format!("{name} {n}\n"))
        .collect();
    print!("allocations per call after warm-up:\n{text}");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("allocations.txt"), text);
    }
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = overhead
}
criterion_main!(benches);
