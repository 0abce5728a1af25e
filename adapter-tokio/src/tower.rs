//! A `tower` Layer running every request through a whole pipeline (feature `tower`).
//!
//! The service is `Clone`, and every clone shares one [`Resilience`] (one set of policies:
//! one breaker per upstream, one budget per process) through an `Arc`. Each attempt clones the
//! inner service, waits for it to be ready and calls it with the request: a pipeline without
//! retry moves the request into its one attempt (no `Clone` needed: `reqwest::Request` is
//! not), a retrying one hands each attempt a clone ([`resilix::call::Replay`], by the retry
//! slot's type).
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

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use resilix::call::{Call, CallOptions, Replay};
use resilix::classify::Classify;
use resilix::execute::{Attempted, ExecuteError, Timer, conclude};
use resilix::observe::Observer;
use resilix::permit::{Env, Policy};
use resilix::pipeline::{AsPipeline, Attempt, Pipeline};
use resilix::random::SeededRandom;
use resilix::retry::RetryPolicy;
use resilix::time::{Deadline, Instant};
use resilix::verdict::Verdict;
use tower_layer::Layer;
use tower_service::Service;

use crate::Resilience;

/// The boxed error type of `tower`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a [`ResilienceService`] fails with when the pipeline stops the call: the core's error,
/// with the last inner error (if the last attempt failed with one) in place of the output.
pub type ServiceError = ExecuteError<Option<BoxError>>;

/// Wraps a service in a pipeline. See the [module docs](self).
///
/// `Req` is the request type of the services it wraps (usually inferred).
pub struct ResilienceLayer<R, Req> {
    resilience: Arc<R>,
    timeout: Option<Duration>,
    idempotent: bool,
    _request: PhantomData<fn(Req)>,
}

impl<R, Req> Clone for ResilienceLayer<R, Req> {
    fn clone(&self) -> Self {
        ResilienceLayer {
            resilience: Arc::clone(&self.resilience),
            timeout: self.timeout,
            idempotent: self.idempotent,
            _request: PhantomData,
        }
    }
}

impl<R, Req> fmt::Debug for ResilienceLayer<R, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceLayer")
            .field("timeout", &self.timeout)
            .field("idempotent", &self.idempotent)
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
            timeout: None,
            idempotent: false,
            _request: PhantomData,
        }
    }

    /// Each request must finish within `timeout`, retries included (its deadline).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Declares every request safe to repeat after a timeout.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }
}

// Every bound the loop needs is here, checked where `ServiceBuilder::service` builds the
// service, with concrete types. The service and its future keep only a function pointer to
// the loop instantiated here (`PollFn`) and the call's state as a type parameter
// (`CallState`), so `Service` and `Future` need no bound on the policies. With such bounds
// there, proving a spawned `async { svc.oneshot(..).await }` `Send` fails for pipelines
// holding `&'static` policies (or for inner errors that are `Box<dyn Error>`): rustc checks
// them with every lifetime erased, and cannot prove `'static` or outlives bounds then.
impl<S, Req, P, O, C, Rt, T, B, L, H, Rl> Layer<S> for ResilienceLayer<Resilience<P, O, C>, Req>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    P: AsPipeline<
            Retry = Rt,
            Throttler = T,
            Breaker = B,
            Limiter = L,
            Bulkhead = H,
            RateLimit = Rl,
        >,
    Rt: RetryPolicy + Replay<Req> + 'static,
    T: Policy + 'static,
    B: Policy + 'static,
    L: Policy + 'static,
    H: Policy + 'static,
    Rl: Policy + 'static,
    Rt::State: Send,
    for<'a> T::Permit<'a>: Send,
    for<'a> B::Permit<'a>: Send,
    for<'a> L::Permit<'a>: Send,
    for<'a> H::Permit<'a>: Send,
    for<'a> Rl::Permit<'a>: Send,
    O: Observer,
    C: Classify<Result<S::Response, S::Error>>,
{
    type Service = ResilienceService<S, Req, P, O, C, CallState<'static, Rt, T, B, L, H, Rl>>;

    fn layer(&self, inner: S) -> Self::Service {
        ResilienceService {
            inner,
            resilience: Arc::clone(&self.resilience),
            timeout: self.timeout,
            idempotent: self.idempotent,
            poll: poll_response::<S, Req, P, O, C, Rt, T, B, L, H, Rl>,
        }
    }
}

/// The loop's `poll`, instantiated by the `Layer` (see there for why a pointer).
type PollFn<S, Req, P, O, C, St> = fn(
    Pin<&mut ResponseFuture<S, Req, P, O, C, St>>,
    &mut Context<'_>,
) -> Poll<Result<<S as Service<Req>>::Response, BoxError>>;

