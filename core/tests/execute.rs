//! The async retry loop on a simulated runtime: virtual time that jumps to the next wake-up,
//! so every timing assertion is exact and nothing sleeps on the wall clock.

use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use resilix::call::CallOptions;
use resilix::classify::ResultClassifier;
use resilix::execute::{Attempted, ExecuteError, Timer, execute};
use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::{AttemptOutcome, GiveUpReason, RetryDecision, RetryPolicy, retryable};
use resilix::time::{Clock, Deadline, Instant, ManualClock};
use resilix::{RejectReason, Rejection, Verdict, VerdictKind};

/// Virtual time: sleeps register their wake-up; the executor jumps the clock to the earliest.
struct SimTimer {
    clock: ManualClock,
    wakeups: RefCell<Vec<Instant>>,
}

impl SimTimer {
    fn new() -> Self {
        SimTimer {
            clock: ManualClock::new(Instant::ZERO),
            wakeups: RefCell::new(Vec::new()),
        }
    }

    /// Runs `fut` to completion, jumping time; `None` if it stalls with no wake-up pending.
    fn run<F: Future>(&self, fut: F) -> Option<F::Output> {
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..10_000 {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return Some(v);
            }
            let next = self.wakeups.borrow_mut().drain(..).min()?;
            if next > self.clock.now() {
                self.clock.set(next);
            }
        }
        None
    }

    /// Polls `fut` until virtual time reaches `until`, then drops it (a cancelled caller).
    fn run_until<F: Future>(&self, fut: F, until: Instant) -> Option<F::Output> {
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return Some(v);
            }
            let next = self.wakeups.borrow_mut().drain(..).min()?;
            if next >= until {
                self.clock.set(until);
                return None;
            }
            self.clock.set(next.max(self.clock.now()));
        }
    }

    /// An operation that takes `latency` of virtual time and then yields `out`.
    async fn work<T>(&self, latency: Duration, out: T) -> T {
        self.sleep_until(self.clock.now() + latency).await;
        out
    }
}

struct Sleep<'a> {
    timer: &'a SimTimer,
    at: Instant,
}

impl Future for Sleep<'_> {
    type Output = ();
    fn poll(self: core::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.timer.clock.now() >= self.at {
            Poll::Ready(())
        } else {
            self.timer.wakeups.borrow_mut().push(self.at);
            Poll::Pending
        }
    }
}

impl Timer for SimTimer {
    type Sleep<'a> = Sleep<'a>;
    fn now(&self) -> Instant {
        self.clock.now()
    }
    fn sleep_until(&self, at: Instant) -> Sleep<'_> {
        Sleep { timer: self, at }
    }
}

/// Retries what `retryable` allows, after a fixed delay, up to `max` attempts.
struct FixedRetry {
    max: u32,
    delay: Duration,
}

impl RetryPolicy for FixedRetry {
    type State = ();
    fn begin(&self, _now: Instant) {}
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _state: &mut (),
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        if let Err(d) = retryable(&outcome.verdict, outcome.idempotent) {
            return d;
        }
        if outcome.attempt >= self.max {
            return RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted {
                attempts: outcome.attempt,
            });
        }
        let at = env.now + self.delay;
        if outcome.deadline.is_some_and(|d| d.has_passed(at)) {
            return RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass);
        }
        RetryDecision::RetryAt(at)
    }
}

/// Counts what reaches it; refuses when `refuse` is set.
#[derive(Default)]
struct Counting {
    admitted: Cell<u32>,
    settled: Cell<u32>,
    cancelled: Cell<u32>,
    held: Cell<u32>,
    refuse: Cell<bool>,
}

struct CountingPermit<'a> {
    policy: &'a Counting,
    settled: bool,
}

impl Policy for Counting {
    type Permit<'a> = CountingPermit<'a>;
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<CountingPermit<'_>, Rejection> {
        if self.refuse.get() {
            return Err(Rejection::new(RejectReason::BulkheadFull));
        }
        self.admitted.set(self.admitted.get() + 1);
        self.held.set(self.held.get() + 1);
        Ok(CountingPermit {
            policy: self,
            settled: false,
        })
    }
}

impl Permit for CountingPermit<'_> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        _v: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
        self.settled = true;
        self.policy.settled.set(self.policy.settled.get() + 1);
    }
}

impl Drop for CountingPermit<'_> {
    fn drop(&mut self) {
        self.policy.held.set(self.policy.held.get() - 1);
        if !self.settled {
            self.policy.cancelled.set(self.policy.cancelled.get() + 1);
        }
    }
}

