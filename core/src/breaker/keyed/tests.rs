//! Placement, eviction and overflow of the keyed breaker, on a manual timeline.

use core::time::Duration;

use super::*;
use crate::breaker::{CircuitState, SlowCalls};
use crate::random::SeededRandom;

extern crate std;

const FAIL: Verdict = Verdict::Transient;
const OK: Verdict = Verdict::Success;
const T0: Instant = Instant::from_secs(1);

fn config() -> Config {
    Config {
        minimum_calls: 4,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    }
}

fn call<const N: usize, W: OutcomeWindow>(
    t: &KeyedBreaker<N, W>,
    key: u64,
    now: Instant,
    v: Verdict,
) {
    let mut rng = SeededRandom::new(key);
    let mut env = Env::new(now, &mut rng);
    let p = t.admit(key, &mut env).expect("admitted");
    p.settle(&v, &mut env);
}

fn admits<const N: usize, W: OutcomeWindow>(
    t: &KeyedBreaker<N, W>,
    key: u64,
    now: Instant,
) -> bool {
    let mut rng = SeededRandom::new(key);
    t.admit(key, &mut Env::new(now, &mut rng)).is_ok()
}

/// Keys whose candidate entries are all the same single entry of a one-entry table.
const A: u64 = 1;
const B: u64 = 2;
const C: u64 = 3;

#[test]
fn memory_per_key_is_one_breaker_and_a_tag() {
    use core::mem::size_of;
    let entry = size_of::<Entry<TimeBuckets<10>>>();
    let ring_entry = size_of::<Entry<CallRing<7>>>();
    assert!(entry >= size_of::<Breaker>() + size_of::<Tag>());
    // The table is its entries, the overflow breaker and the writer flag: nothing per key
    // but the entry, however many keys pass through.
    let overhead = |total: usize, one: usize| total - 64 * one;
    assert!(overhead(size_of::<KeyedBreaker<64>>(), entry) <= size_of::<Breaker>() + 8);
    assert!(
        overhead(size_of::<KeyedBreaker<64, CallRing<7>>>(), ring_entry)
            <= size_of::<Breaker<CallRing<7>>>() + 8
    );
    #[cfg(target_pointer_width = "64")]
    {
        assert_eq!(entry, ENTRY_TIME_10, "default ten-bucket time window");
        assert_eq!(ring_entry, ENTRY_RING_7, "a 112-call ring");
    }
}

#[cfg(target_pointer_width = "64")]
const ENTRY_TIME_10: usize = 400;
#[cfg(target_pointer_width = "64")]
const ENTRY_RING_7: usize = 204;

#[test]
fn keys_get_their_own_breakers() {
    let t: KeyedBreaker<16> = KeyedBreaker::new(config()).unwrap();
    assert!(t.is_empty());
    for _ in 0..4 {
        call(&t, 10, T0, FAIL);
    }
    assert_eq!(t.state(10), Some(CircuitState::Open));
    assert!(!admits(&t, 10, T0));
    for _ in 0..4 {
        call(&t, 11, T0, OK);
    }
    assert_eq!(t.state(11), Some(CircuitState::Closed));
    assert_eq!(t.len(), 2);
    assert_eq!(t.overflow().state(), CircuitState::Closed);
    assert!(t.placed(10) && t.placed(11) && !t.placed(12));
}

#[test]
fn an_idle_entry_is_reused_and_starts_clean() {
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    for _ in 0..3 {
        call(&t, A, T0, OK);
    }
    // A is closed with only successes: B takes its entry.
    call(&t, B, T0, OK);
    assert!(!t.placed(A) && t.placed(B));
    // With A's three successes still in the window, 3 failures in 7 calls would stay closed;
    // a clean window opens at 3 in 4.
    for _ in 0..3 {
        call(&t, B, T0, FAIL);
    }
    assert_eq!(t.state(B), Some(CircuitState::Open));
    assert_eq!(t.overflow().state(), CircuitState::Closed);
}

