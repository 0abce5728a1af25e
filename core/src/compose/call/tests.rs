//! The call's own bookkeeping, judged where it is written: the attempt count, the number an
//! event gives the next attempt, the resolved options and each `Replay` forwarder. (The
//! integration tests in core/tests/ drive whole calls; a mutation run judged by the unit tests
//! alone needs these to see a wrong count.)

extern crate std;

use core::cell::RefCell;
use core::time::Duration;
use std::vec::Vec;

use super::*;
use crate::random::SeededRandom;
use crate::retry::{Backoff, NoRetry, Retry, RetryConfig};

const START: Instant = Instant::from_secs(3_600);

struct Log(RefCell<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

#[test]
fn options_keep_the_timeout_until_the_call_resolves_it() {
    let options = CallOptions::default().timeout(Duration::from_secs(2));
    assert_eq!(options.timeout_value(), Some(Duration::from_secs(2)));
    assert_eq!(CallOptions::default().timeout_value(), None);
    assert_eq!(
        options.deadline_from(START),
        Some(Deadline::after(START, Duration::from_secs(2)))
    );
    let at = Deadline::at(START + Duration::from_secs(1));
    assert_eq!(
        CallOptions::default().deadline(at).deadline_from(START),
        Some(at),
        "a deadline alone is kept as given"
    );
    assert_eq!(CallOptions::default().deadline_from(START), None);
}

#[test]
fn every_admission_counts_and_a_retry_event_names_the_next_attempt() {
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(3, Backoff::NONE).unwrap(),
    ));
    let log = Log(RefCell::new(Vec::new()));
    let mut rng = SeededRandom::new(5);
    let mut env = Env::new(START, &mut rng).with_observer(&log);
    let mut call = pipeline.call(START, CallOptions::default());
    assert_eq!(call.attempts(), 0);
    for n in 1..=2u32 {
        let attempt = call.admit(&mut env).unwrap();
        assert_eq!(call.attempts(), n, "admitted {n}");
        let next = call.settle(attempt, &Verdict::Transient, &mut env);
        assert!(matches!(next, RetryDecision::RetryAt(_)), "{next:?}");
        assert_eq!(call.attempts(), n, "settling does not count");
    }
    let scheduled: Vec<u32> = log
        .0
        .borrow()
        .iter()
        .filter_map(|e| match e {
            Event::RetryScheduled { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(
        scheduled,
        [2, 3],
        "each event names the attempt it schedules"
    );
    let third = call.admit(&mut env).unwrap();
    assert_eq!(call.attempts(), 3);
    let next = call.settle(third, &Verdict::Transient, &mut env);
    assert!(
        matches!(next, RetryDecision::GiveUp(_)),
        "three attempts at most: {next:?}"
    );
}

#[test]
fn a_request_moves_into_the_one_attempt_or_is_cloned_for_each() {
    let mut kept = Some(7u32);
    assert_eq!(<NoRetry as Replay<u32>>::next_request(&mut kept), Some(7));
    assert_eq!(kept, None);
    let mut kept = Some(7u32);
    assert_eq!(<Retry as Replay<u32>>::next_request(&mut kept), Some(7));
    assert_eq!(kept, Some(7));
    // The forwarders ask the policy they hold.
    let mut kept = Some(9u32);
    assert_eq!(<&Retry as Replay<u32>>::next_request(&mut kept), Some(9));
    assert_eq!(kept, Some(9));
    let mut kept = Some(9u32);
    assert_eq!(<&NoRetry as Replay<u32>>::next_request(&mut kept), Some(9));
    assert_eq!(kept, None);
}

#[cfg(feature = "alloc")]
#[test]
fn an_arc_forwards_to_the_policy_it_holds() {
    use alloc::sync::Arc;
    let mut kept = Some(11u32);
    assert_eq!(
        <Arc<Retry> as Replay<u32>>::next_request(&mut kept),
        Some(11)
    );
    assert_eq!(kept, Some(11));
    let mut kept = Some(11u32);
    assert_eq!(
        <Arc<NoRetry> as Replay<u32>>::next_request(&mut kept),
        Some(11)
    );
    assert_eq!(kept, None);
}

#[test]
fn an_attempt_races_the_tighter_of_its_timeout_and_the_calls_deadline() {
    let pipeline = Pipeline::new().attempt_timeout(Duration::from_secs(1));
    assert_eq!(
        pipeline.attempt_timeout_value(),
        Some(Duration::from_secs(1))
    );
    assert_eq!(Pipeline::new().attempt_timeout_value(), None);
    let mut rng = SeededRandom::new(5);
    let mut env = Env::new(START, &mut rng);
    let mut call = pipeline.call(START, CallOptions::default());
    let attempt = call.admit(&mut env).unwrap();
    assert_eq!(
        attempt.deadline(),
        Some(Deadline::after(START, Duration::from_secs(1)))
    );
    assert_eq!(attempt.admitted_at(), START);
    drop(attempt);
    let near = Deadline::after(START, Duration::from_millis(300));
    let mut call = pipeline.call(START, CallOptions::default().deadline(near));
    let attempt = call.admit(&mut env).unwrap();
    assert_eq!(attempt.deadline(), Some(near));
}

#[test]
fn a_call_kept_apart_from_its_pipeline_counts_and_resolves_as_a_call_does() {
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(
        RetryConfig::new(3, Backoff::NONE).unwrap(),
    ));
    let mut rng = SeededRandom::new(8);
    let mut env = Env::new(START, &mut rng);
    let options = CallOptions::default()
        .timeout(Duration::from_secs(2))
        .idempotent(true);
    let mut call = pipeline.begin(START, options);
    assert_eq!(call.attempts(), 0);
    assert_eq!(
        call.options(),
        CallOptions::default()
            .deadline(Deadline::after(START, Duration::from_secs(2)))
            .idempotent(true),
        "the timeout resolved into the deadline, once"
    );
    for n in 1..=2 {
        let attempt = pipeline.admit_next(&mut call, &mut env).unwrap();
        assert_eq!(call.attempts(), n);
        let next = pipeline.settle_attempt(&mut call, attempt, &Verdict::Transient, &mut env);
        assert!(matches!(next, Next::RetryAt(_)), "{next:?}");
    }
    assert_eq!(call.attempts(), 2);
}
