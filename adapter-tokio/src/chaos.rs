//! Chaos under tokio: apply a [`Chaos`] decision to one attempt — sleep for the injected
//! latency on tokio's timer, skip the call on an injected fault, substitute the verdict after
//! it — inside any `execute` closure, so the attempt's deadline, the retry loop and every
//! policy see the injection as they would see a real slow or failing upstream.
//!
//! Decide in the closure (synchronously, from a generator the closure owns: a seed there makes
//! the run reproducible), apply in the future it returns, and classify with
//! [`ChaosClassifier`] around your own classifier. The output is a [`Chaotic`], not a
//! `Result`, so the call runs through `call(options).run_output(op)` (the output-generic loop):
//!
//! ```
//! use std::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::chaos::{Chaos, ChaosClassifier, ChaosConfig, Chaotic};
//! use resilix::classify::ResultClassifier;
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::retry::{Backoff, Retry, RetryConfig};
//! use resilix::Verdict;
//! use resilix_tokio::{Resilience, chaos};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! // Every first attempt fails without a call (then the switch goes off below).
//! let faults = Chaos::new(ChaosConfig::NONE.with_fault(1_000_000, Verdict::Transient)).unwrap();
//! faults.enable();
//! let pipeline = Pipeline::new()
//!     .retry(Retry::unbudgeted(RetryConfig::new(3, Backoff::NONE).unwrap()));
//! let resilience = Resilience::new(&pipeline)
//!     .classifier(ChaosClassifier(ResultClassifier::new()))
//!     .seed(1);
//! let mut rng = SeededRandom::new(42);
//! let mut calls = 0;
//! let answer = resilience
//!     .call(CallOptions::default()).run_output(|| {
//!         let injection = chaos::decide(&faults, &mut rng, &());
//!         faults.disable(); // a running service flips the switch; here, after one fault
//!         calls += 1;
//!         chaos::attempt(injection, || async { Ok::<_, ()>("fresh") })
//!     })
//!     .await
//!     .unwrap();
//! assert_eq!(answer, Chaotic::Upstream(Ok("fresh")), "the retry got through");
//! assert_eq!(calls, 2);
//! # });
//! ```
//!
//! (The pipeline has no chaos slot yet: see the core's `chaos` module for why chaos is the
//! innermost step and how a pipeline slot would apply it for you.)

use std::future::Future;

use resilix::chaos::{Chaos, Chaotic, Injection};
use resilix::observe::Observer;
use resilix::permit::Env;
use resilix::random::Random;

pub use resilix::chaos::{ChaosClassifier, ChaosConfig};

/// [`Chaos::decide`] at tokio's [`now`](crate::now), drawing from `rng` and reporting each
/// injection to `observer`.
pub fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
    chaos: &Chaos,
    rng: &mut R,
    observer: &O,
) -> Injection {
    let mut env = Env::new(crate::now(), rng).with_observer(observer);
    chaos.decide(&mut env)
}

/// One attempt under `injection`: sleeps for its latency on tokio's timer, then answers the
/// injected fault without calling, or calls and answers the output (with its substituted
/// verdict, if any). Cancel-safe: dropping it drops the sleep or the call.
///
/// ```
/// use std::time::Duration;
/// use resilix::chaos::{Chaotic, Injection};
/// use resilix::Verdict;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let slow = Injection {
///     latency: Some(Duration::from_millis(300)),
///     outcome: Some(Verdict::Overload { retry_after: None }),
///     ..Injection::NONE
/// };
/// let start = tokio::time::Instant::now();
/// let out = resilix_tokio::chaos::attempt(slow, || async { 7 }).await;
/// assert_eq!(start.elapsed(), Duration::from_millis(300));
/// assert_eq!(out, Chaotic::Substituted { output: 7, verdict: Verdict::Overload { retry_after: None } });
/// # });
/// ```
pub async fn attempt<F, Fut>(injection: Injection, call: F) -> Chaotic<Fut::Output>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    if let Some(delay) = injection.latency {
        tokio::time::sleep(delay).await;
    }
    if let Some(verdict) = injection.fault {
        return Chaotic::Fault(verdict);
    }
    let output = call().await;
    match injection.outcome {
        Some(verdict) => Chaotic::Substituted { output, verdict },
        None => Chaotic::Upstream(output),
    }
}
