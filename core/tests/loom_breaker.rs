//! Loom models of the half-open probe count: every interleaving of two threads.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_breaker`
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};

use resilix::Verdict;
use resilix::breaker::{Breaker, CallRing, CircuitState, Config, SlowCalls};
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

/// Transitions heard, in order: (from, to), and when the last one happened.
struct Transitions(
    loom::sync::Mutex<Vec<(CircuitState, CircuitState)>>,
    AtomicU32,
);

impl Observer for Transitions {
    fn on_event(&self, event: &Event) {
        if let Event::CircuitTransition { from, to, at, .. } = *event {
            self.0.lock().unwrap().push((from, to));
            self.1
                .store((at.as_nanos() / 1_000_000_000) as u32, Ordering::SeqCst);
        }
    }
}

fn transitions() -> &'static Transitions {
    Box::leak(Box::new(Transitions(
        loom::sync::Mutex::new(Vec::new()),
        AtomicU32::new(0),
    )))
}

/// Admits two calls at zero, then settles each on a thread of its own, with its verdict at its
/// second (also its generator's seed), reported to `observer`; returns once both have settled.
fn settle_two_racing<O: Observer + Sync>(
    breaker: &'static Breaker<CallRing<1>>,
    settles: [(Verdict, u64); 2],
    observer: &'static O,
) {
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let permits = [
        breaker.admit(&mut env).unwrap(),
        breaker.admit(&mut env).unwrap(),
    ];
    let threads: Vec<_> = permits
        .into_iter()
        .zip(settles)
        .map(|(permit, (verdict, at))| {
            loom::thread::spawn(move || {
                let mut rng = SeededRandom::new(at);
                let mut env = Env::new(Instant::from_secs(at), &mut rng).with_observer(observer);
                permit.settle(&verdict, &mut env);
            })
        })
        .collect();
    for h in threads {
        h.join().unwrap();
    }
}

fn bounded() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// One-call ring, opens on one failure, no jitter, the default 5 s wait and 60 s half-open.
fn one_failure_opens() -> Config {
    Config {
        minimum_calls: 1,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    }
}

#[test]
fn two_racing_openers_leave_one_whole_end_of_theirs() {
    // Two failures settle at 1 s and 2 s, both deciding to open from the same closed word.
    // Whatever the interleaving: one transition, one event, and the end of the wait is one of
    // the two openers' (6 s after 1 s, or 7 s after 2 s), read back whole (era and word of one
    // writer, never a torn mix), and the wait ends there.
    bounded().check(|| {
        let breaker: &'static Breaker<CallRing<1>> = Box::leak(Box::new(
            Breaker::count_based(one_failure_opens(), 1).unwrap(),
        ));
        let events = transitions();
        settle_two_racing(
            breaker,
            [(Verdict::Transient, 1), (Verdict::Transient, 2)],
            events,
        );
        assert_eq!(
            *events.0.lock().unwrap(),
            [(CircuitState::Closed, CircuitState::Open)]
        );
        let mut rng = SeededRandom::new(3);
        let mut env = Env::new(Instant::from_secs(3), &mut rng);
        let end = breaker.admit(&mut env).map(|_| ()).unwrap_err().retry_at();
        let opened_at = u64::from(events.1.load(Ordering::SeqCst));
        assert!(opened_at == 1 || opened_at == 2, "{opened_at}");
        assert!(
            end == Some(Instant::from_secs(6)) || end == Some(Instant::from_secs(7)),
            "{end:?}"
        );
        env.now = end.unwrap() - core::time::Duration::from_nanos(4);
        assert!(breaker.admit(&mut env).is_err(), "not over a tick before");
        env.now = end.unwrap();
        assert!(
            breaker.admit(&mut env).unwrap().is_probe(),
            "the wait ends there"
        );
    });
}