#[test]
fn a_key_counting_failures_is_never_evicted() {
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    call(&t, A, T0, FAIL);
    // A's failure is in its window: B goes to the overflow breaker.
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    let p = t.admit(B, &mut env).unwrap();
    assert!(p.is_overflow());
    p.settle(&OK, &mut env);
    assert!(t.placed(A) && !t.placed(B));
    assert_eq!(t.evict_idle(T0), 0);
    // Ten seconds on, the failure has slid out of A's window: A is idle again.
    let later = T0 + Duration::from_secs(11);
    assert_eq!(t.evict_idle(later), 1);
    assert!(t.is_empty());
}

#[test]
fn a_failure_streak_outliving_the_window_keeps_the_entry() {
    let c = Config {
        consecutive_failures: Some(3),
        ..config()
    };
    let t: KeyedBreaker<1> = KeyedBreaker::new(c).unwrap();
    call(&t, A, T0, FAIL);
    call(&t, A, T0, FAIL);
    let later = T0 + Duration::from_secs(60);
    // The window forgot both failures; the streak did not: one more opens the circuit.
    assert_eq!(t.evict_idle(later), 0);
    call(&t, A, later, FAIL);
    assert_eq!(t.state(A), Some(CircuitState::Open));
}

#[test]
fn slow_calls_count_as_failures_for_idleness() {
    let c = Config {
        slow_calls: Some(SlowCalls {
            slower_than: Duration::from_secs(1),
            above_percent: 50,
        }),
        ..config()
    };
    let t: KeyedBreaker<1> = KeyedBreaker::new(c).unwrap();
    let mut rng = SeededRandom::new(1);
    let p = t.admit(A, &mut Env::new(T0, &mut rng)).unwrap();
    p.settle(&OK, &mut Env::new(T0 + Duration::from_secs(2), &mut rng));
    assert_eq!(t.evict_idle(T0 + Duration::from_secs(2)), 0);
}

#[test]
fn open_and_half_open_entries_are_never_evicted() {
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    for _ in 0..4 {
        call(&t, A, T0, FAIL);
    }
    assert_eq!(t.state(A), Some(CircuitState::Open));
    let far = T0 + Duration::from_secs(3600);
    assert_eq!(t.evict_idle(far), 0, "open");
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(far, &mut rng);
    let probe = t.admit(A, &mut env).unwrap();
    assert!(probe.is_probe());
    assert_eq!(t.state(A), Some(CircuitState::HalfOpen));
    assert_eq!(t.evict_idle(far), 0, "half-open");
    assert!(t.admit(B, &mut env).unwrap().is_overflow());
    probe.settle(&OK, &mut env);
    assert_eq!(t.state(A), Some(CircuitState::Closed));
    assert_eq!(t.evict_idle(far), 1, "closed afresh: idle");
}

#[derive(Default)]
struct Log(core::cell::RefCell<std::vec::Vec<(CircuitState, CircuitState)>>);

impl Observer for Log {
    fn on_event(&self, event: &crate::observe::Event) {
        if let crate::observe::Event::CircuitTransition {
            from, to, cause, ..
        } = *event
        {
            assert_eq!(cause, crate::observe::TransitionCause::Operator);
            self.0.borrow_mut().push((from, to));
        }
    }
}

#[test]
fn operator_states_are_never_evicted_and_each_change_is_an_event() {
    use CircuitState::{Closed, Disabled, ForcedOpen};
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    let log = Log::default();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng).with_observer(&log);
    t.force_open(A, &mut env).unwrap();
    assert!(t.admit(A, &mut env).is_err());
    assert_eq!(t.evict_idle(T0), 0, "forced open");
    t.disable(A, &mut env).unwrap();
    assert_eq!(t.evict_idle(T0), 0, "disabled");
    assert!(t.reset(A, &mut env));
    assert_eq!(
        *log.0.borrow(),
        [
            (Closed, ForcedOpen),
            (ForcedOpen, Disabled),
            (Disabled, Closed)
        ]
    );
    assert_eq!(t.evict_idle(T0), 1, "reset: closed and clean");
    assert!(!t.reset(A, &mut env), "no entry: nothing to reset");
    assert_eq!(log.0.borrow().len(), 3);
}

#[test]
fn per_key_control_never_forces_the_overflow() {
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    t.force_open(A, &mut env).unwrap();
    assert_eq!(t.force_open(B, &mut env), Err(Unplaced));
    assert_eq!(t.disable(B, &mut env), Err(Unplaced));
    assert!(std::string::ToString::to_string(&Unplaced).contains("nothing changed"));
    assert_eq!(t.overflow().state(), CircuitState::Closed);
    assert!(t.admit(B, &mut env).unwrap().is_overflow());
}

