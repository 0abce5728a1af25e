//! A `tower` Layer running every request through a whole pipeline (feature `tower`).
//!
//! The service is `Clone`, and every clone shares one [`Resilience`] (one set of policies:
//! one breaker per upstream, one budget per process) through an `Arc`. Each request runs the
//! same retry loop as [`Resilience::execute`](resilix::resilience::Resilience::execute): the
//! core's [`execute_gated`], where each attempt clones the inner service, waits for it to be
//! ready and calls it with the request. A pipeline without retry moves the request into its
//! one attempt (no `Clone` needed: `reqwest::Request` is not), a retrying one hands each
//! attempt a clone ([`resilix::call::Replay`], by the retry slot's type).
//!
//! Errors become [`tower::BoxError`](BoxError): the inner service's own error, or the core's
//! typed [`ExecuteError`] carrying the last inner error (`ServiceError`), which a caller can
//! downcast and match. When retry gives up on a *response* the classifier called a failure
//! (a 503 after the last attempt), that response is returned as is, as `tower`'s retry does.
//!
//! ```
//! use std::time::Duration;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::Resilience;
//! use resilix_tokio::tower::{ResilienceLayer, ServiceError};
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(100));
//! let layer = ResilienceLayer::new(Resilience::new(pipeline));
//! let svc = ServiceBuilder::new().layer(layer).service(service_fn(|n: u32| async move {
//!     if n == 0 { tokio::time::sleep(Duration::from_secs(1)).await; }
//!     Ok::<_, std::io::Error>(n * 2)
//! }));
//! assert_eq!(svc.clone().oneshot(21).await.unwrap(), 42);
//! let err = svc.oneshot(0).await.unwrap_err();
//! assert!(err.downcast_ref::<ServiceError>().is_some(), "timed out: {err}");
//! # });
//! ```
//!
//! # Waiting for a slot
//!
//! [`ResilienceLayer::wait_for_bulkhead`] (and [`ResilienceLayer::wait_for_limiter`]) holds
//! each attempt, boundedly, until the pipeline's bulkhead has a free slot (or while it waits
//! in the adaptive limiter's queue zone), as
//! [`Resilience::execute_waiting_for_bulkhead`](resilix::resilience::Resilience::execute_waiting_for_bulkhead)
//! does: the policy needs a [`SlotWaiters`](crate::SlotWaiters) hook, whose
//! [`WaitConfig`](resilix::bulkhead::wait::WaitConfig) bounds the queue and the wait.
//!
//! ```
//! use std::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::{Resilience, SlotWaiters};
//! use resilix_tokio::tower::ResilienceLayer;
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let wait = WaitConfig::new(8, Duration::from_millis(100), WaitOrder::Fifo).unwrap();
//! let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::<8>::new(wait));
//! let layer = ResilienceLayer::new(Resilience::new(Pipeline::new().bulkhead(bulkhead)))
//!     .wait_for_bulkhead();
//! let svc = ServiceBuilder::new().layer(layer).service(service_fn(|n: u32| async move {
//!     tokio::time::sleep(Duration::from_millis(30)).await;
//!     Ok::<_, std::io::Error>(n)
//! }));
//! // Two requests, one slot: the second waits 30 ms for the first instead of being refused.
//! let (a, b) = tokio::join!(svc.clone().oneshot(1), svc.oneshot(2));
//! assert_eq!((a.unwrap(), b.unwrap()), (1, 2));
//! # });
//! ```
//!
//! # Cost
//!
//! No allocation per request after warm-up, and four atomic read-modify-writes of the Layer's
//! own beyond what [`Resilience::execute`](resilix::resilience::Resilience::execute) does.
//!
//! The loop borrows the pipeline inside the state the service and its clones share
//! ([`Shared`], behind an `Arc`), which only an `async` block can own safely, and stable Rust
//! cannot name an `async` block's type as `Service::Future`, so the block is boxed
//! (`ResponseFuture` holds a `dyn` future); but the box is recycled. A service and its
//! clones share a [`FuturePool`]: a request takes the box of an answered request and writes
//! its future over the old one in place (`Pin::set`: every request of a service is the same
//! `async` block, so the pool keeps its boxes typed, and no unsafe code is needed), and gives
//! it back the moment it answers, when the block holds nothing any more. A service thus
//! allocates one box for each request it has ever had in flight at once, keeps up to
//! [`DEFAULT_FUTURE_POOL`] of them ([`ResilienceLayer::future_pool`] sets another bound), and
//! allocates nothing per request once warm. Each `Layer::layer` call makes a pool of its own
//! (two allocations when the service is built, the shared state and the pool, and two more
//! at its first request, the pool's queue), so a stack built per connection pools per
//! connection.
//!
//! The read-modify-writes (about 9 ns each uncontended on a current x86-64, more when cores
//! contend for the line) are, per request:
//! - the `Arc` of the shared state cloned into the request's future, and its release: two.
//!   The future borrows the pipeline through it and hands it over with its output, and
//!   `ResponseFuture` gives the box back through it before releasing it, so neither the
//!   future's `Arc<Resilience>` nor the pool's needs an `Arc` of its own (each would cost a
//!   clone and a release more);
//! - taking a box from the pool and giving it back: one swap each while the service has one
//!   request in flight at a time (the box answered last waits in a slot of its own), else one
//!   compare-and-swap each on a bounded lock-free queue (`crossbeam-queue`'s `ArrayQueue`; a
//!   `Mutex` costs a lock and an unlock, two, each).
//!
//! Counted by callgrind (`N=200000 bash benches/instructions.sh async-execute async-layer`, the
//! full pipeline and a deadline over an inner service that answers at once, in a whole-program
//! optimised build): 1,264 instructions and 14 read-modify-writes per request through the
//! Layer, against 1,014 and 10 for
//! [`Resilience::execute`](resilix::resilience::Resilience::execute) (a `Mutex` pool and an
//! `Arc` each for the pipeline and the pool cost 1,333 and 18). In a plain release build, as a
//! user's `cargo build --release` makes it (no LTO; `PROFILE=release` for the script), 1,301
//! against 1,015. It was 1,845 there while the box was recycled through `tokio_util`'s
//! `ReusableBoxFuture`, whose `set` copied the ≈ 730-byte future twice through calls that build
//! does not inline, and 1,404 before the hot slot spared the queue's two operations.
//!
//! A request dropped before it answers (cancelled, or timed out by an outer layer) drops its
//! future on the spot, permits included, box and all: a later request then allocates a box
//! again. Requests in flight beyond the pool's bound pay one allocation each, as does the error
//! of a request that fails (tower's errors are boxed). Nothing else is allocated per request
//! beyond what the inner service does (a waiter's timer aside, paid only by a request that
//! really waits).

