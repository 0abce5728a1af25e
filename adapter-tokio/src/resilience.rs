use std::future::Future;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

use resilix::bulkhead::Bulkhead;
use resilix::call::CallOptions;
use resilix::classify::{Classify, ResultClassifier};
use resilix::execute::{ExecuteError, execute, execute_gated};
use resilix::observe::{Event, Observer};
use resilix::permit::Policy;
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::RetryPolicy;

use crate::fallback::{Fallback, Served};
use crate::seed::{mix, thread_seed};
use crate::wait::{BulkheadGate, SlotWaiters};
use crate::{TokioClock, TokioTimer};

/// A pipeline with its observer and classifier, ready to run calls on tokio.
///
/// `P` is anything that dereferences to a [`Pipeline`]: `&pipeline`, `&'static` policies'
/// pipeline, `Arc<Pipeline<..>>` or `Box<Pipeline<..>>`. The policies are shared by every call
/// (they take `&self`), so one `Resilience` serves every task.
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
#[derive(Debug)]
pub struct Resilience<P, O = (), C = ResultClassifier> {
    pipeline: P,
    observer: O,
    classifier: C,
    timer: TokioTimer,
    seeds: Seeds,
}

#[derive(Debug)]
enum Seeds {
    Entropy,
    // Call n gets mix(seed + n): reproducible for a given order of calls.
    Fixed { seed: u64, calls: AtomicU64 },
}

impl<P> Resilience<P> {
    /// Runs calls through `pipeline`, classifying `Result`s (every `Err` a transient failure),
    /// observing nothing, with per-thread entropy for jitter and shedding.
    pub fn new(pipeline: P) -> Self {
        Resilience {
            pipeline,
            observer: (),
            classifier: ResultClassifier::new(),
            timer: TokioTimer::new(),
            seeds: Seeds::Entropy,
        }
    }
}

impl<P, O, C> Resilience<P, O, C> {
    /// Reports every policy's events, every retry decision and every fallback to `observer`.
    pub fn observer<O2: Observer>(self, observer: O2) -> Resilience<P, O2, C> {
        Resilience {
            pipeline: self.pipeline,
            observer,
            classifier: self.classifier,
            timer: self.timer,
            seeds: self.seeds,
        }
    }

    /// Turns each attempt's output into a verdict with `classifier`.
    pub fn classifier<C2>(self, classifier: C2) -> Resilience<P, O, C2> {
        Resilience {
            pipeline: self.pipeline,
            observer: self.observer,
            classifier,
            timer: self.timer,
            seeds: self.seeds,
        }
    }

    /// Draws each call's randomness from `seed` instead of entropy: the `n`th call gets a
    /// generator seeded from `seed` and `n`, so a run with the same order of calls jitters and
    /// sheds identically. Pick a different seed per process or device.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seeds = Seeds::Fixed {
            seed,
            calls: AtomicU64::new(0),
        };
        self
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// The observer.
    pub fn observer_ref(&self) -> &O {
        &self.observer
    }

    /// The clock calls are timed on (deadlines in [`CallOptions`] are instants on it).
    pub fn clock(&self) -> &TokioClock {
        self.timer.clock()
    }

    /// The timer calls sleep on.
    pub fn timer(&self) -> &TokioTimer {
        &self.timer
    }

    /// The generator for one call.
    pub fn call_rng(&self) -> SeededRandom {
        SeededRandom::new(match &self.seeds {
            Seeds::Entropy => thread_seed(),
            Seeds::Fixed { seed, calls } => {
                mix(seed.wrapping_add(calls.fetch_add(1, Ordering::Relaxed)))
            }
        })
    }
}

