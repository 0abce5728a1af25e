//! Random interleavings of admit / try_admit / settle(verdict) / drop / time steps never break
//! the bulkhead's books: held == admitted − released, held ≤ cap, one release signal per
//! release, and a refusal only when full.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit, ReleaseHook};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

#[derive(Clone, Debug)]
enum Op {
    Admit,
    TryAdmit,
    Settle(usize, Verdict),
    Drop(usize),
    Advance(u64),
    Backwards(u64),
    EndOfTime,
}

fn verdict() -> impl Strategy<Value = Verdict> {
    prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Answered),
        any::<Option<u32>>().prop_map(|s| Verdict::Overload {
            retry_after: s.map(|s| Duration::from_secs(u64::from(s)))
        }),
        Just(Verdict::Transient),
        Just(Verdict::Timeout),
        (0..6usize).prop_map(|i| Verdict::Rejected(RejectReason::ALL[i])),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Admit),
        2 => Just(Op::TryAdmit),
        3 => (any::<usize>(), verdict()).prop_map(|(i, v)| Op::Settle(i, v)),
        2 => any::<usize>().prop_map(Op::Drop),
        1 => any::<u64>().prop_map(Op::Advance),
        1 => any::<u64>().prop_map(Op::Backwards),
        1 => Just(Op::EndOfTime),
    ]
}

#[derive(Default)]
struct Signals(std::cell::Cell<u32>);
impl ReleaseHook for Signals {
    fn on_release(&self) {
        self.0.set(self.0.get() + 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn books_always_balance(cap in prop_oneof![1u32..=4, Just(u32::MAX)], ops in prop::collection::vec(op(), 0..200)) {
        let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(cap).unwrap(), Signals::default());
        let mut held: Vec<BulkheadPermit<'_, Signals>> = Vec::new();
        let (mut admitted, mut released) = (0u32, 0u32);
        let mut now = Instant::ZERO;
        let mut rng = SeededRandom::new(u64::from(cap));
        for op in ops {
            let mut env = Env::new(now, &mut rng);
            match op {
                Op::Admit => match bulkhead.admit(&mut env) {
                    Ok(p) => {
                        admitted += 1;
                        prop_assert_eq!(p.held_at_admission(), admitted - released);
                        held.push(p);
                    }
                    Err(r) => {
                        prop_assert_eq!(r.reason(), RejectReason::BulkheadFull);
                        prop_assert_eq!(admitted - released, cap, "refused while not full");
                    }
                },
                Op::TryAdmit => match bulkhead.try_admit() {
                    Ok(p) => {
                        admitted += 1;
                        held.push(p);
                    }
                    Err(full) => {
                        prop_assert_eq!(full.held(), cap);
                        prop_assert_eq!(full.releases(), released);
                    }
                },
                Op::Settle(i, v) if !held.is_empty() => {
                    let p = held.swap_remove(i % held.len());
                    p.settle(&v, &mut env);
                    released += 1;
                }
                Op::Drop(i) if !held.is_empty() => {
                    drop(held.swap_remove(i % held.len()));
                    released += 1;
                }
                Op::Settle(..) | Op::Drop(_) => {}
                Op::Advance(ns) => now = now + Duration::from_nanos(ns),
                Op::Backwards(ns) => now = now - Duration::from_nanos(ns),
                Op::EndOfTime => now = Instant::MAX,
            }
            prop_assert_eq!(bulkhead.held(), admitted - released);
            prop_assert_eq!(bulkhead.held() as usize, held.len());
            prop_assert!(bulkhead.held() <= cap);
            prop_assert_eq!(bulkhead.releases(), released);
            prop_assert_eq!(bulkhead.hook().0.get(), released);
        }
        drop(held);
        prop_assert_eq!(bulkhead.held(), 0);
    }
}
