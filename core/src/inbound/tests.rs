extern crate std;

use core::time::Duration;
use std::collections::VecDeque;
use std::vec::Vec;

use super::*;
use crate::permit::{Env, Permit};
use crate::random::SeededRandom;
use crate::verdict::Verdict;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const T0: Instant = Instant::from_secs(1_000);

fn fixed(limit: u32, queue: u32) -> Inbound {
    Inbound::new(InboundConfig {
        queue,
        ..InboundConfig::fixed(limit)
    })
    .unwrap()
}

/// Waiting places, one line per priority.
struct Lines<'a>([VecDeque<QueuePlace<&'a Inbound>>; 4]);

impl<'a> Lines<'a> {
    fn new() -> Self {
        Lines(Default::default())
    }
    fn push(&mut self, place: QueuePlace<&'a Inbound>) {
        self.0[place.priority().rank() as usize].push_back(place);
    }
}

impl<'a> Backlog for Lines<'a> {
    type Item = QueuePlace<&'a Inbound>;
    fn len(&self) -> usize {
        self.0.iter().map(VecDeque::len).sum()
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

fn admitted<P: Deref<Target = Inbound> + core::fmt::Debug>(d: Decision<P>) -> InboundPermit<P> {
    match d {
        Decision::Admit(p) => p,
        other => panic!("expected admit, got {other:?}"),
    }
}

fn queued<P: Deref<Target = Inbound> + core::fmt::Debug>(d: Decision<P>) -> QueuePlace<P> {
    match d {
        Decision::Queue(p) => p,
        other => panic!("expected queue, got {other:?}"),
    }
}

fn rejected<P: Deref<Target = Inbound> + core::fmt::Debug>(d: Decision<P>) -> Shed {
    match d {
        Decision::Reject(s) => s,
        other => panic!("expected reject, got {other:?}"),
    }
}

#[test]
fn with_room_every_priority_is_admitted_alike() {
    let inbound = fixed(10, 0);
    let permits: Vec<_> = (0..8)
        .map(|_| admitted(inbound.admit(T0, Priority::Sheddable, None)))
        .collect();
    assert_eq!(inbound.in_flight(), 8);
    drop(permits);
    assert_eq!(inbound.in_flight(), 0);
}

#[test]
fn under_load_each_priority_fills_only_its_share_of_the_limit() {
    // Limit 10, 20 % reserved: SHEDDABLE 8, SHEDDABLE_PLUS 9, CRITICAL and CRITICAL_PLUS 10.
    let inbound = fixed(10, 0);
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(admitted(inbound.admit(T0, Priority::Sheddable, None)));
    }
    let shed = rejected(inbound.admit(T0, Priority::Sheddable, None));
    assert_eq!(shed.cause(), ShedCause::QueueFull);
    assert_eq!(shed.retry_at(), Some(T0 + Duration::from_secs(1)));
    held.push(admitted(inbound.admit(T0, Priority::SheddablePlus, None)));
    rejected(inbound.admit(T0, Priority::SheddablePlus, None));
    held.push(admitted(inbound.admit(T0, Priority::Critical, None)));
    rejected(inbound.admit(T0, Priority::CriticalPlus, None));
    assert_eq!(inbound.in_flight(), 10);
}

#[test]
fn under_load_each_priority_fills_only_its_share_of_the_queue() {
    let inbound = fixed(1, 10);
    let _running = admitted(inbound.admit(T0, Priority::Critical, None));
    let mut places = Vec::new();
    for _ in 0..8 {
        places.push(queued(inbound.admit(T0, Priority::Sheddable, None)));
    }
    assert_eq!(
        rejected(inbound.admit(T0, Priority::Sheddable, None)).cause(),
        ShedCause::QueueFull
    );
    places.push(queued(inbound.admit(T0, Priority::SheddablePlus, None)));
    places.push(queued(inbound.admit(T0, Priority::Critical, None)));
    rejected(inbound.admit(T0, Priority::CriticalPlus, None));
    assert_eq!(inbound.waiting(), 10);
    drop(places);
    assert_eq!(inbound.waiting(), 0);
}

#[test]
fn a_newcomer_queues_behind_waiters_even_beside_a_free_slot() {
    let inbound = fixed(1, 4);
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let _waiting = queued(inbound.admit(T0, Priority::Sheddable, None));
    drop(running);
    assert_eq!(inbound.in_flight(), 0);
    let _behind = queued(inbound.admit(T0, Priority::CriticalPlus, None));
}

#[test]
fn a_deadline_that_cannot_be_met_is_refused_without_retry_at() {
    let inbound = fixed(1, 4);
    for d in [T0 - ms(1), T0] {
        let shed = rejected(inbound.admit(T0, Priority::CriticalPlus, Some(Deadline::at(d))));
        assert_eq!(shed, Shed::new(ShedCause::Deadline, None));
    }
    let soon = Deadline::at(T0 + Duration::from_nanos(1));
    let _ran = admitted(inbound.admit(T0, Priority::CriticalPlus, Some(soon)));
}

#[test]
fn the_service_time_is_the_settled_requests_average_and_counts_against_deadlines() {
    let inbound = fixed(4, 4);
    let mut rng = SeededRandom::new(9);
    let mut now = T0;
    // 20 ms requests: the average is 20 ms from the first.
    for _ in 0..80 {
        let p = admitted(inbound.admit(now, Priority::Critical, None));
        now = now + ms(20);
        p.settle(&Verdict::Success, &mut Env::new(now, &mut rng));
    }
    let service = inbound.service_time();
    assert!(service >= ms(19) && service <= ms(21), "{service:?}");
    let tight = Deadline::after(now, ms(10));
    assert_eq!(
        rejected(inbound.admit(now, Priority::CriticalPlus, Some(tight))).cause(),
        ShedCause::Deadline
    );
    let _ran = admitted(inbound.admit(
        now,
        Priority::CriticalPlus,
        Some(Deadline::after(now, ms(30))),
    ));
}

#[test]
fn a_queued_request_waits_an_interval_or_a_target_once_the_queue_stands() {
    let inbound = fixed(1, 10);
    let _running = admitted(inbound.admit(T0, Priority::Critical, None));
    let first = queued(inbound.admit(T0, Priority::Critical, None));
    assert_eq!(first.until(), T0 + ms(100));
    assert!(!inbound.standing(T0 + ms(99)));
    let second = queued(inbound.admit(T0 + ms(99), Priority::Critical, None));
    assert_eq!(second.until(), T0 + ms(199));
    assert!(inbound.standing(T0 + ms(100)));
    let third = queued(inbound.admit(T0 + ms(100), Priority::SheddablePlus, None));
    assert_eq!(
        third.until(),
        T0 + ms(105),
        "M = 5 ms under a standing queue"
    );
    let critical = queued(inbound.admit(T0 + ms(100), Priority::Critical, None));
    assert_eq!(critical.until(), T0 + ms(200), "critical requests keep N");
    drop(critical);
    // The queue empties: it no longer stands, and the next busy period starts afresh.
    drop((first, second, third));
    assert!(!inbound.standing(T0 + ms(100)));
    let fourth = queued(inbound.admit(T0 + ms(150), Priority::Critical, None));
    assert_eq!(fourth.until(), T0 + ms(250));
    assert!(!inbound.standing(T0 + ms(249)));
    assert!(inbound.standing(T0 + ms(250)));
}

#[test]
fn a_deadline_bounds_the_wait() {
    let inbound = fixed(1, 10);
    let _running = admitted(inbound.admit(T0, Priority::Critical, None));
    let d = Deadline::after(T0, ms(40));
    let place = queued(inbound.admit(T0, Priority::Critical, Some(d)));
    assert_eq!(place.until(), T0 + ms(40));
    assert_eq!(place.deadline(), Some(d));
    let far = Deadline::after(T0, Duration::from_secs(9));
    assert_eq!(
        queued(inbound.admit(T0, Priority::Critical, Some(far))).until(),
        T0 + ms(100)
    );
}

#[test]
fn giving_up_says_why_and_gives_the_place_back() {
    let inbound = fixed(1, 10);
    let _running = admitted(inbound.admit(T0, Priority::Critical, None));
    let place = queued(inbound.admit(T0, Priority::Critical, None));
    let shed = place.give_up(T0 + ms(100));
    assert_eq!(shed.cause(), ShedCause::QueueTimeout);
    assert_eq!(shed.retry_at(), Some(T0 + ms(1_100)));
    let d = Deadline::after(T0, ms(40));
    let place = queued(inbound.admit(T0, Priority::Critical, Some(d)));
    assert_eq!(
        place.give_up(T0 + ms(40)),
        Shed::new(ShedCause::Deadline, None)
    );
    assert_eq!(inbound.waiting(), 0);
}

#[test]
fn try_admit_takes_a_free_slot_or_keeps_the_place() {
    let inbound = fixed(1, 10);
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let place = queued(inbound.admit(T0, Priority::Sheddable, None));
    let place = place.try_admit(T0).expect_err("no slot");
    assert_eq!(inbound.waiting(), 1);
    drop(running);
    let permit = place.try_admit(T0 + ms(1)).expect("the slot freed");
    assert_eq!((inbound.in_flight(), inbound.waiting()), (1, 0));
    assert_eq!(permit.admitted_at(), T0 + ms(1));
}

#[test]
fn settle_and_drop_each_give_the_slot_back_once() {
    let inbound = fixed(2, 0);
    let mut rng = SeededRandom::new(1);
    let a = admitted(inbound.admit(T0, Priority::Critical, None));
    let b = admitted(inbound.admit(T0, Priority::Critical, None));
    a.settle(&Verdict::Success, &mut Env::new(T0 + ms(1), &mut rng));
    assert_eq!(inbound.in_flight(), 1);
    b.settle(
        &Verdict::Rejected(crate::RejectReason::LimiterFull),
        &mut Env::new(T0, &mut rng),
    );
    assert_eq!(inbound.in_flight(), 0);
}

#[test]
fn an_arc_owns_the_admission_in_permits_and_places() {
    extern crate alloc;
    use alloc::sync::Arc;
    let inbound = Arc::new(fixed(1, 1));
    let permit = admitted(Inbound::admit_by(&inbound, T0, Priority::Critical, None));
    let place = queued(Inbound::admit_by(&inbound, T0, Priority::Critical, None));
    assert_eq!(Arc::strong_count(&inbound), 3);
    let rejected = rejected(Inbound::admit_by(&inbound, T0, Priority::Critical, None));
    assert_eq!(rejected.cause(), ShedCause::QueueFull);
    assert_eq!(Arc::strong_count(&inbound), 3, "a rejection clones nothing");
    drop((permit, place));
    assert_eq!(Arc::strong_count(&inbound), 1);
}

/// Runs dispatch and answers the order served (by `since` in ms after T0) and the shed causes.
fn run<'a>(
    inbound: &'a Inbound,
    codel: &mut Codel,
    now: Instant,
    lines: &mut Lines<'a>,
    keep: &mut Vec<InboundPermit<&'a Inbound>>,
) -> (Vec<u64>, Vec<(u64, ShedCause)>) {
    let mut served = Vec::new();
    let mut shed = Vec::new();
    let at = |p: &QueuePlace<&Inbound>| (p.since() - T0).as_millis() as u64;
    dispatch(
        &inbound,
        codel,
        now,
        lines,
        |place, permit| {
            served.push(at(&place));
            keep.push(permit);
            Ok(())
        },
        |place, cause| shed.push((at(&place), cause)),
    );
    (served, shed)
}

