//! One attempt through the inner service, as a future with a name ([`ServiceCall`]), and what
//! makes one per attempt ([`Attempts`]).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use resilix::call::Replay;
use resilix::execute::Operation;
use resilix::pipeline::AsPipeline;
use tower_service::Service;

use crate::Resilience;

/// What makes each attempt of one request: a clone of the inner service, given the request
/// (moved into the only attempt of a pipeline that never retries, cloned for each attempt of
/// one that may: [`Replay`], by the retry slot's type).
pub struct Attempts<S, Req, R> {
    inner: S,
    request: Option<Req>,
    _pipeline: PhantomData<fn() -> R>,
}

impl<S, Req, R> std::fmt::Debug for Attempts<S, Req, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attempts")
            .field("request_kept", &self.request.is_some())
            .finish_non_exhaustive()
    }
}

impl<S, Req, R> Attempts<S, Req, R> {
    /// The attempts of `request` through `inner`.
    pub fn new(inner: S, request: Req) -> Self {
        Attempts {
            inner,
            request: Some(request),
            _pipeline: PhantomData,
        }
    }
}

impl<S, Req, P, O, C> Operation for Attempts<S, Req, Resilience<P, O, C>>
where
    S: Service<Req> + Clone,
    P: AsPipeline,
    P::Retry: Replay<Req>,
{
    type Future = ServiceCall<S, Req>;

    #[inline]
    fn attempt(&mut self, _info: &resilix::execute::AttemptInfo) -> ServiceCall<S, Req> {
        let request = <P::Retry as Replay<Req>>::next_request(&mut self.request);
        ServiceCall {
            service: Some(self.inner.clone()),
            request,
            future: None,
        }
    }
}

pin_project! {
    /// One attempt: the inner service's clone, made ready, then called with the request.
    /// Once called, the clone goes (as `tower`'s `Oneshot` does): the call's future is
    /// independent of it.
    pub struct ServiceCall<S: Service<Req>, Req> {
        service: Option<S>,
        request: Option<Req>,
        #[pin]
        future: Option<S::Future>,
    }
}

impl<S: Service<Req>, Req> std::fmt::Debug for ServiceCall<S, Req> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCall")
            .field("called", &self.future.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: Service<Req>, Req> Future for ServiceCall<S, Req> {
    type Output = Result<S::Response, S::Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Some(service) = this.service.as_mut() {
            ready!(service.poll_ready(cx))?;
            let Some(request) = this.request.take() else {
                unreachable!("a pipeline that never retries makes one attempt")
            };
            let future = service.call(request);
            *this.service = None;
            this.future.set(Some(future));
        }
        match this.future.as_pin_mut() {
            Some(future) => future.poll(cx),
            None => unreachable!("an attempt's call is made before it is awaited"),
        }
    }
}
