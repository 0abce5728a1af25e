//! Drive resilix's core policies from tokio.
//!
//! The retry loop itself is the core's ([`resilix::execute::execute`]); this crate lends it
//! tokio's clock and sleep ([`TokioTimer`]) and adds what a tokio service wants around it:
//!
//! * [`Resilience`]: a pipeline, an observer and a classifier bundled (by default
//!   [`AutoClassifier`](classify::AutoClassifier): HTTP responses by their status), with
//!   [`Resilience::execute`] and [`Resilience::call`] for the rest (a fallback, waiting, your
//!   own generator).
//! * Randomness seeded per call from a per-thread generator that is itself seeded lazily from
//!   the platform's entropy (never at start-up), or from your seed ([`Resilience::seed`]).
//! * Features: `tower` (a `Layer` for a whole pipeline, in `resilix_tokio::tower`),
//!   `http` (classify `http::Response` with `Retry-After`, idempotent methods, idempotency
//!   keys), `reqwest` (classify `reqwest` responses and errors by where they happened),
//!   `hyper` (the same for the errors of hyper's client), `inbound` (load shedding for
//!   hyper and axum servers: priority, CoDel with adaptive LIFO, deadlines read from the
//!   request, in `resilix_tokio::inbound`), `tracing` and `metrics` observers.
//! * Policies shared by `Arc`: the core's `alloc` feature is on, so `Arc<Breaker>` is a policy
//!   and `Arc<TokenBucket>` a retry budget ([`resilix::shared`]).
//!
//! [`TokioClock`] reads `tokio::time::Instant`, so tests under
//! `#[tokio::test(start_paused = true)]` see exact, virtual time. Every clock handle reads the
//! process's one timeline ([`resilix_std::timeline`]): a `Resilience` made per request shares
//! its policies' timeline with every other handle. [`now`], [`deadline_in`] and [`retry_in`]
//! read it for you: a deadline from a relative timeout, a rejection's retry-at as a wait.
//!
//! # A service in a dozen lines
//!
//! Policies built from their presets, one retry budget for the process (an `Arc`: every
//! pipeline that retries spends from it), one pipeline owned by a `Resilience`, shared by 8
//! spawned tasks through an `Arc`; each call with a relative timeout. No `static`, no leak, no
//! wrapper type. The README's first example is this one.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use resilix::breaker::Breaker;
//! use resilix::bulkhead::Bulkhead;
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix::retry::{Retry, RetryConfig, budget::TokenBucket};
//! use resilix_tokio::{Error, Resilience};
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_time().build().unwrap().block_on(async {
//! let budget = Arc::new(TokenBucket::default()); // one retry budget for the whole process
//! let pipeline = Pipeline::new()
//!     .retry(Retry::new(RetryConfig::DEFAULT, budget.clone()))
//!     .breaker(Breaker::default())
//!     .bulkhead(Bulkhead::default());
//! let resilience = Arc::new(Resilience::new(pipeline));
//! let tasks: Vec<_> = (0..8).map(|i| {
//!     let resilience = resilience.clone();
//!     tokio::spawn(async move {
//!         let options = CallOptions::default().timeout(Duration::from_secs(1));
//!         resilience.execute(options, || async move { Ok::<u32, std::io::Error>(i) }).await
//!     })
//! }).collect();
//! for task in tasks {
//!     match task.await.unwrap() {
//!         Ok(answer) => assert!(answer < 8),
//!         Err(Error::Upstream { error, .. }) => eprintln!("the upstream failed: {error}"),
//!         Err(stopped) => eprintln!("{stopped}"), // which policy stopped it, and what to do
//!     }
//! }
//! assert_eq!(resilience.bulkhead().held(), 0);
//! # });
//! ```
//!
//! `Arc<Breaker>`, `Arc<Bulkhead>` (any policy) plug into a slot as the policy itself
//! ([`resilix::shared`]), to share one policy between pipelines. A pipeline of `&'static`
//! policies whose calls are `tokio::spawn`ed through
//! [`Resilience::execute`](resilix::resilience::Resilience::execute) still needs
//! [`Static`] (see its docs for the rustc error and why it cannot be avoided with a borrowed
//! permit); behind the tower Layer, `&'static` policies need nothing. An owned pipeline or
//! `Arc`s carry no lifetime, so the question does not arise.
//!
//! # Testing on paused time
//!
//! `#[tokio::test(start_paused = true)]` and `tokio::time::{pause, advance}` need tokio's
//! `test-util` feature, which this crate does not turn on for you (it is test-only). Add it to
//! your dev-dependencies, next to the runtime features the tests use:
//!
//! ```toml
//! [dev-dependencies]
//! tokio = { version = "1", features = ["macros", "rt", "test-util"] }
//! ```
//!
//! Under paused time, backoff sleeps, attempt timeouts, breaker open periods and rate-limit
//! refills all run on the virtual clock: a test of a minute of retries finishes at once and
//! gives the same answer on every run. Real sockets still work (the runtime only jumps ahead
//! when every task is idle), so a loopback server and client can be tested this way too.
//!
//! ```
//! use std::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::Resilience;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(100));
//! let resilience = Resilience::new(&pipeline);
//! let answer = resilience
//!     .execute(CallOptions::default(), || async { Ok::<_, std::io::Error>(42) })
//!     .await;
//! assert_eq!(answer.unwrap(), 42);
//! # });
//! ```

//! # Waiting
//!
//! [`call(options).wait_for_bulkhead()`](resilix::resilience::CallBuilder::wait_for_bulkhead)
//! (and `wait_for_limiter()`) holds each
//! attempt (boundedly) until a bulkhead slot frees, or while the call waits in the adaptive
//! limiter's queue zone, instead of refusing it at once: give the policy a [`SlotWaiters`]
//! hook. The rules (max waiters, max wait, FIFO on arrival or LIFO, no hand-off) are the
//! core's, in [`resilix::waiters`]. Cost: nothing on the path where a slot is free; one
//! allocation (the timer) per caller that actually waits.
//!
//! ```
//! use std::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::{Resilience, SlotWaiters};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let wait = WaitConfig::new(8, Duration::from_millis(100), WaitOrder::Fifo).unwrap();
//! let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::<8>::new(wait));
//! let pipeline = Pipeline::new().bulkhead(&bulkhead);
//! let resilience = Resilience::new(&pipeline);
//! let work = || async {
//!     tokio::time::sleep(Duration::from_millis(30)).await;
//!     Ok::<(), ()>(())
//! };
//! // Two calls, one slot: the second waits 30 ms for the first instead of being refused.
//! let (a, b) = tokio::join!(
//!     resilience.call(CallOptions::default()).wait_for_bulkhead().run(work),
//!     resilience.call(CallOptions::default()).wait_for_bulkhead().run(work),
//! );
//! assert!(a.is_ok() && b.is_ok());
//! # });
//! ```

//! [`call(options).wait_for_rate_limit(max)`](resilix::resilience::CallBuilder::wait_for_rate_limit)
//! waits for a cell of the pipeline's rate limiter instead (governor's `until_ready`,
//! resilience4j's `timeoutDuration`): until the limiter's retry-at, at most `max_wait`, and
//! never to the call's deadline, which it refuses at once ([`resilix::rate_wait`]). No waiter
//! list and no hook: the refusal's retry-at says when to look again.
//!
//! ```
//! use std::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
//! use resilix_tokio::Resilience;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(10))).unwrap();
//! let pipeline = Pipeline::new().rate_limit(&limiter);
//! let resilience = Resilience::new(&pipeline);
//! let start = tokio::time::Instant::now();
//! for _ in 0..12 {
//!     // Ten from the full bucket, then one per 100 ms: waited for, not refused.
//!     let options = CallOptions::default().timeout(Duration::from_secs(1));
//!     let out = resilience
//!         .call(options).wait_for_rate_limit(Duration::from_millis(500)).run(|| async { Ok::<_, ()>(()) })
//!         .await;
//!     assert!(out.is_ok());
//! }
//! assert!(start.elapsed() >= Duration::from_millis(200));
//! # });
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
mod clock;
mod statics;

pub mod chaos;
pub mod classify;
pub mod gauges;
pub mod hedge;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "hyper")]
pub mod hyper;
#[cfg(feature = "inbound")]
pub mod inbound;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "opentelemetry")]
pub mod otel;
pub mod prelude;
#[cfg(feature = "http")]
pub mod propagate;
#[cfg(feature = "reqwest")]
pub mod reqwest;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(feature = "tracing")]
pub mod tracing;