#[test]
fn dispatch_serves_fifo_while_the_queue_drains() {
    let inbound = fixed(3, 10);
    let mut codel = Codel::new(inbound.codel_config());
    let running: Vec<_> = (0..3)
        .map(|_| admitted(inbound.admit(T0, Priority::Critical, None)))
        .collect();
    let mut lines = Lines::new();
    for t in 0..3 {
        lines.push(queued(inbound.admit(T0 + ms(t), Priority::Critical, None)));
    }
    drop(running);
    let mut keep = Vec::new();
    let (served, shed) = run(&inbound, &mut codel, T0 + ms(3), &mut lines, &mut keep);
    assert_eq!(served, [0, 1, 2]);
    assert!(shed.is_empty());
    assert_eq!((inbound.in_flight(), inbound.waiting()), (3, 0));
}

#[test]
fn dispatch_serves_lifo_once_the_queue_stands() {
    let inbound = fixed(1, 10);
    let mut codel = Codel::new(inbound.codel_config());
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let mut lines = Lines::new();
    for t in [0, 98, 99] {
        lines.push(queued(inbound.admit(T0 + ms(t), Priority::Sheddable, None)));
    }
    drop(running);
    let mut keep = Vec::new();
    // Standing at 100 ms: the oldest (100 ms ≥ M) is dropped, then the newest served.
    let (served, shed) = run(&inbound, &mut codel, T0 + ms(100), &mut lines, &mut keep);
    assert_eq!(shed, [(0, ShedCause::QueueTimeout)]);
    assert_eq!(served, [99]);
    assert_eq!(lines.len(), 1);
}

