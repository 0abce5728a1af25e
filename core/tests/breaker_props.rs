//! Random interleavings of admit, settle, drop, operator actions and time steps (forwards,
//! backwards, and huge jumps) never break the breaker's invariants:
//!
//! * half-open never has more than N probes in flight, nor more than N taken;
//! * a permit from an earlier epoch changes nothing when it settles or is dropped;
//! * every transition is reported once, and each starts where the previous one ended;
//! * nothing panics, and once every permit is gone the breaker admits again within its longest
//!   open wait (unless the operator forced it open): never stuck.
#![cfg(not(loom))]

use core::cell::RefCell;
use core::time::Duration;

use proptest::prelude::*;
use resilix::breaker::{
    Breaker, BreakerPermit, CallRing, CircuitState, Config, OpenBackoff, OutcomeWindow,
};
use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

#[derive(Default)]
struct Log(RefCell<Vec<(CircuitState, CircuitState)>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        if let Event::CircuitTransition { from, to, .. } = *event {
            self.0.borrow_mut().push((from, to));
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Admit,
    Settle(usize, u8),
    Drop(usize),
    Forward(u64),
    Backward(u64),
    Jump(u64),
    ForceOpen,
    Disable,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Admit),
        6 => (any::<usize>(), 0u8..6).prop_map(|(i, v)| Op::Settle(i, v)),
        3 => any::<usize>().prop_map(Op::Drop),
        3 => (0u64..20_000_000_000).prop_map(Op::Forward),
        1 => (0u64..20_000_000_000).prop_map(Op::Backward),
        1 => any::<u64>().prop_map(Op::Jump),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::Disable),
        1 => Just(Op::Reset),
    ]
}

fn verdict(v: u8) -> Verdict {
    match v {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Overload { retry_after: None },
        3 => Verdict::Transient,
        4 => Verdict::Timeout,
        _ => Verdict::Rejected(RejectReason::BulkheadFull),
    }
}

fn config() -> impl Strategy<Value = Config> {
    (
        1u8..=4,
        1u32..=4,
        0u8..60,
        any::<bool>(),
        prop::option::of(1u32..4),
    )
        .prop_flat_map(|(probes, minimum_calls, jitter, backoff, consecutive)| {
            (1u8..=probes).prop_map(move |to_close| Config {
                minimum_calls,
                half_open_probes: probes,
                probes_to_close: to_close,
                open_jitter_percent: jitter,
                consecutive_failures: consecutive,
                open_backoff: backoff.then_some(OpenBackoff {
                    multiplier_percent: 300,
                    max_wait: Duration::from_secs(40),
                }),
                ..Config::DEFAULT
            })
        })
}

// (`taken_in_this_half_open` counts probes admitted in the current half-open and not given back.)

