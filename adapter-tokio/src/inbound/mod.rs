//! Inbound load shedding for a hyper or axum server: a tower `Layer` over the core's
//! [`resilix::inbound`] admission (feature `inbound`).
//!
//! For each request, before the handler runs:
//!
//! * its priority comes from a header ([`HeaderPriority`], `x-criticality: SHEDDABLE`) or a
//!   closure over the request ([`InboundLayer::priority`]);
//! * its deadline comes from `grpc-timeout` or a milliseconds header (`x-request-timeout-ms`),
//!   measured from its arrival;
//! * the admission decides: run it now, queue it (a real queue of waiting tasks, served most
//!   critical first, oldest first, LIFO only for a standing line without deadlines, CoDel and
//!   Fail at Scale's timeouts dropping stale sheddable requests), or shed it at once, as soon
//!   as its predicted wait shows it cannot be served in time: `503` with `Retry-After`, or for
//!   gRPC HTTP 200 with `grpc-status: 8` (RESOURCE_EXHAUSTED) and `grpc-retry-pushback-ms`;
//!   the handler never runs for a shed request (docs/inbound.md has the measurements);
//! * an admitted request carries an [`InboundContext`] in its extensions: its priority and
//!   deadline, and [`InboundContext::call_options`] so the handler's own resilix calls
//!   downstream inherit the deadline.
//!
//! The decision is made in `call`, from the request: `poll_ready` always answers ready and
//! is not consulted (tower's `LoadShed` sheds from `poll_ready`, which combined with `Buffer`
//! reported overload while permits were free: apollographql/router #9034). The inner
//! service's own readiness is awaited only by a request already admitted.
//!
//! The handler's latency is the service time's and the adaptive limit's sample; its status is
//! the verdict
//! ([`resilix::classify::http::classify_status`]: a `503` from the handler is a drop signal).
//! A request whose future is dropped (the client went away) gives back its place or slot.
//!
//! ```
//! use axum::{Extension, Router, routing::get};
//! use resilix::inbound::{Inbound, InboundConfig};
//! use resilix_tokio::inbound::{InboundContext, InboundLayer};
//!
//! async fn checkout(Extension(ctx): Extension<InboundContext>) -> String {
//!     // Calls made from here pass `ctx.call_options()` to inherit the caller's deadline.
//!     format!("{} with {:?} left", ctx.priority(), ctx.remaining())
//! }
//!
//! let inbound = Inbound::new(InboundConfig::adaptive()).expect("valid config");
//! let app: Router = Router::new()
//!     .route("/checkout", get(checkout))
//!     .layer(InboundLayer::new(inbound));
//! # let _ = app;
//! ```

mod answer;
mod queue;
mod request;

pub use request::{HeaderPriority, PriorityOf};

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderName, Request, Response};
use resilix::call::CallOptions;
use resilix::classify::http::classify_status;
use resilix::inbound::{Decision, Inbound, Priority, Shed, ShedCause};
use resilix::time::{Deadline, Instant};
use tower_layer::Layer;
use tower_service::Service;

use queue::{Handle, Running, Shared, Waiter};

/// What the layer learnt about an admitted request, in its extensions.
///
/// ```
/// use std::time::Duration;
/// use resilix::inbound::Priority;
/// use resilix_tokio::inbound::InboundContext;
///
/// let ctx = InboundContext::new(Priority::Critical, Some(resilix_tokio::deadline_in(Duration::from_secs(2))));
/// assert!(ctx.remaining().unwrap() <= Duration::from_secs(2));
/// assert_eq!(ctx.call_options().deadline_value(), ctx.deadline());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InboundContext {
    priority: Priority,
    deadline: Option<Deadline>,
}

impl InboundContext {
    /// A context (for tests and for handlers called without the layer).
    pub const fn new(priority: Priority, deadline: Option<Deadline>) -> Self {
        InboundContext { priority, deadline }
    }

    /// The request's priority.
    pub const fn priority(&self) -> Priority {
        self.priority
    }

    /// The deadline the caller propagated, on this process's timeline.
    pub const fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// The time left now, if the caller sent a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.remaining(crate::now()))
    }

    /// Options for the handler's own resilix calls: the caller's deadline, inherited.
    pub fn call_options(&self) -> CallOptions {
        match self.deadline {
            Some(d) => CallOptions::default().deadline(d),
            None => CallOptions::default(),
        }
    }
}

/// The tower `Layer`. Cloning it shares one admission and one queue.
#[derive(Clone)]
pub struct InboundLayer<F = HeaderPriority> {
    handle: Handle,
    priority: F,
    timeout_header: HeaderName,
    default_timeout: Option<Duration>,
}

impl<F> fmt::Debug for InboundLayer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundLayer")
            .field("inbound", &self.handle.0.inbound)
            .field("timeout_header", &self.timeout_header)
            .field("default_timeout", &self.default_timeout)
            .finish_non_exhaustive()
    }
}

