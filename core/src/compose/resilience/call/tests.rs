//! The builder's endings against the loop they stand for: the same answers, attempts and
//! refusals on a manual clock.

use core::future::{Future, Ready, ready};
use core::pin::pin;
use core::task::{Context, Poll, Waker};
extern crate std;

use core::time::Duration;

use crate::breaker::Breaker;
use crate::bulkhead::{Bulkhead, BulkheadConfig};
use crate::call::CallOptions;
use crate::classify::ResultClassifier;
use crate::error::Error;
use crate::execute::{ExecuteError, Timer};
use crate::fallback::{Fallback, Served};
use crate::permit::{Env, Policy};
use crate::pipeline::Pipeline;
use crate::random::SeededRandom;
use crate::rejection::RejectReason;
use crate::resilience::{FixedSeeds, Resilience};
use crate::retry::{Backoff, Retry, RetryConfig};
use crate::time::{Clock, Instant, ManualClock};

/// A timer whose sleeps move its clock to the wake-up instant at once.
struct Jump(ManualClock);

impl Timer for Jump {
    type Sleep<'a> = Ready<()>;
    fn now(&self) -> Instant {
        self.0.now()
    }
    fn sleep_until(&self, at: Instant) -> Ready<()> {
        if at > self.0.now() {
            self.0.set(at);
        }
        ready(())
    }
}

fn done<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the call should finish without waiting"),
    }
}

fn jump() -> Jump {
    Jump(ManualClock::new(Instant::ZERO))
}

#[test]
fn run_with_a_generator_retries_as_execute_does() {
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(3, Backoff::NONE).unwrap(),
    ));
    let resilience = Resilience::with_parts(&pipeline, jump(), ());
    let mut rng = SeededRandom::new(1);
    let mut calls = 0;
    let answer = done(
        resilience
            .call(CallOptions::default())
            .rng(&mut rng)
            .run(|| {
                calls += 1;
                ready(if calls < 3 { Err(()) } else { Ok(calls) })
            }),
    );
    assert_eq!(answer, Ok(3));
}

#[test]
fn run_seeded_is_execute() {
    let pipeline = Pipeline::new();
    let resilience = Resilience::with_parts(&pipeline, jump(), FixedSeeds::new(9));
    let answer = done(
        resilience
            .call(CallOptions::default())
            .run(|| ready(Ok::<_, ()>(4))),
    );
    assert_eq!(answer, Ok(4));
}

#[test]
fn run_output_returns_the_last_output_or_why_it_stopped() {
    let breaker = Breaker::default();
    let mut rng = SeededRandom::new(2);
    breaker.force_open(&mut Env::new(Instant::ZERO, &mut rng));
    let pipeline = Pipeline::new().breaker(&breaker);
    let resilience = Resilience::with_parts(&pipeline, jump(), FixedSeeds::new(1))
        .classifier(|_: &u16| crate::Verdict::Success);
    let stopped = done(
        resilience
            .call(CallOptions::default())
            .run_output(|| ready(200u16)),
    );
    match stopped {
        Err(ExecuteError::Refused { rejection, .. }) => {
            assert_eq!(rejection.reason(), RejectReason::CircuitOpen)
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let resilience = Resilience::with_parts(Pipeline::new(), jump(), ())
        .classifier(|_: &u16| crate::Verdict::Success);
    let answered = done(
        resilience
            .call(CallOptions::default())
            .rng(&mut rng)
            .run_output(|| ready(204u16)),
    );
    assert_eq!(answered.ok(), Some(204));
}

#[test]
fn run_or_serves_the_fallback_when_refused() {
    let breaker = Breaker::default();
    let mut rng = SeededRandom::new(3);
    breaker.force_open(&mut Env::new(Instant::ZERO, &mut rng));
    let pipeline = Pipeline::new().breaker(&breaker);
    let resilience = Resilience::with_parts(&pipeline, jump(), FixedSeeds::new(1))
        .classifier(ResultClassifier::new());
    let served = done(
        resilience
            .call(CallOptions::default())
            .run_or(Fallback::Value(Ok::<u32, ()>(0)), || ready(Ok(1))),
    );
    assert!(
        matches!(served, Ok(Served::Fallback { value: Ok(0), .. })),
        "{served:?}"
    );
    let served = done(
        resilience
            .call(CallOptions::default())
            .rng(&mut rng)
            .run_or(Fallback::Value(Ok::<u32, ()>(0)), || ready(Ok(1))),
    );
    assert!(matches!(served, Ok(Served::Fallback { .. })));
}

#[test]
fn a_gate_holds_each_attempt_and_its_refusal_ends_the_call() {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let pipeline = Pipeline::new().bulkhead(&bulkhead);
    let resilience = Resilience::with_parts(&pipeline, jump(), FixedSeeds::new(1));
    let mut rng = SeededRandom::new(4);
    let held = bulkhead
        .admit(&mut Env::new(Instant::ZERO, &mut rng))
        .unwrap();
    // The bulkhead is full and the gate lets the attempt through: the pipeline refuses it.
    let refused = done(
        resilience
            .call(CallOptions::default())
            .gate(())
            .run(|| ready(Ok::<u32, ()>(1))),
    );
    assert!(matches!(refused, Err(Error::Refused { .. })), "{refused:?}");
    drop(held);
    let answered = done(
        resilience
            .call(CallOptions::default().timeout(Duration::from_secs(1)))
            .gate(())
            .rng(&mut rng)
            .run(|| ready(Ok::<u32, ()>(2))),
    );
    assert_eq!(answered, Ok(2));
}

#[test]
fn each_attempt_is_told_its_number_deadline_and_criticality() {
    use crate::execute::AttemptInfo;
    use crate::inbound::Priority;

    let pipeline = Pipeline::new()
        .retry(Retry::unbudgeted(
            RetryConfig::new(3, Backoff::NONE).unwrap(),
        ))
        .attempt_timeout(Duration::from_millis(100));
    let resilience = Resilience::with_parts(&pipeline, jump(), FixedSeeds::new(1));
    let options = CallOptions::default()
        .timeout(Duration::from_millis(250))
        .criticality(Priority::SheddablePlus);
    let mut seen: std::vec::Vec<AttemptInfo> = std::vec::Vec::new();
    let answer = done(resilience.call(options).run_attempts(|a: &AttemptInfo| {
        seen.push(*a);
        ready(if a.number < 3 { Err(()) } else { Ok(a.number) })
    }));
    assert_eq!(answer, Ok(3));
    let numbers: std::vec::Vec<u32> = seen.iter().map(|a| a.number).collect();
    assert_eq!(numbers, [1, 2, 3]);
    for a in &seen {
        assert_eq!(a.criticality, Some(Priority::SheddablePlus));
        // The tighter of the attempt timeout and the call's deadline.
        let deadline = a.deadline.expect("a deadline");
        assert!(deadline <= Instant::from_millis(250));
        assert_eq!(
            a.remaining(a.started),
            Some(deadline.saturating_duration_since(a.started))
        );
        assert!(a.remaining(a.started).unwrap() <= Duration::from_millis(100));
    }
    let mut rng = SeededRandom::new(5);
    let resilience = Resilience::with_parts(&pipeline, jump(), ());
    let plain = done(
        resilience
            .call(CallOptions::default())
            .rng(&mut rng)
            .run_attempts(|a: &AttemptInfo| ready(Ok::<_, ()>(a.criticality))),
    );
    assert_eq!(plain, Ok(None), "no criticality unless given one");
}
