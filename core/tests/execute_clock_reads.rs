//! How often `execute` reads the clock: a read costs about 20 ns on a VM (benches/floor.rs),
//! a large share of the whole loop, so the loop reads it once per instant it needs (the
//! attempt's start, its end) and again only after a real wait.

use core::cell::Cell;
use core::future::{Future, Ready, ready};
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use resilix::call::CallOptions;
use resilix::classify::ResultClassifier;
use resilix::execute::{Gate, Timer, execute, execute_gated};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
use resilix::time::{Deadline, Instant};
use resilix::{Rejection, Verdict};

/// A timer that counts reads; sleeps jump its time forward.
#[derive(Default)]
struct Counting {
    now: Cell<u64>,
    reads: Cell<u32>,
}

impl Timer for Counting {
    type Sleep<'a> = Ready<()>;
    fn now(&self) -> Instant {
        self.reads.set(self.reads.get() + 1);
        Instant::from_nanos(self.now.get())
    }
    fn sleep_until(&self, at: Instant) -> Ready<()> {
        self.now
            .set(self.now.get().max(at.since_origin().as_nanos() as u64));
        ready(())
    }
}

fn run<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn one_attempt_reads_the_clock_twice() {
    let timer = Counting::default();
    let pipeline = Pipeline::new();
    let mut rng = SeededRandom::new(1);
    let out = run(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &ResultClassifier::new(),
        || ready(Ok::<u32, ()>(1)),
    ));
    assert_eq!(out, Ok(Ok(1)));
    assert_eq!(timer.reads.get(), 2, "start, then end of the attempt");
}

#[test]
fn a_retry_reads_again_after_its_sleep() {
    let timer = Counting::default();
    let backoff = Backoff::new(
        Strategy::Exponential,
        core::time::Duration::from_millis(10),
        core::time::Duration::from_secs(1),
    )
    .unwrap();
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::new(2, backoff).unwrap()));
    let mut rng = SeededRandom::new(2);
    let calls = Cell::new(0);
    let out = run(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &ResultClassifier::new(),
        || {
            calls.set(calls.get() + 1);
            ready(if calls.get() == 1 { Err(()) } else { Ok(7u32) })
        },
    ));
    assert_eq!(out, Ok(Ok(7)));
    // start, end of attempt 1, after the sleep (start of attempt 2), end of attempt 2
    assert_eq!(timer.reads.get(), 4);
    assert_eq!(
        timer.now.get(),
        20_000_000,
        "the sleep moved time: 10 ms · 2^1"
    );
}

/// A gate that is pending once before it lets the attempt through, moving time meanwhile.
struct SlowGate<'t> {
    timer: &'t Counting,
    polled: Cell<bool>,
}

struct SlowWait<'g, 't>(&'g SlowGate<'t>);

impl Future for SlowWait<'_, '_> {
    type Output = Result<(), Rejection>;
    fn poll(self: core::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if self.0.polled.replace(true) {
            Poll::Ready(Ok(()))
        } else {
            self.0.timer.now.set(self.0.timer.now.get() + 5_000);
            Poll::Pending
        }
    }
}

impl<'g, 't> Gate for &'g SlowGate<'t> {
    type Wait = SlowWait<'g, 't>;
    fn ready(&self, _now: Instant, _deadline: Option<Deadline>) -> SlowWait<'g, 't> {
        SlowWait(self)
    }
}

#[test]
fn a_gate_that_waits_makes_the_admission_read_the_clock_again() {
    let timer = Counting::default();
    let gate = SlowGate {
        timer: &timer,
        polled: Cell::new(false),
    };
    let pipeline = Pipeline::new();
    let mut rng = SeededRandom::new(3);
    let admitted_at = Cell::new(None);
    let out = run(execute_gated(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &ResultClassifier::with_errors(|_: &()| Verdict::Transient),
        &&gate,
        || {
            admitted_at.set(Some(timer.now.get()));
            ready(Ok::<u32, ()>(3))
        },
    ));
    assert_eq!(out, Ok(Ok(3)));
    assert_eq!(timer.reads.get(), 3, "start, after the wait, end");
    assert_eq!(admitted_at.get(), Some(5_000));
}