/// Runs `ops` against `breaker`, checking every invariant after every step.
fn run<W: OutcomeWindow>(breaker: &Breaker<W>, ops: &[Op], seed: u64) {
    let config = breaker.config();
    let n = config.half_open_probes as u32;
    let log = Log::default();
    let mut rng = SeededRandom::new(seed);
    let mut now = Instant::from_secs(1);
    // Each live permit with the number of transitions seen when it was issued: its epoch.
    let mut live: Vec<(BreakerPermit<'_, W>, usize)> = Vec::new();
    let mut taken_in_this_half_open = 0u32;
    for op in ops {
        let mut env = Env::new(now, &mut rng).with_observer(&log);
        let before_events = log.0.borrow().len();
        let before_state = (breaker.state(), breaker.probes_in_flight());
        let mut stale = false;
        match op {
            Op::Admit => {
                if let Ok(p) = breaker.admit(&mut env) {
                    let epoch = log.0.borrow().len();
                    if p.is_probe() {
                        if epoch != before_events {
                            taken_in_this_half_open = 0;
                        }
                        taken_in_this_half_open += 1;
                    }
                    live.push((p, epoch));
                }
            }
            Op::Settle(i, v) if !live.is_empty() => {
                let (p, epoch) = live.swap_remove(i % live.len());
                stale = epoch != before_events;
                let v = verdict(*v);
                if !stale && p.is_probe() && !v.is_counted() {
                    taken_in_this_half_open -= 1; // a rejected probe is a dropped probe
                }
                p.settle(&v, &mut env);
            }
            Op::Drop(i) if !live.is_empty() => {
                let (p, epoch) = live.swap_remove(i % live.len());
                stale = epoch != before_events;
                if !stale && p.is_probe() {
                    taken_in_this_half_open -= 1; // its slot is free again
                }
                drop(p);
            }
            Op::Forward(d) => now = now + Duration::from_nanos(*d),
            Op::Backward(d) => now = now - Duration::from_nanos(*d),
            Op::Jump(t) => now = Instant::from_nanos(*t),
            Op::ForceOpen => breaker.force_open(&mut env),
            Op::Disable => breaker.disable(&mut env),
            Op::Reset => breaker.reset(&mut env),
            _ => {}
        }
        let events = log.0.borrow();
        if stale {
            assert_eq!(
                events.len(),
                before_events,
                "a late permit caused a transition"
            );
            assert_eq!(
                (breaker.state(), breaker.probes_in_flight()),
                before_state,
                "a late permit changed the state"
            );
        }
        assert!(
            breaker.probes_in_flight() <= n,
            "more than N probes in flight"
        );
        if breaker.state() == CircuitState::HalfOpen {
            assert!(taken_in_this_half_open <= n, "more than N probes taken");
        } else {
            assert_eq!(breaker.probes_in_flight(), 0);
        }
        for pair in events.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "transitions chain: {events:?}");
        }
        if let Some(last) = events.last() {
            assert_eq!(
                last.1,
                breaker.state(),
                "the last event names the current state"
            );
        }
    }
    // Never stuck: with every permit gone, the breaker admits within its longest wait.
    drop(live);
    if breaker.state() == CircuitState::ForcedOpen {
        return;
    }
    let mut env = Env::new(now, &mut rng).with_observer(&log);
    if breaker.admit(&mut env).is_err() {
        env.now = now + config.longest_open_wait() + Duration::from_millis(1);
        assert!(
            breaker.admit(&mut env).is_ok(),
            "stuck {:?} with {} probes in flight",
            breaker.state(),
            breaker.probes_in_flight()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn time_window_invariants(config in config(), ops in prop::collection::vec(op(), 1..120), seed: u64) {
        let breaker = Breaker::new(config).unwrap();
        run(&breaker, &ops, seed);
    }

    #[test]
    fn count_window_invariants(config in config(), ops in prop::collection::vec(op(), 1..120), seed: u64) {
        let breaker: Breaker<CallRing<1>> = Breaker::count_based(config, 8).unwrap();
        run(&breaker, &ops, seed);
    }

    /// A permit from an old epoch settled as every verdict leaves the breaker as it found it.
    #[test]
    fn an_old_permit_changes_nothing(v in 0u8..6, probe in any::<bool>(), seed: u64) {
        let config = Config { minimum_calls: 1, ..Config::DEFAULT };
        let breaker = Breaker::new(config).unwrap();
        let mut rng = SeededRandom::new(seed);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        breaker.admit(&mut env).unwrap().settle(&Verdict::Transient, &mut env);
        env.now = Instant::from_secs(10);
        let old = if probe {
            breaker.admit(&mut env).unwrap()
        } else {
            breaker.reset(&mut env);
            breaker.admit(&mut env).unwrap()
        };
        // Move to a later half-open with one probe in flight.
        breaker.reset(&mut env);
        breaker.admit(&mut env).unwrap().settle(&Verdict::Transient, &mut env);
        env.now = Instant::from_secs(20);
        let current = breaker.admit(&mut env).unwrap();
        prop_assert!(current.is_probe());
        old.settle(&verdict(v), &mut env);
        prop_assert_eq!(breaker.state(), CircuitState::HalfOpen);
        prop_assert_eq!(breaker.probes_in_flight(), 1);
        prop_assert!(breaker.admit(&mut env).is_err());
        drop(current);
    }
}
