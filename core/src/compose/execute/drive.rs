//! The retry loop as a hand-written future: [`Drive`], the one loop every driver runs.
//!
//! Written by hand rather than as an `async fn` so that its type can be named: the tower
//! Layer's `Service::Future` is a `Drive` over an engine that owns its pipeline, with no box.
//! The steps, in order, for each attempt:
//!
//! 1. **Gate**: wait at the [`Gate`] until the attempt may be admitted (the clock is read
//!    again only if it waited);
//! 2. **Admit** through the pipeline, then drop the gate's future (it resolves the wake-up it
//!    went on only once the admission is decided);
//! 3. **Attempt**: poll the operation's future, raced against the attempt's deadline (the
//!    deadline's sleep is made only once the operation is first pending);
//! 4. **Settle** with the verdict at the clock's new reading; the call ends, or
//! 5. **Back off** until the retry's instant, and go to 1.
//!
//! Dropping it at any point drops the operation's future and the gate's, then gives back what
//! the admitted attempt holds, recording nothing: a cancelled call.

use core::future::Future;
use core::ops::ControlFlow;
use core::pin::Pin;
use core::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::call::{CallOptions, CallState, Stop};
use crate::classify::Classify;
use crate::inbound::Priority;
use crate::observe::{Event, Observer};
use crate::time::Instant;
use crate::verdict::Verdict;

use super::{Attempted, Engine, ExecuteError, Gate, conclude};

/// What an attempt knows of itself as it starts, for an operation that passes it on to the
/// next hop (headers: its number, the call's criticality, the time left).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttemptInfo {
    /// Which attempt this is: 1 for the first, 2 for the first retry.
    pub number: u32,
    /// When it was admitted, on the driver's timeline.
    pub started: Instant,
    /// When it must end: the tighter of its attempt timeout and the call's deadline.
    pub deadline: Option<Instant>,
    /// The call's criticality ([`CallOptions::criticality`]), if it was given one.
    pub criticality: Option<Priority>,
}

impl AttemptInfo {
    /// Attempt `number`, admitted at `started`, with no deadline and no criticality (the loop
    /// makes the real ones; this is for tests of code that propagates them).
    pub const fn new(number: u32, started: Instant) -> Self {
        AttemptInfo {
            number,
            started,
            deadline: None,
            criticality: None,
        }
    }

    /// The same, ending at `deadline`.
    pub const fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The same, with `criticality`.
    pub const fn with_criticality(mut self, criticality: Priority) -> Self {
        self.criticality = Some(criticality);
        self
    }

    /// The time this attempt has left at `now`, if it has a deadline.
    pub const fn remaining(&self, now: Instant) -> Option<core::time::Duration> {
        match self.deadline {
            Some(at) => Some(at.saturating_duration_since(now)),
            None => None,
        }
    }
}

/// What the loop calls once per attempt for the attempt's future: any `FnMut() -> impl
/// Future`, an operation that reads its [`AttemptInfo`] ([`with_attempt`]), or a type of a
/// driver's own whose future has a name (the tower Layer's).
pub trait Operation {
    /// One attempt's future.
    type Future: Future;

    /// Starts the next attempt, described by `info`.
    fn attempt(&mut self, info: &AttemptInfo) -> Self::Future;
}

impl<F: FnMut() -> Fut, Fut: Future> Operation for F {
    type Future = Fut;

    #[inline(always)]
    fn attempt(&mut self, _info: &AttemptInfo) -> Fut {
        self()
    }
}

/// An operation that is told which attempt it makes ([`with_attempt`]).
#[derive(Clone, Copy, Debug)]
pub struct PerAttempt<F>(F);

/// An operation from `f`, called with each attempt's [`AttemptInfo`]: to send the attempt's
/// number, the call's criticality and the time left to the next hop.
///
/// ```
/// use resilix::execute::{AttemptInfo, Operation, with_attempt};
/// use resilix::time::Instant;
/// let mut op = with_attempt(|a: &AttemptInfo| core::future::ready(a.number));
/// # let _ = &mut op;
/// ```
pub const fn with_attempt<F, Fut>(f: F) -> PerAttempt<F>
where
    F: FnMut(&AttemptInfo) -> Fut,
    Fut: Future,
{
    PerAttempt(f)
}

impl<F: FnMut(&AttemptInfo) -> Fut, Fut: Future> Operation for PerAttempt<F> {
    type Future = Fut;

    #[inline(always)]
    fn attempt(&mut self, info: &AttemptInfo) -> Fut {
        (self.0)(info)
    }
}

/// What an attempt's operation answers.
type Output<Op> = <<Op as Operation>::Future as Future>::Output;

