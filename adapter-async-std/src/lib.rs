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
//! Every clock handle reads the process's one timeline ([`resilix_std::timeline`]): a
//! `Resilience` made per request shares its policies' timeline with every other handle.
//! [`now`], [`deadline_in`] and [`retry_in`] read it for you: a deadline from a relative
//! timeout, a rejection's retry-at as a wait.
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
//!     assert_eq!(answer.unwrap(), 42);
//! });
//! ```

//! Waiting for a bulkhead slot or in the limiter's queue zone works as in `resilix-tokio`
//! (the rules are the core's, in [`resilix::waiters`]): give the policy a [`SlotWaiters`] hook
//! and call `call(options).wait_on(&policy).run(op)`. A caller that waits registers one `async-io` timer.
//!
//! ```
//! use std::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_async_std::{Resilience, SlotWaiters};
//!
//! # smol::block_on(async {
//! let wait = WaitConfig::new(8, Duration::from_millis(100), WaitOrder::Fifo).unwrap();
//! let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::<8>::new(wait));
//! let pipeline = Pipeline::new().bulkhead(&bulkhead);
//! let resilience = Resilience::new(&pipeline);
//! let work = || async {
//!     async_io::Timer::after(Duration::from_millis(3)).await;
//!     Ok::<(), ()>(())
//! };
//! // Two calls, one slot: the second waits 3 ms for the first instead of being refused.
//! let (a, b) = smol::future::zip(
//!     resilience.call(CallOptions::default()).wait_on(&bulkhead).run(work),
//!     resilience.call(CallOptions::default()).wait_on(&bulkhead).run(work),
//! )
//! .await;
//! assert!(a.is_ok() && b.is_ok());
//! # });
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
mod clock;

pub use clock::{AsyncIoClock, AsyncIoTimer, Sleep, deadline_in, now, retry_in};

pub use resilix::execute::{Attempted, ExecuteError};
pub use resilix::waiters::WaitGate;
pub use resilix_std::{Fallback, LastKnownGood, Served, SlotWaiters, StdSeeds, thread_seed};

/// A pipeline with its observer and classifier, ready to run calls on async-std or smol: the
/// core's [`resilix::resilience::Resilience`] on [`AsyncIoTimer`], with per-thread entropy
/// for jitter and shedding ([`StdSeeds`]) unless given a seed.
///
/// ```
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::pipeline::Pipeline;
/// use resilix_async_std::Resilience;
///
/// # async_io::block_on(async {
/// let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(5));
/// let resilience = Resilience::new(&pipeline).seed(7);
/// let slow = resilience
///     .execute(CallOptions::default(), || async {
///         async_io::Timer::after(Duration::from_secs(1)).await;
///         Ok::<(), u16>(())
///     })
///     .await;
/// assert!(slow.is_err(), "cut off after 5 ms");
/// # });
/// ```
pub type Resilience<P, O = (), C = resilix::classify::ResultClassifier> =
    resilix::resilience::Resilience<P, AsyncIoTimer, StdSeeds, O, C>;
