//! Chaos, plainly: a master switch and three injections, each drawn as "a uniform integer in
//! [0, 1,000,000) below its rate" when reached and its rate is above zero — latency first,
//! then the fault, then, only when no fault was injected, the outcome. Off draws nothing.
//!
//! [`ChaosTwin`] decides each arriving attempt with the real [`Chaos`] and with the model on
//! the same draws (the real decision's draws are recorded and replayed to the model; a
//! different number of draws is a mismatch), flips both switches at the same moments, and
//! compares the injections and the events the real one reported. Chaos stores no time, so
//! no idle gap can change a decision; the long timelines confirm it.

use std::cell::RefCell;
use std::time::Duration;

use crate::draws::Recorder;
use resilix::chaos::{Chaos, ChaosConfig, Injected, Injection};
use resilix::observe::{Event, Observer};
use resilix::permit::Env;
use resilix::random::Random;
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::twin::{Decision, Twin};

/// Chaos's semantics.
#[derive(Clone, Debug)]
pub struct ChaosModel {
    config: ChaosConfig,
    /// The master switch.
    pub enabled: bool,
}

impl ChaosModel {
    /// The model of a `Chaos` with `config` (one the real one accepts), switched off.
    pub fn new(config: &ChaosConfig) -> ChaosModel {
        ChaosModel {
            config: *config,
            enabled: false,
        }
    }

    fn hit(ppm: u32, rng: &mut dyn Random) -> bool {
        ppm > 0 && rng.below(1_000_000) < u64::from(ppm)
    }

    /// (latency, fault, outcome) for one attempt.
    pub fn decide(
        &self,
        rng: &mut dyn Random,
    ) -> (Option<Duration>, Option<Verdict>, Option<Verdict>) {
        if !self.enabled {
            return (None, None, None);
        }
        let latency = Self::hit(self.config.latency_ppm, rng).then_some(self.config.latency);
        let fault = Self::hit(self.config.fault_ppm, rng).then_some(self.config.fault);
        let outcome = match fault {
            Some(_) => None,
            None => Self::hit(self.config.outcome_ppm, rng).then_some(self.config.outcome),
        };
        (latency, fault, outcome)
    }
}

/// The events a decision reported.
#[derive(Default)]
struct Log(RefCell<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

/// A real [`Chaos`] beside its model.
pub struct ChaosTwin<'a> {
    real: &'a Chaos,
    model: ChaosModel,
    /// One arrival in `flip_one_in` flips both master switches first (0: never).
    flip_one_in: u64,
    open: usize,
    /// Attempts decided, and of them with an injection.
    decided: u64,
    injected: u64,
}

impl<'a> ChaosTwin<'a> {
    /// Twins `real` (fresh: switched off) with its model; one arrival in `flip_one_in`
    /// flips the master switch first (0: never; the twin then switches both on at once).
    pub fn new(real: &'a Chaos, config: &ChaosConfig, flip_one_in: u64) -> Self {
        let mut model = ChaosModel::new(config);
        if flip_one_in == 0 {
            real.enable();
            model.enabled = true;
        } else {
            real.disable();
        }
        ChaosTwin {
            real,
            model,
            flip_one_in,
            open: 0,
            decided: 0,
            injected: 0,
        }
    }

    /// Attempts decided, and of them with an injection.
    pub fn counts(&self) -> (u64, u64) {
        (self.decided, self.injected)
    }

    /// Both decide one attempt on the same draws; the injection, or the disagreement.
    pub fn decide(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Injection, String> {
        let log = Log::default();
        let mut rec = Recorder::new(rng);
        let real = {
            let mut env = Env::new(now, &mut rec).with_observer(&log);
            self.real.decide(&mut env)
        };
        let model = &self.model;
        let (latency, fault, outcome) = rec.replay("chaos decision", |r| model.decide(r))?;
        let model = Injection {
            latency,
            fault,
            outcome,
        };
        if real != model {
            return Err(format!("injection: real {real:?}, model {model:?}"));
        }
        let expected: Vec<Event> = [
            latency.map(Injected::Latency),
            fault.map(Injected::Fault),
            outcome.map(Injected::Outcome),
        ]
        .into_iter()
        .flatten()
        .map(|injected| Event::ChaosInjected { injected })
        .collect();
        if *log.0.borrow() != expected {
            return Err(format!(
                "events: real {:?}, model {expected:?}",
                log.0.borrow()
            ));
        }
        self.decided += 1;
        if !real.is_none() {
            self.injected += 1;
        }
        Ok(real)
    }
}

impl Twin for ChaosTwin<'_> {
    fn open(&self) -> usize {
        self.open
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        if self.flip_one_in > 0 && rng.below(self.flip_one_in) == 0 {
            self.model.enabled = !self.model.enabled;
            self.real.set_enabled(self.model.enabled);
        }
        if self.real.is_enabled() != self.model.enabled {
            return Err("master switch differs".into());
        }
        self.decide(now, rng)?;
        // Chaos never refuses: its decisions are what it injects.
        self.open += 1;
        Ok(Decision::Admitted)
    }

    fn end(
        &mut self,
        _now: Instant,
        _index: usize,
        _verdict: Option<Verdict>,
        _rng: &mut dyn Random,
    ) -> Result<(), String> {
        self.open -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilix::random::SeededRandom;

    #[test]
    fn off_draws_nothing_and_a_fault_skips_the_outcome() {
        let c = ChaosConfig::NONE
            .with_fault(1_000_000, Verdict::Timeout)
            .with_outcome(1_000_000, Verdict::Success);
        let mut m = ChaosModel::new(&c);
        let mut rng = SeededRandom::new(1);
        assert_eq!(m.decide(&mut rng), (None, None, None));
        m.enabled = true;
        assert_eq!(m.decide(&mut rng), (None, Some(Verdict::Timeout), None));
    }
}