/// A service whose every request runs through a pipeline. Clones share the policies.
///
/// `St` is the [`CallState`] its futures hold (named by the `Layer`).
pub struct ResilienceService<S, Req, P, O, C, St>
where
    S: Service<Req>,
{
    inner: S,
    resilience: Arc<Resilience<P, O, C>>,
    timeout: Option<Duration>,
    idempotent: bool,
    poll: PollFn<S, Req, P, O, C, St>,
}

impl<S, Req, P, O, C, St> Clone for ResilienceService<S, Req, P, O, C, St>
where
    S: Service<Req> + Clone,
{
    fn clone(&self) -> Self {
        ResilienceService {
            inner: self.inner.clone(),
            resilience: Arc::clone(&self.resilience),
            timeout: self.timeout,
            idempotent: self.idempotent,
            poll: self.poll,
        }
    }
}

impl<S, Req, P, O, C, St> fmt::Debug for ResilienceService<S, Req, P, O, C, St>
where
    S: Service<Req> + fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceService")
            .field("inner", &self.inner)
            .field("timeout", &self.timeout)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

// No bound on the policies: see the `Layer` impl.
impl<S, Req, P, O, C, St> Service<Req> for ResilienceService<S, Req, P, O, C, St>
where
    S: Service<Req> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Req, P, O, C, St>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is the inner service's, awaited per attempt: a pipeline refusal must not
        // be held up behind an inner service that is not ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        ResponseFuture {
            attempt: AttemptFuture::Idle,
            sleep: None,
            deadline: None,
            state: None,
            step: Step::Start,
            last: None,
            rng: None,
            now: Instant::ZERO,
            inner: self.inner.clone(),
            request: Some(request),
            timeout: self.timeout,
            idempotent: self.idempotent,
            resilience: Arc::clone(&self.resilience),
            poll: self.poll,
        }
    }
}

/// One call through a pipeline between two polls of its [`ResponseFuture`]: the core's
/// [`Call`] and the permits of the attempt in flight, borrowing the pipeline for `'p`.
/// Opaque; it appears in [`ResilienceService`]'s type only.
pub struct CallState<'p, Rt, T, B, L, H, Rl>
where
    Rt: RetryPolicy,
    T: Policy + 'p,
    B: Policy + 'p,
    L: Policy + 'p,
    H: Policy + 'p,
    Rl: Policy + 'p,
{
    // Settled or dropped (cancelled) before the call, as in the core's loop.
    permits: Option<Attempt<'p, T, B, L, H, Rl>>,
    call: Call<'p, Rt, T, B, L, H, Rl>,
}

// SAFETY: written by hand because the auto impl would prove the permits `Send` through the
// policies' `Permit<'a>` projections, which rustc cannot do for `&'static` policies inside an
// `async` block it checks with lifetimes erased ("implementation of `Policy` is not general
// enough"): a spawned `svc.oneshot(..)` would not compile. What the fields hold: the shared
// `&'p Pipeline` (`Send` as the pipeline is `Sync`, required here), the retry state
// (`Rt::State: Send`, required here) and the permits. A `CallState` is made only by
// `poll_response`, instantiated only by the `Layer` impl, which requires
// `for<'a> Permit<'a>: Send` of every policy; the type has no public constructor. So every
// `CallState` that exists holds `Send` permits.
unsafe impl<'p, Rt, T, B, L, H, Rl> Send for CallState<'p, Rt, T, B, L, H, Rl>
where
    Rt: RetryPolicy + Sync,
    Rt::State: Send,
    T: Policy + Sync,
    B: Policy + Sync,
    L: Policy + Sync,
    H: Policy + Sync,
    Rl: Policy + Sync,
{
}

impl<Rt, T, B, L, H, Rl> fmt::Debug for CallState<'_, Rt, T, B, L, H, Rl>
where
    Rt: RetryPolicy,
    T: Policy,
    B: Policy,
    L: Policy,
    H: Policy,
    Rl: Policy,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallState")
            .field("attempts", &self.call.attempts())
            .field("in_flight", &self.permits.is_some())
            .finish()
    }
}

/// Where a [`ResponseFuture`] is in the retry loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Not polled yet: the clock is read and the call starts on the first poll.
    Start,
    /// About to admit an attempt at `now`.
    Admit,
    /// An attempt is in flight, raced against `sleep` when it has a deadline.
    Attempt,
    /// Waiting out a retry delay in `sleep`.
    Backoff,
    /// The output was returned.
    Done,
}