#[test]
fn dispatch_serves_the_most_critical_first() {
    let inbound = fixed(1, 10);
    let mut codel = Codel::new(inbound.codel_config());
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let mut lines = Lines::new();
    lines.push(queued(inbound.admit(T0, Priority::Sheddable, None)));
    lines.push(queued(inbound.admit(
        T0 + ms(1),
        Priority::CriticalPlus,
        None,
    )));
    lines.push(queued(inbound.admit(T0 + ms(2), Priority::Critical, None)));
    drop(running);
    let mut keep = Vec::new();
    let (served, _) = run(&inbound, &mut codel, T0 + ms(3), &mut lines, &mut keep);
    assert_eq!(served, [1], "CRITICAL_PLUS first");
    keep.clear();
    let (served, _) = run(&inbound, &mut codel, T0 + ms(4), &mut lines, &mut keep);
    assert_eq!(served, [2]);
    keep.clear();
    let (served, _) = run(&inbound, &mut codel, T0 + ms(5), &mut lines, &mut keep);
    assert_eq!(served, [0]);
}

#[test]
fn dispatch_drops_waiters_whose_deadline_cannot_be_met() {
    let inbound = fixed(1, 10);
    let mut codel = Codel::new(inbound.codel_config());
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let mut lines = Lines::new();
    let d = Some(Deadline::after(T0, ms(10)));
    lines.push(queued(inbound.admit(T0, Priority::Critical, d)));
    lines.push(queued(inbound.admit(T0 + ms(1), Priority::Critical, None)));
    drop(running);
    let mut keep = Vec::new();
    let (served, shed) = run(&inbound, &mut codel, T0 + ms(10), &mut lines, &mut keep);
    assert_eq!(shed, [(0, ShedCause::Deadline)]);
    assert_eq!(served, [1]);
}

