extern crate std;

use core::cell::Cell;
use core::time::Duration;
use std::format;
use std::vec::Vec;

use super::wait::{WaitConfig, WaitConfigError, WaitOrder, WaitQueue};
use super::*;
use crate::observe::Event;
use crate::pipeline::Pipeline;
use crate::random::SeededRandom;
use crate::time::{Deadline, Instant};

const ALL_VERDICTS: [Verdict; 7] = [
    Verdict::Success,
    Verdict::Answered,
    Verdict::Overload { retry_after: None },
    Verdict::Overload {
        retry_after: Some(Duration::from_secs(3)),
    },
    Verdict::Transient,
    Verdict::Timeout,
    Verdict::Rejected(RejectReason::RateLimited),
];

fn cap(n: u32) -> BulkheadConfig {
    BulkheadConfig::new(n).unwrap()
}

#[derive(Default)]
struct Counting(Cell<u32>);
impl ReleaseHook for Counting {
    fn on_release(&self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn config_refuses_zero_and_accepts_one_and_max() {
    assert_eq!(
        BulkheadConfig::new(0),
        Err(BulkheadConfigError::ZeroConcurrency)
    );
    assert_eq!(cap(1).max_concurrent(), 1);
    assert_eq!(cap(u32::MAX).max_concurrent(), u32::MAX);
    assert_eq!(BulkheadConfig::default().max_concurrent(), 25);
    assert!(format!("{}", BulkheadConfigError::ZeroConcurrency).contains("max_concurrent is 0"));
}

#[test]
fn cap_one_admits_one_and_refuses_the_next() {
    let b = Bulkhead::new(cap(1));
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let p = b.admit(&mut env).unwrap();
    assert_eq!(p.held_at_admission(), 1);
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(r, Rejection::new(RejectReason::BulkheadFull));
    assert_eq!(b.held(), 1, "a refusal takes no slot");
    p.settle(&Verdict::Success, &mut env);
    assert_eq!(b.held(), 0);
    assert!(b.admit(&mut env).is_ok(), "the freed slot is usable again");
}

#[test]
fn settling_with_every_verdict_releases_the_slot() {
    let b = Bulkhead::with_hook(cap(1), Counting::default());
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::from_secs(5), &mut rng);
    for (i, v) in ALL_VERDICTS.iter().enumerate() {
        let p = b.admit(&mut env).unwrap();
        assert!(b.admit(&mut env).is_err());
        p.settle(v, &mut env);
        assert_eq!(b.held(), 0, "verdict {v:?} must free the slot");
        assert_eq!(b.releases(), i as u32 + 1);
        assert_eq!(
            b.hook().0.get(),
            i as u32 + 1,
            "the hook hears every release"
        );
    }
}

#[test]
fn dropping_a_permit_releases_and_refusal_does_not_signal() {
    let b = Bulkhead::with_hook(cap(2), Counting::default());
    let p1 = b.try_admit().unwrap();
    let p2 = b.try_admit().unwrap();
    assert_eq!(p2.held_at_admission(), 2);
    let full = b.try_admit().unwrap_err();
    assert_eq!((full.held(), full.releases()), (2, 0));
    assert_eq!(b.hook().0.get(), 0, "a refusal is not a release");
    drop(p1);
    assert_eq!((b.held(), b.available(), b.releases()), (1, 1, 1));
    assert_ne!(
        b.releases(),
        full.releases(),
        "the waiter's step 4 sees the release"
    );
    drop(p2);
    assert_eq!((b.held(), b.hook().0.get()), (0, 2));
}

#[test]
fn cap_max_admits_far_more_than_any_small_cap() {
    let b = Bulkhead::new(cap(u32::MAX));
    let permits: Vec<_> = (0..1000).map(|_| b.try_admit().unwrap()).collect();
    assert_eq!(b.held(), 1000);
    assert_eq!(b.available(), u32::MAX - 1000);
    drop(permits);
    assert_eq!((b.held(), b.releases()), (0, 1000));
}

#[test]
fn time_plays_no_part_backwards_max_or_a_year_later() {
    let b = Bulkhead::new(cap(1));
    let mut rng = SeededRandom::new(3);
    let year = Duration::from_secs(365 * 24 * 3600);
    for now in [
        Instant::MAX,
        Instant::ZERO,
        Instant::from_secs(10) + year,
        Instant::from_secs(1),
    ] {
        let mut env = Env::new(now, &mut rng);
        let p = b.admit(&mut env).unwrap();
        assert!(b.admit(&mut env).is_err());
        p.settle(&Verdict::Timeout, &mut env);
    }
    assert_eq!(b.held(), 0);
}

#[test]
fn full_converts_to_a_bulkhead_full_rejection_with_its_text() {
    let b = Bulkhead::new(cap(1));
    let _p = b.try_admit().unwrap();
    let full = b.try_admit().unwrap_err();
    assert_eq!(Rejection::from(full).reason(), RejectReason::BulkheadFull);
    assert!(format!("{full}").starts_with("bulkhead-full"));
    assert!(format!("{full}").ends_with("(1 held)"));
}

/// A policy inside the bulkhead that refuses everything: the attempt is cancelled after the
/// bulkhead admitted it.
struct RefuseAll;
impl Policy for RefuseAll {
    type Permit<'a> = ();
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<(), Rejection> {
        Err(Rejection::new(RejectReason::RateLimited))
    }
}

#[derive(Default)]
struct Rejections(Cell<u32>);
impl Observer for Rejections {
    fn on_event(&self, e: &Event) {
        if let Event::Rejected { rejection } = e {
            assert_eq!(rejection.reason(), RejectReason::BulkheadFull);
            self.0.set(self.0.get() + 1);
        }
    }
}

#[test]
fn in_a_pipeline_an_inner_refusal_gives_the_slot_back() {
    let b = Bulkhead::new(cap(1));
    let pipeline = Pipeline::new().bulkhead(&b).rate_limit(RefuseAll);
    let mut rng = SeededRandom::new(4);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    for _ in 0..3 {
        let r = pipeline.admit(&mut env, None).err().unwrap();
        assert_eq!(r.reason(), RejectReason::RateLimited);
        assert_eq!(
            b.held(),
            0,
            "the cancelled attempt released its bulkhead slot"
        );
    }
}

#[test]
fn in_a_pipeline_a_full_bulkhead_reports_bulkhead_full() {
    let b = Bulkhead::new(cap(1));
    let pipeline = Pipeline::new().bulkhead(&b);
    let seen = Rejections::default();
    let mut rng = SeededRandom::new(5);
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&seen);
    let a = pipeline.admit(&mut env, None).unwrap();
    let r = pipeline.admit(&mut env, None).err().unwrap();
    assert_eq!(r.reason(), RejectReason::BulkheadFull);
    assert_eq!(seen.0.get(), 1);
    a.settle(&Verdict::Success, &mut env);
    assert_eq!(b.held(), 0);
}