#[test]
fn reset_forgets_the_window_rather_than_restoring_it() {
    let t: KeyedBreaker<4> = KeyedBreaker::new(config()).unwrap();
    for _ in 0..3 {
        call(&t, A, T0, FAIL);
    }
    let mut rng = SeededRandom::new(1);
    assert!(t.reset(A, &mut Env::new(T0, &mut rng)));
    // Three old failures and one new would open it; one new failure in a clean window does not.
    call(&t, A, T0, FAIL);
    assert_eq!(t.state(A), Some(CircuitState::Closed));
}

#[test]
fn a_call_in_flight_pins_its_entry() {
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    let p = t.admit(A, &mut env).unwrap();
    assert!(!p.is_overflow());
    assert_eq!(t.evict_idle(T0), 0);
    assert!(
        t.admit(B, &mut env).unwrap().is_overflow(),
        "A's entry is pinned"
    );
    drop(p);
    assert_eq!(t.evict_idle(T0), 1, "a cancelled call unpins");
    let p = t.admit(A, &mut env).unwrap();
    p.settle(&OK, &mut env);
    assert_eq!(t.evict_idle(T0), 1, "a settled call unpins");
}

#[test]
fn a_full_table_shares_the_overflow_breaker() {
    let t: KeyedBreaker<1> = KeyedBreaker::new(config()).unwrap();
    call(&t, A, T0, FAIL);
    // B and C have no entry: their failures add up in the one overflow breaker.
    call(&t, B, T0, FAIL);
    call(&t, B, T0, FAIL);
    call(&t, C, T0, FAIL);
    call(&t, C, T0, FAIL);
    assert_eq!(t.overflow().state(), CircuitState::Open);
    assert!(!admits(&t, B, T0) && !admits(&t, C, T0));
    assert_eq!(t.state(A), Some(CircuitState::Closed));
    assert!(admits(&t, A, T0), "the placed key is unaffected");
}

#[test]
fn probes_cover_eight_entries_from_home() {
    let c = Config {
        minimum_calls: 1000,
        ..config()
    };
    let t: KeyedBreaker<64> = KeyedBreaker::new(c).unwrap();
    // Every key failing once, so none is idle: at most 64 are placed, the rest overflow.
    for k in 0..200 {
        call(&t, k, T0, FAIL);
    }
    let placed = (0..200).filter(|&k| t.placed(k)).count();
    assert_eq!(placed, t.len());
    assert!((8..=64).contains(&placed), "{placed}");
}

#[test]
fn count_based_tables() {
    let t: KeyedBreaker<4, CallRing<1>> = KeyedBreaker::count_based(config(), 4).unwrap();
    for _ in 0..4 {
        call(&t, 5, T0, FAIL);
    }
    assert_eq!(t.state(5), Some(CircuitState::Open));
    assert!(KeyedBreaker::<4, CallRing<1>>::count_based(config(), 17).is_err());
}

#[test]
fn for_key_is_a_policy() {
    let t: KeyedBreaker<4> = KeyedBreaker::new(config()).unwrap();
    let p = t.for_key(9);
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    let permit = Policy::admit(&p, &mut env).unwrap();
    permit.settle(&FAIL, &mut env);
    assert!(t.placed(9));
}

#[test]
fn the_table_reports_its_size_and_a_probe_says_so() {
    let t: KeyedBreaker<16> = KeyedBreaker::new(Config {
        minimum_calls: 1,
        ..config()
    })
    .unwrap();
    assert_eq!(t.capacity(), 16);
    assert!(t.is_empty());
    call(&t, A, T0, FAIL);
    assert_eq!((t.len(), t.is_empty()), (1, false));
    let mut rng = SeededRandom::new(A);
    let mut env = Env::new(T0, &mut rng);
    let counted = t.admit(B, &mut env).unwrap();
    assert!(!counted.is_probe(), "a closed breaker's call is no probe");
    drop(counted);
    // A's breaker opened on its failure; after the open wait its next call probes.
    env.now = T0 + Duration::from_secs(6);
    let probe = t.admit(A, &mut env).unwrap();
    assert!(probe.is_probe());
}
