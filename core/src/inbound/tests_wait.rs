//! Early shedding: the predicted wait, the overloaded queue, and the dispatch rules that keep
//! a request admitted with time left from being lost (issue 36). Manual clock throughout.

extern crate std;

use core::time::Duration;
use std::vec::Vec;

use super::*;
use crate::permit::{Env, Permit};
use crate::random::SeededRandom;
use crate::verdict::Verdict;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const T0: Instant = Instant::from_secs(1_000);

/// An admission of `limit` slots whose service time has formed at `service`; answers it and
/// the instant its warm-up ended.
fn warmed(limit: u32, queue: u32, service: Duration) -> (Inbound, Instant) {
    let inbound = Inbound::new(InboundConfig {
        queue,
        ..InboundConfig::fixed(limit)
    })
    .unwrap();
    let mut rng = SeededRandom::new(9);
    let mut now = T0;
    while now < T0 + Duration::from_secs(2) {
        let p = match inbound.admit(now, Priority::Critical, None) {
            Decision::Admit(p) => p,
            other => panic!("{other:?}"),
        };
        now = now + service;
        p.settle(&Verdict::Success, &mut Env::new(now, &mut rng));
    }
    assert_eq!(inbound.service_time(), service);
    (inbound, now)
}

fn decide(d: Decision<&Inbound>) -> Result<QueuePlace<&Inbound>, Option<Shed>> {
    match d {
        Decision::Queue(p) => Ok(p),
        Decision::Reject(s) => Err(Some(s)),
        Decision::Admit(_) => Err(None),
    }
}

#[test]
fn the_predicted_wait_is_the_position_times_the_time_between_completions() {
    let inbound = Inbound::new(InboundConfig::fixed(4)).unwrap();
    assert_eq!(
        inbound.predicted_wait(7),
        Duration::ZERO,
        "no service time yet"
    );
    let (inbound, _) = warmed(4, 10, ms(20));
    assert_eq!(inbound.predicted_wait(0), ms(5));
    assert_eq!(inbound.predicted_wait(3), ms(20));
    assert_eq!(
        inbound.predicted_wait(u32::MAX),
        ms(5) * (1 << 16) * (1 << 16)
    );
}

#[test]
fn a_request_that_would_miss_its_deadline_in_the_queue_is_shed_on_arrival() {
    let (inbound, now) = warmed(1, 10, ms(20));
    let _running = inbound.admit(now, Priority::Critical, None);
    let d = Some(Deadline::after(now, ms(50)));
    // First in line: starts in 20 ms, done at 40 ms, within 50 ms.
    let first = decide(inbound.admit(now, Priority::Critical, d)).unwrap();
    assert_eq!(first.until(), now + ms(30), "deadline less a service time");
    // Second: starts in 40 ms, would be done at 60 ms: shed now, with no retry-at.
    let shed = decide(inbound.admit(now, Priority::Critical, d))
        .unwrap_err()
        .unwrap();
    assert_eq!((shed.cause(), shed.retry_at()), (ShedCause::Deadline, None));
    assert_eq!(inbound.waiting(), 1);
    assert_eq!(
        inbound.shed_pressure(Priority::Critical),
        1.0 / 256.0,
        "one arrival of about 256 shed"
    );
    assert!(!inbound.overloaded(Priority::Critical));
}

#[test]
fn a_request_that_would_wait_longer_than_the_queue_allows_is_shed_on_arrival() {
    let (inbound, now) = warmed(1, 100, ms(20));
    let _running = inbound.admit(now, Priority::Critical, None);
    let mut places = Vec::new();
    // Predicted waits 20, 40, ..., 100 ms: within the interval.
    for k in 0..5u32 {
        assert_eq!(inbound.ahead(Priority::Critical), k);
        places.push(decide(inbound.admit(now, Priority::Critical, None)).unwrap());
    }
    assert!(!inbound.overloaded(Priority::Critical));
    let shed = decide(inbound.admit(now, Priority::Critical, None))
        .unwrap_err()
        .unwrap();
    assert_eq!(shed.cause(), ShedCause::QueueFull);
    assert_eq!(shed.retry_at(), Some(now + Duration::from_secs(1)));
}