use std::fmt;
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use resilix::call::{CallOptions, Replay};
use resilix::classify::Classify;
use resilix::execute::{Attempted, ExecuteError, Gate, execute_gated};
use resilix::observe::Observer;
use resilix::permit::Policy;
use resilix::pipeline::AsPipeline;
use resilix::retry::RetryPolicy;
use resilix::waiters::{WaitGate, Waitable};
use tower_layer::Layer;
use tower_service::Service;

use crate::{Resilience, TokioTimer};

mod pool;

pub use pool::{DEFAULT_FUTURE_POOL, FuturePool};
use pool::{HasPool, Home};

/// The boxed error type of `tower`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a [`ResilienceService`] fails with when the pipeline stops the call: the core's error,
/// with the last inner error (if the last attempt failed with one) in place of the output.
pub type ServiceError = ExecuteError<Option<BoxError>>;

/// Wraps a service in a pipeline. See the [module docs](self).
///
/// `Req` is the request type of the services it wraps (usually inferred); `W` says whether
/// attempts wait for a slot ([`NoWait`], [`ForBulkhead`], [`ForLimiter`]).
pub struct ResilienceLayer<R, Req, W = NoWait> {
    resilience: Arc<R>,
    options: CallOptions,
    pooled: usize,
    _marker: PhantomData<fn(Req) -> W>,
}