/// The guide: getting started, a chapter per policy, operating, testing, the simulator,
/// embedded targets and migrating. Its code blocks run as doc tests of the `resilix-guide`
/// crate under plain `cargo test`.
// Rendered only: rustdoc sets `doc` while collecting doc tests too, and the chapters use crates
// this one does not depend on (the guide crate runs them).
#[cfg(all(doc, not(doctest)))]
pub mod _guide {
    #![doc = include_str!("../../docs/guide/README.md")]
    include!("../../guide/chapters.rs");
}

/// The README's examples (the core's and this crate's), compiled and run as doc tests here,
/// where tokio is at hand, so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub use clock::{TokioClock, TokioTimer, deadline_in, now, retry_in};
pub use statics::Static;

pub use resilix::Error;
pub use resilix::execute::{Attempted, ExecuteError};
pub use resilix::waiters::WaitGate;
pub use resilix_std::{Fallback, LastKnownGood, Served, SlotWaiters, StdSeeds, thread_seed};

/// A pipeline with its observer and classifier, ready to run calls on tokio: the core's
/// [`resilix::resilience::Resilience`] on [`TokioTimer`], with per-thread entropy for jitter
/// and shedding ([`StdSeeds`]) unless given a seed, classifying with
/// [`AutoClassifier`](classify::AutoClassifier) unless given a classifier (HTTP responses by
/// their status, any other `Ok` a success, any `Err` transient).
///
/// ```
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::classify::ResultClassifier;
/// use resilix::pipeline::Pipeline;
/// use resilix::Verdict;
/// use resilix_tokio::Resilience;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(50));
/// // A 404 is an answer, not a failure: no policy counts it against the upstream.
/// let resilience = Resilience::new(&pipeline)
///     .classifier(ResultClassifier::with_errors(|status: &u16| {
///         if *status == 404 { Verdict::Answered } else { Verdict::Transient }
///     }))
///     .seed(7);
/// let slow = resilience
///     .execute(CallOptions::default(), || async {
///         tokio::time::sleep(Duration::from_secs(1)).await;
///         Ok::<(), u16>(())
///     })
///     .await;
/// assert!(slow.is_err(), "cut off after 50 ms");
/// # });
/// ```
pub type Resilience<P, O = (), C = classify::AutoClassifier> =
    resilix::resilience::Resilience<P, TokioTimer, StdSeeds, O, C>;
