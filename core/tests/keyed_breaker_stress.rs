//! Many threads, one small keyed breaker, many keys, placing, churning and evicting at once:
//! no live entry is ever evicted. A key with a call in flight stays placed until the call
//! ends, and a key seen open stays placed and open (its wait is an hour; time stands still).
#![cfg(not(loom))]

#[path = "support/alongside.rs"]
mod alongside;
#[path = "support/churn.rs"]
mod churn;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use resilix::Verdict;
use resilix::breaker::{CircuitState, Config, KeyedBreaker};
use resilix::permit::{Env, Permit};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;

use alongside::alongside;
use churn::Churn;

const ROUNDS: u32 = 40_000;
/// Keys that fail (and, with `consecutive_failures = 1`, open at their first failure).
const BAD: u64 = 3;
const KEYS: u64 = 40;

#[test]
fn no_live_entry_is_ever_evicted() {
    let config = Config {
        consecutive_failures: Some(1),
        open_wait: Duration::from_secs(3600),
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    let table: KeyedBreaker<8> = KeyedBreaker::new(config).unwrap();
    let now = Instant::from_secs(5);
    // Bit k: key k was seen open in its own entry.
    let seen_open = AtomicU64::new(0);
    let churn = Churn::default();
    churn.evicting(
        ROUNDS,
        || table.evict_idle(now),
        |rng| {
            let key = rng.below(KEYS);
            let mut env = Env::new(now, rng);
            let Ok(permit) = table.admit(key, &mut env) else {
                return;
            };
            churn.admitted(key, permit.is_overflow(), |k| table.placed(k));
            let own = !permit.is_overflow();
            let verdict = if key < BAD {
                Verdict::Transient
            } else {
                Verdict::Success
            };
            permit.settle(&verdict, &mut env);
            if own && key < BAD && table.state(key) == Some(CircuitState::Open) {
                seen_open.fetch_or(1 << key, Ordering::Relaxed);
            }
            let open = seen_open.load(Ordering::Relaxed);
            for k in (0..BAD).filter(|k| open & (1 << k) != 0) {
                assert_eq!(
                    table.state(k),
                    Some(CircuitState::Open),
                    "open key {k} evicted"
                );
            }
        },
    );
    let open = seen_open.load(Ordering::Relaxed);
    assert_ne!(open, 0, "some bad key opened in its own entry");
    for k in (0..BAD).filter(|k| open & (1 << k) != 0) {
        assert_eq!(table.state(k), Some(CircuitState::Open));
    }
    assert!(table.len() <= 8);
    churn.assert_churned();
    // Every call has ended: only the open keys are live, the rest evict.
    table.evict_idle(now);
    assert_eq!(table.len(), open.count_ones() as usize);
}

/// Threads fail calls on one key while another resets it over and over: calls admitted
/// before a reset settle late and are ignored, and once everyone stops, one last reset leaves
/// a clean window (three failures under a minimum of four calls keep it closed).
#[test]
fn resets_under_concurrent_admits_leave_a_clean_window() {
    let config = Config {
        minimum_calls: 4,
        open_wait: Duration::from_secs(3600),
        open_jitter_percent: 0,
        ..Config::DEFAULT
    };
    let table: KeyedBreaker<4> = KeyedBreaker::new(config).unwrap();
    let now = Instant::from_secs(5);
    let resets = AtomicU64::new(0);
    let mut background_rng = SeededRandom::new(99);
    alongside(
        || {
            if table.reset(7, &mut Env::new(now, &mut background_rng)) {
                resets.fetch_add(1, Ordering::Relaxed);
            }
        },
        |t, mut rng| {
            for round in 0..ROUNDS / 4 {
                let mut env = Env::new(now, &mut rng);
                // One worker also resets, so resets land between admits for sure.
                if t == 0 && round % 16 == 0 && table.reset(7, &mut env) {
                    resets.fetch_add(1, Ordering::Relaxed);
                }
                if let Ok(p) = table.admit(7, &mut env) {
                    assert!(!p.is_overflow());
                    p.settle(&Verdict::Transient, &mut env);
                }
            }
        },
    );
    assert!(resets.load(Ordering::Relaxed) > 0);
    let mut rng = SeededRandom::new(1);
    assert!(table.reset(7, &mut Env::new(now, &mut rng)));
    for _ in 0..3 {
        let mut env = Env::new(now, &mut rng);
        table
            .admit(7, &mut env)
            .unwrap()
            .settle(&Verdict::Transient, &mut env);
    }
    assert_eq!(table.state(7), Some(CircuitState::Closed));
    let mut env = Env::new(now, &mut rng);
    table
        .admit(7, &mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    assert_eq!(
        table.state(7),
        Some(CircuitState::Open),
        "the fourth failure opens it"
    );
}