#[test]
fn wait_config_validation() {
    assert_eq!(WaitConfig::default(), WaitConfig::NO_WAIT);
    assert!(!WaitConfig::NO_WAIT.allows_waiting());
    assert_eq!(
        WaitConfig::new(0, Duration::from_millis(1), WaitOrder::Fifo),
        Err(WaitConfigError::WaitWithoutWaiters)
    );
    assert_eq!(
        WaitConfig::new(1, Duration::ZERO, WaitOrder::Lifo),
        Err(WaitConfigError::WaitersWithoutWait)
    );
    assert!(
        !WaitConfig::new(0, Duration::ZERO, WaitOrder::Lifo)
            .unwrap()
            .allows_waiting()
    );
    let w = WaitConfig::new(u32::MAX, Duration::MAX, WaitOrder::Lifo).unwrap();
    assert_eq!(
        (w.max_waiters(), w.max_wait(), w.order()),
        (u32::MAX, Duration::MAX, WaitOrder::Lifo)
    );
    assert!(format!("{}", WaitConfigError::WaitersWithoutWait).contains("max_wait is 0"));
}

fn waits(n: u32, ms: u64, order: WaitOrder) -> WaitConfig {
    WaitConfig::new(n, Duration::from_millis(ms), order).unwrap()
}

#[test]
fn queue_orders_fifo_and_lifo() {
    for (order, expected) in [
        (WaitOrder::Fifo, [1, 2, 3, 4]),
        (WaitOrder::Lifo, [4, 3, 2, 1]),
    ] {
        let cfg = waits(4, 10, order);
        let mut q: WaitQueue<u32, 4> = WaitQueue::new();
        for i in 1..=4 {
            q.push(i, Instant::ZERO, &cfg).unwrap();
        }
        let got: Vec<_> = core::iter::from_fn(|| q.pop(order)).collect();
        assert_eq!(got, expected);
        assert!(q.is_empty());
    }
}

#[test]
fn queue_order_survives_reused_entries() {
    // Pop from the middle of the array, then push: the new waiter lands in an early array
    // index but must still be the newest.
    let cfg = waits(3, 10, WaitOrder::Fifo);
    let mut q: WaitQueue<u32, 3> = WaitQueue::new();
    q.push(1, Instant::ZERO, &cfg).unwrap();
    q.push(2, Instant::ZERO, &cfg).unwrap();
    q.push(3, Instant::ZERO, &cfg).unwrap();
    assert_eq!(q.pop(WaitOrder::Fifo), Some(1));
    q.push(4, Instant::ZERO, &cfg).unwrap();
    assert_eq!(q.pop(WaitOrder::Lifo), Some(4));
    assert_eq!(q.pop(WaitOrder::Fifo), Some(2));
}

