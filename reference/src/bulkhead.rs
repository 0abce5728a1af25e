//! The bulkhead's reference model: a cap and a count of calls held.
//!
//! The bulkhead keeps no time, so no idle gap can change its decisions; what the model pins
//! down is the rest of its contract on any timeline: a call is admitted exactly when fewer
//! than `cap` are held, any end (settled with any verdict, or cancelled) gives its slot back,
//! and every release bumps the wait protocol's event count.
//!
//! ```
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::random::SeededRandom;
//! use resilix_reference::bulkhead::BulkheadTwin;
//! use resilix_reference::traffic::Scenario;
//! use resilix_reference::drive_scenario;
//!
//! let real = Bulkhead::new(BulkheadConfig::new(4).unwrap());
//! let mut twin = BulkheadTwin::new(&real);
//! let report = drive_scenario(&mut twin, &Scenario::day(1), &mut SeededRandom::new(1)).unwrap();
//! assert!(report.refused > 0, "the outage's hung calls fill the bulkhead");
//! ```

use resilix::bulkhead::{Bulkhead, BulkheadPermit, ReleaseHook};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::Random;
use resilix::rejection::RejectReason;
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::twin::{Decision, Twin, same};

/// The bulkhead, plainly: how many calls may be held, how many are, how many were given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    cap: u32,
    held: u32,
    releases: u64,
}

impl Model {
    /// A model of a bulkhead of `cap` slots, none held.
    pub const fn new(cap: u32) -> Model {
        Model {
            cap,
            held: 0,
            releases: 0,
        }
    }

    /// A call arrives: admitted while a slot is free. A full bulkhead knows no instant at
    /// which a slot will be free, so its refusal carries no retry-at.
    pub fn arrive(&mut self) -> Decision {
        if self.held < self.cap {
            self.held += 1;
            Decision::Admitted
        } else {
            Decision::Refused {
                reason: RejectReason::BulkheadFull,
                retry_at: None,
            }
        }
    }

    /// A held call ends, whatever its verdict, or is cancelled: its slot comes back.
    pub fn end(&mut self) {
        self.held -= 1;
        self.releases += 1;
    }

    /// Slots held.
    pub const fn held(&self) -> u32 {
        self.held
    }

    /// Slots given back so far.
    pub const fn releases(&self) -> u64 {
        self.releases
    }
}

/// A real [`Bulkhead`] beside its [`Model`].
pub struct BulkheadTwin<'b, H: ReleaseHook = ()> {
    real: &'b Bulkhead<H>,
    permits: Vec<BulkheadPermit<'b, H>>,
    model: Model,
}

impl<'b, H: ReleaseHook> BulkheadTwin<'b, H> {
    /// Twins `real`, which must hold no slot yet.
    pub fn new(real: &'b Bulkhead<H>) -> Self {
        assert_eq!(real.held(), 0, "a twin starts from an idle bulkhead");
        BulkheadTwin {
            real,
            permits: Vec::new(),
            model: Model::new(real.max_concurrent()),
        }
    }

    /// Twins `real` with a given model: to show that a wrong model is caught.
    pub fn with_model(real: &'b Bulkhead<H>, model: Model) -> Self {
        assert_eq!(real.held(), 0, "a twin starts from an idle bulkhead");
        BulkheadTwin {
            real,
            permits: Vec::new(),
            model,
        }
    }

    /// The model, as it stands.
    pub const fn model(&self) -> &Model {
        &self.model
    }
}

impl<H: ReleaseHook> Twin for BulkheadTwin<'_, H> {
    fn open(&self) -> usize {
        self.permits.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let mut env = Env::new(now, rng);
        let result = self.real.admit(&mut env);
        let decision = same(Decision::of(&result), self.model.arrive())?;
        if let Ok(permit) = result {
            if permit.held_at_admission() != self.model.held() {
                return Err(format!(
                    "admitted with {} held, the model holds {}",
                    permit.held_at_admission(),
                    self.model.held()
                ));
            }
            self.permits.push(permit);
        }
        Ok(decision)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        let permit = self.permits.remove(index);
        match verdict {
            Some(v) => permit.settle(&v, &mut Env::new(now, rng)),
            None => drop(permit),
        }
        self.model.end();
        Ok(())
    }

    fn check(&mut self, _now: Instant) -> Result<(), String> {
        // The release count wraps at 2^32 by design (an event count, compared for change).
        let (held, releases) = (self.real.held(), self.real.releases());
        if held != self.model.held() || releases != self.model.releases() as u32 {
            return Err(format!(
                "real holds {held} with {releases} releases, the model {} with {}",
                self.model.held(),
                self.model.releases() as u32
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Gaps, Timeline};
    use crate::twin::{Mix, drive};
    use resilix::bulkhead::BulkheadConfig;
    use resilix::random::SeededRandom;

    #[test]
    fn the_model_caps_and_gives_back() {
        let mut m = Model::new(2);
        assert_eq!(m.arrive(), Decision::Admitted);
        assert_eq!(m.arrive(), Decision::Admitted);
        assert!(!m.arrive().is_admitted());
        m.end();
        assert_eq!((m.held(), m.releases()), (1, 1));
        assert_eq!(m.arrive(), Decision::Admitted);
    }

    #[test]
    fn the_bulkhead_matches_its_model_on_long_random_timelines() {
        for (cap, seed) in [(1, 1), (3, 2), (8, 3), (64, 4)] {
            let real = Bulkhead::new(BulkheadConfig::new(cap).unwrap());
            let mut twin = BulkheadTwin::new(&real);
            let mut rng = SeededRandom::new(seed);
            let mut timeline = Timeline::new(Instant::ZERO, Gaps::LONG);
            let r = drive(
                &mut twin,
                &mut timeline,
                &mut rng,
                20_000,
                Mix::MOSTLY_HEALTHY,
                80,
            )
            .unwrap_or_else(|m| panic!("cap {cap}: {m}"));
            assert!(r.admitted > 0 && r.ended > 0);
            assert_eq!(r.refused > 0, cap < 80, "cap {cap}: {r:?}");
        }
    }

    /// A twin that lies is caught: the driver's checks can fail.
    #[test]
    fn a_wrong_model_is_caught() {
        let real = Bulkhead::new(BulkheadConfig::new(2).unwrap());
        let mut twin = BulkheadTwin::new(&real);
        twin.model = Model::new(3);
        let mut rng = SeededRandom::new(5);
        let mut timeline = Timeline::new(Instant::ZERO, Gaps::LONG);
        let m = drive(
            &mut twin,
            &mut timeline,
            &mut rng,
            1_000,
            Mix::MOSTLY_HEALTHY,
            10,
        )
        .unwrap_err();
        assert!(m.what.contains("BulkheadFull"), "{m}");
    }
}