pin_project! {
    /// The retry loop over an [`Engine`]: the future [`execute`](super::execute) and
    /// [`execute_gated`](super::execute_gated) return. See the [module docs](self).
    ///
    /// Its output is the operation's answer, or why the loop stopped without one.
    #[must_use = "futures do nothing unless polled"]
    pub struct Drive<E: Engine, G: Gate, Op: Operation> {
        engine: E,
        gate: G,
        operation: Op,
        options: CallOptions,
        // `None` until the first poll starts the call.
        call: Option<CallState<E::RetryState>>,
        // The instant admissions are decided at: the call's start, or the end of a wait.
        now: Instant,
        last: Option<Attempted<Output<Op>>>,
        // The admitted attempt, while it runs.
        held: Option<E::Held>,
        // Each thing the loop awaits has a slot of its own, rather than one enum of steps:
        // moving between steps then writes a slot or two, where replacing an enum of every
        // step ran its whole drop glue, out of line, at each step (about 90 instructions
        // per call; `benches/instructions.sh async-execute`).
        //
        // Waiting at the gate; `Unpin`, so it is polled where it lies.
        wait: Option<G::Wait>,
        // The wait was pending at least once.
        waited: bool,
        // The attempt's future.
        #[pin]
        work: Option<Op::Future>,
        // The attempt's timeout once made, or the retry's delay.
        #[pin]
        sleep: Option<E::Sleep>,
        // The attempt's deadline, until its timeout is made.
        deadline: Option<Instant>,
        phase: Phase,
    }

    impl<E: Engine, G: Gate, Op: Operation> PinnedDrop for Drive<E, G, Op> {
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            // The attempt's future, its timeout and the gate's wait go first, then the
            // attempt's permits, in the order an `async` loop drops its locals.
            this.work.set(None);
            this.sleep.set(None);
            *this.wait = None;
            if let Some(held) = this.held.take() {
                this.engine.cancel(held);
            }
        }
    }
}

/// Where the loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not polled yet.
    Start,
    /// Waiting at the gate.
    Gate,
    /// The attempt runs.
    Attempt,
    /// Waiting for the retry's instant.
    Backoff,
    /// Answered.
    Done,
}

impl<E: Engine, G: Gate, Op: Operation> core::fmt::Debug for Drive<E, G, Op> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Drive")
            .field("phase", &self.phase)
            .field("attempts", &self.call.as_ref().map(CallState::attempts))
            .finish_non_exhaustive()
    }
}

impl<E: Engine, G: Gate, Op: Operation> Drive<E, G, Op> {
    /// The loop over `engine`'s parts, each attempt held at `gate` and made by `operation`.
    /// Nothing happens until it is first polled: the call starts then.
    ///
    /// ```
    /// use core::future::{ready, Future, Ready};
    /// use resilix::call::CallOptions;
    /// use resilix::classify::ResultClassifier;
    /// use resilix::execute::{Borrowed, Drive, Timer};
    /// use resilix::pipeline::Pipeline;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::{Clock, Instant, ManualClock};
    ///
    /// struct Still(ManualClock);
    /// impl Timer for Still {
    ///     type Sleep<'a> = Ready<()>;
    ///     fn now(&self) -> Instant { self.0.now() }
    ///     fn sleep_until(&self, _at: Instant) -> Ready<()> { ready(()) }
    /// }
    ///
    /// let (pipeline, timer) = (Pipeline::new(), Still(ManualClock::new(Instant::ZERO)));
    /// let mut rng = SeededRandom::new(1);
    /// let classifier = ResultClassifier::new();
    /// let engine = Borrowed::new(&pipeline, &timer, &mut rng, &(), &classifier);
    /// let drive = Drive::new(engine, (), CallOptions::default(), || ready(Ok::<u8, ()>(4)));
    /// let mut drive = core::pin::pin!(drive);
    /// let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    /// assert_eq!(drive.as_mut().poll(&mut cx), core::task::Poll::Ready(Ok(Ok(4))));
    /// ```
    pub fn new(engine: E, gate: G, options: CallOptions, operation: Op) -> Self {
        Drive {
            engine,
            gate,
            operation,
            options,
            call: None,
            now: Instant::ZERO,
            last: None,
            held: None,
            wait: None,
            waited: false,
            work: None,
            sleep: None,
            deadline: None,
            phase: Phase::Start,
        }
    }
}

