//! A `tower` Layer running every request through a whole pipeline (feature `tower`).
//!
//! The service is `Clone`, and every clone shares one [`Resilience`](crate::Resilience) (one set of policies:
//! one breaker per upstream, one budget per process) through an `Arc`. Each request runs the
//! same retry loop as [`Resilience::execute`](resilix::resilience::Resilience::execute): the
//! core's [`Drive`], where each attempt clones the inner service, waits for it to be ready and
//! calls it with the request. A pipeline without retry moves the request into its
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
//! [`call(options).wait_for_bulkhead()`](resilix::resilience::CallBuilder::wait_for_bulkhead)
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
//! No allocation per request, from the first one: [`ResponseFuture`] is the core's loop
//! ([`Drive`]) itself, a future with a name, so `Service::Future` needs no box. Per request,
//! beyond what [`Resilience::execute`](resilix::resilience::Resilience::execute) does: the
//! `Arc` of the shared [`Resilience`](crate::Resilience) cloned into the request's future and released with it
//! (two atomic read-modify-writes), and a clone of the inner service per attempt, as `tower`'s
//! own `Oneshot` makes.
//!
//! The future owns the `Resilience` through that `Arc`, so it cannot keep a borrow of the
//! pipeline across an await: it keeps its admitted attempt detached from the pipeline (the
//! permits' data, [`DetachedAttempt`](resilix::pipeline::DetachedAttempt)) and attaches it
//! again to settle it, or, if the request is dropped first, to give back what it holds. A
//! Layer that waits for a slot ([`ResilienceLayer::wait_for_bulkhead`]) clones the `Arc` once
//! more per request and once per wait, for the gate to reach the policy.
//!
//! An error of a request that fails is boxed (tower's errors are); a waiter's timer is boxed
//! by a request that really waits. Nothing else is allocated per request beyond what the
//! inner service does.
//!
//! Counted by callgrind (`N=200000 bash benches/instructions.sh async-execute async-layer`,
//! the full pipeline and a deadline over an inner service that answers at once): see the
//! README's table of instructions per call.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use resilix::call::CallOptions;
use resilix::classify::Classify;
use resilix::execute::{Attempted, Drive, Engine, ExecuteError, Operation};
use tower_layer::Layer;
use tower_service::Service;

mod attempt;
mod engine;
mod wait;

pub use attempt::{Attempts, ServiceCall};
pub use engine::Owned;
pub use wait::{BulkheadOf, ForBulkhead, ForLimiter, LimiterOf, NoWait, Wait};

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
    _marker: PhantomData<fn(Req) -> W>,
}

impl<R, Req, W> Clone for ResilienceLayer<R, Req, W> {
    fn clone(&self) -> Self {
        ResilienceLayer {
            resilience: Arc::clone(&self.resilience),
            options: self.options,
            _marker: PhantomData,
        }
    }
}

impl<R, Req, W> fmt::Debug for ResilienceLayer<R, Req, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceLayer")
            .field("options", &self.options)
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

    fn waiting<W2>(self) -> ResilienceLayer<R, Req, W2> {
        ResilienceLayer {
            resilience: self.resilience,
            options: self.options,
            _marker: PhantomData,
        }
    }
}

/// What the loop of a request to `S` answers: the inner service's result, or why the loop
/// stopped without one.
type Looped<S, Req> = Result<
    Result<<S as Service<Req>>::Response, <S as Service<Req>>::Error>,
    ExecuteError<Result<<S as Service<Req>>::Response, <S as Service<Req>>::Error>>,
>;

/// The loop's answer as the service's ([`into_response`] for the service's error type).
type Answer<S, Req> = fn(Looped<S, Req>) -> Result<<S as Service<Req>>::Response, BoxError>;

impl<S, Req, R, W> Layer<S> for ResilienceLayer<R, Req, W>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    W: Wait<R>,
    Owned<R>: Engine<Classifier: Classify<Result<S::Response, S::Error>>>,
    Attempts<S, Req, R>: Operation<Future = ServiceCall<S, Req>>,
{
    type Service = ResilienceService<S, Req, R, W>;

    fn layer(&self, inner: S) -> Self::Service {
        ResilienceService {
            inner,
            resilience: Arc::clone(&self.resilience),
            options: self.options,
            answer: into_response::<S::Response, S::Error>,
            _wait: PhantomData,
        }
    }
}

