//! A scripted upstream: returns the outcomes you give, in order, each after its latency on
//! the driver's own timer — so the same script runs through the synchronous driver
//! ([`VirtualTimer`](crate::clock::VirtualTimer) + [`block_on`](crate::clock::block_on)),
//! tokio (`resilix_tokio::TokioTimer`, paused time) and embassy (`resilix_embassy`'s timer):
//! each driver's `Timer` is the one the core's `execute` takes.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::execute::Timer;

/// One scripted answer: wait `latency`, then return `outcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step<T> {
    /// How long the call takes.
    pub latency: Duration,
    /// What it returns.
    pub outcome: T,
}

/// What a [`ScriptedUpstream`] does once its script is used up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenDone {
    /// Panic: the code under test made more calls than the test expected.
    Panic,
    /// Repeat the last step for ever.
    RepeatLast,
}

/// An upstream that answers from a script. `Sync`: share it with `&` across attempts, tasks
/// and threads; calls take the next step in the order they start.
///
/// ```
/// use std::time::Duration;
/// use resilix::call::CallOptions;
/// use resilix::classify::ResultClassifier;
/// use resilix::execute::execute;
/// use resilix::pipeline::Pipeline;
/// use resilix::random::SeededRandom;
/// use resilix::retry::{Backoff, Retry, RetryConfig};
/// use resilix::time::{Clock, Instant, ManualClock};
/// use resilix_testkit::clock::{VirtualTimer, block_on};
/// use resilix_testkit::upstream::ScriptedUpstream;
///
/// let ms = Duration::from_millis;
/// let upstream = ScriptedUpstream::new()
///     .then(ms(30), Err("reset"))
///     .then(ms(20), Ok(7));
/// let clock = ManualClock::new(Instant::ZERO);
/// let timer = VirtualTimer::new(&clock);
/// let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::new(2, Backoff::NONE).unwrap()));
/// let out = block_on(execute(&pipeline, &timer, &mut SeededRandom::new(1), &(), CallOptions::default(),
///     &ResultClassifier::new(), || upstream.call(&timer)));
/// assert_eq!(out.unwrap(), Ok(7));
/// assert_eq!(upstream.calls(), 2);
/// assert_eq!(clock.now(), Instant::from_millis(50));
/// ```
#[derive(Debug)]
pub struct ScriptedUpstream<T> {
    steps: Mutex<VecDeque<Step<T>>>,
    last: Mutex<Option<Step<T>>>,
    when_done: WhenDone,
    calls: AtomicU32,
}

impl<T: Clone> Default for ScriptedUpstream<T> {
    fn default() -> Self {
        ScriptedUpstream::new()
    }
}

impl<T: Clone> ScriptedUpstream<T> {
    /// An empty script that panics when called past its end.
    pub fn new() -> Self {
        ScriptedUpstream {
            steps: Mutex::new(VecDeque::new()),
            last: Mutex::new(None),
            when_done: WhenDone::Panic,
            calls: AtomicU32::new(0),
        }
    }

    /// A script of `outcomes`, each answered at once.
    pub fn outcomes(outcomes: impl IntoIterator<Item = T>) -> Self {
        outcomes
            .into_iter()
            .fold(ScriptedUpstream::new(), |u, o| u.then(Duration::ZERO, o))
    }

    /// Adds a step: the next call takes `latency` and returns `outcome`.
    pub fn then(self, latency: Duration, outcome: T) -> Self {
        self.steps
            .lock()
            .unwrap()
            .push_back(Step { latency, outcome });
        self
    }

    /// Adds `n` copies of a step.
    pub fn then_n(self, n: usize, latency: Duration, outcome: T) -> Self {
        (0..n).fold(self, |u, _| u.then(latency, outcome.clone()))
    }

    /// What to do once the script is used up (default: panic).
    pub fn when_done(mut self, when_done: WhenDone) -> Self {
        self.when_done = when_done;
        self
    }

    /// Calls started so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::Acquire)
    }

    /// Steps not yet used.
    pub fn remaining(&self) -> usize {
        self.steps.lock().unwrap().len()
    }

    /// The next step, taken when the call starts (so concurrent calls take steps in the order
    /// they start, whatever their latencies).
    fn next_step(&self) -> Step<T> {
        self.calls.fetch_add(1, Ordering::AcqRel);
        let next = self.steps.lock().unwrap().pop_front();
        let mut last = self.last.lock().unwrap();
        match next {
            Some(step) => {
                *last = Some(step.clone());
                step
            }
            None => match (self.when_done, last.as_ref()) {
                (WhenDone::RepeatLast, Some(step)) => step.clone(),
                _ => panic!(
                    "ScriptedUpstream: call {} made, but the script has no step left",
                    self.calls()
                ),
            },
        }
    }

    /// One call: takes the next step now, sleeps its latency on `timer`, returns its outcome.
    /// Dropping the future cancels the call (the step stays used).
    pub fn call<'t, Tm: Timer>(&self, timer: &'t Tm) -> impl Future<Output = T> + 't
    where
        T: 't,
    {
        let step = self.next_step();
        let at = timer.now().saturating_add(step.latency);
        async move {
            timer.sleep_until(at).await;
            step.outcome
        }
    }
}
