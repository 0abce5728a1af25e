//! Hedged calls on tokio: send a copy when the call outlives the hedge delay, take the first
//! acceptable answer, cancel the rest.
//!
//! [`hedged`] drives the core's [`HedgeCall`](resilix::hedge::HedgeCall) plan: it starts the
//! original, sleeps (on tokio's timer, so paused-time tests are exact) until a copy is due,
//! asks the plan whether it may go (the local cap, then the shared retry budget), and races
//! every copy in flight. The first answer whose verdict is `Success` or `Answered` (the
//! upstream worked, by the caller's classifier) is returned and every other copy is dropped
//! at once: a copy that went through a pipeline drops its permits, which cancels them and
//! records nothing. A failed answer waits for the copies still in flight; with none left, it
//! is the result (retrying it is the retry policy's job, outside). A refused hedge cancels
//! nothing: the original runs on to its answer.
//!
//! Only calls declared idempotent (`CallOptions::idempotent(true)`, e.g. from
//! `http::call_options` with a safe method or an idempotency key) are ever hedged;
//! any other call runs once, exactly as without `hedged`.
//!
//! The original is pinned in place; each copy is boxed when it leaves (about 5% of calls at
//! the default load), so an unhedged call allocates nothing here.
//!
//! ```
//! use std::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::hedge::{Hedge, HedgeConfig};
//! use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
//! use resilix::Verdict;
//! use resilix_tokio::hedge::hedged;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // One budget for the process: the retries and the hedges spend from it.
//! let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?;
//! let config = HedgeConfig { fixed_delay: Some(Duration::from_millis(10)), ..HedgeConfig::DEFAULT };
//! let hedge = Hedge::new(config, &budget)?;
//!
//! let classify = |r: &Result<&str, ()>| if r.is_ok() { Verdict::Success } else { Verdict::Transient };
//! let answer = hedged(&hedge, CallOptions::default().idempotent(true), &classify, |copy| async move {
//!     // The original is stuck; the copy, sent 10 ms in, answers in 2 ms.
//!     let took = if copy == 1 { 1_000 } else { 2 };
//!     tokio::time::sleep(Duration::from_millis(took)).await;
//!     Ok::<_, ()>(if copy == 1 { "original" } else { "hedge" })
//! })
//! .await;
//! assert_eq!(answer.output, Ok("hedge"));
//! assert_eq!((answer.copy, answer.sent), (2, 2));
//! # Ok(())
//! # }
//! ```

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;

use resilix::call::CallOptions;
use resilix::classify::Classify;
use resilix::hedge::{Hedge, NextCopy};
use resilix::observe::Observer;
use resilix::retry::budget::RetryBudget;
use resilix::time::Clock;
use resilix::verdict::{Verdict, VerdictKind};

use crate::TokioClock;

/// What a hedged call answered, and which copy answered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hedged<T> {
    /// The answer taken: the first acceptable one, or the last failure when none was.
    pub output: T,
    /// Its verdict, by the classifier.
    pub verdict: Verdict,
    /// The copy it came from: 1 is the original, 2 the first hedge.
    pub copy: u32,
    /// How many copies were sent, the original included.
    pub sent: u32,
}

/// Whether an answer ends the race: the upstream worked (for the caller or not).
fn acceptable(verdict: &Verdict) -> bool {
    matches!(verdict.kind(), VerdictKind::Success | VerdictKind::Answered)
}

/// Runs `make_call(1)` and, while no acceptable answer has come, `make_call(2)`, … as the
/// `hedge` policy allows; answers the first acceptable result (by `classify`) and drops every
/// other copy. Events go nowhere; see [`hedged_with`]. `make_call` gets the copy's number.
///
/// See the [module docs](self) for the rules and a runnable example.
pub async fn hedged<B, C, F, Fut, T>(
    hedge: &Hedge<B>,
    options: CallOptions,
    classify: &C,
    make_call: F,
) -> Hedged<T>
where
    B: RetryBudget,
    C: Classify<T> + ?Sized,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = T>,
{
    hedged_with(hedge, options, classify, &(), make_call).await
}