impl<E, G, Op> Future for Drive<E, G, Op>
where
    E: Engine,
    E::Classifier: Classify<Output<Op>>,
    G: Gate,
    Op: Operation,
{
    type Output = Result<Output<Op>, ExecuteError<Output<Op>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match *this.phase {
                Phase::Start => {
                    // One clock read serves the call's start, the gate and the admission:
                    // they happen at the same instant unless the gate really waits, and a
                    // clock read (~30 ns on a VM) is a large share of the whole loop's cost.
                    let now = this.engine.now();
                    *this.now = now;
                    let call = this.call.insert(this.engine.begin(now, *this.options));
                    *this.wait = Some(this.gate.ready(now, call.options().deadline_value()));
                    *this.waited = false;
                    *this.phase = Phase::Gate;
                }
                Phase::Gate => {
                    let Some(wait) = this.wait.as_mut() else {
                        unreachable!("a gate's wait is kept while the loop waits")
                    };
                    let ready = match Pin::new(wait).poll(cx) {
                        Poll::Ready(ready) => ready,
                        Poll::Pending => {
                            *this.waited = true;
                            return Poll::Pending;
                        }
                    };
                    if *this.waited {
                        *this.now = this.engine.now();
                    }
                    let Some(call) = this.call.as_mut() else {
                        unreachable!("the call starts before its first gate")
                    };
                    let admitted = match ready {
                        Ok(()) => this.engine.admit(call, *this.now),
                        Err(rejection) => {
                            this.engine
                                .observer()
                                .on_event(&Event::Rejected { rejection });
                            Err(Stop::Refused(rejection))
                        }
                    };
                    // The admission is decided: the gate's wait goes now, before the attempt
                    // runs (a waiter let through on a wake-up resolves it as it drops,
                    // passing it on if the admission left the slot free).
                    *this.wait = None;
                    match admitted {
                        Ok(held) => {
                            *this.deadline = E::deadline(&held).map(|d| d.instant());
                            *this.held = Some(held);
                            let info = AttemptInfo {
                                number: call.attempts(),
                                started: *this.now,
                                deadline: *this.deadline,
                                criticality: call.options().criticality_value(),
                            };
                            this.work.set(Some(this.operation.attempt(&info)));
                            *this.phase = Phase::Attempt;
                        }
                        Err(stop) => {
                            *this.phase = Phase::Done;
                            let attempts = call.attempts();
                            return Poll::Ready(Err(ExecuteError::stopped(
                                stop,
                                attempts,
                                this.last.take(),
                            )));
                        }
                    }
                }
                Phase::Attempt => {
                    let Some(work) = this.work.as_mut().as_pin_mut() else {
                        unreachable!("an attempt's future is kept while it runs")
                    };
                    // The work first, so an answer ready at the deadline still counts.
                    let outcome = match work.poll(cx) {
                        Poll::Ready(output) => Some(output),
                        Poll::Pending => {
                            // The timeout is made only when the work is first pending: an
                            // attempt that answers on its first poll (a cache, a fast path)
                            // never makes a timer entry (tokio's costs ~35 ns to make and
                            // drop). The deadline is an instant, so making it later changes
                            // nothing about when it fires.
                            if let Some(at) = this.deadline.take() {
                                this.sleep.set(Some(this.engine.sleep_until(at)));
                            }
                            match this.sleep.as_mut().as_pin_mut().map(|t| t.poll(cx)) {
                                Some(Poll::Ready(())) => None,
                                _ => return Poll::Pending,
                            }
                        }
                    };
                    // The work's future and its timeout go before the attempt settles.
                    this.work.set(None);
                    this.sleep.set(None);
                    let verdict = match &outcome {
                        Some(output) => this.engine.classifier().classify(output),
                        None => Verdict::Timeout,
                    };
                    let (Some(call), Some(held)) = (this.call.as_mut(), this.held.take()) else {
                        unreachable!("an attempt runs within a call, admitted")
                    };
                    let now = this.engine.now();
                    let next = this.engine.settle(call, held, &verdict, now);
                    let attempted = match outcome {
                        Some(output) => Attempted::Output(output),
                        None => Attempted::TimedOut,
                    };
                    match conclude(next, attempted, call.attempts()) {
                        ControlFlow::Break(result) => {
                            *this.phase = Phase::Done;
                            return Poll::Ready(result);
                        }
                        ControlFlow::Continue((at, attempted)) => {
                            *this.last = Some(attempted);
                            this.sleep.set(Some(this.engine.sleep_until(at)));
                            *this.phase = Phase::Backoff;
                        }
                    }
                }
                Phase::Backoff => {
                    let Some(sleep) = this.sleep.as_mut().as_pin_mut() else {
                        unreachable!("a retry's delay is kept while the loop waits")
                    };
                    if sleep.poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.sleep.set(None);
                    let now = this.engine.now();
                    *this.now = now;
                    let Some(call) = this.call.as_ref() else {
                        unreachable!("a retry waits within a call")
                    };
                    *this.wait = Some(this.gate.ready(now, call.options().deadline_value()));
                    *this.waited = false;
                    *this.phase = Phase::Gate;
                }
                Phase::Done => panic!("the retry loop's future was polled after it completed"),
            }
        }
    }
}