impl<R, Req, W> Clone for ResilienceLayer<R, Req, W> {
    fn clone(&self) -> Self {
        ResilienceLayer {
            resilience: Arc::clone(&self.resilience),
            options: self.options,
            pooled: self.pooled,
            _marker: PhantomData,
        }
    }
}

impl<R, Req, W> fmt::Debug for ResilienceLayer<R, Req, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceLayer")
            .field("options", &self.options)
            .field("pooled", &self.pooled)
            .field("wait", &std::any::type_name::<W>())
            .finish_non_exhaustive()
    }
}

impl<R, Req> ResilienceLayer<R, Req> {
    /// A layer whose services all share `resilience`.
    pub fn new(resilience: R) -> Self {
        Self::shared(Arc::new(resilience))
    }

    /// A layer sharing an existing `Arc` (to use the same policies outside tower too).
    pub fn shared(resilience: Arc<R>) -> Self {
        ResilienceLayer {
            resilience,
            options: CallOptions::default(),
            pooled: DEFAULT_FUTURE_POOL,
            _marker: PhantomData,
        }
    }
}

impl<R, Req, W> ResilienceLayer<R, Req, W> {
    /// Each request must finish within `timeout`, retries included (its deadline, counted
    /// from the request's first poll).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.timeout(timeout);
        self
    }

    /// Declares every request safe to repeat after a timeout.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.options = self.options.idempotent(idempotent);
        self
    }

    /// Each attempt waits (boundedly) for a slot in the pipeline's bulkhead instead of being
    /// refused at once (the bulkhead needs a [`SlotWaiters`](crate::SlotWaiters) hook). See
    /// the [module docs](self#waiting-for-a-slot).
    pub fn wait_for_bulkhead(self) -> ResilienceLayer<R, Req, ForBulkhead> {
        self.waiting()
    }

    /// Each attempt waits (boundedly) in the pipeline's adaptive limiter's queue zone instead
    /// of being refused at once (the limiter needs a [`SlotWaiters`](crate::SlotWaiters) hook).
    pub fn wait_for_limiter(self) -> ResilienceLayer<R, Req, ForLimiter> {
        self.waiting()
    }

    /// Each service this layer makes, with its clones, keeps the boxes of up to `max` answered
    /// requests for its next ones ([`DEFAULT_FUTURE_POOL`] unless set; 0 keeps none, so
    /// every request allocates its future). See the [module docs](self#cost).
    ///
    /// ```
    /// use resilix::pipeline::Pipeline;
    /// use resilix_tokio::Resilience;
    /// use resilix_tokio::tower::ResilienceLayer;
    /// use tower::{Layer, service_fn};
    ///
    /// let layer = ResilienceLayer::new(Resilience::new(Pipeline::new())).future_pool(64);
    /// let svc = layer.layer(service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
    /// assert_eq!(svc.future_pool().max(), 64);
    /// ```
    pub fn future_pool(mut self, max: usize) -> Self {
        self.pooled = max;
        self
    }

    fn waiting<W2>(self) -> ResilienceLayer<R, Req, W2> {
        ResilienceLayer {
            resilience: self.resilience,
            options: self.options,
            pooled: self.pooled,
            _marker: PhantomData,
        }
    }
}

/// Which policy, if any, an attempt waits on before it is admitted: the [`Gate`] the loop
/// holds each attempt at. Chosen by the Layer ([`ResilienceLayer::wait_for_bulkhead`]).
pub trait Wait<P> {
    /// The gate, borrowing the pipeline (held across awaits by a request's future, which
    /// is `Send`).
    type Gate<'p>: Gate<Wait: Send> + Send + Sync
    where
        P: 'p;

    /// The gate on `pipeline`'s policy, timing waits on `timer`.
    fn gate<'p>(pipeline: &'p P, timer: &TokioTimer) -> Self::Gate<'p>;
}

/// Attempts never wait: a full policy refuses at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWait;

/// Attempts wait for a slot in the pipeline's bulkhead.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForBulkhead;

/// Attempts wait in the pipeline's adaptive limiter's queue zone.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForLimiter;

impl<P> Wait<P> for NoWait {
    type Gate<'p>
        = ()
    where
        P: 'p;