#[test]
fn an_overloaded_criticality_waits_only_the_target_or_a_service_time() {
    let (inbound, now) = warmed(1, 100, ms(4));
    let running = inbound.admit(now, Priority::Critical, None);
    let mut places = Vec::new();
    for _ in 0..25 {
        places.push(decide(inbound.admit(now, Priority::Critical, None)).unwrap());
    }
    assert_eq!(places[0].until(), now + ms(100));
    // Every arrival now would wait 104 ms: shed. More than half the recent arrivals are shed
    // after 177 (about 256 × ln 2, less for the truncation of each step).
    let mut sheds = 0;
    while !inbound.overloaded(Priority::Critical) {
        assert!(decide(inbound.admit(now, Priority::Critical, None)).is_err());
        sheds += 1;
    }
    assert_eq!(sheds, 177);
    assert!(
        !inbound.overloaded(Priority::CriticalPlus),
        "its own arrivals were not shed"
    );
    assert_eq!(inbound.admission_wait(now, Priority::CriticalPlus), ms(100));
    // A service time (4 ms) below the target (5 ms): a waiter may wait one service time.
    assert_eq!(inbound.admission_wait(now, Priority::Critical), ms(4));
    assert_eq!(inbound.queue_timeout(now, Priority::Critical), ms(100));
    places.truncate(1);
    let shed = decide(inbound.admit(now, Priority::Critical, None)).unwrap_err();
    assert_eq!(
        shed.unwrap().cause(),
        ShedCause::QueueFull,
        "8 ms is above 4 ms"
    );
    places.clear();
    // Alone in the queue it would wait 4 ms: it waits at most that.
    let p = decide(inbound.admit(now, Priority::Critical, None)).unwrap();
    assert_eq!(p.until(), now + ms(4));
    drop(p);
    // Queued arrivals bring the share down again.
    let mut queued = 0;
    while inbound.overloaded(Priority::Critical) {
        drop(decide(inbound.admit(now, Priority::Critical, None)).unwrap());
        queued += 1;
    }
    assert!(queued < 10, "{queued}");
    assert_eq!(inbound.admission_wait(now, Priority::Critical), ms(100));
    drop(running);
}

#[test]
fn the_shed_pressure_is_a_moving_share_of_about_256_arrivals() {
    use super::wait::{PRESSURE_ONE, next_pressure};
    assert_eq!(next_pressure(0, true), 256);
    assert_eq!(next_pressure(256, false), 255);
    assert_eq!(
        next_pressure(255, false),
        255,
        "⌊255 / 256⌋ = 0: a floor below one step"
    );
    assert_eq!(
        next_pressure(PRESSURE_ONE, true),
        PRESSURE_ONE,
        "all shed stays at one"
    );
    let mut p = 0;
    for _ in 0..4_000 {
        p = next_pressure(p, true);
        p = next_pressure(p, false);
    }
    assert!(
        (32_000..=33_000).contains(&p),
        "{p}: half shed reads one half"
    );
}

#[test]
fn a_newcomer_counts_only_the_waiters_served_before_it() {
    let (inbound, now) = warmed(1, 100, ms(20));
    let _running = inbound.admit(now, Priority::Critical, None);
    let mut places = Vec::new();
    for _ in 0..4 {
        places.push(decide(inbound.admit(now, Priority::Sheddable, None)).unwrap());
    }
    places.push(decide(inbound.admit(now, Priority::Critical, None)).unwrap());
    assert_eq!(inbound.ahead(Priority::Sheddable), 5);
    assert_eq!(inbound.ahead(Priority::SheddablePlus), 1);
    assert_eq!(inbound.ahead(Priority::CriticalPlus), 0);
    // A critical request with 60 ms: one critical ahead, so it starts in 40 ms, done at 60.
    let d = Some(Deadline::after(now, ms(61)));
    assert!(decide(inbound.admit(now, Priority::Critical, d)).is_ok());
    let gone = places.remove(0);
    drop(gone);
    assert_eq!(inbound.ahead(Priority::Sheddable), 4);
    assert_eq!(inbound.waiting(), 4);
}

/// Waiting places, one line per priority.
struct Lines<'a>([std::collections::VecDeque<QueuePlace<&'a Inbound>>; 4]);

impl<'a> Backlog for Lines<'a> {
    type Item = QueuePlace<&'a Inbound>;
    fn len(&self) -> usize {
        self.0.iter().map(|l| l.len()).sum()
    }
    fn peek(&self, p: Priority, end: End) -> Option<Waiting> {
        let line = &self.0[p.rank() as usize];
        let w = match end {
            End::Oldest => line.front(),
            End::Newest => line.back(),
        }?;
        Some(Waiting {
            since: w.since(),
            deadline: w.deadline(),
        })
    }
    fn take(&mut self, p: Priority, end: End) -> Option<Self::Item> {
        let line = &mut self.0[p.rank() as usize];
        match end {
            End::Oldest => line.pop_front(),
            End::Newest => line.pop_back(),
        }
    }
}

