//! Breakers per key (an endpoint, a tenant, a shard) in a fixed table: no heap, bounded memory,
//! lock-free, and an entry is only ever reused when it is forgettable.
//!
//! Design notes: docs/design/breaker.md

use core::time::Duration;

use super::window::CallRing;
use super::word::Word;
use super::{Breaker, BreakerPermit, CircuitState, Config, ConfigError, OutcomeWindow};
use super::{TimeBuckets, TimeWord, Timers, checked};
use crate::keyed::{KeyTable, Slot, Tag};
use crate::observe::Observer;
use crate::permit::{Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::Rejection;
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::verdict::Verdict;

impl<W: OutcomeWindow> Breaker<W> {
    /// A breaker over `window`, from a configuration `checked` has accepted as `t`.
    fn with_window(config: Config, t: Timers, window: W) -> Self {
        Breaker {
            settings: t.settings(&config),
            scale: t.scale,
            half_scale: t.half_scale,
            state: AtomicU32::new(Word::INITIAL.pack()),
            open_until: TimeWord::new(),
            probe_until: TimeWord::new(),
            reopens: AtomicU32::new(0),
            consecutive_failures: AtomicU32::new(0),
            window,
        }
    }

    /// Whether forgetting this breaker loses nothing at `now`: closed (not open, half-open,
    /// forced open or disabled), with no failure or slow call in its window and no failure
    /// streak (where one is configured to open the circuit). Such a breaker and a new one decide every future call alike, but for the
    /// successes in its window, which only ever keep a circuit closed.
    fn is_idle(&self, now: Instant) -> bool {
        if Word::closed_epoch(self.state.load(Ordering::Acquire)).is_none()
            || (self.live().consecutive_failures().is_some()
                && self.consecutive_failures.load(Ordering::Relaxed) != 0)
        {
            return false;
        }
        let t = self.window.totals(now);
        t.failures == 0 && t.slow == 0
    }

    /// Makes an idle breaker new for another key. Only on an entry nobody can reach.
    fn renew(&self) {
        self.forget_history();
        self.reopens.store(0, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct Entry<W> {
    tag: Tag,
    breaker: Breaker<W>,
}

impl<W> Slot for Entry<W> {
    fn tag(&self) -> &Tag {
        &self.tag
    }
}

/// A fixed table of up to `N` breakers, one per key, all with one configuration and window
/// shape, plus one shared **overflow** breaker. No heap: the memory is fixed by `N` and `W`,
/// whatever the traffic: one entry (a [`Breaker`] and a 12-byte tag holding its key) per key,
/// plus the overflow breaker. On 64-bit targets an entry is 400 bytes with the default
/// ten-bucket time window and 204 with a 112-call [`CallRing<7>`] (`memory_per_key` in the
/// tests pins both); each entry keeps its own copy of the configuration so that a key's
/// decisions read one entry only. A table of no entries does not compile. Construction is
/// not `const` (each entry is built in turn): keep a table in a `static` through a once-cell,
/// or build it in `main` and share a reference.
///
/// * **Keys** are `u64` (an endpoint id, a tenant id, or a hash of a longer name), placed as
///   in [`KeyedRateLimiter`](crate::rate_limit::KeyedRateLimiter): a key may live in any of
///   the 8 entries from its home entry on.
/// * **A new key** takes a free entry among its 8, else an **idle** one: closed, with no
///   failure and no slow call in its window and no failure streak, and no call in flight.
///   An entry that is open, half-open, forced open, disabled or counting failures is never
///   evicted, nor one with a call in flight: every permit pins its entry until it settles or
///   is dropped. [`evict_idle`](Self::evict_idle) frees every idle entry at once.
/// * **When the table is full** of live entries (or, for one call, when another thread is
///   inserting or evicting), the key is served by the overflow breaker, which every key
///   without an entry shares. The table then degrades to one breaker for the unplaced keys,
///   never to unbounded memory nor to no protection: an upstream wholly down still opens it.
///   The cost: one failing unplaced key's failures count against the others, so size `N` for
///   the keys that are live at once (the keys with failures in one window), not for all keys.
///   [`placed`](Self::placed) tells which keys are in the table.
///
/// Events are the breakers' own ([`Event::CircuitTransition`](crate::observe::Event)), sent
/// to the observer of the `Env` of the call that caused them: give each call an observer that
/// knows its key to label them.
///
/// **Concurrency.** Lock-free: nothing ever waits. Each entry is a [`Breaker`], exact and
/// approximate where a breaker is. Whether an entry is idle is judged twice by the one thread
/// holding the table's writer flag, the second time after reserving the entry so that nobody
/// can pin it: the judgement is final, and a live entry is never evicted (`keyed_breaker_stress`
/// checks it under many threads).
///
/// ```
/// use resilix::breaker::{CircuitState, Config, KeyedBreaker};
/// use resilix::permit::{Env, Permit};
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let config = Config { minimum_calls: 2, ..Config::DEFAULT };
/// let per_endpoint: KeyedBreaker<64> = KeyedBreaker::new(config).unwrap();
/// let mut rng = SeededRandom::new(7);
/// let mut env = Env::new(Instant::from_secs(1), &mut rng);
/// for _ in 0..2 {
///     let permit = per_endpoint.admit(7, &mut env).unwrap();
///     permit.settle(&Verdict::Transient, &mut env);
/// }
/// assert_eq!(per_endpoint.state(7), Some(CircuitState::Open));
/// assert!(per_endpoint.admit(7, &mut env).is_err(), "endpoint 7 is down");
/// assert!(per_endpoint.admit(8, &mut env).is_ok(), "endpoint 8 has its own breaker");
/// // Endpoint 8 is idle (closed, nothing failed): it can go; endpoint 7 cannot.
/// assert_eq!(per_endpoint.evict_idle(env.now), 1);
/// assert_eq!(per_endpoint.state(8), None);
/// assert_eq!(per_endpoint.state(7), Some(CircuitState::Open));
/// ```
#[derive(Debug)]
pub struct KeyedBreaker<const N: usize, W = TimeBuckets<10>> {
    table: KeyTable<Entry<W>, N>,
    overflow: Breaker<W>,
}

impl<const N: usize> KeyedBreaker<N, TimeBuckets<10>> {
    /// A table of breakers over the default window ([`super::DEFAULT_WINDOW`] in ten
    /// buckets), or the reason `config` is invalid.
    ///
    /// ```
    /// use resilix::breaker::{Config, ConfigError, KeyedBreaker};
    ///
    /// assert!(KeyedBreaker::<16>::new(Config::DEFAULT).is_ok());
    /// let bad = Config { minimum_calls: 0, ..Config::DEFAULT };
    /// assert!(KeyedBreaker::<16>::new(bad).is_err());
    /// ```
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        Self::time_based(config, super::DEFAULT_WINDOW)
    }
}

impl<const N: usize, const B: usize> KeyedBreaker<N, TimeBuckets<B>> {
    /// A table of breakers each counting the last `length` of time in `B` buckets, as
    /// [`Breaker::time_based`] (and refused for the same reasons).
    pub fn time_based(config: Config, length: Duration) -> Result<Self, ConfigError> {
        let overflow = Breaker::time_based(config, length)?;
        let t = checked(&config)?;
        Ok(Self::with_overflow(overflow, || {
            Breaker::with_window(config, t, TimeBuckets::new(length))
        }))
    }
}

impl<const N: usize, const WORDS: usize> KeyedBreaker<N, CallRing<WORDS>> {
    /// A table of breakers each counting the last `calls` calls, as
    /// [`Breaker::count_based`] (and refused for the same reasons).
    ///
    /// ```
    /// use resilix::breaker::{CallRing, Config, KeyedBreaker};
    ///
    /// let t: KeyedBreaker<8, CallRing<2>> = KeyedBreaker::count_based(Config::DEFAULT, 32).unwrap();
    /// assert_eq!(t.capacity(), 8);
    /// ```
    pub fn count_based(config: Config, calls: u32) -> Result<Self, ConfigError> {
        let overflow = Breaker::count_based(config, calls)?;
        let t = checked(&config)?;
        Ok(Self::with_overflow(overflow, || {
            Breaker::with_window(config, t, CallRing::new(calls))
        }))
    }
}

impl<const N: usize, W: OutcomeWindow> KeyedBreaker<N, W> {
    fn with_overflow(overflow: Breaker<W>, make: impl Fn() -> Breaker<W>) -> Self {
        const { assert!(N > 0, "a keyed breaker needs at least one entry") };
        KeyedBreaker {
            table: KeyTable::new(core::array::from_fn(|_| Entry {
                tag: Tag::new(),
                breaker: make(),
            })),
            overflow,
        }
    }

    /// Admits a call for `key` through its own breaker (placing the key if it has no entry),
    /// or through the overflow breaker when it cannot be placed.
    pub fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        key: u64,
        env: &mut Env<'_, R, O>,
    ) -> Result<KeyedPermit<'a, W>, Rejection> {
        let now = env.now;
        let entry = self.table.find(key).or_else(|| {
            self.table
                .insert(key, |e| e.breaker.is_idle(now), |e| e.breaker.renew())
        });
        let Some(entry) = entry else {
            return self.overflow.admit(env).map(|p| KeyedPermit {
                inner: Some(p),
                pin: None,
            });
        };
        match entry.breaker.admit(env) {
            Ok(p) => Ok(KeyedPermit {
                inner: Some(p),
                pin: Some(&entry.tag),
            }),
            Err(r) => {
                entry.tag.unpin();
                Err(r)
            }
        }
    }

    /// A [`Policy`] admitting calls through `key`'s breaker, for the breaker slot of a
    /// [`Pipeline`](crate::pipeline::Pipeline) built per call.
    pub const fn for_key(&self, key: u64) -> ForKey<'_, N, W> {
        ForKey { table: self, key }
    }

    /// The state of `key`'s own breaker, or `None` when the key has no entry (its calls go to
    /// a new entry or to the overflow breaker).
    pub fn state(&self, key: u64) -> Option<CircuitState> {
        self.with(key, |b| b.state())
    }

    /// Whether `key` has an entry of its own now (a snapshot).
    pub fn placed(&self, key: u64) -> bool {
        self.with(key, |_| ()).is_some()
    }

    /// Holds `key`'s circuit open until [`reset`](Self::reset) or [`disable`](Self::disable),
    /// as [`Breaker::force_open`] (one `CircuitTransition` event, cause `Operator`); the entry
    /// is then never evicted. A key without an entry is placed first; when it cannot be (every
    /// candidate entry live, or another thread placing a key at this moment), nothing changes
    /// and the answer is [`Unplaced`]: the overflow breaker, shared by other keys, is never
    /// forced by a per-key call (use [`overflow`](Self::overflow) for that).
    ///
    /// ```
    /// use resilix::breaker::{CircuitState, Config, KeyedBreaker};
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let t: KeyedBreaker<8> = KeyedBreaker::new(Config::DEFAULT).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::from_secs(1), &mut rng);
    /// t.force_open(3, &mut env).unwrap();
    /// assert!(t.admit(3, &mut env).is_err());
    /// assert_eq!(t.evict_idle(env.now), 0, "a forced key stays");
    /// t.reset(3, &mut env);
    /// assert_eq!(t.state(3), Some(CircuitState::Closed));
    /// assert!(t.admit(3, &mut env).is_ok());
    /// ```
    pub fn force_open<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        key: u64,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), Unplaced> {
        self.with_placed(key, env.now, |b| b.force_open(env))
    }

    /// Bypasses `key`'s breaker (every call admitted, nothing counted: the circuit held
    /// closed) until [`reset`](Self::reset) or [`force_open`](Self::force_open), as
    /// [`Breaker::disable`]; the entry is then never evicted. Places the key as
    /// [`force_open`](Self::force_open) does, or answers [`Unplaced`].
    pub fn disable<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        key: u64,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), Unplaced> {
        self.with_placed(key, env.now, |b| b.disable(env))
    }

    /// Closes `key`'s circuit afresh, as [`Breaker::reset`]: its window, failure streak, wait
    /// growth and probes are forgotten, not restored (calls in flight settle as late outcomes).
    /// Emits one event if the key has an entry; a key without one is already as good as new,
    /// and nothing happens. Answers whether the key had an entry.
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        key: u64,
        env: &mut Env<'_, R, O>,
    ) -> bool {
        self.with(key, |b| b.reset(env)).is_some()
    }

    fn with_placed<T>(
        &self,
        key: u64,
        now: Instant,
        f: impl FnOnce(&Breaker<W>) -> T,
    ) -> Result<T, Unplaced> {
        let e = self
            .table
            .find(key)
            .or_else(|| {
                self.table
                    .insert(key, |e| e.breaker.is_idle(now), |e| e.breaker.renew())
            })
            .ok_or(Unplaced)?;
        let out = f(&e.breaker);
        e.tag.unpin();
        Ok(out)
    }

    /// The breaker shared by every key without an entry.
    pub const fn overflow(&self) -> &Breaker<W> {
        &self.overflow
    }

    /// Frees every idle entry at `now` (closed, no failure or slow call in its window, no
    /// failure streak, no call in flight); returns how many. Returns 0 without doing anything
    /// if another thread is placing or evicting a key at this moment.
    pub fn evict_idle(&self, now: Instant) -> usize {
        self.table.evict(|e| e.breaker.is_idle(now))
    }

    /// How many keys hold an entry now (a snapshot).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no key holds an entry (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table's capacity, `N`.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Runs `f` on `key`'s own breaker, pinned so it cannot be evicted meanwhile.
    fn with<T>(&self, key: u64, f: impl FnOnce(&Breaker<W>) -> T) -> Option<T> {
        let e = self.table.find(key)?;
        let out = f(&e.breaker);
        e.tag.unpin();
        Some(out)
    }
}