/// Opened at 1 s, probe taken at 6 s and handed back: half-open until 66 s.
fn half_open_with_probe() -> (
    &'static Breaker<CallRing<1>>,
    resilix::breaker::BreakerPermit<'static, CallRing<1>>,
) {
    let breaker: &'static Breaker<CallRing<1>> = Box::leak(Box::new(
        Breaker::count_based(one_failure_opens(), 1).unwrap(),
    ));
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    breaker
        .admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    env.now = Instant::from_secs(6);
    let probe = breaker.admit(&mut env).unwrap();
    assert!(probe.is_probe());
    (breaker, probe)
}

#[test]
fn the_half_open_expiry_racing_the_late_settle_of_its_probe_decides_once() {
    // At 70 s (past the 66 s bound) one thread arrives, re-opening the circuit; the other
    // settles the probe as a success, which closes it. Exactly one of them wins: either the
    // settle closed it first (the arrival is then admitted, closed) or the expiry re-opened it
    // (the success is then late and ignored; the arrival refused until 75 s).
    bounded().check(|| {
        let (breaker, probe) = half_open_with_probe();
        let events = transitions();
        let late = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            let mut env = Env::new(Instant::from_secs(70), &mut rng).with_observer(events);
            probe.settle(&Verdict::Success, &mut env);
        });
        let arrival = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(3);
            let mut env = Env::new(Instant::from_secs(70), &mut rng).with_observer(events);
            breaker
                .admit(&mut env)
                .map(|p| p.is_probe())
                .map_err(|r| r.retry_at())
        });
        late.join().unwrap();
        let arrived = arrival.join().unwrap();
        let seen = events.0.lock().unwrap().clone();
        match arrived {
            Ok(probe) => {
                assert!(!probe, "closed: a counted call");
                assert_eq!(seen, [(CircuitState::HalfOpen, CircuitState::Closed)]);
                assert_eq!(breaker.state(), CircuitState::Closed);
            }
            Err(retry_at) => {
                assert_eq!(retry_at, Some(Instant::from_secs(75)));
                assert_eq!(seen, [(CircuitState::HalfOpen, CircuitState::Open)]);
                assert_eq!(
                    breaker.state(),
                    CircuitState::Open,
                    "the late success was ignored"
                );
            }
        }
    });
}

