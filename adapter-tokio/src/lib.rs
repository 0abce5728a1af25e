//! Drive resilix's core policies from tokio.
//!
//! The retry loop itself is the core's ([`resilix::execute::execute`]); this crate lends it
//! tokio's clock and sleep ([`TokioTimer`]) and adds what a tokio service wants around it:
//!
//! * [`Resilience`]: a pipeline, an observer and a classifier bundled, with
//!   [`Resilience::execute`] and [`Resilience::execute_or`] (a fallback).
//! * Randomness seeded per call from a per-thread generator that is itself seeded lazily from
//!   the platform's entropy (never at start-up), or from your seed ([`Resilience::seed`]).
//! * Features: `tower` (a `Layer` for a whole pipeline, in `resilix_tokio::tower`),
//!   `http` (classify `http::Response` with `Retry-After`), `tracing` and `metrics` observers.
//!
//! [`TokioClock`] reads `tokio::time::Instant`, so tests under
//! `#[tokio::test(start_paused = true)]` see exact, virtual time.
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
//! assert_eq!(answer.unwrap().unwrap(), 42);
//! # });
//! ```

mod clock;
mod fallback;
mod resilience;
mod seed;
mod statics;
pub mod wait;

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(feature = "tracing")]
pub mod tracing;

pub use clock::{TokioClock, TokioTimer};
pub use fallback::{Fallback, LastKnownGood, Served};
pub use resilience::Resilience;
pub use seed::thread_seed;
pub use statics::Static;
pub use wait::{BulkheadGate, SlotWaiters};

pub use resilix::execute::{Attempted, ExecuteError};