    #[inline(always)]
    fn gate(_pipeline: &P, _timer: &TokioTimer) {}
}

impl<P: AsPipeline> Wait<P> for ForBulkhead
where
    P::Bulkhead: Waitable + Sync,
    for<'a> <P::Bulkhead as Waitable>::Held<'a>: Send,
{
    type Gate<'p>
        = WaitGate<'p, P::Bulkhead, TokioTimer>
    where
        P: 'p;

    fn gate<'p>(pipeline: &'p P, timer: &TokioTimer) -> Self::Gate<'p> {
        WaitGate::new(pipeline.as_pipeline().bulkhead_ref(), *timer)
    }
}

impl<P: AsPipeline> Wait<P> for ForLimiter
where
    P::Limiter: Waitable + Sync,
    for<'a> <P::Limiter as Waitable>::Held<'a>: Send,
{
    type Gate<'p>
        = WaitGate<'p, P::Limiter, TokioTimer>
    where
        P: 'p;

    fn gate<'p>(pipeline: &'p P, timer: &TokioTimer) -> Self::Gate<'p> {
        WaitGate::new(pipeline.as_pipeline().limiter_ref(), *timer)
    }
}

/// A [`Resilience`] that can serve requests of type `Req` to `S` in spawned tasks, waiting as
/// `W` says: every bound the Layer needs, named once (implemented for every `Resilience`
/// whose pipeline, observer and classifier are `Send + Sync + 'static` and whose permits are
/// `Send`).
///
/// The `Layer` checks it where `ServiceBuilder::service` builds the service, with concrete
/// types; the service keeps only a function pointer to [`Serve::serve`], so `Service` and its
/// future carry no bound on the policies. With this bound on the `Service` impl instead, a
/// spawned `async { svc.oneshot(..).await }` does not compile for a pipeline of `&'static`
/// policies ("implementation of `Policy` is not general enough") nor for an inner error that
/// is a `BoxError` ("implementation of `From` is not general enough"): rustc proves a spawned
/// future `Send` with every lifetime erased, and these bounds do not hold for every lifetime.
/// (The same is why [`Static`](crate::Static) exists for `Resilience::execute`.)
pub trait Serve<S: Service<Req>, Req, W>: Sized {
    /// Runs one request through the pipeline, its future boxed in one of the service's
    /// pooled boxes; the future owns `shared` until it answers.
    fn serve(
        shared: Arc<Shared<Self, S::Response>>,
        inner: S,
        request: Req,
        options: CallOptions,
    ) -> ResponseFuture<S::Response>;
}

/// What a [`ResilienceService`] and its clones share: the [`Resilience`] the Layer was given
/// (`R`) and the [`FuturePool`] of their requests' boxes.
///
/// A request's future holds one `Arc` of it while it runs (borrowing the pipeline through
/// it) and hands it over as it answers, to give the box back through it: the request's only
/// reference-count change (see the [module docs](self#cost)). Reached through
/// [`ResilienceService::resilience`] and [`ResilienceService::future_pool`].
pub struct Shared<R, Resp> {
    resilience: Arc<R>,
    pool: FuturePool<Resp>,
}

impl<R: Send + Sync, Resp> HasPool<Resp> for Shared<R, Resp> {
    fn pool(&self) -> &FuturePool<Resp> {
        &self.pool
    }
}

