//! SRE throttlers per key (an upstream host, a shard, a region) in a fixed table: a client
//! calling many hosts sheds only toward the hosts that are refusing it, as gRPC keeps one
//! throttler per channel. No heap, bounded memory, lock-free, and an entry is only ever
//! reused when its window is empty.
//!
//! Design notes: docs/design/throttler.md

use super::{Probability, Throttler, ThrottlerConfig, ThrottlerConfigError, ThrottlerPermit};
use crate::keyed::{KeyTable, Slot, Tag};
use crate::observe::Observer;
use crate::permit::{Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::Rejection;
use crate::time::Instant;
use crate::verdict::Verdict;

#[derive(Debug)]
struct Entry<const B: usize> {
    tag: Tag,
    throttler: Throttler<B>,
}

impl<const B: usize> Slot for Entry<B> {
    fn tag(&self) -> &Tag {
        &self.tag
    }
}

/// Whether forgetting `t` loses nothing at `now`: no request and no accept in its window, so
/// it and a new throttler decide every later call alike.
fn is_idle<const B: usize>(t: &Throttler<B>, now: Instant) -> bool {
    t.counts(now) == (0, 0)
}

/// A fixed table of up to `N` SRE throttlers ([`Throttler`], `B` buckets each), one per key,
/// all with one configuration, plus one shared **overflow** throttler. No heap: the memory is
/// fixed by `N` and `B`, whatever the traffic: one entry (a `Throttler<B>` and a 12-byte tag
/// holding its key) per key, plus the overflow throttler. On 64-bit targets an entry is
/// `8 × B + 104` bytes: 264 with the default 20 buckets, 136 with 4 (`memory_per_key` in the
/// tests pins both). `N = 0` does not compile. Construction is not `const` (each entry keeps
/// its own copy of the configuration, so a key's decisions read one entry only): build the
/// table in `main` or a once-cell and share a reference.
///
/// * **Keys** are `u64` (a host id, or a hash of the host name), placed as in
///   [`KeyedRateLimiter`](crate::rate_limit::KeyedRateLimiter): a key may live in any of the
///   8 entries from its home entry on.
/// * **A new key** takes a free entry among its 8, else an **idle** one: its window is empty
///   (no request and no accept in the last `window`) and it has no call in flight (every
///   permit pins its entry until it is settled or dropped, so a call in flight always settles
///   into the throttler that admitted it). An entry that counted anything in its window is
///   never evicted; a key re-placed after eviction starts with an empty window.
///   [`evict_idle`](Self::evict_idle) frees every idle entry at once.
/// * **When the table is full** of live entries (or, for one call, while another thread is
///   placing or evicting a key), the key is served by the overflow throttler, shared by every
///   key without an entry: unplaced keys then shed by their combined accept ratio, as one
///   throttler in front of all of them would. A failing unplaced host makes the other unplaced
///   hosts shed too (never a placed one); size `N` for the hosts called within one window.
///
/// **Concurrency.** Each entry is a [`Throttler`], statistical where a throttler is (docs/design/contracts.md
/// §4); the table's placement and eviction are exact: an entry is judged idle only while
/// nobody can pin it, so a live entry is never evicted (`keyed_throttler_stress` checks it
/// under many threads).
///
/// ```
/// use resilix::permit::{Env, Permit};
/// use resilix::random::SeededRandom;
/// use resilix::throttler::{KeyedThrottler, ThrottlerConfig};
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let per_host: KeyedThrottler<64> = KeyedThrottler::new(ThrottlerConfig::DEFAULT).unwrap();
/// let mut rng = SeededRandom::new(7);
/// let mut env = Env::new(Instant::from_secs(1), &mut rng);
/// // Host 7 fails ten calls (ten is the low-traffic floor)...
/// for _ in 0..10 {
///     per_host.admit(7, &mut env).unwrap().settle(&Verdict::Transient, &mut env);
/// }
/// // ...so calls to it are shed with probability 0.9, and host 8's are not.
/// assert_eq!(per_host.rejection_probability(7, env.now).unwrap().as_f64(), 0.9);
/// assert!(per_host.admit(8, &mut env).is_ok());
/// assert_eq!(per_host.counts(8, env.now), Some((0, 0)));
/// // Host 8 counted nothing: its entry can go, host 7's cannot until its window empties.
/// assert_eq!(per_host.evict_idle(env.now), 1);
/// assert!(per_host.placed(7) && !per_host.placed(8));
/// assert_eq!(per_host.evict_idle(Instant::from_secs(200)), 1);
/// ```
#[derive(Debug)]
pub struct KeyedThrottler<const N: usize, const B: usize = 20> {
    table: KeyTable<Entry<B>, N>,
    overflow: Throttler<B>,
}

impl<const N: usize> KeyedThrottler<N, 20> {
    /// A table of throttlers over the default 20 buckets, or the reason `config` is refused
    /// (as [`Throttler::new`] refuses it). Other bucket counts:
    /// [`with_buckets`](KeyedThrottler::with_buckets).
    ///
    /// ```
    /// use resilix::throttler::{KeyedThrottler, ThrottlerConfig};
    ///
    /// assert!(KeyedThrottler::<16>::new(ThrottlerConfig::DEFAULT).is_ok());
    /// let bad = ThrottlerConfig { accepts_multiplier: 0.5, ..ThrottlerConfig::DEFAULT };
    /// assert!(KeyedThrottler::<16>::new(bad).is_err());
    /// ```
    pub fn new(config: ThrottlerConfig) -> Result<Self, ThrottlerConfigError> {
        Self::with_buckets(config)
    }
}

impl<const N: usize, const B: usize> KeyedThrottler<N, B> {
    /// A table of throttlers over `B` buckets each, refused as [`Throttler::with_buckets`]
    /// refuses `config`. Fewer buckets, less memory per key, a coarser window.
    ///
    /// ```
    /// use resilix::throttler::{KeyedThrottler, ThrottlerConfig};
    ///
    /// let t = KeyedThrottler::<32, 4>::with_buckets(ThrottlerConfig::DEFAULT).unwrap();
    /// assert_eq!(t.capacity(), 32);
    /// ```
    pub fn with_buckets(config: ThrottlerConfig) -> Result<Self, ThrottlerConfigError> {
        const { assert!(N > 0, "a keyed throttler needs at least one entry") };
        let overflow = Throttler::with_buckets(config)?;
        let table = KeyTable::new(core::array::from_fn(|_| Entry {
            tag: Tag::new(),
            throttler: match Throttler::with_buckets(config) {
                Ok(t) => t,
                Err(_) => unreachable!("the same config was accepted for the overflow"),
            },
        }));
        Ok(KeyedThrottler { table, overflow })
    }

    /// Admits a call for `key` through its own throttler (placing the key if it has no
    /// entry), or through the overflow throttler when it cannot be placed; sheds with
    /// [`RejectReason::Throttled`](crate::RejectReason::Throttled) as [`Throttler`] does.
    pub fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        key: u64,
        env: &mut Env<'_, R, O>,
    ) -> Result<KeyedPermit<'a, B>, Rejection> {
        let now = env.now;
        let entry = self.table.find(key).or_else(|| {
            self.table.insert(
                key,
                |e| is_idle(&e.throttler, now),
                // Idle already decides as new; clearing also forgets counts a later timeline
                // could read should time go backwards.
                |e| e.throttler.forget(),
            )
        });
        let Some(entry) = entry else {
            return self.overflow.admit(env).map(|p| KeyedPermit {
                inner: Some(p),
                pin: None,
            });
        };
        match entry.throttler.admit(env) {
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

    /// A [`Policy`] admitting calls through `key`'s throttler, for the throttler slot of a
    /// [`Pipeline`](crate::pipeline::Pipeline) built per call.
    ///
    /// ```
    /// use resilix::call::CallOptions;
    /// use resilix::permit::Env;
    /// use resilix::pipeline::Pipeline;
    /// use resilix::random::SeededRandom;
    /// use resilix::throttler::{KeyedThrottler, ThrottlerConfig};
    /// use resilix::time::Instant;
    /// use resilix::Verdict;
    ///
    /// let per_host: KeyedThrottler<32> = KeyedThrottler::new(ThrottlerConfig::DEFAULT).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::from_secs(1), &mut rng);
    /// let pipeline = Pipeline::new().throttler(per_host.for_key(5));
    /// let mut call = pipeline.call(env.now, CallOptions::default());
    /// let attempt = call.admit(&mut env).unwrap();
    /// call.settle(attempt, &Verdict::Success, &mut env);
    /// assert_eq!(per_host.counts(5, env.now), Some((1, 1)));
    /// ```
    pub const fn for_key(&self, key: u64) -> ForKey<'_, N, B> {
        ForKey { table: self, key }
    }

    /// `(requests, accepts)` in `key`'s window ending at `now`, or `None` when the key has no
    /// entry (its calls go to a new entry or to the overflow throttler).
    pub fn counts(&self, key: u64, now: Instant) -> Option<(u32, u32)> {
        self.with(key, |t| t.counts(now))
    }

    /// The probability with which a call for `key` admitted at `now` would be shed by its own
    /// throttler, or `None` when the key has no entry.
    pub fn rejection_probability(&self, key: u64, now: Instant) -> Option<Probability> {
        self.with(key, |t| t.rejection_probability(now))
    }

    /// Whether `key` has an entry of its own now (a snapshot).
    pub fn placed(&self, key: u64) -> bool {
        self.with(key, |_| ()).is_some()
    }

    /// Forgets `key`'s counts, as [`Throttler::reset`] (one `PolicyReset` event) if the key has
    /// an entry; a key without one is already as good as new, and nothing happens. Answers
    /// whether the key had an entry. The overflow is reset through
    /// [`overflow`](Self::overflow) only.
    ///
    /// ```
    /// use resilix::permit::{Env, Permit};
    /// use resilix::random::SeededRandom;
    /// use resilix::throttler::{KeyedThrottler, ThrottlerConfig};
    /// use resilix::time::Instant;
    /// use resilix::Verdict;
    ///
    /// let t: KeyedThrottler<8> = KeyedThrottler::new(ThrottlerConfig::DEFAULT).unwrap();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::from_secs(1), &mut rng);
    /// t.admit(3, &mut env).unwrap().settle(&Verdict::Transient, &mut env);
    /// assert!(t.reset(3, &mut env));
    /// assert_eq!(t.counts(3, env.now), Some((0, 0)));
    /// assert!(!t.reset(4, &mut env), "key 4 has no entry");
    /// ```
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        key: u64,
        env: &mut Env<'_, R, O>,
    ) -> bool {
        self.with(key, |t| t.reset(env)).is_some()
    }

    /// The throttler shared by every key without an entry.
    pub const fn overflow(&self) -> &Throttler<B> {
        &self.overflow
    }

    /// Frees every idle entry at `now` (an empty window, no call in flight); returns how many.
    /// Returns 0 without doing anything if another thread is placing or evicting a key at
    /// this moment.
    pub fn evict_idle(&self, now: Instant) -> usize {
        self.table.evict(|e| is_idle(&e.throttler, now))
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

    /// Runs `f` on `key`'s own throttler, pinned so it cannot be evicted meanwhile.
    fn with<T>(&self, key: u64, f: impl FnOnce(&Throttler<B>) -> T) -> Option<T> {
        let e = self.table.find(key)?;
        let out = f(&e.throttler);
        e.tag.unpin();
        Some(out)
    }
}

