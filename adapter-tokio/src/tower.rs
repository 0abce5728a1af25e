//! A `tower` Layer running every request through a whole pipeline (feature `tower`).
//!
//! The service is `Clone`, and every clone shares one [`Resilience`] (one set of policies:
//! one breaker per upstream, one budget per process) through an `Arc`. Each attempt clones the
//! inner service, waits for it to be ready and calls it with a clone of the request, so a
//! request type must be `Clone` to be retried.
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
//! let layer = ResilienceLayer::new(Resilience::new(Box::new(pipeline)));
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
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use resilix::call::CallOptions;
use resilix::classify::Classify;
use resilix::execute::{Attempted, ExecuteError};
use resilix::observe::Observer;
use resilix::permit::Policy;
use resilix::pipeline::Pipeline;
use resilix::retry::RetryPolicy;
use resilix::time::{Clock, Deadline};
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

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type CallFn<S, Req> =
    Arc<dyn Fn(S, Req) -> BoxFuture<Result<<S as Service<Req>>::Response, BoxError>> + Send + Sync>;

// The pipeline's bounds (its permits must be `Send` for the future to be) live here, where
// `ServiceBuilder::service` checks them with concrete types, and the service holds the call
// type-erased. Checking them on `Service` itself would make `svc.oneshot(..)` fail to resolve
// for pipelines holding `&'static` policies: method probing cannot prove the higher-ranked
// permit bounds for a borrowed policy.
impl<S, Req, P, O, C, Rt, T, B, L, H, Rl> Layer<S> for ResilienceLayer<Resilience<P, O, C>, Req>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    Req: Clone + Send + 'static,
    P: Deref<Target = Pipeline<Rt, T, B, L, H, Rl>> + Send + Sync + 'static,
    Pipeline<Rt, T, B, L, H, Rl>: Sync,
    Rt: RetryPolicy + 'static,
    Rt::State: Send,
    T: Policy + 'static,
    B: Policy + 'static,
    L: Policy + 'static,
    H: Policy + 'static,
    Rl: Policy + 'static,
    for<'a> T::Permit<'a>: Send,
    for<'a> B::Permit<'a>: Send,
    for<'a> L::Permit<'a>: Send,
    for<'a> H::Permit<'a>: Send,
    for<'a> Rl::Permit<'a>: Send,
    O: Observer + Send + Sync + 'static,
    C: Classify<Result<S::Response, S::Error>> + Send + Sync + 'static,
{
    type Service = ResilienceService<S, Req>;

    fn layer(&self, inner: S) -> Self::Service {
        let layer = self.clone();
        let call: CallFn<S, Req> = Arc::new(move |inner: S, request: Req| {
            let resilience = Arc::clone(&layer.resilience);
            let (timeout, idempotent) = (layer.timeout, layer.idempotent);
            Box::pin(async move {
                let mut options = CallOptions::default().idempotent(idempotent);
                if let Some(t) = timeout {
                    options =
                        options.deadline(Deadline::after(resilience.timer().clock().now(), t));
                }
                let result = resilience
                    .execute(options, move || {
                        let mut svc = inner.clone();
                        let request = request.clone();
                        async move {
                            poll_fn(|cx| svc.poll_ready(cx)).await?;
                            svc.call(request).await
                        }
                    })
                    .await;
                match result {
                    Ok(Ok(response)) => Ok(response),
                    Ok(Err(answered)) => Err(answered.into()),
                    Err(ExecuteError::GaveUp {
                        last: Attempted::Output(Ok(response)),
                        ..
                    }) => Ok(response),
                    Err(error) => Err(Box::new(without_response(error)) as BoxError),
                }
            })
        });
        ResilienceService { inner, call }
    }
}

/// A service whose every request runs through a pipeline. Clones share the policies.
pub struct ResilienceService<S: Service<Req>, Req> {
    inner: S,
    call: CallFn<S, Req>,
}

impl<S: Service<Req> + Clone, Req> Clone for ResilienceService<S, Req> {
    fn clone(&self) -> Self {
        ResilienceService {
            inner: self.inner.clone(),
            call: Arc::clone(&self.call),
        }
    }
}

impl<S: Service<Req> + fmt::Debug, Req> fmt::Debug for ResilienceService<S, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S: Service<Req> + Clone, Req> Service<Req> for ResilienceService<S, Req> {
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is the inner service's, awaited per attempt: a pipeline refusal must not
        // be held up behind an inner service that is not ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        (self.call)(self.inner.clone(), request)
    }
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
