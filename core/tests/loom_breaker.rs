//! Loom models of the half-open probe count: every interleaving of two threads.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_breaker`
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};

use resilix::Verdict;
use resilix::breaker::{Breaker, CircuitState, Config};
use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

/// A breaker with `probes` half-open probes, opened at zero; its wait is over at 60 s.
fn opened(probes: u8) -> Breaker {
    let config = Config {
        minimum_calls: 1,
        half_open_probes: probes,
        probes_to_close: probes,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    let breaker = Breaker::new(config).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    breaker
        .admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    breaker
}

const LATER: Instant = Instant::from_secs(60);

struct HalfOpened(AtomicU32);

impl Observer for HalfOpened {
    fn on_event(&self, event: &Event) {
        if let Event::CircuitTransition {
            to: CircuitState::HalfOpen,
            ..
        } = event
        {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn two_threads_racing_out_of_open_make_one_transition_and_one_event() {
    loom::model(|| {
        let breaker = Arc::new(opened(1));
        let events = Arc::new(HalfOpened(AtomicU32::new(0)));
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let (breaker, events) = (breaker.clone(), events.clone());
                loom::thread::spawn(move || {
                    let mut rng = SeededRandom::new(t);
                    let mut env = Env::new(LATER, &mut rng).with_observer(&*events);
                    breaker.admit(&mut env).map(|p| p.is_probe()).ok()
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(
            results.iter().any(|r| r.is_some()),
            "the wait is over: someone probes"
        );
        assert!(results.iter().flatten().all(|probe| *probe));
        assert_eq!(
            events.0.load(Ordering::SeqCst),
            1,
            "one transition, one event"
        );
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        assert_eq!(breaker.probes_in_flight(), 0, "both permits were dropped");
    });
}

#[test]
fn two_threads_holding_at_once_never_both_get_the_probe() {
    loom::model(|| {
        let breaker = Arc::new(opened(1));
        let holding = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let (breaker, holding) = (breaker.clone(), holding.clone());
                loom::thread::spawn(move || {
                    let mut rng = SeededRandom::new(t);
                    let mut env = Env::new(LATER, &mut rng);
                    if let Ok(permit) = breaker.admit(&mut env) {
                        let at_once = holding.fetch_add(1, Ordering::SeqCst) + 1;
                        assert_eq!(at_once, 1, "two probes in flight with N = 1");
                        holding.fetch_sub(1, Ordering::SeqCst);
                        drop(permit);
                    }
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(breaker.probes_in_flight(), 0);
        // Not stuck: the freed slot admits again.
        let mut rng = SeededRandom::new(5);
        let mut env = Env::new(LATER, &mut rng);
        assert!(breaker.admit(&mut env).is_ok());
    });
}

#[test]
fn a_dropped_probe_racing_a_settled_one_leaves_no_stuck_half_open() {
    loom::model(|| {
        let breaker = Arc::new(opened(2));
        let threads: Vec<_> = (0..2u64)
            .map(|t| {
                let breaker = breaker.clone();
                loom::thread::spawn(move || {
                    let mut rng = SeededRandom::new(t);
                    let mut env = Env::new(LATER, &mut rng);
                    let permit = breaker.admit(&mut env).expect("two probes for two threads");
                    if t == 0 {
                        permit.settle(&Verdict::Success, &mut env);
                    } else {
                        drop(permit);
                    }
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        assert_eq!(breaker.probes_in_flight(), 0);
        // One success recorded, one slot free: one more success closes it.
        let mut rng = SeededRandom::new(7);
        let mut env = Env::new(LATER, &mut rng);
        let p = breaker.admit(&mut env).unwrap();
        assert!(breaker.admit(&mut env).is_err(), "exactly N = 2 taken");
        p.settle(&Verdict::Success, &mut env);
        assert_eq!(breaker.state(), CircuitState::Closed);
    });
}