/// A service whose every request runs through a pipeline. Clones share the policies.
///
/// `R` is the [`Resilience`](crate::Resilience) the Layer was given, `W` whether attempts wait for a slot.
pub struct ResilienceService<S, Req, R, W = NoWait>
where
    S: Service<Req>,
{
    inner: S,
    resilience: Arc<R>,
    options: CallOptions,
    // Chosen where the Layer knows the inner error converts (`Into<BoxError>`), so that the
    // `Service` impl carries no such bound: with it, a spawned `async { svc.oneshot(..) }`
    // over an inner `BoxError` fails rustc's proof that it is `Send` ("implementation of
    // `From` is not general enough": that proof erases every lifetime).
    answer: Answer<S, Req>,
    _wait: PhantomData<fn() -> W>,
}

impl<S, Req, R, W> ResilienceService<S, Req, R, W>
where
    S: Service<Req>,
{
    /// The policies the service's requests run through (shared by every clone).
    pub fn resilience(&self) -> &Arc<R> {
        &self.resilience
    }
}

impl<S, Req, R, W> Clone for ResilienceService<S, Req, R, W>
where
    S: Service<Req> + Clone,
{
    fn clone(&self) -> Self {
        ResilienceService {
            inner: self.inner.clone(),
            resilience: Arc::clone(&self.resilience),
            options: self.options,
            answer: self.answer,
            _wait: PhantomData,
        }
    }
}

impl<S, Req, R, W> fmt::Debug for ResilienceService<S, Req, R, W>
where
    S: Service<Req> + fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceService")
            .field("inner", &self.inner)
            .field("options", &self.options)
            .field("wait", &std::any::type_name::<W>())
            .finish_non_exhaustive()
    }
}

impl<S, Req, R, W> Service<Req> for ResilienceService<S, Req, R, W>
where
    S: Service<Req> + Clone,
    W: Wait<R>,
    Owned<R>: Engine<Classifier: Classify<Result<S::Response, S::Error>>>,
    Attempts<S, Req, R>: Operation<Future = ServiceCall<S, Req>>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Req, R, W>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is the inner service's, awaited per attempt: a pipeline refusal must not
        // be held up behind an inner service that is not ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let engine = Owned::new(Arc::clone(&self.resilience));
        let gate = W::gate(&self.resilience);
        let attempts = Attempts::new(self.inner.clone(), request);
        ResponseFuture {
            drive: Drive::new(engine, gate, self.options, attempts),
            answer: self.answer,
        }
    }
}

pin_project! {
    /// The future a [`ResilienceService`] returns: the core's retry loop ([`Drive`]) over
    /// the service's shared pipeline, owned through its `Arc`, with no box (see the
    /// [module docs](self#cost)).
    ///
    /// Nothing runs until it is first polled. Dropping it at any point gives back every permit
    /// and records nothing, as [`Resilience::execute`](resilix::resilience::Resilience::execute)'s
    /// future does.
    pub struct ResponseFuture<S, Req, R, W>
    where
        S: Service<Req>,
        W: Wait<R>,
        Owned<R>: Engine,
        Attempts<S, Req, R>: Operation,
    {
        #[pin]
        drive: Drive<Owned<R>, W::Gate, Attempts<S, Req, R>>,
        answer: Answer<S, Req>,
    }
}

impl<S, Req, R, W> Future for ResponseFuture<S, Req, R, W>
where
    S: Service<Req>,
    W: Wait<R>,
    Owned<R>: Engine<Classifier: Classify<Result<S::Response, S::Error>>>,
    Attempts<S, Req, R>: Operation<Future = ServiceCall<S, Req>>,
{
    type Output = Result<S::Response, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        this.drive.poll(cx).map(*this.answer)
    }
}

impl<S, Req, R, W> fmt::Debug for ResponseFuture<S, Req, R, W>
where
    S: Service<Req>,
    W: Wait<R>,
    Owned<R>: Engine,
    Attempts<S, Req, R>: Operation,
{
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
    error.map(|output| match output {
        Ok(_) => None,
        Err(e) => Some(e.into()),
    })
}