pin_project! {
    /// The future a [`ResilienceService`] returns: the core's retry loop
    /// ([`resilix::call::Call`]) driven by hand, so it has a name and needs no box. It
    /// allocates nothing beyond what the inner service does.
    ///
    /// Dropping it at any point gives back every permit and records nothing, as the core's
    /// `execute` does.
    pub struct ResponseFuture<S, Req, P, O, C, St>
    where
        S: Service<Req>,
    {
        // Field order is drop order: `state` borrows the pipeline that `resilience` keeps
        // alive, so it comes first (see `extend`).
        #[pin]
        attempt: AttemptFuture<S, Req, S::Future>,
        // The attempt's deadline or the retry delay (never both at once).
        #[pin]
        sleep: Option<tokio::time::Sleep>,
        // The attempt's deadline until its timer is made.
        deadline: Option<Instant>,
        state: Option<St>,
        step: Step,
        last: Option<Attempted<Result<S::Response, S::Error>>>,
        // Seeded on the first draw (`LazyRng`): most requests never draw.
        rng: Option<SeededRandom>,
        now: Instant,
        inner: S,
        request: Option<Req>,
        timeout: Option<Duration>,
        idempotent: bool,
        resilience: Arc<Resilience<P, O, C>>,
        poll: PollFn<S, Req, P, O, C, St>,
    }
}

/// The pipeline inside `resilience`, borrowed for as long as the caller keeps the `Arc`.
///
/// # Safety
///
/// The caller must drop every value holding the returned reference before it drops (its
/// clone of) `resilience`, and must never move or mutably reach the `Resilience` out of the
/// `Arc`. Then the reference is valid: the `Arc`'s allocation does not move while one clone
/// lives, only shared access to it is ever given, and a shared borrow of `P` keeps its
/// pipeline (`AsPipeline`: itself, or behind a pointer) valid for as long as that borrow could
/// last. The `'static` never escapes:
/// policies and permits are generic over their lifetime and cannot rely on it.
#[allow(clippy::type_complexity)] // the pipeline's six slots, as `AsPipeline` names them
unsafe fn extend<P: AsPipeline, O, C>(
    resilience: &Arc<Resilience<P, O, C>>,
) -> &'static Pipeline<P::Retry, P::Throttler, P::Breaker, P::Limiter, P::Bulkhead, P::RateLimit>
where
    P::Retry: 'static,
    P::Throttler: 'static,
    P::Breaker: 'static,
    P::Limiter: 'static,
    P::Bulkhead: 'static,
    P::RateLimit: 'static,
{
    let pipeline = resilience.pipeline().as_pipeline();
    // SAFETY: the caller's contract above.
    unsafe { &*(pipeline as *const _) }
}

impl<S, Req, P, O, C, St> Future for ResponseFuture<S, Req, P, O, C, St>
where
    S: Service<Req>,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        (self.poll)(self, cx)
    }
}

impl<S, Req, P, O, C, St> fmt::Debug for ResponseFuture<S, Req, P, O, C, St>
where
    S: Service<Req>,
    St: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("step", &self.step)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

type StateOf<Rt, T, B, L, H, Rl> = CallState<'static, Rt, T, B, L, H, Rl>;