impl<R, Resp> fmt::Debug for Shared<R, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl<S, Req, P, O, C, W> Serve<S, Req, W> for Resilience<P, O, C>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    Req: Send + 'static,
    P: AsPipeline + Send + Sync + 'static,
    P::Retry: Replay<Req> + Sync,
    <P::Retry as RetryPolicy>::State: Send,
    P::Throttler: Sync,
    P::Breaker: Sync,
    P::Limiter: Sync,
    P::Bulkhead: Sync,
    P::RateLimit: Sync,
    for<'a> <P::Throttler as Policy>::Permit<'a>: Send,
    for<'a> <P::Breaker as Policy>::Permit<'a>: Send,
    for<'a> <P::Limiter as Policy>::Permit<'a>: Send,
    for<'a> <P::Bulkhead as Policy>::Permit<'a>: Send,
    for<'a> <P::RateLimit as Policy>::Permit<'a>: Send,
    O: Observer + Send + Sync + 'static,
    C: Classify<Result<S::Response, S::Error>> + Send + Sync + 'static,
    W: Wait<P>,
{
    fn serve(
        shared: Arc<Shared<Self, S::Response>>,
        inner: S,
        request: Req,
        options: CallOptions,
    ) -> ResponseFuture<S::Response> {
        let mut request = Some(request);
        // Each attempt: a clone of the inner service, made ready, called with the request
        // (moved into the only attempt, or cloned when retries may follow).
        let attempt = move || {
            let request = <P::Retry as Replay<Req>>::next_request(&mut request);
            let mut svc = inner.clone();
            async move {
                let Some(request) = request else {
                    unreachable!("a pipeline that never retries makes one attempt")
                };
                poll_fn(|cx| svc.poll_ready(cx)).await?;
                svc.call(request).await
            }
        };
        // Given `shared` as an argument, so the pool is searched before the block owns it.
        let make = move |shared: Arc<Shared<Self, S::Response>>| async move {
            let result = {
                let resilience = &*shared.resilience;
                let mut slot = None;
                let mut rng = resilience.lazy_rng(&mut slot);
                let gate = W::gate(resilience.pipeline(), resilience.timer());
                execute_gated(
                    resilience.pipeline().as_pipeline(),
                    resilience.timer(),
                    &mut rng,
                    resilience.observer_ref(),
                    options,
                    resilience.classifier_ref(),
                    &gate,
                    attempt,
                )
                .await
            };
            // Handed over rather than dropped, so `ResponseFuture` can give the box back
            // without an `Arc` of its own (an unsizing coercion: no count changes).
            let home: Home<S::Response> = shared;
            (into_response(result), home)
        };
        ResponseFuture {
            future: Some(pool::boxed(shared, make)),
        }
    }
}

impl<S, Req, R, W> Layer<S> for ResilienceLayer<R, Req, W>
where
    S: Service<Req>,
    R: Serve<S, Req, W>,
{
    type Service = ResilienceService<S, Req, R>;

    fn layer(&self, inner: S) -> Self::Service {
        ResilienceService {
            inner,
            shared: Arc::new(Shared {
                resilience: Arc::clone(&self.resilience),
                pool: FuturePool::new(self.pooled),
            }),
            options: self.options,
            serve: R::serve,
        }
    }
}

/// The loop for one request, instantiated by the `Layer` (see [`Serve`] for why a pointer).
type ServeFn<S, Req, R> = fn(
    Arc<Shared<R, <S as Service<Req>>::Response>>,
    S,
    Req,
    CallOptions,
) -> ResponseFuture<<S as Service<Req>>::Response>;

/// A service whose every request runs through a pipeline. Clones share the policies.
///
/// `R` is the [`Resilience`] the Layer was given.
pub struct ResilienceService<S, Req, R>
where
    S: Service<Req>,
{
    inner: S,
    shared: Arc<Shared<R, S::Response>>,
    options: CallOptions,
    serve: ServeFn<S, Req, R>,
}

impl<S, Req, R> ResilienceService<S, Req, R>
where
    S: Service<Req>,
{
    /// The policies the service's requests run through (shared by every clone).
    pub fn resilience(&self) -> &Arc<R> {
        &self.shared.resilience
    }

    /// The boxes of answered requests waiting for the next ones (shared by every clone).
    ///
    /// ```
    /// use resilix::pipeline::Pipeline;
    /// use resilix_tokio::Resilience;
    /// use resilix_tokio::tower::ResilienceLayer;
    /// use tower::{ServiceBuilder, ServiceExt};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let layer = ResilienceLayer::new(Resilience::new(Pipeline::new()));
    /// let svc = ServiceBuilder::new()
    ///     .layer(layer)
    ///     .service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) });
    /// assert!(svc.future_pool().is_empty());
    /// assert_eq!(svc.clone().oneshot(7).await.unwrap(), 7);
    /// // The answered request's box waits for the next request, which allocates nothing.
    /// assert_eq!(svc.future_pool().len(), 1);
    /// # });
    /// ```
    pub fn future_pool(&self) -> &FuturePool<S::Response> {
        &self.shared.pool
    }
}

