//! The keyed bulkhead, plainly: [`crate::keyed::Table`] of bulkhead [`Model`]s, each with the
//! one cap. A bulkhead is idle when it holds nothing, which for an entry is the table's own
//! "no call in flight"; the overflow bulkhead has the same cap and is shared by every key
//! without an entry. A bulkhead keeps no time, so no gap changes a decision; what the model
//! pins down on long timelines is placement, eviction and where every slot goes back.
//!
//! ```
//! use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
//! use resilix::random::SeededRandom;
//! use resilix_reference::keyed_bulkhead::KeyedBulkheadTwin;
//! use resilix::time::Instant;
//! use resilix_reference::twin::Mix;
//! use resilix_reference::{Gaps, Timeline, drive};
//!
//! let real: KeyedBulkhead<4> = KeyedBulkhead::new(BulkheadConfig::new(2).unwrap());
//! let mut twin = KeyedBulkheadTwin::new(&real, 12, 8);
//! let mut timeline = Timeline::new(Instant::from_secs(1), Gaps::LONG);
//! let mut rng = SeededRandom::new(1);
//! let report = drive(&mut twin, &mut timeline, &mut rng, 2_000, Mix::MOSTLY_HEALTHY, 12).unwrap();
//! assert!(report.admitted > 0 && report.refused > 0);
//! ```

use resilix::bulkhead::{KeyedBulkhead, KeyedPermit};
use resilix::permit::{Env, Permit};
use resilix::random::Random;
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::bulkhead::Model;
use crate::keyed::{Arrivals, Home, Idle, Table, agree, agree_home};
use crate::twin::{Decision, Twin, same};

impl Idle for Model {
    fn is_idle(&self, _now: Instant) -> bool {
        self.held() == 0
    }
}

/// A [`KeyedBulkhead`] beside its model: arrivals for keys `0..keys` (spread so their homes
/// collide), one in `evict_one_in` preceded by `evict_idle`; [`check`](Twin::check) compares
/// `len`, every key's `held` and the overflow's.
pub struct KeyedBulkheadTwin<'a, const N: usize> {
    real: &'a KeyedBulkhead<N>,
    model: Table<Model>,
    arrivals: Arrivals,
    calls: Vec<(KeyedPermit<'a>, Home)>,
}

impl<'a, const N: usize> KeyedBulkheadTwin<'a, N> {
    /// Twins `real`, which must hold no entry yet.
    pub fn new(real: &'a KeyedBulkhead<N>, keys: u64, evict_one_in: u64) -> Self {
        assert!(real.is_empty(), "a twin starts from an empty table");
        KeyedBulkheadTwin {
            real,
            model: Table::new(Model::new(real.max_concurrent()), N),
            arrivals: Arrivals::new(keys, evict_one_in),
            calls: Vec::new(),
        }
    }

    /// The model.
    pub fn model(&self) -> &Table<Model> {
        &self.model
    }

    /// Both evict idle entries.
    pub fn evict_idle(&mut self, now: Instant) -> Result<usize, String> {
        agree(
            "evict_idle",
            self.real.evict_idle(),
            self.model.evict_idle(now),
        )
    }
}

impl<const N: usize> Twin for KeyedBulkheadTwin<'_, N> {
    fn open(&self) -> usize {
        self.calls.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let (evict, key) = self.arrivals.draw(rng);
        if evict {
            self.evict_idle(now)?;
        }
        let real = self.real.try_admit(key);
        let home = self.model.place(key, now);
        let bulkhead = self.model.model(home);
        let decision =
            same(Decision::of(&real), bulkhead.arrive()).map_err(|e| format!("key {key}: {e}"))?;
        let held = bulkhead.held();
        if let Ok(permit) = real {
            agree_home(key, permit.is_overflow(), home)?;
            if permit.held_at_admission() != held {
                return Err(format!(
                    "key {key}: admitted with {} held, the model holds {held}",
                    permit.held_at_admission()
                ));
            }
            self.model.begin(home);
            self.calls.push((permit, home));
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
        let (permit, home) = self.calls.remove(index);
        match verdict {
            Some(v) => permit.settle(&v, &mut Env::new(now, rng)),
            None => drop(permit),
        }
        self.model.model(home).end();
        self.model.end(home);
        Ok(())
    }

    fn check(&mut self, _now: Instant) -> Result<(), String> {
        self.arrivals.agree_table(
            "held",
            (self.real.len(), self.model.len()),
            |key| (self.real.held(key), self.model.get(key).map(Model::held)),
            (self.real.overflow().held(), self.model.overflow().held()),
        )
    }
}
