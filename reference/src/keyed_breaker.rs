//! The keyed breaker, plainly: a list of `N` entries of `(key, breaker model, calls in
//! flight)` and one overflow breaker model.
//!
//! What it means (the same as `resilix::breaker::KeyedBreaker`, single-threaded):
//!
//! * A key may live in the 8 entries from its home (`⌊key · 0x9E3779B97F4A7C15 / 2^32⌋ mod N`,
//!   wrapping), as in the keyed rate limiter.
//! * A call for a key with an entry goes to that entry's breaker. A key without one takes the
//!   first free entry among its 8, else the first **idle** one (no call in flight and
//!   [`Model::is_idle`]: closed, no failure or slow call in the window, no failure streak
//!   where a streak opens the circuit), which starts over as a new breaker; else the call
//!   goes to the overflow breaker, shared by every key without an entry.
//! * `evict_idle` frees every idle entry.

use resilix::breaker::{CircuitState, KeyedBreaker, KeyedPermit, OutcomeWindow};
use resilix::permit::{Env, Permit};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::breaker::{Model, Ticket};
use crate::twin::{Decision, Twin, same};

/// Probes from a key's home entry.
const PROBES: usize = 8;

/// One placed key.
#[derive(Clone, Debug)]
pub struct Placed {
    /// The key.
    pub key: u64,
    /// Its breaker.
    pub breaker: Model,
    /// Its calls admitted and not yet ended.
    pub in_flight: usize,
}

/// Which breaker admitted a call: an entry's, or the overflow's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Entry `i`.
    Entry(usize),
    /// The overflow breaker.
    Overflow,
}

/// The keyed table, plainly.
#[derive(Clone, Debug)]
pub struct KeyedModel {
    /// A new breaker, as every entry starts.
    pub fresh: Model,
    /// The entries.
    pub entries: Vec<Option<Placed>>,
    /// The breaker every key without an entry shares.
    pub overflow: Model,
}

impl KeyedModel {
    /// An empty table of `n` entries, each starting as `fresh`.
    pub fn new(fresh: Model, n: usize) -> KeyedModel {
        assert!(n > 0, "a keyed breaker needs at least one entry");
        KeyedModel {
            overflow: fresh.clone(),
            fresh,
            entries: vec![None; n],
        }
    }

    fn candidates(&self, key: u64) -> impl Iterator<Item = usize> + use<> {
        let n = self.entries.len();
        let home = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize) % n;
        (0..PROBES.min(n)).map(move |i| (home + i) % n)
    }

    fn find(&self, key: u64) -> Option<usize> {
        self.candidates(key)
            .find(|&i| matches!(&self.entries[i], Some(p) if p.key == key))
    }

    fn idle(e: &Option<Placed>, now: Instant) -> bool {
        matches!(e, Some(p) if p.in_flight == 0 && p.breaker.is_idle(now))
    }

    /// Where a call for `key` at `now` goes, placing the key if it can.
    pub fn place(&mut self, key: u64, now: Instant) -> Home {
        if let Some(i) = self.find(key) {
            return Home::Entry(i);
        }
        let free = self.candidates(key).find(|&i| self.entries[i].is_none());
        let i = free.or_else(|| {
            self.candidates(key)
                .find(|&i| Self::idle(&self.entries[i], now))
        });
        match i {
            Some(i) => {
                self.entries[i] = Some(Placed {
                    key,
                    breaker: self.fresh.clone(),
                    in_flight: 0,
                });
                Home::Entry(i)
            }
            None => Home::Overflow,
        }
    }

    /// The breaker at `home`.
    pub fn breaker(&mut self, home: Home) -> &mut Model {
        match home {
            Home::Entry(i) => &mut self.entries[i].as_mut().expect("placed").breaker,
            Home::Overflow => &mut self.overflow,
        }
    }

    /// A call arrives for `key` at `now`.
    pub fn admit(
        &mut self,
        key: u64,
        now: Instant,
        rng: &mut dyn Random,
    ) -> Result<(Home, Ticket), Decision> {
        let home = self.place(key, now);
        let ticket = self.breaker(home).admit(now, rng)?;
        if let Home::Entry(i) = home {
            self.entries[i].as_mut().expect("placed").in_flight += 1;
        }
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
        self.breaker(home).end(ticket, now, verdict, rng);
        if let Home::Entry(i) = home {
            self.entries[i].as_mut().expect("placed").in_flight -= 1;
        }
    }

    /// `state`: the key's own breaker's, `None` without an entry.
    pub fn state(&self, key: u64) -> Option<CircuitState> {
        self.find(key)
            .map(|i| self.entries[i].as_ref().expect("placed").breaker.state())
    }

    /// `evict_idle`.
    pub fn evict_idle(&mut self, now: Instant) -> usize {
        let mut evicted = 0;
        for e in &mut self.entries {
            if Self::idle(e, now) {
                *e = None;
                evicted += 1;
            }
        }
        evicted
    }

    /// `len`.
    pub fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    /// `is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A [`KeyedBreaker`] beside its model: arrivals for keys `0..keys` (spread by a multiplier