/// [`hedged`], reporting `HedgeSent`, `HedgeRefused` and `HedgeWon` to `observer` (the tracing
/// or metrics bridge, a counter).
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::hedge::{Hedge, HedgeConfig};
/// use resilix::observe::{Event, Observer};
/// use resilix::retry::budget::Unlimited;
/// use resilix::Verdict;
/// use resilix_tokio::hedge::hedged_with;
///
/// #[derive(Default)]
/// struct Hedges(AtomicU32);
/// impl Observer for Hedges {
///     fn on_event(&self, e: &Event) {
///         if let Event::HedgeSent { .. } = e { self.0.fetch_add(1, Ordering::Relaxed); }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let config = HedgeConfig { fixed_delay: Some(Duration::from_millis(5)), ..HedgeConfig::DEFAULT };
/// let hedge = Hedge::new(config, Unlimited).unwrap();
/// let seen = Hedges::default();
/// let classify = |_: &u32| Verdict::Success;
/// let out = hedged_with(&hedge, CallOptions::default().idempotent(true), &classify, &seen, |copy| async move {
///     tokio::time::sleep(Duration::from_millis(8)).await;
///     copy
/// })
/// .await;
/// assert_eq!(out.output, 1, "the original answered at 8 ms, before the copy's 13 ms");
/// assert_eq!(seen.0.load(Ordering::Relaxed), 1);
/// # }
/// ```
pub async fn hedged_with<B, C, O, F, Fut, T>(
    hedge: &Hedge<B>,
    options: CallOptions,
    classify: &C,
    observer: &O,
    mut make_call: F,
) -> Hedged<T>
where
    B: RetryBudget,
    C: Classify<T> + ?Sized,
    O: Observer + ?Sized,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = T>,
{
    let clock = TokioClock::new();
    let started = clock.now();
    let mut plan = hedge.begin(started, options);
    let mut next = plan.poll(hedge, started, observer);
    let mut original = pin!(Some(make_call(1)));
    let mut copies: Vec<(u32, Pin<Box<Fut>>)> = Vec::new();
    let mut timer = pin!(tokio::time::sleep_until(clock.to_tokio(started)));
    if let NextCopy::Wait { until } = next {
        timer.as_mut().reset(clock.to_tokio(until));
    }
    let (copy, output, verdict) = poll_fn(|cx| {
        loop {
            // Copies due now leave first, so they are polled (started) in this same pass.
            while let NextCopy::Send { copy } = next {
                copies.push((copy, Box::pin(make_call(copy))));
                next = plan.poll(hedge, clock.now(), observer);
                if let NextCopy::Wait { until } = next {
                    timer.as_mut().reset(clock.to_tokio(until));
                }
            }
            let mut last_failure = None;
            if let Some(call) = original.as_mut().as_pin_mut()
                && let Poll::Ready(output) = call.poll(cx)
            {
                original.set(None);
                let verdict = classify.classify(&output);
                if acceptable(&verdict) {
                    return Poll::Ready((1, output, verdict));
                }
                plan.answered(1, clock.now(), &verdict);
                last_failure = Some((1, output, verdict));
            }
            let mut i = 0;
            while i < copies.len() {
                if let Poll::Ready(output) = copies[i].1.as_mut().poll(cx) {
                    let (copy, _) = copies.remove(i);
                    let verdict = classify.classify(&output);
                    if acceptable(&verdict) {
                        return Poll::Ready((copy, output, verdict));
                    }
                    plan.answered(copy, clock.now(), &verdict);
                    last_failure = Some((copy, output, verdict));
                } else {
                    i += 1;
                }
            }
            if let Some(failure) = last_failure
                && original.is_none()
                && copies.is_empty()
            {
                // Nothing left in flight: the failure is the answer (a hedge is not a retry).
                return Poll::Ready(failure);
            }
            match next {
                NextCopy::Wait { .. } if timer.as_mut().poll(cx).is_ready() => {
                    next = plan.poll(hedge, clock.now(), observer);
                    if let NextCopy::Wait { until } = next {
                        timer.as_mut().reset(clock.to_tokio(until));
                    }
                    // A copy may be due: go round again to send and poll it.
                }
                _ => return Poll::Pending,
            }
        }
    })
    .await;
    let sent = plan.sent();
    plan.finish(hedge, clock.now(), copy, &verdict, observer);
    // `original` and `copies` drop here: the losers are cancelled.
    Hedged {
        output,
        verdict,
        copy,
        sent,
    }
}
