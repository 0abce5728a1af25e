//! Bulkhead and wait queue under arbitrary operation sequences: admit / try_admit /
//! settle(verdict) / drop / time steps (huge jumps, backwards, the end of time) and waiter
//! queue operations, checked against a plain model after every step.
#![no_main]

use core::cell::Cell;
use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::bulkhead::wait::{Ticket, WaitConfig, WaitOrder, WaitQueue};
use resilix::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit, ReleaseHook};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

#[derive(Default)]
struct Signals(Cell<u32>);
impl ReleaseHook for Signals {
    fn on_release(&self) {
        self.0.set(self.0.get().wrapping_add(1));
    }
}

fn verdict(b: u8) -> Verdict {
    match b % 7 {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Overload { retry_after: None },
        3 => Verdict::Overload {
            retry_after: Some(Duration::from_secs(u64::from(b))),
        },
        4 => Verdict::Transient,
        5 => Verdict::Timeout,
        _ => Verdict::Rejected(RejectReason::ALL[usize::from(b) % 6]),
    }
}

const QUEUE: usize = 4;

fuzz_target!(|data: &[u8]| {
    let Some((&head, ops)) = data.split_first() else {
        return;
    };
    let cap = match head % 5 {
        4 => u32::MAX,
        n => u32::from(n) + 1,
    };
    let order = if head & 0x80 == 0 { WaitOrder::Fifo } else { WaitOrder::Lifo };
    let max_waiters = u32::from((head >> 3) & 0x7);
    let wait = if max_waiters == 0 {
        WaitConfig::NO_WAIT
    } else {
        WaitConfig::new(max_waiters, Duration::from_millis(100), order).unwrap()
    };
    let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(cap).unwrap(), Signals::default());
    let mut held: Vec<BulkheadPermit<'_, Signals>> = Vec::new();
    let mut released = 0u32;
    let mut now = Instant::from_secs(1);
    let mut rng = SeededRandom::new(u64::from(head));

    let mut queue: WaitQueue<u32, QUEUE> = WaitQueue::new();
    // Model: (arrival, deadline, id, ticket)
    let mut model: Vec<(u64, Instant, u32, Ticket)> = Vec::new();
    let mut arrivals = 0u64;

    for pair in ops.chunks(2) {
        let (code, arg) = (pair[0], pair.get(1).copied().unwrap_or(0));
        let mut env = Env::new(now, &mut rng);
        match code % 12 {
            0 | 1 => match bulkhead.admit(&mut env) {
                Ok(p) => held.push(p),
                Err(r) => {
                    assert_eq!(r.reason(), RejectReason::BulkheadFull);
                    assert_eq!(held.len() as u64, u64::from(cap), "refused while not full");
                }
            },
            2 => match bulkhead.try_admit() {
                Ok(p) => held.push(p),
                Err(full) => {
                    assert_eq!(full.held(), cap);
                    assert_eq!(full.releases(), released);
                }
            },
            3 | 4 if !held.is_empty() => {
                let p = held.swap_remove(usize::from(arg) % held.len());
                p.settle(&verdict(arg), &mut env);
                released = released.wrapping_add(1);
            }
            5 if !held.is_empty() => {
                drop(held.swap_remove(usize::from(arg) % held.len()));
                released = released.wrapping_add(1);
            }
            6 => now = now + Duration::from_millis(u64::from(arg)),
            7 => {
                now = match arg % 3 {
                    0 => now - Duration::from_secs(u64::from(arg)),
                    1 => now + Duration::from_secs(365 * 24 * 3600),
                    _ => Instant::MAX,
                }
            }
            8 => {
                // Unique ids, so the model can tell waiters apart.
                let id = arrivals as u32;
                let limit = QUEUE.min(wait.max_waiters() as usize);
                match queue.push(id, now, &wait) {
                    Ok(t) => {
                        assert!(model.len() < limit);
                        model.push((arrivals, now + wait.max_wait(), id, t));
                        arrivals += 1;
                    }
                    Err(back) => {
                        assert_eq!(back, id);
                        assert_eq!(model.len(), limit, "refused a waiter with room left");
                    }
                }
            }
            9 => {
                let expected = match order {
                    WaitOrder::Fifo => model.iter().enumerate().min_by_key(|(_, w)| w.0),
                    WaitOrder::Lifo => model.iter().enumerate().max_by_key(|(_, w)| w.0),
                }
                .map(|(i, _)| i);
                let got = queue.pop(order);
                assert_eq!(got, expected.map(|i| model.remove(i).2));
            }
            10 => {
                let got = queue.pop_expired(now);
                match got {
                    Some(id) => {
                        let i = model.iter().position(|w| w.2 == id && w.1 <= now).unwrap();
                        let d = model[i].1;
                        assert!(model.iter().all(|w| w.1 >= d), "earliest deadline first");
                        model.remove(i);
                    }
                    None => assert!(model.iter().all(|w| w.1 > now)),
                }
            }
            11 if !model.is_empty() => {
                let (_, _, id, t) = model.remove(usize::from(arg) % model.len());
                assert_eq!(queue.remove(t), Some(id));
                assert_eq!(queue.remove(t), None);
            }
            _ => {}
        }
        assert_eq!(bulkhead.held() as usize, held.len());
        assert!(bulkhead.held() <= cap);
        assert_eq!(bulkhead.releases(), released);
        assert_eq!(bulkhead.hook().0.get(), released);
        assert_eq!(queue.len(), model.len());
        assert_eq!(
            queue.next_deadline().map(|d| d.instant()),
            model.iter().map(|w| w.1).min()
        );
    }
    drop(held);
    assert_eq!(bulkhead.held(), 0);
});
