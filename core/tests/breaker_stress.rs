//! Many threads against one breaker: the invariants that must be exact stay exact.
//!
//! * half-open admits exactly N probes however many threads ask at once;
//! * probes that are dropped give their slots back: never stuck half-open;
//! * a transition raced by every thread happens, and is reported, exactly once.
#![cfg(not(loom))]

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};

use resilix::Verdict;
use resilix::breaker::{Breaker, CircuitState, Config};
use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

const THREADS: u64 = 4;

#[derive(Default)]
struct Counts {
    opened: AtomicU32,
    half_opened: AtomicU32,
    closed: AtomicU32,
}

impl Observer for Counts {
    fn on_event(&self, event: &Event) {
        if let Event::CircuitTransition { to, .. } = event {
            let c = match to {
                CircuitState::Open => &self.opened,
                CircuitState::HalfOpen => &self.half_opened,
                CircuitState::Closed => &self.closed,
                _ => return,
            };
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn config(probes: u8) -> Config {
    Config {
        minimum_calls: 1,
        half_open_probes: probes,
        probes_to_close: probes,
        ..Config::DEFAULT
    }
}

fn open_it(breaker: &Breaker, counts: &Counts) {
    let mut rng = SeededRandom::new(0);
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(counts);
    breaker
        .admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[test]
fn exactly_n_probes_are_admitted_under_four_threads() {
    for round in 0..200u64 {
        let probes = 1 + (round % 15) as u8;
        let breaker = Breaker::new(config(probes)).unwrap();
        let counts = Counts::default();
        open_it(&breaker, &counts);
        let admitted = AtomicU32::new(0);
        let barrier = Barrier::new(THREADS as usize);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (breaker, counts, admitted, barrier) = (&breaker, &counts, &admitted, &barrier);
                s.spawn(move || {
                    let mut rng = SeededRandom::new(round * 16 + t);
                    let mut env = Env::new(Instant::from_secs(60), &mut rng).with_observer(counts);
                    let mut held = Vec::new();
                    barrier.wait();
                    for _ in 0..50 {
                        if let Ok(p) = breaker.admit(&mut env) {
                            assert!(p.is_probe());
                            admitted.fetch_add(1, Ordering::Relaxed);
                            held.push(p);
                        }
                    }
                    barrier.wait(); // hold every probe until all threads have tried
                    held.len()
                });
            }
        });
        assert_eq!(
            admitted.load(Ordering::Relaxed),
            probes as u32,
            "round {round}"
        );
        assert_eq!(
            counts.half_opened.load(Ordering::Relaxed),
            1,
            "one transition, one event"
        );
        // Every probe was dropped: all slots are free, the breaker still half-open.
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        assert_eq!(breaker.probes_in_flight(), 0);
    }
}

#[test]
fn dropped_probes_never_leave_it_stuck_and_never_exceed_n() {
    let probes = 3u8;
    let breaker = Breaker::new(config(probes)).unwrap();
    let counts = Counts::default();
    open_it(&breaker, &counts);
    let holding = AtomicU32::new(0);
    let peak = AtomicU32::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (breaker, counts, holding, peak) = (&breaker, &counts, &holding, &peak);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                let mut env = Env::new(Instant::from_secs(60), &mut rng).with_observer(counts);
                for i in 0..20_000u32 {
                    if let Ok(p) = breaker.admit(&mut env) {
                        let now_holding = holding.fetch_add(1, Ordering::AcqRel) + 1;
                        peak.fetch_max(now_holding, Ordering::Relaxed);
                        assert!(now_holding <= probes as u32, "{now_holding} probes at once");
                        assert!(breaker.probes_in_flight() <= probes as u32);
                        holding.fetch_sub(1, Ordering::AcqRel);
                        if i % 2 == 0 {
                            drop(p);
                        } else {
                            p.settle(
                                &Verdict::Rejected(resilix::RejectReason::LimiterFull),
                                &mut env,
                            );
                        }
                    }
                }
            });
        }
    });
    assert!(peak.load(Ordering::Relaxed) >= 1);
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    assert_eq!(breaker.probes_in_flight(), 0, "every slot came back");
    // Not stuck: N probes succeed and close it.
    let mut rng = SeededRandom::new(9);
    let mut env = Env::new(Instant::from_secs(61), &mut rng).with_observer(&counts);
    let held: Vec<_> = (0..probes)
        .map(|_| breaker.admit(&mut env).unwrap())
        .collect();
    for p in held {
        p.settle(&Verdict::Success, &mut env);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(counts.closed.load(Ordering::Relaxed), 1);
}

#[test]
fn a_raced_trip_and_a_raced_close_each_happen_once() {
    for round in 0..100u64 {
        let config = Config {
            minimum_calls: 4,
            half_open_probes: 4,
            probes_to_close: 4,
            ..Config::DEFAULT
        };
        let breaker = Breaker::new(config).unwrap();
        let counts = Counts::default();
        let barrier = Barrier::new(THREADS as usize);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (breaker, counts, barrier) = (&breaker, &counts, &barrier);
                s.spawn(move || {
                    let mut rng = SeededRandom::new(round * 8 + t);
                    let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(counts);
                    barrier.wait();
                    for _ in 0..10 {
                        if let Ok(p) = breaker.admit(&mut env) {
                            p.settle(&Verdict::Timeout, &mut env);
                        }
                    }
                    barrier.wait();
                    env.now = Instant::from_secs(100);
                    // Each thread takes one probe (4 threads, 4 probes) and succeeds.
                    let p = loop {
                        if let Ok(p) = breaker.admit(&mut env) {
                            break p;
                        }
                        std::hint::spin_loop();
                    };
                    barrier.wait();
                    p.settle(&Verdict::Success, &mut env);
                });
            }
        });
        assert_eq!(counts.opened.load(Ordering::Relaxed), 1, "round {round}");
        assert_eq!(counts.half_opened.load(Ordering::Relaxed), 1);
        assert_eq!(counts.closed.load(Ordering::Relaxed), 1);
        assert_eq!(breaker.state(), CircuitState::Closed);
    }
}