/// so their homes collide), one in `evict_one_in` preceded by `evict_idle`; randomness as in
/// [`BreakerTwin`](crate::breaker::BreakerTwin) (one seed per step, the same draws for both);
/// [`check`](Twin::check) compares `len`, every key's state and the overflow's state.
pub struct KeyedBreakerTwin<'a, const N: usize, W: OutcomeWindow> {
    real: &'a KeyedBreaker<N, W>,
    model: KeyedModel,
    keys: u64,
    evict_one_in: u64,
    calls: Vec<(KeyedPermit<'a, W>, Home, Ticket)>,
}

impl<'a, const N: usize, W: OutcomeWindow> KeyedBreakerTwin<'a, N, W> {
    /// `real` (fresh) and the model of one of its breakers, built alike.
    pub fn new(real: &'a KeyedBreaker<N, W>, fresh: Model, keys: u64, evict_one_in: u64) -> Self {
        KeyedBreakerTwin {
            real,
            model: KeyedModel::new(fresh, N),
            keys: keys.max(1),
            evict_one_in,
            calls: Vec::new(),
        }
    }

    /// The key numbered `i`.
    pub fn key(i: u64) -> u64 {
        i.wrapping_mul(0x1_0000_0001)
    }

    /// The model.
    pub fn model(&self) -> &KeyedModel {
        &self.model
    }

    /// Both evict idle entries at `now`.
    pub fn evict_idle(&mut self, now: Instant) -> Result<usize, String> {
        let (real, model) = (self.real.evict_idle(now), self.model.evict_idle(now));
        if real == model {
            Ok(real)
        } else {
            Err(format!("evict_idle: real {real}, model {model}"))
        }
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
        if self.evict_one_in > 0 && rng.below(self.evict_one_in) == 0 {
            self.evict_idle(now)?;
        }
        let key = Self::key(rng.below(self.keys));
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
            if permit.is_overflow() != (home == Home::Overflow) {
                return Err(format!(
                    "key {key}: real overflow {}, model {home:?}",
                    permit.is_overflow()
                ));
            }
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
        if self.real.len() != self.model.len() {
            return Err(format!(
                "len: real {}, model {}",
                self.real.len(),
                self.model.len()
            ));
        }
        for i in 0..self.keys {
            let key = Self::key(i);
            let (real, model) = (self.real.state(key), self.model.state(key));
            if real != model {
                return Err(format!("state({key}): real {real:?}, model {model:?}"));
            }
        }
        let (real, model) = (self.real.overflow().state(), self.model.overflow.state());
        if real != model {
            return Err(format!("overflow state: real {real:?}, model {model:?}"));
        }
        Ok(())
    }
}
