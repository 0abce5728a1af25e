//! The inbound admission allocates nothing per request once warm: admit + settle (borrowed
//! and `Arc`-owned), a refusal, a queued place given back, and the core's dispatch over a
//! backlog with room reserved. (The tower layer's response future is boxed: one allocation per
//! request there, plus the queue's channel for a request that waits.)

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use resilix::Verdict;
use resilix::inbound::{
    Backlog, Codel, Decision, End, Inbound, InboundConfig, Priority, QueuePlace, Waiting, dispatch,
};
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::time::{Deadline, Instant};
use resilix_testkit::alloc::{CountingAllocator, allocations};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = allocations();
    f();
    allocations() - before
}

struct Line<'a>(VecDeque<QueuePlace<&'a Inbound>>);

impl<'a> Backlog for Line<'a> {
    type Item = QueuePlace<&'a Inbound>;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn peek(&self, _: Priority, end: End) -> Option<Waiting> {
        let p = match end {
            End::Oldest => self.0.front(),
            End::Newest => self.0.back(),
        }?;
        Some(Waiting {
            since: p.since(),
            deadline: p.deadline(),
        })
    }
    fn take(&mut self, _: Priority, end: End) -> Option<Self::Item> {
        match end {
            End::Oldest => self.0.pop_front(),
            End::Newest => self.0.pop_back(),
        }
    }
}

#[test]
fn the_admit_path_allocates_nothing() {
    let inbound = Inbound::new(InboundConfig {
        queue: 4,
        ..InboundConfig::fixed(2)
    })
    .unwrap();
    let shared = Arc::new(Inbound::new(InboundConfig::fixed(2)).unwrap());
    let mut rng = SeededRandom::new(7);
    let mut codel = Codel::new(inbound.codel_config());
    let mut line = Line(VecDeque::with_capacity(8));
    let mut step = |i: u64| {
        let now = Instant::from_secs(1) + Duration::from_micros(i * 10);
        let deadline = Some(Deadline::after(now, Duration::from_millis(200)));
        // Admit + settle, borrowed and owned.
        let Decision::Admit(a) = inbound.admit(now, Priority::Critical, deadline) else {
            panic!()
        };
        let Decision::Admit(b) = Inbound::admit_by(&shared, now, Priority::Sheddable, None) else {
            panic!()
        };
        b.settle(&Verdict::Success, &mut Env::new(now, &mut rng));
        // Queue, refuse, dispatch.
        let Decision::Admit(c) = inbound.admit(now, Priority::Critical, None) else {
            panic!()
        };
        let Decision::Queue(place) = inbound.admit(now, Priority::CriticalPlus, deadline) else {
            panic!()
        };
        line.0.push_back(place);
        drop(a);
        let mut served = None;
        dispatch(
            &&inbound,
            &mut codel,
            now,
            &mut line,
            |_, p| {
                served = Some(p);
                Ok(())
            },
            |_, _| {},
        );
        let served = served.expect("the freed slot went to the waiter");
        served.settle(&Verdict::Success, &mut Env::new(now, &mut rng));
        c.settle(&Verdict::Answered, &mut Env::new(now, &mut rng));
    };
    for i in 0..1_000 {
        step(i); // warm-up: nothing here allocates, but measure only steady state anyway
    }
    let n = allocations_in(|| {
        for i in 1_000..11_000 {
            step(i);
        }
    });
    assert_eq!(n, 0, "allocations in 10,000 requests");
    let refuse = Inbound::new(InboundConfig {
        queue: 0,
        ..InboundConfig::fixed(1)
    })
    .unwrap();
    let _held = refuse.admit(Instant::ZERO, Priority::Critical, None);
    let n = allocations_in(|| {
        for _ in 0..10_000 {
            assert!(matches!(
                refuse.admit(Instant::ZERO, Priority::Sheddable, None),
                Decision::Reject(_)
            ));
        }
    });
    assert_eq!(n, 0, "allocations in 10,000 refusals");
    // The counter counts: a control.
    assert_eq!(
        allocations_in(|| drop(std::hint::black_box(Box::new(1u64)))),
        1
    );
}