/// The retry loop: [`resilix::execute::execute`]'s, step by step.
#[allow(clippy::type_complexity)] // the future, spelled out once
fn poll_response<S, Req, P, O, C, Rt, T, B, L, H, Rl>(
    future: Pin<&mut ResponseFuture<S, Req, P, O, C, StateOf<Rt, T, B, L, H, Rl>>>,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, BoxError>>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    P: AsPipeline<
            Retry = Rt,
            Throttler = T,
            Breaker = B,
            Limiter = L,
            Bulkhead = H,
            RateLimit = Rl,
        >,
    Rt: RetryPolicy + Replay<Req> + 'static,
    T: Policy + 'static,
    B: Policy + 'static,
    L: Policy + 'static,
    H: Policy + 'static,
    Rl: Policy + 'static,
    O: Observer,
    C: Classify<Result<S::Response, S::Error>>,
{
    let mut this = future.project();
    loop {
        match *this.step {
            Step::Start => {
                // One clock read serves the request's deadline and the call's start.
                let now = this.resilience.timer().now();
                let mut options = CallOptions::default().idempotent(*this.idempotent);
                if let Some(timeout) = *this.timeout {
                    options = options.deadline(Deadline::after(now, timeout));
                }
                // SAFETY: the borrow lives in `state`, declared (so dropped) before
                // `resilience`, which is private, never replaced and never unwrapped.
                let pipeline = unsafe { extend(this.resilience) };
                *this.state = Some(CallState {
                    permits: None,
                    call: pipeline.call(now, options),
                });
                *this.now = now;
                *this.step = Step::Admit;
            }
            Step::Admit => {
                let Some(state) = this.state.as_mut() else {
                    unreachable!("started before admitting")
                };
                let resilience = &**this.resilience;
                let mut rng = resilience.lazy_rng(this.rng);
                let mut env = Env {
                    now: *this.now,
                    rng: &mut rng,
                    observer: resilience.observer_ref(),
                };
                match state.call.admit(&mut env) {
                    Ok(attempt) => {
                        // The deadline's timer entry is made only if the attempt is pending on
                        // its first poll (as the core's loop does).
                        *this.deadline = attempt.deadline().map(|d| d.instant());
                        state.permits = Some(attempt);
                        // Moved into the only attempt, or cloned when retries may follow.
                        let Some(request) = Rt::next_request(this.request) else {
                            unreachable!("a pipeline that never retries makes one attempt")
                        };
                        this.attempt.set(AttemptFuture::Ready {
                            svc: this.inner.clone(),
                            request: Some(request),
                        });
                        *this.step = Step::Attempt;
                    }
                    Err(stop) => {
                        *this.step = Step::Done;
                        let attempts = state.call.attempts();
                        let error = ExecuteError::stopped(stop, attempts, this.last.take());
                        return Poll::Ready(Err(boxed(error)));
                    }
                }
            }
            Step::Attempt => {
                // The attempt first: a result ready at the deadline still counts.
                let outcome = match this.attempt.as_mut().poll(cx) {
                    Poll::Ready(output) => Some(output),
                    Poll::Pending => {
                        if let Some(at) = this.deadline.take() {
                            let sleep = this.resilience.timer().sleep_until(at);
                            this.sleep.set(Some(sleep));
                        }
                        let fired = match this.sleep.as_mut().as_pin_mut() {
                            Some(deadline) => deadline.poll(cx).is_ready(),
                            None => false,
                        };
                        if !fired {
                            return Poll::Pending;
                        }
                        None
                    }
                };
                // A timed-out attempt's future is dropped before it settles.
                this.attempt.set(AttemptFuture::Idle);
                this.sleep.set(None);
                *this.deadline = None;
                let resilience = &**this.resilience;
                let verdict = match &outcome {
                    Some(output) => resilience.classifier_ref().classify(output),
                    None => Verdict::Timeout,
                };
                let Some(CallState { permits, call }) = this.state.as_mut() else {
                    unreachable!("started before an attempt")
                };
                let Some(permits) = permits.take() else {
                    unreachable!("an attempt in flight holds its permits")
                };
                let mut rng = resilience.lazy_rng(this.rng);
                let mut env = Env {
                    now: resilience.timer().now(),
                    rng: &mut rng,
                    observer: resilience.observer_ref(),
                };
                let next = call.settle(permits, &verdict, &mut env);
                let attempted = match outcome {
                    Some(output) => Attempted::Output(output),
                    None => Attempted::TimedOut,
                };
                match conclude(next, attempted, call.attempts()) {
                    ControlFlow::Break(result) => {
                        *this.step = Step::Done;
                        return Poll::Ready(into_response(result));
                    }
                    ControlFlow::Continue((at, attempted)) => {
                        *this.last = Some(attempted);
                        this.sleep.set(Some(resilience.timer().sleep_until(at)));
                        *this.step = Step::Backoff;
                    }
                }
            }
            Step::Backoff => {
                if let Some(sleep) = this.sleep.as_mut().as_pin_mut() {
                    ready!(sleep.poll(cx));
                }
                this.sleep.set(None);
                *this.now = this.resilience.timer().now();
                *this.step = Step::Admit;
            }
            Step::Done => panic!("ResponseFuture polled after it completed"),
        }
    }
}

pin_project! {
    /// One attempt: wait for the inner service (a clone) to be ready, then call it.
    #[project = AttemptProj]
    enum AttemptFuture<S, Req, F> {
        Idle,
        Ready { svc: S, request: Option<Req> },
        Calling { #[pin] response: F },
    }
}

impl<S, Req> Future for AttemptFuture<S, Req, S::Future>
where
    S: Service<Req>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                AttemptProj::Ready { svc, request } => {
                    ready!(svc.poll_ready(cx))?;
                    let Some(request) = request.take() else {
                        unreachable!("a request is called once")
                    };
                    let response = svc.call(request);
                    self.set(AttemptFuture::Calling { response });
                }
                AttemptProj::Calling { response } => return response.poll(cx),
                AttemptProj::Idle => unreachable!("an idle attempt is never polled"),
            }
        }
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