impl<P, O, C, Rt, T, B, L, H, Rl> Resilience<P, O, C>
where
    P: Deref<Target = Pipeline<Rt, T, B, L, H, Rl>>,
    Rt: RetryPolicy,
    T: Policy,
    B: Policy,
    L: Policy,
    H: Policy,
    Rl: Policy,
    O: Observer,
{
    /// Runs `operation` through the pipeline: it is called once per attempt and may borrow.
    ///
    /// Returns the output when the classifier called it a success or an answer, or the core's
    /// typed error: refused (which policy, when it admits again), gave up (why, and the last
    /// output), or the deadline passed. Dropping the returned future at any point gives back
    /// every permit and records nothing. Allocates nothing beyond the operation's own future.
    pub async fn execute<F, Fut>(
        &self,
        options: CallOptions,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        let mut rng = self.call_rng();
        self.execute_with_rng(&mut rng, options, operation).await
    }

    /// [`Self::execute`] drawing randomness from `rng` (a hardware RNG, a `rand` generator
    /// through the core's `rand_core` bridges, a seeded generator in a test).
    pub async fn execute_with_rng<R, F, Fut>(
        &self,
        rng: &mut R,
        options: CallOptions,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        R: Random + ?Sized,
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        execute(
            &*self.pipeline,
            &self.timer,
            rng,
            &self.observer,
            options,
            &self.classifier,
            operation,
        )
        .await
    }

    /// [`Self::execute`], with each attempt waiting (boundedly) for a slot of `bulkhead`
    /// instead of being refused at once: see [`crate::wait`]. `bulkhead` must be the one in the
    /// pipeline's bulkhead slot. A caller that cannot wait (too many waiting, `max_wait` or
    /// the call's deadline passed) is refused with `bulkhead-full`.
    pub async fn execute_waiting<const N: usize, F, Fut>(
        &self,
        bulkhead: &Bulkhead<SlotWaiters<N>>,
        options: CallOptions,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        let mut rng = self.call_rng();
        let gate = BulkheadGate::new(bulkhead, *self.timer.clock());
        execute_gated(
            &*self.pipeline,
            &self.timer,
            &mut rng,
            &self.observer,
            options,
            &self.classifier,
            &gate,
            operation,
        )
        .await
    }

    /// [`Self::execute`], answered by `fallback` when the call is refused, gives up or runs
    /// out of time. The observer hears [`Event::FallbackServed`] with the cause, so the
    /// degradation shows in logs and metrics. With a [`LastKnownGood`](crate::LastKnownGood)
    /// store, every output the classifier calls a `Success` is remembered.
    ///
    /// The error comes back only when the fallback has nothing to give (an empty last known
    /// good store with no default).
    ///
    /// ```
    /// use resilix::call::CallOptions;
    /// use resilix::pipeline::Pipeline;
    /// use resilix_tokio::{Fallback, LastKnownGood, Resilience, Served};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let pipeline = Pipeline::new();
    /// let resilience = Resilience::new(&pipeline);
    /// let cache = LastKnownGood::new();
    /// let fresh = resilience
    ///     .execute_or(CallOptions::default(), Fallback::LastKnownGood(&cache), || async {
    ///         Ok::<u32, ()>(21)
    ///     })
    ///     .await;
    /// assert_eq!(fresh.unwrap(), Served::Fresh(Ok(21)));
    /// let degraded = resilience
    ///     .execute_or(CallOptions::default(), Fallback::LastKnownGood(&cache), || async {
    ///         Err::<u32, ()>(())
    ///     })
    ///     .await;
    /// assert_eq!(degraded.unwrap().into_inner(), Ok(21));
    /// # });
    /// ```
    pub async fn execute_or<F, Fut>(
        &self,
        options: CallOptions,
        fallback: Fallback<'_, Fut::Output>,
        operation: F,
    ) -> Result<Served<Fut::Output>, ExecuteError<Fut::Output>>
    where
        F: FnMut() -> Fut,
        Fut: Future,
        Fut::Output: Clone,
        C: Classify<Fut::Output>,
    {
        let result = self.execute(options, operation).await;
        fallback.resolve(result, &self.classifier, |cause| {
            self.observer.on_event(&Event::FallbackServed { cause })
        })
    }
}
