//! Loom model of the keyed breaker's table: every interleaving of a call on a placed key with
//! another key trying to take its entry. A key with a call in flight, or counting a failure,
//! is never evicted.
//!
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p resilix --release --test loom_keyed_breaker
#![cfg(loom)]

use loom::sync::Arc;
use resilix::Verdict;
use resilix::breaker::{CallRing, CircuitState, Config, KeyedBreaker};
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::time::Instant;

const A: u64 = 1;
const B: u64 = 2;

fn table() -> KeyedBreaker<1, CallRing<1>> {
    let config = Config {
        minimum_calls: 16,
        ..Config::DEFAULT
    };
    KeyedBreaker::count_based(config, 16).unwrap()
}

#[test]
fn a_failing_call_in_flight_keeps_its_entry_against_a_new_key() {
    loom::model(|| {
        let table = Arc::new(table());
        let now = Instant::from_secs(1);
        let t = table.clone();
        let other = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            let mut env = Env::new(now, &mut rng);
            let p = t.admit(B, &mut env).unwrap();
            let own = !p.is_overflow();
            p.settle(&Verdict::Success, &mut env);
            own
        });
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(now, &mut rng);
        let p = table.admit(A, &mut env).unwrap();
        let mine = !p.is_overflow();
        if mine {
            assert!(table.placed(A), "evicted with a call in flight");
        }
        p.settle(&Verdict::Transient, &mut env);
        let theirs = other.join().unwrap();
        if mine {
            // A counts a failure now: whatever B did, A keeps the one entry.
            assert!(table.placed(A));
            assert_eq!(table.state(A), Some(CircuitState::Closed));
            assert!(!table.placed(B));
            assert_eq!(table.evict_idle(now), 0);
        }
        assert!(
            !(mine && theirs) || !table.placed(B),
            "two keys in one entry"
        );
        assert_eq!(table.len(), 1);
    });
}
