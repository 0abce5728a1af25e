//! The keyed breaker, plainly: [`crate::keyed::Table`] of breaker [`Model`]s, each built
//! alike. A breaker is idle ([`Model::is_idle`]) when it is closed with no failure or slow
//! call in the window and no failure streak where a streak opens the circuit; the overflow
//! breaker is shared by every key without an entry.

use resilix::breaker::{CircuitState, KeyedBreaker, KeyedPermit, OutcomeWindow};
use resilix::permit::{Env, Permit};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::breaker::{Model, Ticket};
pub use crate::keyed::Home;
use crate::keyed::{Arrivals, Idle, Table, agree, agree_home, key};
use crate::twin::{Decision, Twin, same};

impl Idle for Model {
    fn is_idle(&self, now: Instant) -> bool {
        Model::is_idle(self, now)
    }
}

/// The keyed breaker, plainly.
#[derive(Clone, Debug)]
pub struct KeyedModel {
    table: Table<Model>,
}

impl KeyedModel {
    /// An empty table of `n` entries, each starting as `fresh`.
    pub fn new(fresh: Model, n: usize) -> KeyedModel {
        KeyedModel {
            table: Table::new(fresh, n),
        }
    }

    /// A call arrives for `key` at `now`.
    pub fn admit(
        &mut self,
        key: u64,
        now: Instant,
        rng: &mut dyn Random,
    ) -> Result<(Home, Ticket), Decision> {
        let home = self.table.place(key, now);
        let ticket = self.table.model(home).admit(now, rng)?;
        self.table.begin(home);
        Ok((home, ticket))
    }

    /// The call admitted at `home` with `ticket` ends.
    pub fn end(
        &mut self,
        home: Home,
        ticket: Ticket,
        now: Instant,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) {
        self.table.model(home).end(ticket, now, verdict, rng);
        self.table.end(home);
    }

    /// `state`: the key's own breaker's, `None` without an entry.
    pub fn state(&self, key: u64) -> Option<CircuitState> {
        self.table.get(key).map(Model::state)
    }

    /// The breaker every key without an entry shares.
    pub fn overflow(&self) -> &Model {
        self.table.overflow()
    }

    /// `evict_idle`.
    pub fn evict_idle(&mut self, now: Instant) -> usize {
        self.table.evict_idle(now)
    }

    /// `len`.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// `is_empty`.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// A [`KeyedBreaker`] beside its model: arrivals for keys `0..keys` (spread by a multiplier
/// so their homes collide), one in `evict_one_in` preceded by `evict_idle`; randomness as in
/// [`BreakerTwin`](crate::breaker::BreakerTwin) (one seed per step, the same draws for both);
/// [`check`](Twin::check) compares `len`, every key's state and the overflow's state.
pub struct KeyedBreakerTwin<'a, const N: usize, W: OutcomeWindow> {
    real: &'a KeyedBreaker<N, W>,
    model: KeyedModel,
    arrivals: Arrivals,
    calls: Vec<(KeyedPermit<'a, W>, Home, Ticket)>,
}

impl<'a, const N: usize, W: OutcomeWindow> KeyedBreakerTwin<'a, N, W> {
    /// `real` (fresh) and the model of one of its breakers, built alike.
    pub fn new(real: &'a KeyedBreaker<N, W>, fresh: Model, keys: u64, evict_one_in: u64) -> Self {
        KeyedBreakerTwin {
            real,
            model: KeyedModel::new(fresh, N),
            arrivals: Arrivals::new(keys, evict_one_in),
            calls: Vec::new(),
        }
    }

    /// The key numbered `i`.
    pub fn key(i: u64) -> u64 {
        key(i)
    }

    /// The model.
    pub fn model(&self) -> &KeyedModel {
        &self.model
    }

    /// Both evict idle entries at `now`.
    pub fn evict_idle(&mut self, now: Instant) -> Result<usize, String> {
        agree(
            "evict_idle",
            self.real.evict_idle(now),
            self.model.evict_idle(now),
        )
    }
}

fn pair(rng: &mut dyn Random) -> (SeededRandom, SeededRandom) {
    let seed = rng.next_u64();
    (SeededRandom::new(seed), SeededRandom::new(seed))
}

impl<const N: usize, W: OutcomeWindow> Twin for KeyedBreakerTwin<'_, N, W> {
    fn open(&self) -> usize {
        self.calls.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let (evict, key) = self.arrivals.draw(rng);
        if evict {
            self.evict_idle(now)?;
        }
        let (mut a, mut b) = pair(rng);
        let real = self.real.admit(key, &mut Env::new(now, &mut a));
        let model = self.model.admit(key, now, &mut b);
        let decision = same(
            Decision::of(&real),
            match &model {
                Ok(_) => Decision::Admitted,
                Err(d) => *d,
            },
        )
        .map_err(|e| format!("key {key}: {e}"))?;
        if let (Ok(permit), Ok((home, ticket))) = (real, model) {
            agree_home(key, permit.is_overflow(), home)?;
            if permit.is_probe() != ticket.is_probe() {
                return Err(format!("key {key}: probe differs"));
            }
            self.calls.push((permit, home, ticket));
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
        let (permit, home, ticket) = self.calls.remove(index);
        let (mut a, mut b) = pair(rng);
        match verdict {
            Some(v) => permit.settle(&v, &mut Env::new(now, &mut a)),
            None => drop(permit),
        }
        self.model.end(home, ticket, now, verdict, &mut b);
        Ok(())
    }

    fn check(&mut self, _now: Instant) -> Result<(), String> {
        self.arrivals.agree_table(
            "state",
            (self.real.len(), self.model.len()),
            |key| (self.real.state(key), self.model.state(key)),
            (self.real.overflow().state(), self.model.overflow().state()),
        )
    }
}