/// A per-key operator action found no entry for its key and could not place it: every
/// candidate entry is live, or another thread was placing or evicting a key at that moment
/// (try again). Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unplaced;

impl core::fmt::Display for Unplaced {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the key has no entry and none is free or idle (or the table was busy): nothing changed")
    }
}

impl core::error::Error for Unplaced {}

/// One key of a [`KeyedBreaker`], as a [`Policy`].
#[derive(Debug)]
pub struct ForKey<'t, const N: usize, W> {
    table: &'t KeyedBreaker<N, W>,
    key: u64,
}

impl<const N: usize, W> Clone for ForKey<'_, N, W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<const N: usize, W> Copy for ForKey<'_, N, W> {}

impl<const N: usize, W: OutcomeWindow> Policy for ForKey<'_, N, W> {
    type Permit<'a>
        = KeyedPermit<'a, W>
    where
        Self: 'a;

    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<KeyedPermit<'a, W>, Rejection> {
        self.table.admit(self.key, env)
    }
}

/// A call admitted by a [`KeyedBreaker`]: a [`BreakerPermit`] that also keeps its key's entry
/// from being evicted until it is settled or dropped.
#[must_use = "settle the permit with the call's verdict; dropping it records a cancellation"]
#[derive(Debug)]
pub struct KeyedPermit<'a, W: OutcomeWindow> {
    inner: Option<BreakerPermit<'a, W>>,
    /// The entry's tag, pinned; `None` for a call through the overflow breaker.
    pin: Option<&'a Tag>,
}

impl<W: OutcomeWindow> KeyedPermit<'_, W> {
    /// Whether this call is a half-open probe of its breaker.
    pub fn is_probe(&self) -> bool {
        self.inner.as_ref().is_some_and(|p| p.is_probe())
    }

    /// Whether this call went through the shared overflow breaker (its key had no entry).
    pub fn is_overflow(&self) -> bool {
        self.pin.is_none()
    }
}

impl<W: OutcomeWindow> Permit for KeyedPermit<'_, W> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let Some(p) = self.inner.take() {
            p.settle(verdict, env);
        }
        // `Drop` unpins, after the outcome is in the breaker.
    }
}

impl<W: OutcomeWindow> Drop for KeyedPermit<'_, W> {
    fn drop(&mut self) {
        drop(self.inner.take());
        if let Some(tag) = self.pin.take() {
            tag.unpin();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
