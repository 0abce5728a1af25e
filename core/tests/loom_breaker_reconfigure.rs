//! Loom models of `Breaker::reconfigure` (`core/src/breaker/reconfigure.rs`): the whole
//! configuration is one settings block, read once per decision.
//!
//! What must hold in every interleaving: a settle racing a reconfiguration decides wholly
//! under the old configuration or wholly under the new one (never the new threshold with the
//! old wait, or the other way round); of two reconfigurations racing, each is published or
//! refused as `Busy`, never lost half-way, and each one published emits its event; and an
//! arrival racing a change of probe counts in half-open never leaves the circuit half-open
//! with nothing left to decide it.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_breaker_reconfigure`
#![cfg(loom)]

use core::time::Duration;

use loom::sync::atomic::{AtomicU32, Ordering};

use resilix::Verdict;
use resilix::breaker::{Breaker, BreakerReconfigureError, CallRing, CircuitState, Config};
use resilix::observe::{Event, Observer, PolicyKind};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

fn bounded() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b
}

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

/// Opens on one failure and waits 1 s; no jitter.
const ONE: Config = Config {
    failure_rate_above_percent: None,
    consecutive_failures: Some(1),
    minimum_calls: 1,
    open_wait: Duration::from_secs(1),
    open_jitter_percent: 0,
    ..Config::DEFAULT
};

/// Needs two failures in a row and waits 2 s: under it one failure opens nothing, so a
/// circuit that opened for 2 s after one failure decided on a mix of the two.
const TWO: Config = Config {
    consecutive_failures: Some(2),
    open_wait: Duration::from_secs(2),
    ..ONE
};

#[test]
fn a_settle_racing_a_reconfiguration_decides_under_one_config() {
    bounded().check(|| {
        let breaker: &'static Breaker<CallRing<1>> = leak(Breaker::count_based(ONE, 1).unwrap());
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        let permit = breaker.admit(&mut env).unwrap();
        let settler = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            let mut env = Env::new(Instant::from_secs(1), &mut rng);
            permit.settle(&Verdict::Transient, &mut env);
        });
        let writer = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(3);
            let mut env = Env::new(Instant::from_secs(1), &mut rng);
            breaker.reconfigure(TWO, &mut env)
        });
        settler.join().unwrap();
        assert_eq!(writer.join().unwrap(), Ok(()));
        assert_eq!(breaker.config(), TWO);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        match breaker.admit(&mut env) {
            Err(r) => assert_eq!(
                r.retry_at(),
                Some(Instant::from_secs(2)),
                "opened: under the first config, with its 1 s wait"
            ),
            Ok(p) => {
                assert_eq!(breaker.state(), CircuitState::Closed, "the second config");
                drop(p);
            }
        }
    });
}

/// Counts the reconfiguration events.
struct Reconfigured(AtomicU32);

impl Observer for Reconfigured {
    fn on_event(&self, event: &Event) {
        if let Event::PolicyReconfigured {
            policy: PolicyKind::Breaker,
            ..
        } = event
        {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn two_racing_reconfigurations_publish_or_are_busy_never_half() {
    bounded().check(|| {
        let breaker: &'static Breaker<CallRing<1>> = leak(Breaker::count_based(ONE, 1).unwrap());
        let events = leak(Reconfigured(AtomicU32::new(0)));
        let configs = [
            Config {
                minimum_calls: 1,
                half_open_probes: 2,
                probes_to_close: 2,
                ..TWO
            },
            Config {
                open_wait: Duration::from_secs(3),
                half_open_probes: 3,
                probes_to_close: 1,
                ..ONE
            },
        ];
        let threads: Vec<_> = configs
            .into_iter()
            .enumerate()
            .map(|(i, config)| {
                loom::thread::spawn(move || {
                    let mut rng = SeededRandom::new(i as u64);
                    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(events);
                    breaker.reconfigure(config, &mut env)
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
        let published = results.iter().filter(|r| r.is_ok()).count() as u32;
        assert!(published >= 1, "{results:?}");
        for r in &results {
            assert!(
                matches!(r, Ok(()) | Err(BreakerReconfigureError::Busy)),
                "{r:?}"
            );
        }
        assert_eq!(events.0.load(Ordering::SeqCst), published);
        let now = breaker.config();
        assert!(
            configs
                .iter()
                .zip(&results)
                .any(|(c, r)| r.is_ok() && *c == now),
            "the config in force is one that was published whole: {now:?}"
        );
    });
}

#[test]
fn an_arrival_racing_lowered_probe_counts_never_strands_half_open() {
    bounded().check(|| {
        // Half-open with two probes needed, one succeeded and none out: one place is free.
        let two_probes = Config {
            half_open_probes: 2,
            probes_to_close: 2,
            ..ONE
        };
        let breaker: &'static Breaker<CallRing<1>> =
            leak(Breaker::count_based(two_probes, 1).unwrap());
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        let p = breaker.admit(&mut env).unwrap();
        p.settle(&Verdict::Transient, &mut env);
        env.now = Instant::from_secs(1);
        let probe = breaker.admit(&mut env).unwrap();
        probe.settle(&Verdict::Success, &mut env);
        assert_eq!(breaker.state(), CircuitState::HalfOpen);

        let arrival = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            let mut env = Env::new(Instant::from_secs(1), &mut rng);
            // The second probe (old counts) or a closed call (the new ones decided it):
            // settle it as a success either way.
            if let Ok(p) = breaker.admit(&mut env) {
                p.settle(&Verdict::Success, &mut env);
            }
        });
        let writer = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(3);
            let mut env = Env::new(Instant::from_secs(1), &mut rng);
            breaker.reconfigure(ONE, &mut env)
        });
        arrival.join().unwrap();
        assert_eq!(writer.join().unwrap(), Ok(()));
        // One probe of one is needed now and one has succeeded: whatever the interleaving,
        // the next call finds the circuit closed, or closes it.
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        let p = breaker.admit(&mut env).expect("not stranded half-open");
        assert!(!p.is_probe());
        assert_eq!(breaker.state(), CircuitState::Closed);
        drop(p);
    });
}
