//! # resilix
//!
//! Resilience policies as synchronous, allocation-free state machines: `admit` before a call,
//! `settle` after it, and a pure retry decision between attempts. Time and randomness come
//! from the caller, so the same code runs in a tokio service, on a Cortex-M0, in a
//! Workers-style wasm isolate and under a fuzzer, and a seed reproduces every decision.
//!
//! The foundations:
//!
//! * [`time`]: the caller's timeline ([`time::Instant`], [`time::Deadline`], clocks, deadline
//!   propagation).
//! * [`random`]: injected randomness and a seeded generator.
//! * [`Verdict`] and [`classify`]: what an outcome means, for every policy at once.
//! * [`Rejection`]: the six ways to be refused, each with its meaning and fix.
//! * [`permit`]: the admit/settle contract; dropped permits mean cancellation.
//! * [`pipeline`] and [`call`]: the one order of policies, and the retry loop as a state machine.
//! * [`execute`] and [`resilience`]: the same loop as one async function over any runtime's
//!   timer, and the front end every adapter shares ([`waiters`], [`fallback`], [`release`]).
//! * [`observe`]: typed events and the duration histogram.
//! * `shared` (feature `alloc`): `Arc<P>` is a policy, a retry budget, a retry policy.
//!
//! The policies, in pipeline order (`retry → throttler → breaker → limiter → bulkhead → rate
//! limit → timeout → call`):
//!
//! * [`retry`]: backoff with jitter, Retry-After, deadlines, and the shared retry budgets.
//! * [`throttler`]: Google SRE client-side throttling.
//! * [`breaker`]: the circuit breaker: closed, open, half-open with exact probes.
//! * [`limiter`]: the adaptive concurrency limit (Gradient2, Vegas, AIMD).
//! * [`bulkhead`]: a hard concurrency cap, and the signal async adapters wait on.
//! * [`rate_limit`]: GCRA token bucket, and per-key limits in a fixed table.
//!
//! [`prelude`] brings what a first program needs into scope in one `use`.
//!
//! And for a server's own capacity, [`inbound`]: admission by priority, a bounded queue with
//! CoDel and adaptive LIFO, and deadlines that arrive with requests.
//!
//! ```
//! use resilix::call::{CallOptions, Next};
//! use resilix::pipeline::Pipeline;
//! use resilix::permit::Env;
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! let pipeline = Pipeline::new();
//! let mut rng = SeededRandom::new(2024);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let mut call = pipeline.call(env.now, CallOptions::default());
//! let attempt = call.admit(&mut env).expect("an empty pipeline admits");
//! env.now = Instant::from_millis(3);
//! assert_eq!(call.settle(attempt, &Verdict::Success, &mut env), Next::Done);
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Only `shared` (feature `alloc`) names `alloc`, for `Arc`; nothing in the core allocates.
#[cfg(feature = "alloc")]
extern crate alloc;

// The root is grouped by layer: `contract` (the vocabulary), `mechanism` (what policies are
// built from), the policies, and `compose` (pipeline, drivers, front end). Each module keeps
// its flat path (`resilix::permit`, `resilix::pipeline`, …) through the re-exports below.
mod compose;
mod contract;
mod mechanism;

#[cfg(feature = "alloc")]
pub use compose::shared;
pub use compose::{
    call, error, execute, fallback, pipeline, rate_wait, resilience, shadow, waiters,
};
pub(crate) use contract::give_up;
pub use contract::{control, permit, rejection, verdict};
pub use mechanism::release;
pub(crate) use mechanism::{keyed, slots, sync, window};
// Crate-private, except to the loom model of its protocol (`core/tests/loom_settings.rs`).
#[cfg(loom)]
#[doc(hidden)]
pub use mechanism::settings;
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use mechanism::settings;

pub mod breaker;
pub mod bulkhead;
pub mod chaos;
pub mod classify;
pub mod hedge;
pub mod inbound;
pub mod limiter;
pub mod observe;
pub mod prelude;
pub mod random;
pub mod rate_limit;
pub mod retry;
pub mod throttler;
pub mod time;

pub use error::Error;
pub use rejection::{RejectReason, Rejection};

pub use verdict::{Verdict, VerdictKind};
