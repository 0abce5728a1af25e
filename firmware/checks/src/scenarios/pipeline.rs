//! The pipeline and the retry driver on the device: permits, cancellation, deadlines, events,
//! and the async `execute` loop polled by hand.

use core::cell::Cell;
use core::future::{Future, Ready, pending, ready};
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::{CallOptions, Next, Stop};
use resilix::classify::ResultClassifier;
use resilix::execute::{Attempted, ExecuteError, Timer, execute};
use resilix::observe::{Event, Observer};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::GiveUpReason;
use resilix::time::{Deadline, Instant};
use resilix::{RejectReason, Verdict};

use super::{ensure, nanos};
use crate::Trace;
use crate::codes::{give_up_code, reason_code};

/// Counts what the pipeline reports. Cells: an observer takes `&self` and this one is never
/// shared across threads.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) rejected: Cell<u32>,
    pub(crate) executed: Cell<u32>,
    pub(crate) executed_nanos: Cell<u64>,
    pub(crate) retries: Cell<u32>,
    pub(crate) retry_delay_nanos: Cell<u64>,
    pub(crate) gave_up: Cell<u32>,
    pub(crate) transitions: Cell<u32>,
}

impl Observer for Counts {
    fn on_event(&self, event: &Event) {
        let bump = |c: &Cell<u32>| c.set(c.get() + 1);
        match event {
            Event::Rejected { .. } => bump(&self.rejected),
            Event::Executed { duration, .. } => {
                bump(&self.executed);
                self.executed_nanos
                    .set(self.executed_nanos.get() + nanos(*duration));
            }
            Event::RetryScheduled { delay, .. } => {
                bump(&self.retries);
                self.retry_delay_nanos
                    .set(self.retry_delay_nanos.get() + nanos(*delay));
            }
            Event::RetryRefused { .. } => bump(&self.gave_up),
            Event::CircuitTransition { .. } => bump(&self.transitions),
            _ => {}
        }
    }
}

/// A retry decision as numbers: 1 done; 2 then the instant for a retry; 3 then the reason.
pub(crate) fn push_next(t: &mut Trace, next: &Next) {
    match next {
        Next::Done => t.push(1),
        Next::RetryAt(at) => {
            t.push(2);
            t.push(at.as_nanos());
        }
        Next::GiveUp(reason) => {
            t.push(3);
            t.push(give_up_code(reason));
        }
    }
}

pub(crate) fn bulkhead(t: &mut Trace) -> Result<(), &'static str> {
    ensure(
        BulkheadConfig::new(0).is_err(),
        "a bulkhead of zero was accepted",
    )?;
    let bulkhead = Bulkhead::new(BulkheadConfig::new(2).map_err(|_| "bulkhead of two refused")?);
    let pipeline = Pipeline::new()
        .bulkhead(&bulkhead)
        .attempt_timeout(Duration::from_millis(200));
    let counts = Counts::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::from_millis(1_000), &mut rng).with_observer(&counts);

    let a = pipeline
        .admit(&mut env, None)
        .map_err(|_| "first call refused")?;
    let deadline = a.deadline().ok_or("no attempt deadline")?;
    ensure(
        deadline.instant() == Instant::from_millis(1_200),
        "attempt timeout not applied",
    )?;
    env.now = Instant::from_millis(1_005);
    let b = pipeline
        .admit(&mut env, None)
        .map_err(|_| "second call refused")?;
    t.push(u64::from(bulkhead.held()));
    match pipeline.admit(&mut env, None) {
        Ok(_) => return Err("a third call entered a bulkhead of two"),
        Err(r) => {
            ensure(
                r.reason() == RejectReason::BulkheadFull,
                "refused for the wrong reason",
            )?;
            t.push(reason_code(r.reason()));
        }
    }
    // Cancelled: the slot comes back and nothing is recorded.
    drop(b);
    t.push(u64::from(bulkhead.held()));
    t.push(u64::from(counts.executed.get()));
    let c = pipeline
        .admit(&mut env, None)
        .map_err(|_| "slot not returned by a dropped permit")?;
    env.now = Instant::from_millis(1_015);
    t.push(nanos(a.settle(&Verdict::Success, &mut env)));
    env.now = Instant::from_millis(1_030);
    t.push(nanos(c.settle(&Verdict::Transient, &mut env)));
    // A shed verdict from a nested pipeline is invisible to the histogram hook.
    let d = pipeline
        .admit(&mut env, None)
        .map_err(|_| "refused after settling")?;
    d.settle(&Verdict::Rejected(RejectReason::RateLimited), &mut env);
    ensure(bulkhead.held() == 0, "slots leaked")?;
    ensure(counts.executed.get() == 2, "executions miscounted")?;
    ensure(counts.rejected.get() == 1, "rejections miscounted")?;
    t.push(u64::from(bulkhead.releases()));
    t.push(counts.executed_nanos.get());
    Ok(())
}