#[derive(Default)]
struct Log(RefCell<Vec<Event>>);
impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn retries_transient_failures_with_the_policy_delay() {
    let timer = SimTimer::new();
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 3,
        delay: 100 * MS,
    });
    let mut rng = SeededRandom::new(1);
    let calls = Cell::new(0u32);
    let classifier = ResultClassifier::new();
    let out = timer.run(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || {
            calls.set(calls.get() + 1);
            let ok = calls.get() == 3;
            timer.work(10 * MS, if ok { Ok(calls.get()) } else { Err("reset") })
        },
    ));
    assert_eq!(out, Some(Ok(Ok(3))));
    // 10 ms + 100 ms + 10 ms + 100 ms + 10 ms
    assert_eq!(timer.now(), Instant::from_millis(230));
}

#[test]
fn gives_up_with_the_last_error_when_attempts_run_out() {
    let timer = SimTimer::new();
    let pipeline = Pipeline::new().retry(FixedRetry { max: 2, delay: MS });
    let mut rng = SeededRandom::new(1);
    let classifier = ResultClassifier::new();
    let out = timer.run(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || timer.work(MS, Err::<(), _>("boom")),
    ));
    assert_eq!(
        out,
        Some(Err(ExecuteError::GaveUp {
            reason: GiveUpReason::AttemptsExhausted { attempts: 2 },
            attempts: 2,
            last: Attempted::Output(Err("boom")),
        }))
    );
}

#[test]
fn a_timed_out_attempt_is_retried_only_when_idempotent() {
    let pipeline = Pipeline::new()
        .retry(FixedRetry { max: 3, delay: MS })
        .attempt_timeout(50 * MS);
    let classifier = ResultClassifier::new();
    for idempotent in [false, true] {
        let timer = SimTimer::new();
        let mut rng = SeededRandom::new(1);
        let options = CallOptions::default().idempotent(idempotent);
        let out = timer
            .run(execute(
                &pipeline,
                &timer,
                &mut rng,
                &(),
                options,
                &classifier,
                || timer.work(80 * MS, Ok::<(), ()>(())),
            ))
            .unwrap();
        let err = out.unwrap_err();
        if idempotent {
            assert_eq!(err.attempts(), 3);
            assert!(matches!(
                err,
                ExecuteError::GaveUp {
                    reason: GiveUpReason::AttemptsExhausted { .. },
                    ..
                }
            ));
            assert_eq!(timer.now(), Instant::from_millis(50 + 1 + 50 + 1 + 50));
        } else {
            assert_eq!(
                err,
                ExecuteError::GaveUp {
                    reason: GiveUpReason::NotRetryable(VerdictKind::Timeout),
                    attempts: 1,
                    last: Attempted::TimedOut
                }
            );
            assert_eq!(
                timer.now(),
                Instant::from_millis(50),
                "raced against the attempt timeout"
            );
        }
    }
}

#[test]
fn the_call_deadline_bounds_each_attempt_and_the_retries() {
    let timer = SimTimer::new();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 10,
            delay: 40 * MS,
        })
        .attempt_timeout(Duration::from_secs(1));
    let mut rng = SeededRandom::new(1);
    let classifier = ResultClassifier::new();
    let options = CallOptions::default().deadline(Deadline::after(Instant::ZERO, 100 * MS));
    let out = timer
        .run(execute(
            &pipeline,
            &timer,
            &mut rng,
            &(),
            options,
            &classifier,
            || timer.work(30 * MS, Err::<(), _>(())),
        ))
        .unwrap();
    // 30 (fail) + 40 + 30 (fail) at 100: the next retry at 140 would pass the deadline.
    assert_eq!(
        out.unwrap_err(),
        ExecuteError::GaveUp {
            reason: GiveUpReason::DeadlineWouldPass,
            attempts: 2,
            last: Attempted::Output(Err(()))
        }
    );
    assert_eq!(timer.now(), Instant::from_millis(100));
}

#[test]
fn a_refusal_is_returned_at_once_and_never_retried() {
    let timer = SimTimer::new();
    let bulkhead = Counting::default();
    bulkhead.refuse.set(true);
    let pipeline = Pipeline::new()
        .retry(FixedRetry { max: 3, delay: MS })
        .bulkhead(&bulkhead);
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let classifier = ResultClassifier::new();
    let calls = Cell::new(0);
    let out = timer
        .run(execute(
            &pipeline,
            &timer,
            &mut rng,
            &log,
            CallOptions::default(),
            &classifier,
            || {
                calls.set(calls.get() + 1);
                timer.work(MS, Ok::<(), ()>(()))
            },
        ))
        .unwrap();
    let err = out.unwrap_err();
    assert_eq!(
        err.rejection().map(|r| r.reason()),
        Some(RejectReason::BulkheadFull)
    );
    assert_eq!(calls.get(), 0, "the operation never ran");
    let events = log.0.borrow();
    assert_eq!(events.len(), 1);
    assert!(matches!(events[0], Event::Rejected { .. }));
}

