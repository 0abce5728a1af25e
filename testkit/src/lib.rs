//! Test your own resilience settings, and the behavioural scenarios every resilix adapter
//! must pass, written once.
//!
//! # The kit, for users
//!
//! * [`clock`]: a [`ManualClock`](resilix::time::ManualClock) shared by the pipeline and the
//!   test, a [`VirtualTimer`](clock::VirtualTimer) on it whose sleeps move it, and
//!   [`block_on`](clock::block_on): the synchronous driver.
//! * [`random`]: [`FakeRandom`](random::FakeRandom), the values you script, in order.
//! * [`upstream`]: [`ScriptedUpstream`](upstream::ScriptedUpstream), outcomes and latencies in
//!   order, on any driver's timer (the synchronous one, `resilix_tokio::TokioTimer` on paused
//!   time, `resilix_embassy::EmbassyTimer`).
//! * [`recorder`]: [`Recorder`](recorder::Recorder), every event, with
//!   [`assert_sequence`](recorder::Recorder::assert_sequence),
//!   [`assert_in_order`](recorder::Recorder::assert_in_order) and [`assert_events!`].
//! * [`describe`]: [`Description`](describe::Description), which slots of a built pipeline
//!   hold a policy, with which settings.
//! * [`signal`]: events ordered by synchronisation, not by how long something takes:
//!   [`Signal`], [`signal_when_pending`], [`cancel_when`], [`join`].
//!
//! # The adapter suite
//!
//! [`suite`]: the behavioural scenarios every adapter runs on its own runtime and timer, and
//! the doubles they use ([`Counting`], [`FixedRetry`], [`Log`]); re-exported here, where the
//! adapters' tests name them.

// The counting allocator (a `GlobalAlloc`, which cannot be written without `unsafe`) is the
// one exception, allowed on its module alone.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod alloc;
pub mod clock;
pub mod describe;
pub mod random;
pub mod recorder;
pub mod signal;
pub mod suite;
pub mod upstream;

pub use signal::{Signal, cancel_when, join, signal_when_pending};
pub use suite::{
    Counting, CountingPermit, Counts, DetachedCounting, DropFlag, FixedRetry, GatePipeline, Log,
    Store, Tolerance, breaker_open_half_open, budget_refusal, cancel_during_attempt,
    cancel_during_retry_sleep, deadline_respected, fallback, handles_share_one_timeline,
    jittered_retry_timing, latency, limiter_queue_zone, queue_zone_limiter, retry_timing,
    served_order, wake_up_passed_on,
};