/// One key of a [`KeyedThrottler`], as a [`Policy`].
#[derive(Debug)]
pub struct ForKey<'t, const N: usize, const B: usize> {
    table: &'t KeyedThrottler<N, B>,
    key: u64,
}

impl<const N: usize, const B: usize> Clone for ForKey<'_, N, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<const N: usize, const B: usize> Copy for ForKey<'_, N, B> {}

impl<const N: usize, const B: usize> ForKey<'_, N, B> {
    /// The key.
    pub const fn key(&self) -> u64 {
        self.key
    }
}

impl<const N: usize, const B: usize> Policy for ForKey<'_, N, B> {
    type Permit<'a>
        = KeyedPermit<'a, B>
    where
        Self: 'a;

    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<KeyedPermit<'a, B>, Rejection> {
        self.table.admit(self.key, env)
    }
}

/// A call admitted by a [`KeyedThrottler`]: a [`ThrottlerPermit`] (settling counts it,
/// dropping does not) that also keeps its key's entry from being evicted until then.
#[must_use = "settle the permit with the call's verdict, or drop it to cancel"]
#[derive(Debug)]
pub struct KeyedPermit<'a, const B: usize> {
    inner: Option<ThrottlerPermit<'a, B>>,
    /// The entry's tag, pinned; `None` for a call through the overflow throttler.
    pin: Option<&'a Tag>,
}

impl<const B: usize> KeyedPermit<'_, B> {
    /// Whether this call went through the shared overflow throttler (its key had no entry).
    pub const fn is_overflow(&self) -> bool {
        self.pin.is_none()
    }
}

impl<const B: usize> Permit for KeyedPermit<'_, B> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let Some(p) = self.inner.take() {
            p.settle(verdict, env);
        }
        // `Drop` unpins, after the outcome is in the window.
    }
}

impl<const B: usize> Drop for KeyedPermit<'_, B> {
    fn drop(&mut self) {
        // An unsettled throttler permit counts nothing: only the pin is left to give back.
        if let Some(tag) = self.pin.take() {
            tag.unpin();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