/// One runs and one joins at 0, one joins at 50 ms, a slot at 60 ms, joins at 99 and 100 ms, a slot at 101 ms (the
/// queue has stood since 0): answers whom the slot goes to (joined at, in ms).
fn standing_pick(deadline: Option<Duration>) -> u64 {
    let inbound = Inbound::new(InboundConfig::fixed(1)).unwrap();
    let mut codel = Codel::new(inbound.codel_config());
    let mut running = Vec::new();
    let mut lines = Lines(Default::default());
    let mut served = Vec::new();
    for (t, dispatch_first) in [
        (0, false),
        (0, false),
        (50, false),
        (60, true),
        (99, false),
        (100, false),
    ] {
        let at = T0 + ms(t);
        if dispatch_first {
            running.clear();
            dispatch(
                &&inbound,
                &mut codel,
                at,
                &mut lines,
                |p, permit| {
                    served.push((p.since() - T0).as_millis() as u64);
                    running.push(permit);
                    Ok(())
                },
                |_, _| panic!("nothing is shed"),
            );
            continue;
        }
        let d = deadline.map(|d| Deadline::after(at, d));
        let place = match inbound.admit(at, Priority::Critical, d) {
            Decision::Queue(p) => p,
            Decision::Admit(p) => {
                running.push(p);
                continue;
            }
            other => panic!("{other:?}"),
        };
        lines.0[1].push_back(place);
    }
    let now = T0 + ms(101);
    assert!(inbound.standing(now));
    running.clear();
    dispatch(
        &&inbound,
        &mut codel,
        now,
        &mut lines,
        |p, permit| {
            served.push((p.since() - T0).as_millis() as u64);
            running.push(permit);
            Ok(())
        },
        |_, _| panic!("nothing is shed"),
    );
    assert_eq!(served.len(), 2);
    served[1]
}

#[test]
fn a_standing_line_with_deadlines_is_served_oldest_first() {
    assert_eq!(
        standing_pick(Some(Duration::from_secs(1))),
        50,
        "FIFO: earliest deadline"
    );
    assert_eq!(standing_pick(None), 100, "adaptive LIFO without deadlines");
}

#[test]
fn codel_never_drops_a_critical_request() {
    // Sojourns of 8 ms with a backlog, over several intervals: CoDel would drop (see the
    // sheddable case in tests.rs); a critical line is served whole.
    let inbound = Inbound::new(InboundConfig::fixed(1)).unwrap();
    let mut codel = Codel::new(inbound.codel_config());
    let mut lines = Lines(Default::default());
    let mut served = 0;
    let mut running = Vec::new();
    for round in 0..30u64 {
        let now = T0 + ms(10 * round);
        if running.is_empty() {
            match inbound.admit(now - ms(9), Priority::Critical, None) {
                Decision::Admit(p) => running.push(p),
                other => panic!("{other:?}"),
            }
        }
        for _ in 0..3 {
            let place = decide(inbound.admit(now - ms(8), Priority::Critical, None)).unwrap();
            lines.0[1].push_back(place);
        }
        running.clear();
        dispatch(
            &&inbound,
            &mut codel,
            now,
            &mut lines,
            |_, permit| {
                served += 1;
                running.push(permit);
                Ok(())
            },
            |_, cause| panic!("shed {cause:?}"),
        );
        // The others leave before the next round, so the queue keeps emptying.
        for line in &mut lines.0 {
            line.clear();
        }
    }
    assert_eq!(served, 30);
    assert!(!codel.dropping());
}

#[test]
fn the_service_time_moves_an_eighth_of_the_way_per_request() {
    use super::wait::next_service;
    assert_eq!(next_service(0, 20_000), 20_000, "the first sets it");
    assert_eq!(next_service(20_000, 28_000), 21_000);
    assert_eq!(next_service(8, 0), 7, "(7 × 8 + 0) / 8");
    assert_eq!(next_service(15, 0), 13, "truncated: 105 / 8");
    assert_eq!(next_service(1, u64::from(u32::MAX) * 9), u32::MAX);
    let inbound = Inbound::new(InboundConfig::fixed(2)).unwrap();
    assert_eq!(inbound.service_time(), Duration::ZERO);
    let mut rng = SeededRandom::new(1);
    for (took, average) in [(ms(8), ms(8)), (ms(16), ms(9)), (ms(1), ms(8))] {
        let Decision::Admit(p) = inbound.admit(T0, Priority::Critical, None) else {
            panic!()
        };
        p.settle(&Verdict::Success, &mut Env::new(T0 + took, &mut rng));
        assert_eq!(inbound.service_time(), average);
    }
    // A cancelled request says nothing.
    drop(inbound.admit(T0, Priority::Critical, None));
    assert_eq!(inbound.service_time(), ms(8));
}