#[test]
fn the_half_open_expiry_racing_a_new_arrival_reopens_once_then_probes_afresh() {
    // Two arrivals after the bound: at 70 s and at 76 s. One of them re-opens the circuit
    // (one event); the other is refused until the new end, or, at 76 s after a re-open at
    // 70 s, takes the fresh probe. Never two re-opens, never a probe of the old period, and
    // the hung probe's outcome afterwards changes nothing.
    bounded().check(|| {
        let (breaker, probe) = half_open_with_probe();
        let events = transitions();
        let threads: Vec<_> = [70u64, 76]
            .into_iter()
            .map(|at| {
                loom::thread::spawn(move || {
                    let mut rng = SeededRandom::new(at);
                    let mut env = Env::new(Instant::from_secs(at), &mut rng).with_observer(events);
                    // The permit is dropped at once: a probe's place is freed again.
                    breaker
                        .admit(&mut env)
                        .map(|p| p.is_probe())
                        .map_err(|r| r.retry_at())
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
        // Events may be heard out of order (each is emitted after its swap): count them.
        let seen = events.0.lock().unwrap().clone();
        let count = |t| seen.iter().filter(|s| **s == t).count();
        assert_eq!(
            count((CircuitState::HalfOpen, CircuitState::Open)),
            1,
            "{seen:?}"
        );
        match results[..] {
            // The 70 s arrival re-opened until 75 s; the 76 s one then took the fresh probe.
            [Err(Some(a)), Ok(true)] => {
                assert_eq!(a, Instant::from_secs(75));
                assert_eq!(count((CircuitState::Open, CircuitState::HalfOpen)), 1);
                assert_eq!(seen.len(), 2);
                assert_eq!(breaker.state(), CircuitState::HalfOpen);
            }
            // Both refused, one of them having re-opened: until 75 s or 81 s (whichever
            // racer's end was left, if both re-opened at once), never without a retry-at.
            [Err(Some(a)), Err(Some(b))] => {
                let ends = [Instant::from_secs(75), Instant::from_secs(81)];
                assert!(ends.contains(&a) && ends.contains(&b), "{a:?} {b:?}");
                assert_eq!(seen.len(), 1);
                assert_eq!(breaker.state(), CircuitState::Open);
            }
            // The 76 s arrival re-opened until 81 s first; the 70 s arrival's clock reads 11 s
            // before that end, more than the longest wait: time gone backwards for it, so it
            // probes early (the documented rule), never waits longer than the longest wait.
            [Ok(true), Err(Some(b))] => {
                assert_eq!(b, Instant::from_secs(81));
                assert_eq!(count((CircuitState::Open, CircuitState::HalfOpen)), 1);
                assert_eq!(seen.len(), 2);
                assert_eq!(breaker.state(), CircuitState::HalfOpen);
            }
            ref other => panic!("{other:?}"),
        }
        let state = breaker.state();
        let mut rng = SeededRandom::new(9);
        let mut env = Env::new(Instant::from_secs(80), &mut rng);
        probe.settle(&Verdict::Success, &mut env);
        assert_eq!(breaker.state(), state, "the hung probe's outcome is late");
    });
}

/// A breaker on a ring of two calls that opens when more than half of them failed, or more
/// than half were slow (1 s or longer): one failure and one slow call in the window keep it
/// closed, a second of either kind opens it. No jitter.
fn two_calls_half_and_half() -> &'static Breaker<CallRing<1>> {
    let config = Config {
        failure_rate_above_percent: Some(50),
        minimum_calls: 2,
        slow_calls: Some(SlowCalls {
            slower_than: core::time::Duration::from_secs(1),
            above_percent: 50,
        }),
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    Box::leak(Box::new(Breaker::count_based(config, 2).unwrap()))
}

/// One call on this thread, admitted at 0 s and settled with `verdict` at `settled_at` (a
/// success settled at 2 s is slow).
fn call(breaker: &Breaker<CallRing<1>>, verdict: &Verdict, settled_at: u64) {
    let mut rng = SeededRandom::new(settled_at);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let permit = breaker.admit(&mut env).expect("closed: admitted");
    env.now = Instant::from_secs(settled_at);
    permit.settle(verdict, &mut env);
}

#[test]
fn a_call_claimed_before_the_lap_is_taken_back_lands_inside_the_ring() {
    // The ring's cursor runs over two laps (0..4 for two calls); the record that claims 3 takes
    // it back a lap. A record that claims while that take-back is pending gets 4 and must use
    // slot 4 % 2 = 0; a slot past the ring's two is never overwritten and its bits would count
    // forever. Here a failure and a slow call race from position 3: whatever the interleaving,
    // the window holds exactly them; after two quick successes it holds neither, so one more
    // failure and one more slow call (one of each in two calls, 50 %) leave it closed, and
    // only a second failure in a row, replacing the slow call, opens it.
    bounded().check(|| {
        let breaker = two_calls_half_and_half();
        for _ in 0..3 {
            call(breaker, &Verdict::Success, 0);
        }
        settle_two_racing(
            breaker,
            [(Verdict::Transient, 0), (Verdict::Success, 2)],
            &(),
        );
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "one failure and one slow call of two calls: neither rate is above 50 %"
        );
        // Two quick successes replace both: the window holds two calls, none of them bad.
        call(breaker, &Verdict::Success, 0);
        call(breaker, &Verdict::Success, 0);
        call(breaker, &Verdict::Transient, 0);
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "one failure of two calls opened it: a raced failure was left past the ring"
        );
        call(breaker, &Verdict::Success, 2);
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "one slow call of two calls opened it: a raced slow call was left past the ring"
        );
        // The failure replaces the failure (still one of each), then the slow call: two
        // failures of two calls.
        call(breaker, &Verdict::Transient, 0);
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "the failure replaced the failure"
        );
        call(breaker, &Verdict::Transient, 0);
        assert_eq!(
            breaker.state(),
            CircuitState::Open,
            "two failures of two calls, the slow call gone"
        );
    });
}