pub(crate) fn call_deadline(t: &mut Trace) -> Result<(), &'static str> {
    let pipeline = Pipeline::new().attempt_timeout(Duration::from_millis(200));
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let options =
        CallOptions::default().deadline(Deadline::after(Instant::ZERO, Duration::from_millis(100)));

    let mut call = pipeline.call(env.now, options);
    let attempt = call.admit(&mut env).map_err(|_| "first attempt refused")?;
    // The call's deadline is tighter than the attempt timeout.
    t.push(
        attempt
            .deadline()
            .ok_or("no deadline")?
            .instant()
            .as_nanos(),
    );
    env.now = Instant::from_millis(100);
    let next = call.settle(attempt, &Verdict::Timeout, &mut env);
    ensure(
        matches!(next, Next::GiveUp(GiveUpReason::NotRetryable(_))),
        "a timeout of a call not declared idempotent was retried",
    )?;
    push_next(t, &next);

    let mut call = pipeline.call(env.now, options.idempotent(true));
    let attempt = call.admit(&mut env);
    ensure(
        matches!(attempt, Err(Stop::DeadlinePassed)),
        "an attempt started after the deadline",
    )?;
    t.push(u64::from(call.attempts()));

    for verdict in [
        Verdict::Success,
        Verdict::Answered,
        Verdict::Transient,
        Verdict::Overload { retry_after: None },
    ] {
        let mut call = pipeline.call(env.now, CallOptions::default());
        let attempt = call
            .admit(&mut env)
            .map_err(|_| "refused without a deadline")?;
        push_next(t, &call.settle(attempt, &verdict, &mut env));
    }
    Ok(())
}

/// A timer whose sleeps complete at once by moving a manual timeline: the driver's logic runs
/// on the device without waiting.
pub(crate) struct Jump(pub(crate) Cell<Instant>);

impl Timer for Jump {
    type Sleep<'a> = Ready<()>;
    fn now(&self) -> Instant {
        self.0.get()
    }
    fn sleep_until(&self, at: Instant) -> Ready<()> {
        if at > self.0.get() {
            self.0.set(at);
        }
        ready(())
    }
}

/// Polls a future that must finish without waking (every sleep is a [`Jump`]).
pub(crate) fn poll_once<F: Future>(f: F) -> Option<F::Output> {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

pub(crate) fn execute_loop(t: &mut Trace) -> Result<(), &'static str> {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(1).map_err(|_| "config")?);
    let pipeline = Pipeline::new()
        .bulkhead(&bulkhead)
        .attempt_timeout(Duration::from_millis(50));
    let timer = Jump(Cell::new(Instant::from_secs(10)));
    let mut rng = SeededRandom::new(3);
    let counts = Counts::default();
    let classifier = ResultClassifier::new();

    let ok = poll_once(execute(
        &pipeline,
        &timer,
        &mut rng,
        &counts,
        CallOptions::default(),
        &classifier,
        || ready(Ok::<u32, u32>(7)),
    ))
    .ok_or("execute did not finish")?;
    ensure(ok == Ok(Ok(7)), "a success was not returned")?;

    let failed = poll_once(execute(
        &pipeline,
        &timer,
        &mut rng,
        &counts,
        CallOptions::default(),
        &classifier,
        || ready(Err::<u32, u32>(9)),
    ))
    .ok_or("execute did not finish")?;
    match failed {
        Err(ExecuteError::GaveUp {
            reason,
            attempts,
            last: Attempted::Output(Err(9)),
        }) => {
            t.push(give_up_code(&reason));
            t.push(u64::from(attempts));
        }
        _ => return Err("a failure was not reported as given up with its output"),
    }

    // An operation that never answers loses the race against the attempt deadline.
    let start = timer.now();
    let hung = poll_once(execute(
        &pipeline,
        &timer,
        &mut rng,
        &counts,
        CallOptions::default().idempotent(true),
        &classifier,
        pending::<Result<u32, u32>>,
    ))
    .ok_or("execute did not finish")?;
    ensure(
        matches!(
            hung,
            Err(ExecuteError::GaveUp {
                last: Attempted::TimedOut,
                ..
            })
        ),
        "a hung call was not timed out",
    )?;
    t.push(nanos(timer.now() - start));
    ensure(bulkhead.held() == 0, "execute leaked a bulkhead slot")?;
    t.push(u64::from(counts.executed.get()));
    t.push(u64::from(counts.gave_up.get()));
    Ok(())
}
