//! Any interleaving of admit, queue, settle, cancel and time steps (backwards, huge, to the end
//! of time): no panic, the in-flight count equals the permits held, the limit stays in bounds.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::limiter::{Admission, Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

#[derive(Clone, Debug)]
enum Op {
    Admit,
    Queue,
    Settle(usize, u8),
    Drop(usize),
    Forward(u64),
    Back(u64),
    End,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Admit),
        1 => Just(Op::Queue),
        4 => (any::<usize>(), 0u8..6).prop_map(|(i, v)| Op::Settle(i, v)),
        1 => any::<usize>().prop_map(Op::Drop),
        3 => (0u64..50_000_000).prop_map(Op::Forward),
        1 => any::<u64>().prop_map(Op::Back),
        1 => Just(Op::End),
    ]
}

fn verdict(v: u8) -> Verdict {
    match v {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Overload { retry_after: None },
        3 => Verdict::Timeout,
        4 => Verdict::Transient,
        _ => Verdict::Rejected(RejectReason::BulkheadFull),
    }
}

fn config(algo: u8) -> LimiterConfig {
    let base = match algo % 3 {
        0 => LimiterConfig::gradient2(),
        1 => LimiterConfig::vegas(),
        _ => LimiterConfig::aimd(),
    };
    LimiterConfig {
        min_limit: 1,
        initial_limit: 3,
        max_limit: 12,
        min_window: Duration::from_millis(1),
        max_window: Duration::from_millis(20),
        window_samples: 2,
        probe_multiplier: 1,
        queue_factor: 1.5,
        ..base
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn in_flight_is_conserved(algo in 0u8..3, ops in prop::collection::vec(op(), 0..300)) {
        let limiter = Limiter::new(config(algo)).unwrap();
        let mut rng = SeededRandom::new(9);
        let mut now = Instant::ZERO;
        let mut held = Vec::new();
        let mut places = Vec::new();
        for op in ops {
            let mut env = Env::new(now, &mut rng);
            match op {
                Op::Admit => {
                    let limit = limiter.limit();
                    match limiter.admit(&mut env) {
                        Ok(p) => {
                            prop_assert!(p.in_flight_at_admission() <= limit);
                            held.push(p);
                        }
                        Err(r) => {
                            prop_assert_eq!(r.reason(), RejectReason::LimiterFull);
                            prop_assert!(limiter.in_flight() >= limit);
                        }
                    }
                }
                Op::Queue => match limiter.admit_or_queue(&mut env) {
                    Admission::Admitted(p) => held.push(p),
                    Admission::Wait(place) => places.push(place),
                    Admission::Refused(_) => {}
                },
                Op::Settle(i, v) if !held.is_empty() => {
                    let p = held.swap_remove(i % held.len());
                    p.settle(&verdict(v), &mut env);
                }
                Op::Drop(i) if !held.is_empty() => drop(held.swap_remove(i % held.len())),
                Op::Drop(_) if !places.is_empty() => {
                    let place = places.pop().unwrap();
                    if let Ok(p) = place.try_admit(&mut env) { held.push(p) }
                }
                Op::Forward(ns) => now = now + Duration::from_nanos(ns),
                Op::Back(ns) => now = now - Duration::from_nanos(ns),
                Op::End => now = Instant::MAX,
                _ => {}
            }
            prop_assert_eq!(limiter.in_flight() as usize, held.len());
            prop_assert_eq!(limiter.waiting() as usize, places.len());
            prop_assert!((1..=12).contains(&limiter.limit()));
        }
        drop(held);
        drop(places);
        prop_assert_eq!(limiter.in_flight(), 0);
        prop_assert_eq!(limiter.waiting(), 0);
    }
}