#[test]
fn dispatch_drops_the_candidate_when_its_own_deadline_is_gone() {
    let inbound = fixed(1, 10);
    let mut codel = Codel::new(inbound.codel_config());
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let mut lines = Lines::new();
    lines.push(queued(inbound.admit(T0, Priority::Critical, None)));
    let d = Some(Deadline::after(T0, ms(110)));
    lines.push(queued(inbound.admit(
        T0 + ms(108),
        Priority::Critical,
        None,
    )));
    lines.push(queued(inbound.admit(T0 + ms(108), Priority::Critical, d)));
    drop(running);
    let mut keep = Vec::new();
    // At 110 ms the queue stands: the oldest has waited too long, the newest (LIFO) cannot
    // meet its deadline, the one between is served.
    let (served, shed) = run(&inbound, &mut codel, T0 + ms(110), &mut lines, &mut keep);
    assert_eq!(
        shed,
        [(0, ShedCause::QueueTimeout), (108, ShedCause::Deadline)]
    );
    assert_eq!(served, [108]);
}

#[test]
fn dispatch_lets_codel_drop_in_fifo_order() {
    // A queue that keeps emptying (never standing for Fail at Scale) but whose requests all
    // waited above target for an interval: CoDel drops (sheddable requests: a critical one
    // is not CoDel's to drop).
    let inbound = fixed(1, 100);
    let mut codel = Codel::new(inbound.codel_config());
    let mut keep = Vec::new();
    let mut lines = Lines::new();
    let mut drops = Vec::new();
    for round in 0..20u64 {
        let now = T0 + ms(10 * round);
        let running = keep
            .pop()
            .unwrap_or_else(|| admitted(inbound.admit(now - ms(9), Priority::Sheddable, None)));
        // Three arrivals that have waited 8 ms each when the running request finishes.
        for _ in 0..3 {
            lines.push(queued(inbound.admit(
                now - ms(8),
                Priority::Sheddable,
                None,
            )));
        }
        drop(running);
        let (_, shed) = run(&inbound, &mut codel, now, &mut lines, &mut keep);
        drops.extend(
            shed.iter()
                .filter(|s| s.1 == ShedCause::QueueDelay)
                .map(|s| s.0),
        );
        // The rest leave (time out) before the next round: the queue empties.
        while let Some(p) = lines.take(Priority::Sheddable, End::Oldest) {
            drop(p);
        }
    }
    assert!(!drops.is_empty(), "CoDel never dropped");
    assert!(
        drops.iter().all(|&at| at + 8 >= 100),
        "no CoDel drop before an interval above target: {drops:?}"
    );
}

