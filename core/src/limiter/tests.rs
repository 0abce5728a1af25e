//! The limiter's gauges and the wait protocol's reads, judged where they are written (the
//! algorithms' arithmetic is judged against the reference model: core/tests/differential_limiter.rs).

use super::*;
use crate::permit::Policy;
use crate::random::SeededRandom;

/// Two slots, and a queue zone of two places (`queue_factor` 2) on one rung: no place is shed.
fn two_and_two() -> Limiter {
    Limiter::new(LimiterConfig {
        initial_limit: 2,
        min_limit: 1,
        queue_factor: 2.0,
        queue_rungs: 1,
        ..LimiterConfig::gradient2()
    })
    .unwrap()
}

#[test]
fn room_gauges_and_the_release_count_follow_every_slot() {
    let limiter = two_and_two();
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    assert!(limiter.has_room());
    let first = limiter.admit(&mut env).unwrap();
    assert!(limiter.has_room(), "one of two slots held");
    let second = limiter.admit(&mut env).unwrap();
    assert!(!limiter.has_room(), "both held: a call now would not fit");
    assert_eq!(limiter.in_flight(), 2);

    let seen = limiter.releases();
    assert_eq!(seen, 0);
    assert!(!limiter.released_since(seen));
    drop(first);
    assert_eq!(limiter.releases(), 1);
    assert!(limiter.released_since(seen));
    assert!(!limiter.released_since(limiter.releases()));
    drop(second);
    assert_eq!(limiter.releases(), 2);
    assert!(limiter.has_room());
}

#[test]
fn waiting_places_are_counted_bounded_and_given_back() {
    let limiter = two_and_two();
    assert_eq!(limiter.waiting(), 0);
    let a = limiter.wait_place().expect("the zone has two places");
    assert_eq!(limiter.waiting(), 1);
    let b = limiter.wait_place().expect("and a second");
    assert_eq!(limiter.waiting(), 2);
    assert_eq!(
        limiter.wait_place().err().map(|r| r.reason()),
        Some(RejectReason::LimiterFull),
        "the zone holds limit × (queue_factor − 1) places"
    );
    drop(a);
    assert_eq!(limiter.waiting(), 1);
    drop(b);
    assert_eq!(limiter.waiting(), 0);
}

#[test]
fn a_permit_remembers_what_it_was_admitted_under() {
    let limiter = two_and_two();
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(7), &mut rng);
    let first = limiter.admit(&mut env).unwrap();
    env.now = Instant::from_secs(8);
    let second = limiter.admit(&mut env).unwrap();
    assert_eq!(
        (
            first.in_flight_at_admission(),
            first.limit_at_admission(),
            first.admitted_at()
        ),
        (1, 2, Instant::from_secs(7))
    );
    assert_eq!(
        (
            second.in_flight_at_admission(),
            second.limit_at_admission(),
            second.admitted_at()
        ),
        (2, 2, Instant::from_secs(8))
    );
}

#[test]
fn a_whole_change_of_the_limit_is_an_event_with_whole_limits() {
    extern crate std;
    use crate::observe::{Event, Observer};
    use core::cell::RefCell;
    use core::time::Duration;
    use std::vec::Vec;
    struct Log(RefCell<Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }
    // AIMD closing its window at every settle: each success is +1 call.
    let limiter = Limiter::new(LimiterConfig {
        min_limit: 1,
        initial_limit: 1,
        max_limit: 10,
        window_samples: 1,
        min_rtt: Duration::ZERO,
        probe_multiplier: 0,
        ..LimiterConfig::aimd()
    })
    .unwrap();
    let log = Log(RefCell::new(Vec::new()));
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(2), &mut rng).with_observer(&log);
    for _ in 0..2 {
        let p = limiter.admit(&mut env).unwrap();
        env.now = env.now + Duration::from_secs(1);
        p.settle(&Verdict::Success, &mut env);
    }
    assert_eq!(limiter.limit(), 3);
    let changes: Vec<(u32, u32)> = log
        .0
        .borrow()
        .iter()
        .filter_map(|e| match *e {
            Event::LimitChanged { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(changes, [(1, 2), (2, 3)]);
}