impl InboundLayer {
    /// A layer over `inbound`, reading the priority from `x-criticality`.
    pub fn new(inbound: Inbound) -> InboundLayer {
        InboundLayer {
            handle: Handle(Arc::new(Shared::new(inbound))),
            priority: HeaderPriority::default(),
            timeout_header: HeaderName::from_static("x-request-timeout-ms"),
            default_timeout: None,
        }
    }
}

impl<F> InboundLayer<F> {
    /// Reads the priority with `priority` instead (a [`HeaderPriority`] on another header, or
    /// a closure over the request).
    pub fn priority<G>(self, priority: G) -> InboundLayer<G> {
        InboundLayer {
            handle: self.handle,
            priority,
            timeout_header: self.timeout_header,
            default_timeout: self.default_timeout,
        }
    }

    /// Reads the propagated time left in milliseconds from `name` (when no `grpc-timeout` is
    /// present). Default `x-request-timeout-ms` (ours; resilix's client sends it with
    /// [`resilix::time::DeadlinePropagation::millis`]).
    pub fn timeout_header(mut self, name: HeaderName) -> Self {
        self.timeout_header = name;
        self
    }

    /// Gives requests that bring no deadline this one (default none: they wait only as long
    /// as the queue allows).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// The admission (its limit, in-flight and waiting counts).
    pub fn inbound(&self) -> &Inbound {
        &self.handle.0.inbound
    }
}

impl<S, F: Clone> Layer<S> for InboundLayer<F> {
    type Service = InboundService<S, F>;

    fn layer(&self, inner: S) -> Self::Service {
        InboundService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`InboundLayer`] wraps around a handler.
#[derive(Clone, Debug)]
pub struct InboundService<S, F = HeaderPriority> {
    inner: S,
    layer: InboundLayer<F>,
}

/// The response future (boxed: a waiting request is an async state machine of its own).
pub type InboundFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, F, ReqBody, ResBody> Service<Request<ReqBody>> for InboundService<S, F>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    F: PriorityOf<ReqBody>,
    ReqBody: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = InboundFuture<Response<ResBody>, S::Error>;

    /// Always ready: the decision is made per request in `call`, never here.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<ReqBody>) -> Self::Future {
        let now = crate::now();
        let layer = &self.layer;
        let priority = layer.priority.priority(&req);
        let timeout =
            request::timeout(req.headers(), &layer.timeout_header).or(layer.default_timeout);
        let deadline = timeout.map(|t| Deadline::after(now, t));
        let grpc = request::is_grpc(req.headers());
        // The clone that was made ready stays; the request runs on this one.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let handle = &layer.handle;
        match Inbound::admit_by(handle, now, priority, deadline) {
            Decision::Reject(shed) => {
                let response = answer::shed_response(&shed, grpc, now);
                Box::pin(async move { Ok(response) })
            }
            Decision::Admit(permit) => {
                req.extensions_mut()
                    .insert(InboundContext { priority, deadline });
                Box::pin(run(inner, req, Running::new(handle.clone(), permit)))
            }
            Decision::Queue(place) => {
                req.extensions_mut()
                    .insert(InboundContext { priority, deadline });
                let until = place.until();
                let waiter = handle.join(place, now);
                Box::pin(async move {
                    match wait(waiter, until, now).await {
                        Ok(running) => run(inner, req, running).await,
                        Err(shed) => Ok(answer::shed_response(&shed, grpc, crate::now())),
                    }
                })
            }
        }
    }
}

/// Waits for the queue to hand over a slot, at most until `until`.
async fn wait(mut waiter: Waiter, until: Instant, now: Instant) -> Result<Running, Shed> {
    let wake = tokio::time::Instant::now() + until.saturating_duration_since(now);
    let mut sleep = pin!(tokio::time::sleep_until(wake));
    let handed = poll_fn(|cx| {
        if let Poll::Ready(handoff) = Pin::new(&mut waiter.rx).poll(cx) {
            return Poll::Ready(Some(handoff));
        }
        sleep.as_mut().poll(cx).map(|()| None)
    })
    .await;
    match handed {
        Some(Ok(handoff)) => handoff,
        // The queue never drops an entry without answering it; were it to, the request
        // is shed rather than left waiting.
        Some(Err(_)) => Err(Shed::new(ShedCause::QueueTimeout, None)),
        None => match waiter.give_up(crate::now()) {
            Some(shed) => Err(shed),
            // Dispatch answered at the same moment: its answer is in the channel.
            None => (&mut waiter.rx)
                .await
                .unwrap_or(Err(Shed::new(ShedCause::QueueTimeout, None))),
        },
    }
}

/// Runs an admitted request and settles its slot with the handler's status.
async fn run<S, ReqBody, ResBody>(
    mut inner: S,
    req: Request<ReqBody>,
    running: Running,
) -> Result<Response<ResBody>, S::Error>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    poll_fn(|cx| inner.poll_ready(cx)).await?;
    let response = inner.call(req).await;
    match &response {
        Ok(r) => running.settle(&classify_status(r.status().as_u16(), None)),
        // An error of the service itself says nothing about this server's queueing: cancel.
        Err(_) => drop(running),
    }
    response
}
