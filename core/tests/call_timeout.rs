//! A relative timeout (`CallOptions::timeout`) becomes the call's deadline when the call
//! starts, on the driver's timeline: no clock of the caller's own (issue 14, point 7).

use core::time::Duration;

use resilix::Verdict;
use resilix::call::{CallOptions, Stop};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix::time::{Deadline, Instant};

/// An hour into the driver's timeline: a timeout anchored at zero would have passed long ago.
const START: Instant = Instant::from_secs(3_600);

#[test]
fn a_relative_timeout_counts_from_the_calls_start() {
    let pipeline = Pipeline::new();
    let call = pipeline.call(
        START,
        CallOptions::default().timeout(Duration::from_secs(2)),
    );
    assert_eq!(
        call.options().deadline_value(),
        Some(Deadline::at(START + Duration::from_secs(2)))
    );
    assert_eq!(
        call.options().timeout_value(),
        None,
        "resolved once, at the start"
    );
}

#[test]
fn the_tighter_of_timeout_and_deadline_applies() {
    let pipeline = Pipeline::new();
    let near = Deadline::at(START + Duration::from_secs(1));
    let far = Deadline::at(START + Duration::from_secs(10));
    let timeout = CallOptions::default().timeout(Duration::from_secs(2));
    let call = pipeline.call(START, timeout.deadline(near));
    assert_eq!(call.options().deadline_value(), Some(near));
    let call = pipeline.call(START, timeout.deadline(far));
    assert_eq!(
        call.options().deadline_value(),
        Some(Deadline::at(START + Duration::from_secs(2)))
    );
}

#[test]
fn attempts_race_the_timeout_and_none_starts_after_it() {
    let config = RetryConfig::new(5, Backoff::NONE).unwrap();
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(config));
    let mut rng = SeededRandom::new(9);
    let mut env = Env::new(START, &mut rng);
    let mut call = pipeline.call(
        START,
        CallOptions::default().timeout(Duration::from_secs(2)),
    );
    let attempt = call.admit(&mut env).unwrap();
    assert_eq!(
        attempt.deadline(),
        Some(Deadline::at(START + Duration::from_secs(2))),
        "the attempt is raced against the call's timeout"
    );
    env.now = START + Duration::from_secs(2);
    let _ = call.settle(attempt, &Verdict::Transient, &mut env);
    assert_eq!(call.admit(&mut env).err(), Some(Stop::DeadlinePassed));
}