#[test]
fn dropping_the_future_mid_attempt_cancels_the_permit_and_records_nothing() {
    let timer = SimTimer::new();
    let bulkhead = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 100 * MS,
        })
        .bulkhead(&bulkhead);
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let classifier = ResultClassifier::new();
    // Cancelled during the first attempt.
    let out = timer.run_until(
        execute(
            &pipeline,
            &timer,
            &mut rng,
            &log,
            CallOptions::default(),
            &classifier,
            || timer.work(50 * MS, Err::<(), ()>(())),
        ),
        Instant::from_millis(20),
    );
    assert!(out.is_none());
    let counts = |b: &Counting| {
        (
            b.admitted.get(),
            b.settled.get(),
            b.cancelled.get(),
            b.held.get(),
        )
    };
    assert_eq!(counts(&bulkhead), (1, 0, 1, 0));
    assert!(
        log.0.borrow().is_empty(),
        "a cancelled attempt is neither executed nor rejected"
    );

    // Cancelled during the retry sleep: the first attempt settled, nothing is held.
    let out = timer.run_until(
        execute(
            &pipeline,
            &timer,
            &mut rng,
            &log,
            CallOptions::default(),
            &classifier,
            || timer.work(50 * MS, Err::<(), ()>(())),
        ),
        timer.now() + 80 * MS,
    );
    assert!(out.is_none());
    assert_eq!(counts(&bulkhead), (2, 1, 1, 0));
}

#[test]
fn an_expired_deadline_stops_before_any_attempt() {
    let timer = SimTimer::new();
    timer.clock.set(Instant::from_secs(5));
    let pipeline = Pipeline::new();
    let mut rng = SeededRandom::new(1);
    let classifier = ResultClassifier::new();
    let options = CallOptions::default().deadline(Deadline::at(Instant::from_secs(5)));
    let out = timer.run(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        options,
        &classifier,
        || timer.work(MS, Ok::<(), ()>(())),
    ));
    assert_eq!(
        out,
        Some(Err(ExecuteError::DeadlinePassed {
            attempts: 0,
            last: None
        }))
    );
}

#[test]
fn an_answered_error_is_the_answer() {
    let timer = SimTimer::new();
    let pipeline = Pipeline::new().retry(FixedRetry { max: 3, delay: MS });
    let mut rng = SeededRandom::new(1);
    let classifier = ResultClassifier::with_errors(|e: &u16| {
        if *e == 404 {
            Verdict::Answered
        } else {
            Verdict::Transient
        }
    });
    let out = timer.run(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || timer.work(MS, Err::<(), u16>(404)),
    ));
    assert_eq!(out, Some(Ok(Err(404))));
}

/// A gate that holds each attempt until `open_at`, or refuses when `refuse` is set.
struct TimedGate<'t> {
    timer: &'t SimTimer,
    open_at: Instant,
    refuse: bool,
}

impl<'t> resilix::execute::Gate for TimedGate<'t> {
    type Wait = core::pin::Pin<Box<dyn Future<Output = Result<(), Rejection>> + 't>>;
    fn ready(&self, _now: Instant, _deadline: Option<Deadline>) -> Self::Wait {
        let (timer, open_at, refuse) = (self.timer, self.open_at, self.refuse);
        Box::pin(async move {
            if refuse {
                return Err(Rejection::new(RejectReason::BulkheadFull));
            }
            timer.sleep_until(open_at).await;
            Ok(())
        })
    }
}

#[test]
fn a_gate_holds_every_attempt_and_its_refusal_ends_the_call() {
    let timer = SimTimer::new();
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 2,
        delay: 10 * MS,
    });
    let classifier = ResultClassifier::new();
    let starts = RefCell::new(Vec::new());
    let mut rng = SeededRandom::new(1);
    let gate = TimedGate {
        timer: &timer,
        open_at: Instant::from_millis(25),
        refuse: false,
    };
    let out = timer.run(resilix::execute::execute_gated(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        &gate,
        || {
            starts.borrow_mut().push(timer.now());
            timer.work(MS, Err::<(), ()>(()))
        },
    ));
    assert!(out.unwrap().is_err());
    // Held until 25 ms; the retry (due at 36 ms) passes the already-open gate at once.
    assert_eq!(
        *starts.borrow(),
        [Instant::from_millis(25), Instant::from_millis(36)]
    );

    let log = Log::default();
    let refusing = TimedGate {
        timer: &timer,
        open_at: Instant::ZERO,
        refuse: true,
    };
    let out = timer
        .run(resilix::execute::execute_gated(
            &pipeline,
            &timer,
            &mut rng,
            &log,
            CallOptions::default(),
            &classifier,
            &refusing,
            || timer.work(MS, Ok::<(), ()>(())),
        ))
        .unwrap();
    assert_eq!(
        out.unwrap_err().rejection().map(|r| r.reason()),
        Some(RejectReason::BulkheadFull)
    );
    assert!(matches!(log.0.borrow()[..], [Event::Rejected { .. }]));
}