impl<S, Req, R> Clone for ResilienceService<S, Req, R>
where
    S: Service<Req> + Clone,
{
    fn clone(&self) -> Self {
        ResilienceService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            options: self.options,
            serve: self.serve,
        }
    }
}

impl<S, Req, R> fmt::Debug for ResilienceService<S, Req, R>
where
    S: Service<Req> + fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceService")
            .field("inner", &self.inner)
            .field("options", &self.options)
            .field("pool", &self.shared.pool)
            .finish_non_exhaustive()
    }
}

// No bound on the policies: see `Serve`.
impl<S, Req, R> Service<Req> for ResilienceService<S, Req, R>
where
    S: Service<Req> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Response>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is the inner service's, awaited per attempt: a pipeline refusal must not
        // be held up behind an inner service that is not ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        (self.serve)(
            Arc::clone(&self.shared),
            self.inner.clone(),
            request,
            self.options,
        )
    }
}

/// The future a [`ResilienceService`] returns: the core's retry loop
/// ([`execute_gated`]) over the service's shared pipeline, boxed in a box an earlier request
/// gave back to the service's [`FuturePool`], or a new one while the pool has none (see the
/// [module docs](self#cost)).
///
/// Nothing runs until it is first polled. Dropping it at any point gives back every permit
/// and records nothing, as [`Resilience::execute`](resilix::resilience::Resilience::execute)'s
/// future does; a future dropped before it answered frees its box rather than pool it.
pub struct ResponseFuture<Resp> {
    /// `None` once it has answered: the box is back in the pool.
    future: Option<pool::Boxed<Resp>>,
}

impl<Resp> Future for ResponseFuture<Resp> {
    type Output = Result<Resp, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(future) = this.future.as_mut() else {
            panic!("`ResponseFuture` polled after it answered");
        };
        let (output, home) = ready!(future.as_mut().poll_answer(cx));
        // Answered: the `async` block has dropped everything it held, so its box can go.
        if let Some(answered) = this.future.take() {
            answered.give_back(home.pool());
        }
        // `home` goes last: if every service is gone, it frees the pool, this box included.
        drop(home);
        Poll::Ready(output)
    }
}

impl<Resp> fmt::Debug for ResponseFuture<Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

/// The loop's result as the service's: an answered error passes through, a response the
/// retry gave up on is returned as is, anything else is the core's typed error, boxed.
fn into_response<Resp, E: Into<BoxError>>(
    result: Result<Result<Resp, E>, ExecuteError<Result<Resp, E>>>,
) -> Result<Resp, BoxError> {
    match result {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(answered)) => Err(answered.into()),
        Err(ExecuteError::GaveUp {
            last: Attempted::Output(Ok(response)),
            ..
        }) => Ok(response),
        Err(error) => Err(boxed(error)),
    }
}

fn boxed<Resp, E: Into<BoxError>>(error: ExecuteError<Result<Resp, E>>) -> BoxError {
    Box::new(without_response(error))
}

/// The core's error with the response dropped and the inner error boxed.
fn without_response<Resp, E: Into<BoxError>>(error: ExecuteError<Result<Resp, E>>) -> ServiceError {
    let keep = |a: Attempted<Result<Resp, E>>| match a {
        Attempted::Output(Ok(_)) => Attempted::Output(None),
        Attempted::Output(Err(e)) => Attempted::Output(Some(e.into())),
        Attempted::TimedOut => Attempted::TimedOut,
    };
    match error {
        ExecuteError::Refused {
            rejection,
            attempts,
            last,
        } => ExecuteError::Refused {
            rejection,
            attempts,
            last: last.map(keep),
        },
        ExecuteError::GaveUp {
            reason,
            attempts,
            last,
        } => ExecuteError::GaveUp {
            reason,
            attempts,
            last: keep(last),
        },
        ExecuteError::DeadlinePassed { attempts, last } => ExecuteError::DeadlinePassed {
            attempts,
            last: last.map(keep),
        },
    }
}
