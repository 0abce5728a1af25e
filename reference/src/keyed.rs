//! The keyed table, plainly, for any policy: a list of `N` entries of `(key, model, calls in
//! flight)` and one overflow model. What it means (the same as `resilix`'s one key table,
//! single-threaded):
//!
//! * A key may live in the 8 entries from its home (`⌊key · 0x9E3779B97F4A7C15 / 2^32⌋ mod N`,
//!   wrapping).
//! * A call for a key with an entry goes to that entry's model. A key without one takes the
//!   first free entry among its 8, else the first **idle** one (no call in flight and the
//!   policy's own [`Idle`] rule), which starts over as a fresh model; else the call goes to
//!   the overflow model, shared by every key without an entry.
//! * `evict_idle` frees every idle entry.
//!
//! The keyed rate limiter, breaker, budget, bulkhead and throttler are modelled on it; their twins share
//! [`Arrivals`] (which key each arrival is for, and when `evict_idle` comes first) and
//! [`agree`] / [`agree_home`] for what they compare.

use core::fmt::{Debug, Display};

use resilix::random::Random;
use resilix::time::Instant;

/// Probes from a key's home entry.
const PROBES: usize = 8;

/// The policy's own half of the idle rule (the table adds "no call in flight").
pub trait Idle {
    /// Whether forgetting this model at `now` loses nothing.
    fn is_idle(&self, now: Instant) -> bool;
}

/// One placed key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed<M> {
    /// The key.
    pub key: u64,
    /// Its model.
    pub model: M,
    /// Its calls admitted and not yet ended.
    pub in_flight: usize,
}

/// Which model a call goes to: an entry's, or the overflow's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Entry `i`.
    Entry(usize),
    /// The overflow model.
    Overflow,
}

/// The keyed table, plainly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table<M> {
    fresh: M,
    entries: Vec<Option<Placed<M>>>,
    overflow: M,
}

impl<M: Idle + Clone> Table<M> {
    /// An empty table of `n` entries, each starting as `fresh` (and the overflow too).
    pub fn new(fresh: M, n: usize) -> Table<M> {
        assert!(n > 0, "a keyed table needs at least one entry");
        Table {
            overflow: fresh.clone(),
            fresh,
            entries: vec![None; n],
        }
    }

    fn candidates(&self, key: u64) -> impl Iterator<Item = usize> + use<M> {
        let n = self.entries.len();
        let home = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize) % n;
        (0..PROBES.min(n)).map(move |i| (home + i) % n)
    }

    fn find(&self, key: u64) -> Option<usize> {
        self.candidates(key)
            .find(|&i| matches!(&self.entries[i], Some(p) if p.key == key))
    }

    fn idle(e: &Option<Placed<M>>, now: Instant) -> bool {
        matches!(e, Some(p) if p.in_flight == 0 && p.model.is_idle(now))
    }

    /// Where a call for `key` at `now` goes, placing the key (as a copy of the fresh model)
    /// if it can.
    pub fn place(&mut self, key: u64, now: Instant) -> Home {
        self.place_by(key, now, M::clone)
    }

    /// [`place`](Self::place), for a policy whose new model depends on when it is placed
    /// (a rate limiter's bucket starts full at `now`): a placed key's model is `fresh()`.
    pub fn place_fresh(&mut self, key: u64, now: Instant, fresh: impl FnOnce() -> M) -> Home {
        self.place_by(key, now, |_| fresh())
    }

    fn place_by(&mut self, key: u64, now: Instant, fresh: impl FnOnce(&M) -> M) -> Home {
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
                    model: fresh(&self.fresh),
                    in_flight: 0,
                });
                Home::Entry(i)
            }
            None => Home::Overflow,
        }
    }

    /// The model at `home`.
    pub fn model(&mut self, home: Home) -> &mut M {
        match home {
            Home::Entry(i) => &mut self.entries[i].as_mut().expect("placed").model,
            Home::Overflow => &mut self.overflow,
        }
    }

    /// A call admitted at `home` starts: its entry is pinned.
    pub fn begin(&mut self, home: Home) {
        if let Home::Entry(i) = home {
            self.entries[i].as_mut().expect("placed").in_flight += 1;
        }
    }

    /// A call admitted at `home` ends: its entry is unpinned.
    pub fn end(&mut self, home: Home) {
        if let Home::Entry(i) = home {
            self.entries[i].as_mut().expect("placed").in_flight -= 1;
        }
    }

    /// `key`'s own model, `None` without an entry.
    pub fn get(&self, key: u64) -> Option<&M> {
        self.find(key)
            .map(|i| &self.entries[i].as_ref().expect("placed").model)
    }

    /// The overflow model.
    pub fn overflow(&self) -> &M {
        &self.overflow
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

/// The key numbered `i` in the keyed twins: spread by a multiplier so that homes collide.
pub fn key(i: u64) -> u64 {
    i.wrapping_mul(0x1_0000_0001)
}

/// A keyed twin's arrivals: each for one of keys `0..keys` ([`key`]), one in `evict_one_in`
/// preceded by `evict_idle` (never with 0).
#[derive(Clone, Copy, Debug)]
pub struct Arrivals {
    keys: u64,
    evict_one_in: u64,
}

impl Arrivals {
    /// Arrivals over `keys` keys (at least one).
    pub fn new(keys: u64, evict_one_in: u64) -> Arrivals {
        Arrivals {
            keys: keys.max(1),
            evict_one_in,
        }
    }

    /// The next arrival: whether `evict_idle` comes first, and its key. The eviction draw
    /// comes first, so that twins draw as they always did.
    pub fn draw(&self, rng: &mut dyn Random) -> (bool, u64) {
        let evict = self.evict_one_in > 0 && rng.below(self.evict_one_in) == 0;
        (evict, key(rng.below(self.keys)))
    }

    /// Every key an arrival may be for.
    pub fn keys(&self) -> impl Iterator<Item = u64> + use<> {
        (0..self.keys).map(key)
    }

    /// What every keyed twin's `check` compares: `len` (real, model), then `what` of every
    /// key's own entry (real, model; `None` without one), then `what` of the overflow.
    pub fn agree_table<T: PartialEq + Debug>(
        &self,
        what: &str,
        len: (usize, usize),
        entry: impl Fn(u64) -> (Option<T>, Option<T>),
        overflow: (T, T),
    ) -> Result<(), String> {
        agree("len", len.0, len.1)?;
        for key in self.keys() {
            let (real, model) = entry(key);
            agree(format_args!("{what}({key})"), real, model)?;
        }
        agree(format_args!("overflow {what}"), overflow.0, overflow.1)?;
        Ok(())
    }
}

/// `real`, when the model says the same of `what`; else the disagreement.
pub fn agree<T: PartialEq + Debug>(what: impl Display, real: T, model: T) -> Result<T, String> {
    if real == model {
        Ok(real)
    } else {
        Err(format!("{what}: real {real:?}, model {model:?}"))
    }
}

/// Whether the real table admitted `key`'s call in its overflow exactly when the model's
/// `home` is the overflow.
pub fn agree_home(key: u64, real_overflow: bool, home: Home) -> Result<(), String> {
    if real_overflow == (home == Home::Overflow) {
        Ok(())
    } else {
        Err(format!(
            "key {key}: real overflow {real_overflow}, model {home:?}"
        ))
    }
}
