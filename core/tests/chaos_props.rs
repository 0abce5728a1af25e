//! Properties of chaos for any config, seed and switch history: a fault and an outcome never
//! meet; a kind at rate 0 never injects and one at every attempt always does when reached;
//! what is injected is exactly the config's latency and verdicts; switched off, nothing is
//! injected and nothing drawn; and the switch, flipped from another thread, is seen by every
//! decision made after the flip.

use core::time::Duration;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use proptest::prelude::*;
use resilix::Verdict;
use resilix::chaos::{Chaos, ChaosConfig, Injection, MILLION};
use resilix::permit::Env;
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;

struct Counting(SeededRandom, u64);
impl Random for Counting {
    fn next_u32(&mut self) -> u32 {
        self.1 += 1;
        self.0.next_u32()
    }
}

fn rate() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(MILLION), 0u32..=MILLION]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn injections_obey_the_config(
        l in rate(), f in rate(), o in rate(),
        ms in 1u64..10_000,
        seed in any::<u64>(),
        switches in proptest::collection::vec(any::<bool>(), 1..200),
    ) {
        let c = ChaosConfig::NONE
            .with_latency(l, Duration::from_millis(ms))
            .with_fault(f, Verdict::Timeout)
            .with_outcome(o, Verdict::Uncertain);
        let chaos = Chaos::new(c).unwrap();
        let mut rng = Counting(SeededRandom::new(seed), 0);
        for on in switches {
            chaos.set_enabled(on);
            let before = rng.1;
            let i = {
                let mut env = Env::new(Instant::ZERO, &mut rng);
                chaos.decide(&mut env)
            };
            if !on {
                prop_assert_eq!(i, Injection::NONE);
                prop_assert_eq!(rng.1, before, "off draws nothing");
                continue;
            }
            prop_assert!(i.fault.is_none() || i.outcome.is_none());
            prop_assert!(i.latency.is_none() || i.latency == Some(Duration::from_millis(ms)));
            prop_assert!(i.fault.is_none() || i.fault == Some(Verdict::Timeout));
            prop_assert!(i.outcome.is_none() || i.outcome == Some(Verdict::Uncertain));
            if l == 0 { prop_assert!(i.latency.is_none()); }
            if l == MILLION { prop_assert!(i.latency.is_some()); }
            if f == 0 { prop_assert!(i.fault.is_none()); }
            if f == MILLION { prop_assert!(i.fault.is_some()); }
            if o == 0 { prop_assert!(i.outcome.is_none()); }
            if o == MILLION && i.fault.is_none() { prop_assert!(i.outcome.is_some()); }
            // One `below` (two u32s, rarely more on a rejection) per kind reached with a rate.
            let reached = u64::from(l > 0) + u64::from(f > 0) + u64::from(o > 0 && i.fault.is_none());
            prop_assert!(rng.1 - before >= 2 * reached);
        }
    }
}

#[test]
fn a_flip_from_another_thread_is_seen_by_every_later_decision() {
    let chaos = Chaos::new(ChaosConfig::NONE.with_fault(MILLION, Verdict::Transient)).unwrap();
    chaos.enable();
    let flipped = AtomicBool::new(false);
    thread::scope(|s| {
        for t in 0..4u64 {
            let (chaos, flipped) = (&chaos, &flipped);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                let mut env = Env::new(Instant::ZERO, &mut rng);
                for _ in 0..50_000 {
                    let was_flipped = flipped.load(Ordering::Acquire);
                    let injected = chaos.decide(&mut env).fault.is_some();
                    assert!(
                        !(was_flipped && injected),
                        "decided after the flip, injected"
                    );
                }
            });
        }
        s.spawn(|| {
            thread::yield_now();
            chaos.disable();
            flipped.store(true, Ordering::Release);
        });
    });
    assert!(!chaos.is_enabled());
}
