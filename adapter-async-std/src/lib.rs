//! Drive resilix's core policies from async-std or smol.
//!
//! async-std was discontinued upstream in 2025 in favour of smol. Both use `async-io`'s timers,
//! so this crate builds on `async-io` alone and serves either runtime (and any executor, even
//! `async_io::block_on`): the same [`AsyncIoTimer`] sleeps under all of them.
//!
//! The retry loop is the core's ([`resilix::execute::execute`]); this crate lends it a clock
//! and a sleep, and adds [`Resilience`] (a pipeline with its observer and classifier, with
//! per-call randomness and fallbacks), exactly as `resilix-tokio` does.
//!
//! ```
//! use std::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_async_std::Resilience;
//!
//! async_io::block_on(async {
//!     let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(100));
//!     let resilience = Resilience::new(&pipeline);
//!     let answer = resilience
//!         .execute(CallOptions::default(), || async { Ok::<_, std::io::Error>(42) })
//!         .await;
//!     assert_eq!(answer.unwrap().unwrap(), 42);
//! });
//! ```

mod clock;
mod fallback;
mod resilience;
mod seed;
pub mod wait;

pub use clock::{AsyncIoClock, AsyncIoTimer, Sleep};
pub use fallback::{Fallback, LastKnownGood, Served};
pub use resilience::Resilience;
pub use seed::thread_seed;
pub use wait::{BulkheadGate, SlotWaiters};

pub use resilix::execute::{Attempted, ExecuteError};
