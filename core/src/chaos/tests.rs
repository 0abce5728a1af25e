extern crate std;
use std::cell::RefCell;
use std::vec::Vec;

use super::*;
use crate::random::SeededRandom;
use crate::time::Instant;

const MS: Duration = Duration::from_millis(1);

#[derive(Default)]
struct Log(RefCell<Vec<Event>>);
impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

/// A generator that counts its draws.
struct Counting(SeededRandom, u32);
impl Random for Counting {
    fn next_u32(&mut self) -> u32 {
        self.1 += 1;
        self.0.next_u32()
    }
}

fn on(config: ChaosConfig) -> Chaos {
    let c = Chaos::new(config).unwrap();
    c.enable();
    c
}

#[test]
fn invalid_configs_are_refused_with_their_own_text() {
    use std::string::ToString;
    let cases = [
        (
            ChaosConfig::NONE.with_latency(MILLION + 1, MS),
            ChaosConfigError::RateAboveOne,
        ),
        (
            ChaosConfig::NONE.with_fault(u32::MAX, Verdict::Transient),
            ChaosConfigError::RateAboveOne,
        ),
        (
            ChaosConfig::NONE.with_outcome(MILLION + 1, Verdict::Success),
            ChaosConfigError::RateAboveOne,
        ),
        (
            ChaosConfig::NONE.with_fault(
                1,
                Verdict::Rejected(crate::rejection::RejectReason::CircuitOpen),
            ),
            ChaosConfigError::RejectedVerdict,
        ),
        (
            ChaosConfig::NONE.with_outcome(
                0,
                Verdict::Rejected(crate::rejection::RejectReason::Throttled),
            ),
            ChaosConfigError::RejectedVerdict,
        ),
        (
            ChaosConfig::NONE.with_latency(1, Duration::ZERO),
            ChaosConfigError::ZeroLatency,
        ),
    ];
    for (config, error) in cases {
        assert_eq!(Chaos::new(config).err(), Some(error), "{config:?}");
    }
    let texts: Vec<_> = [
        ChaosConfigError::RateAboveOne,
        ChaosConfigError::RejectedVerdict,
        ChaosConfigError::ZeroLatency,
    ]
    .iter()
    .map(|e| e.to_string())
    .collect();
    assert!(texts[0] != texts[1] && texts[1] != texts[2] && texts[0] != texts[2]);
    assert!(Chaos::new(ChaosConfig::NONE.with_latency(0, Duration::ZERO)).is_ok());
    assert!(
        Chaos::new(ChaosConfig::NONE.with_fault(MILLION, Verdict::Answered)).is_ok(),
        "every attempt, any verdict but Rejected"
    );
}

#[test]
fn off_by_default_and_off_draws_nothing() {
    let chaos = Chaos::new(
        ChaosConfig::NONE
            .with_fault(MILLION, Verdict::Transient)
            .with_latency(MILLION, MS),
    )
    .unwrap();
    let mut rng = Counting(SeededRandom::new(1), 0);
    let log = Log::default();
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&log);
    assert!(!chaos.is_enabled());
    assert_eq!(chaos.decide(&mut env), Injection::NONE);
    chaos.enable();
    assert_eq!(chaos.decide(&mut env).fault, Some(Verdict::Transient));
    chaos.disable();
    assert_eq!(chaos.decide(&mut env), Injection::NONE);
    assert_eq!(
        env.rng.1,
        2 * 2,
        "two draws (latency, fault) per enabled decision"
    );
    assert_eq!(log.0.borrow().len(), 2, "latency and fault, once");
}

#[test]
fn every_attempt_at_a_rate_of_one_and_a_fault_leaves_no_outcome() {
    let chaos = on(ChaosConfig::NONE
        .with_latency(MILLION, 5 * MS)
        .with_fault(MILLION, Verdict::Timeout)
        .with_outcome(MILLION, Verdict::Success));
    let mut rng = Counting(SeededRandom::new(2), 0);
    let log = Log::default();
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&log);
    let i = chaos.decide(&mut env);
    assert_eq!(
        i,
        Injection {
            latency: Some(5 * MS),
            fault: Some(Verdict::Timeout),
            outcome: None
        }
    );
    assert_eq!(env.rng.1, 4, "the outcome is not reached: no draw for it");
    assert_eq!(
        *log.0.borrow(),
        [
            Event::ChaosInjected {
                injected: Injected::Latency(5 * MS)
            },
            Event::ChaosInjected {
                injected: Injected::Fault(Verdict::Timeout)
            },
        ]
    );
}

#[test]
fn a_kind_left_off_draws_nothing() {
    let chaos = on(ChaosConfig::NONE.with_outcome(MILLION, Verdict::Transient));
    let mut rng = Counting(SeededRandom::new(3), 0);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    assert_eq!(chaos.decide(&mut env).outcome, Some(Verdict::Transient));
    assert_eq!(env.rng.1, 2, "only the outcome's draw");
}

#[test]
fn rates_compound_and_a_seed_reproduces_every_decision() {
    let config = ChaosConfig::NONE
        .with_latency(300_000, MS)
        .with_fault(100_000, Verdict::Transient)
        .with_outcome(100_000, Verdict::Overload { retry_after: None });
    let chaos = on(config);
    let run = |seed| {
        let mut rng = SeededRandom::new(seed);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        (0..100_000)
            .map(|_| chaos.decide(&mut env))
            .collect::<Vec<_>>()
    };
    let a = run(11);
    assert_eq!(a, run(11), "same seed, same injections");
    assert_ne!(a, run(12));
    let n = a.len() as f64;
    let share = |f: &dyn Fn(&Injection) -> bool| a.iter().filter(|i| f(i)).count() as f64 / n;
    // 3σ of a share over 100,000 attempts is under 0.5 point.
    assert!((share(&|i| i.latency.is_some()) - 0.30).abs() < 0.005);
    assert!((share(&|i| i.fault.is_some()) - 0.10).abs() < 0.005);
    assert!(
        (share(&|i| i.outcome.is_some()) - 0.09).abs() < 0.005,
        "10% of the 90% the fault left"
    );
    // Latency is independent of the fault.
    let both = share(&|i| i.latency.is_some() && i.fault.is_some());
    assert!((both - 0.03).abs() < 0.003, "{both}");
}

#[test]
fn apply_skips_the_call_on_a_fault_and_substitutes_after_it() {
    let mut calls = 0;
    let fault = Injection {
        fault: Some(Verdict::Transient),
        ..Injection::NONE
    };
    assert_eq!(
        fault.apply(|| {
            calls += 1;
            7
        }),
        Chaotic::Fault(Verdict::Transient)
    );
    assert_eq!(calls, 0);
    let outcome = Injection {
        outcome: Some(Verdict::Uncertain),
        ..Injection::NONE
    };
    let got = outcome.apply(|| {
        calls += 1;
        7
    });
    assert_eq!(calls, 1);
    assert_eq!(
        got,
        Chaotic::Substituted {
            output: 7,
            verdict: Verdict::Uncertain
        }
    );
    assert!(got.is_injected());
    assert_eq!(got.into_output(), Some(7));
    let c = ChaosClassifier(|x: &i32| {
        if *x > 0 {
            Verdict::Success
        } else {
            Verdict::Transient
        }
    });
    assert_eq!(c.classify(&Chaotic::Upstream(-1)), Verdict::Transient);
    assert_eq!(c.classify(&got), Verdict::Uncertain);
}
