use super::AcquireError;
use super::gcra::{Decision, Gcra, TICK_BITS, TICK_MASK, era_count};
use super::limiter::RateLimitPermit;
use super::rate::{RateLimitConfig, RateLimitConfigError};
use crate::keyed::{KeyTable, Slot, Tag};
use crate::observe::Observer;
use crate::permit::{Env, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::era::Era;

#[derive(Debug)]
struct Entry {
    /// The key and the entry's state (see `crate::keyed`).
    tag: Tag,
    /// The bucket's TAT, low 31 bits.
    tat: AtomicU32,
    /// Its era (see `time::era`): covered before each compare-and-swap on `tat`, read after
    /// each load of it; set outright by the writer-flag holder that (re)creates the entry.
    era: Era,
}

impl Entry {
    crate::sync::const_fn_unless_loom! {
        fn new() -> Self {
            Entry { tag: Tag::new(), tat: AtomicU32::new(0), era: Era::new() }
        }
    }
}

impl Slot for Entry {
    fn tag(&self) -> &Tag {
        &self.tag
    }
}

#[cfg(not(loom))]
const fn new_entries<const N: usize>() -> [Entry; N] {
    [const { Entry::new() }; N]
}

#[cfg(loom)]
fn new_entries<const N: usize>() -> [Entry; N] {
    core::array::from_fn(|_| Entry::new())
}

/// A fixed table of up to `N` per-key token buckets, all with one rate and burst, plus one
/// shared overflow bucket. No heap; the memory is `20 × N + 32` bytes on 64-bit targets,
/// whatever the traffic. `N` must be at least 1 ([`RateLimitConfigError::ZeroCapacity`]
/// otherwise: a table with no entries would make every key share the one overflow bucket).
///
/// * **Keys** are `u64`: a tenant id, a contract id, or a hash of something longer (the
///   table mixes the bits itself, so sequential ids spread well). A key may live in any of
///   the 8 entries from its home entry on.
/// * **Idle keys are evicted**, never left to pile up (governor #171): a key whose bucket is
///   full again is indistinguishable from a new key, so its entry can be reused. Entries are
///   reclaimed lazily when a new key needs one, and all at once by [`evict_idle`].
/// * **When the table is full** of active keys (all 8 candidate entries hold keys whose
///   buckets are not full), a new key is limited by the **overflow bucket**, which every key
///   without an entry shares and which has the same rate and burst as one key. Traffic from
///   unseen keys therefore gets at most one key's quota in total: the table degrades to a
///   stricter limit, never to unbounded memory or to no limit.
///
/// **Concurrency.** Lock-free: nothing ever waits. A key's bucket is used exactly as
/// [`RateLimiter`](super::RateLimiter)'s is (one compare-and-swap), while the entry is pinned
/// so it cannot be evicted under the caller. Inserting and evicting keys take a writer flag
/// with a single try; a caller that finds it taken does not wait but uses the overflow
/// bucket for this one call. So the per-key bound `burst + rate × elapsed` is exact for every
/// call made through the key's own entry; a key may in addition draw on the shared overflow
/// bucket in the moment its entry is being created or when the table is full.
///
/// ```
/// use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig};
/// use resilix::time::Instant;
///
/// let per_tenant: KeyedRateLimiter<64> =
///     KeyedRateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(2)).unwrap();
/// let now = Instant::from_secs(10);
/// assert!(per_tenant.try_acquire(7, now).is_ok());
/// assert!(per_tenant.try_acquire(7, now).is_ok());
/// assert!(per_tenant.try_acquire(7, now).is_err(), "tenant 7 is out of cells");
/// assert!(per_tenant.try_acquire(8, now).is_ok(), "tenant 8 has its own bucket");
/// assert_eq!(per_tenant.len(), 2);
/// // Once both buckets are full again, both keys can go.
/// assert_eq!(per_tenant.evict_idle(Instant::from_secs(13)), 2);
/// assert_eq!(per_tenant.len(), 0);
/// ```
///
/// [`evict_idle`]: KeyedRateLimiter::evict_idle
#[derive(Debug)]
pub struct KeyedRateLimiter<const N: usize> {
    gcra: Gcra,
    overflow: AtomicU32,
    overflow_era: Era,
    table: KeyTable<Entry, N>,
}

impl<const N: usize> KeyedRateLimiter<N> {
    crate::sync::const_fn_unless_loom! {
        /// An empty table, or the reason `config` (or `N = 0`) is refused.
        ///
        /// ```
        /// use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig, RateLimitConfigError};
        ///
        /// let config = RateLimitConfig::new(Rate::per_second(5));
        /// assert!(KeyedRateLimiter::<16>::new(config).is_ok());
        /// let none = KeyedRateLimiter::<0>::new(config).unwrap_err();
        /// assert_eq!(none, RateLimitConfigError::ZeroCapacity);
        /// assert!(none.to_string().contains("capacity 0 would make every key share one bucket"));
        /// ```
        pub fn new(config: RateLimitConfig) -> Result<Self, RateLimitConfigError> {
            if N == 0 {
                return Err(RateLimitConfigError::ZeroCapacity);
            }
            let gcra = match Gcra::new(&config) {
                Ok(g) => g,
                Err(e) => return Err(e),
            };
            Ok(KeyedRateLimiter {
                gcra,
                overflow: AtomicU32::new(0),
                overflow_era: Era::new(),
                table: KeyTable::new(new_entries()),
            })
        }
    }

    /// Takes one cell from `key`'s bucket at `now`, or refuses with
    /// [`RejectReason::RateLimited`] and when one cell would be admitted.
    pub fn try_acquire(&self, key: u64, now: Instant) -> Result<(), Rejection> {
        match self.try_acquire_n(key, now, 1) {
            Ok(()) => Ok(()),
            Err(AcquireError::Limited(r)) => Err(r),
            Err(AcquireError::ExceedsBurst { .. }) => {
                Err(Rejection::new(RejectReason::RateLimited))
            }
        }
    }

    /// Takes `n` cells from `key`'s bucket, or none; `n` above the burst can never succeed.
    pub fn try_acquire_n(&self, key: u64, now: Instant, n: u32) -> Result<(), AcquireError> {
        if n == 0 {
            return Ok(());
        }
        if n > self.gcra.burst {
            return Err(AcquireError::ExceedsBurst {
                requested: n,
                burst: self.gcra.burst,
            });
        }
        let entry = match self.table.find(key) {
            Some(e) => Some(e),
            None => self.insert(key, now),
        };
        match entry {
            Some(e) => {
                let result = self.acquire_on(&e.tat, &e.era, now, n);
                e.tag.unpin();
                result
            }
            None => self.acquire_on(&self.overflow, &self.overflow_era, now, n),
        }
    }

    /// A [`Policy`] admitting calls against `key`'s bucket, for the rate-limit slot of a
    /// [`Pipeline`](crate::pipeline::Pipeline) built per call.
    pub const fn for_key(&self, key: u64) -> ForKey<'_, N> {
        ForKey { table: self, key }
    }

    /// Frees every entry whose bucket is full at `now`; returns how many. Returns 0 without
    /// doing anything if another thread is inserting or evicting at this moment.
    pub fn evict_idle(&self, now: Instant) -> usize {
        self.table.evict(|e| self.is_full(e, now))
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

    /// Whole cells `key` could take at `now` (its own bucket's, or the overflow bucket's if
    /// it has no entry).
    pub fn available(&self, key: u64, now: Instant) -> u32 {
        let at = self.gcra.now(now);
        let read = |tat: &AtomicU32, era: &Era| {
            let low = tat.load(Ordering::Acquire) & TICK_MASK;
            self.gcra.available(low, era.read(), at)
        };
        match self.table.find(key) {
            Some(e) => {
                let a = read(&e.tat, &e.era);
                e.tag.unpin();
                a
            }
            None => read(&self.overflow, &self.overflow_era),
        }
    }

    /// Gives `key` an entry (pinned), or `None` when the table is full of active keys or
    /// another thread is placing or evicting a key.
    fn insert(&self, key: u64, now: Instant) -> Option<&Entry> {
        self.table.insert(
            key,
            |e| self.is_full(e, now),
            |e| {
                // The entry is ours alone (reserved, unpinned): era and TAT set outright, era
                // first, to a bucket full at `now`.
                e.era.set(era_count(now), TICK_BITS);
                e.tat
                    .store(self.gcra.full(self.gcra.now(now)), Ordering::Release);
            },
        )
    }

    /// Whether `e`'s bucket is full at `now`: an idle key, indistinguishable from a new one.
    fn is_full(&self, e: &Entry, now: Instant) -> bool {
        let low = e.tat.load(Ordering::Acquire) & TICK_MASK;
        self.gcra.is_full(low, e.era.read(), self.gcra.now(now))
    }

    fn acquire_on(
        &self,
        word: &AtomicU32,
        era: &Era,
        now: Instant,
        n: u32,
    ) -> Result<(), AcquireError> {
        let g = &self.gcra;
        let at = g.now(now);
        let mut tat = word.load(Ordering::Acquire);
        let mut seen = era.read();
        loop {
            match g.decide(tat & TICK_MASK, seen, at, n) {
                Decision::Admit(next) => {
                    // Era first, as for `RateLimiter` (see `time::era`); in `now`'s own era
                    // (the usual case) there is nothing to raise.
                    if !seen.is_era_of(era_count(now), TICK_BITS) {
                        era.cover(seen, era_count(now), TICK_BITS);
                    }
                    match word.compare_exchange_weak(tat, next, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(_) => return Ok(()),
                        Err(actual) => {
                            tat = actual;
                            seen = era.read();
                        }
                    }
                }
                Decision::Wait(tick) => {
                    return Err(AcquireError::Limited(Rejection::until(
                        RejectReason::RateLimited,
                        g.instant_at(tick),
                    )));
                }
            }
        }
    }
}

/// One key of a [`KeyedRateLimiter`], as a [`Policy`].
#[derive(Clone, Copy, Debug)]
pub struct ForKey<'t, const N: usize> {
    table: &'t KeyedRateLimiter<N>,
    key: u64,
}

impl<const N: usize> Policy for ForKey<'_, N> {
    type Permit<'a>
        = RateLimitPermit
    where
        Self: 'a;

    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<RateLimitPermit, Rejection> {
        self.table
            .try_acquire(self.key, env.now)
            .map(|()| RateLimitPermit::new())
    }
}