#[test]
fn queue_bounded_by_config_and_by_capacity() {
    let mut q: WaitQueue<u32, 4> = WaitQueue::new();
    let two = waits(2, 10, WaitOrder::Fifo);
    q.push(1, Instant::ZERO, &two).unwrap();
    q.push(2, Instant::ZERO, &two).unwrap();
    assert_eq!(q.push(3, Instant::ZERO, &two), Err(3), "max_waiters = 2");
    let many = waits(u32::MAX, 10, WaitOrder::Fifo);
    q.push(3, Instant::ZERO, &many).unwrap();
    q.push(4, Instant::ZERO, &many).unwrap();
    assert_eq!(q.push(5, Instant::ZERO, &many), Err(5), "capacity N = 4");
    assert_eq!(q.len(), 4);
    let none = WaitConfig::NO_WAIT;
    let mut empty: WaitQueue<u32, 4> = WaitQueue::new();
    assert_eq!(empty.push(1, Instant::ZERO, &none), Err(1), "no waiting");
    let mut zero: WaitQueue<u32, 0> = WaitQueue::new();
    assert_eq!(zero.push(1, Instant::ZERO, &many), Err(1));
    assert_eq!(zero.pop(WaitOrder::Fifo), None);
}

#[test]
fn queue_expiry_removal_and_deadlines() {
    let cfg = waits(4, 100, WaitOrder::Lifo);
    let mut q: WaitQueue<char, 4> = WaitQueue::new();
    let ta = q.push('a', Instant::from_millis(0), &cfg).unwrap();
    q.push('b', Instant::from_millis(30), &cfg).unwrap();
    q.push('c', Instant::from_millis(60), &cfg).unwrap();
    assert_eq!(
        q.next_deadline().unwrap().instant(),
        Instant::from_millis(100)
    );
    assert_eq!(q.pop_expired(Instant::from_millis(99)), None);
    assert_eq!(q.remove(ta), Some('a'));
    assert_eq!(q.remove(ta), None, "a ticket is used once");
    assert_eq!(
        q.next_deadline().unwrap().instant(),
        Instant::from_millis(130)
    );
    // Time backwards: nothing has expired.
    assert_eq!(q.pop_expired(Instant::ZERO), None);
    // Far in the future: all expire, earliest deadline first.
    assert_eq!(q.pop_expired(Instant::MAX), Some('b'));
    assert_eq!(q.pop_expired(Instant::MAX), Some('c'));
    assert_eq!(q.pop_expired(Instant::MAX), None);
    assert_eq!(q.next_deadline(), None);
}

#[test]
fn queue_deadline_saturates_at_the_end_of_time() {
    let cfg = waits(1, u64::MAX, WaitOrder::Fifo);
    let mut q: WaitQueue<u8, 1> = WaitQueue::new();
    q.push(7, Instant::MAX, &cfg).unwrap();
    assert_eq!(q.next_deadline().unwrap().instant(), Instant::MAX);
    assert_eq!(q.pop_expired(Instant::MAX), Some(7));
}

#[test]
fn a_refusal_carries_the_release_count_it_read_and_sees_a_later_release() {
    let b = Bulkhead::new(cap(1));
    // Two releases first, so the count a refusal carries is not the initial zero.
    drop(b.try_admit().unwrap());
    drop(b.try_admit().unwrap());
    let holder = b.try_admit().unwrap();
    let full = b.try_admit().unwrap_err();
    assert_eq!((full.held(), full.releases()), (1, 2));
    assert!(
        !b.released_since(&full),
        "nothing was released since the refusal"
    );
    drop(holder);
    assert!(b.released_since(&full));
    assert_eq!(b.releases(), 3);
}

#[test]
fn a_wait_config_allows_waiting_only_with_waiters() {
    assert!(!WaitConfig::NO_WAIT.allows_waiting());
    let one = WaitConfig::new(1, Duration::from_millis(5), WaitOrder::Fifo).unwrap();
    assert!(one.allows_waiting());
}

#[test]
fn a_woken_waiter_that_lost_its_slot_rejoins_at_its_old_turn_while_there_is_room() {
    let cfg = waits(2, 10, WaitOrder::Fifo);
    let mut q: WaitQueue<u32, 4> = WaitQueue::new();
    let first = q.push(1, Instant::ZERO, &cfg).unwrap();
    q.push(2, Instant::ZERO, &cfg).unwrap();
    assert_eq!((q.len(), q.is_empty()), (2, false));
    assert_eq!(q.pop(WaitOrder::Fifo), Some(1));
    assert_eq!(q.len(), 1);
    let deadline = Deadline::after(Instant::ZERO, Duration::from_millis(10));
    // Woken, it found the slot taken: back in, ahead of the waiter that came after it.
    assert_eq!(q.rejoin(1, first, deadline, &cfg), Ok(first));
    assert_eq!((q.len(), q.is_empty()), (2, false));
    q.push(3, Instant::ZERO, &cfg).unwrap_err();
    assert_eq!(
        q.rejoin(9, first, deadline, &cfg),
        Err(9),
        "full: handed back"
    );
    assert_eq!(q.pop(WaitOrder::Fifo), Some(1));
    assert_eq!(q.pop(WaitOrder::Fifo), Some(2));
    assert!(q.is_empty());
}