#[test]
fn a_waiter_that_left_passes_the_slot_to_the_next() {
    let inbound = fixed(1, 10);
    let mut codel = Codel::new(inbound.codel_config());
    let running = admitted(inbound.admit(T0, Priority::Critical, None));
    let mut lines = Lines::new();
    lines.push(queued(inbound.admit(T0, Priority::Critical, None)));
    lines.push(queued(inbound.admit(T0 + ms(1), Priority::Critical, None)));
    drop(running);
    let mut seen = 0;
    let mut keep = Vec::new();
    let served = dispatch(
        &&inbound,
        &mut codel,
        T0 + ms(2),
        &mut lines,
        |_, permit| {
            seen += 1;
            if seen == 1 {
                Err(permit) // the first waiter's task was gone
            } else {
                keep.push(permit);
                Ok(())
            }
        },
        |_, _| panic!("nothing to shed"),
    );
    assert_eq!((served, seen), (1, 2));
    assert_eq!((inbound.in_flight(), inbound.waiting()), (1, 0));
}

#[test]
fn dispatch_with_nobody_waiting_takes_no_slot_and_resets_codel() {
    let inbound = fixed(1, 10);
    let mut codel = Codel::new(inbound.codel_config());
    codel.pop(T0, ms(20), 10);
    let mut lines = Lines::new();
    let mut keep = Vec::new();
    let (served, _) = run(&inbound, &mut codel, T0 + ms(100), &mut lines, &mut keep);
    assert!(served.is_empty());
    assert_eq!(inbound.in_flight(), 0);
    assert_eq!(
        codel.pop(T0 + ms(100), ms(20), 10),
        Pop::Serve,
        "first_above was reset"
    );
    assert_eq!(
        inbound.next_step(&mut codel, T0, &lines),
        Step::Empty,
        "an empty backlog steps to Empty"
    );
}
