//! Bulkheads per key (a tenant, a client, a route) in a fixed table: each key its own cap on
//! calls in flight, so one noisy neighbour fills its own compartment and no other. No heap,
//! bounded memory, lock-free, and an entry is only ever reused when nothing is in flight in it.
//!
//! Design notes: docs/design/bulkhead.md

use super::{Bulkhead, BulkheadConfig, BulkheadPermit};
use crate::keyed::{KeyTable, Slot, Tag};
use crate::observe::Observer;
use crate::permit::{Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::slots::Slots;
use crate::verdict::Verdict;

#[derive(Debug)]
struct Entry {
    tag: Tag,
    /// The key's calls in flight. The cap is the table's: one config for every key.
    slots: Slots,
}

impl Entry {
    crate::sync::const_fn_unless_loom! {
        fn new() -> Self {
            Entry { tag: Tag::new(), slots: Slots::new() }
        }
    }

    /// Nothing in flight: forgetting the entry loses nothing, a new one decides alike. Every
    /// held slot is also a pin, so the table (which judges only unpinned entries) never sees
    /// an entry with a slot held; the count is checked anyway, as the rule itself.
    fn is_idle(&self) -> bool {
        self.slots.held() == 0
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

/// A fixed table of up to `N` bulkheads, one per key, all with one cap, plus one shared
/// **overflow** bulkhead with the same cap. No heap: **16 bytes per key** (a 12-byte tag
/// holding the key, its state and its pins, and the 4-byte count of the key's calls in
/// flight; `memory_per_key` in the tests pins it), plus the overflow bulkhead, the cap and
/// the table's writer flag, whatever the traffic. `N = 0` does not compile. `new` is a
/// `const fn`: a table can live in a `static`.
///
/// * **Keys** are `u64` (a tenant id, a client id, or a hash of a longer name), placed as in
///   [`KeyedRateLimiter`](crate::rate_limit::KeyedRateLimiter): a key may live in any of the
///   8 entries from its home entry on.
/// * **A new key** takes a free entry among its 8, else an **idle** one: no call in flight.
///   Every permit pins its entry until it is settled or dropped, so an entry with a call in
///   flight is never evicted and a permit always gives its slot back to the entry it came
///   from, whatever was placed or evicted meanwhile. [`evict_idle`](Self::evict_idle) frees
///   every idle entry at once. A bulkhead keeps no time, so idleness needs no `now`.
/// * **When the table is full** of keys with calls in flight (or, for one call, while another
///   thread is placing or evicting a key), the key is served by the overflow bulkhead, which
///   every key without an entry shares: a flood of new keys shares one key's cap instead of
///   getting a cap each, so the table degrades to a stricter bound, never to unbounded memory
///   nor to no cap. Size `N` for the keys with calls in flight at once, not for all keys.
/// * **No waiting.** A full key is refused at once with [`RejectReason::BulkheadFull`]; the
///   keyed table offers no wait protocol. Waiting needs a queue of waiters and a wake-up per
///   key, that is storage per waiter per key, and a waiter's key could lose its entry (idle:
///   nothing in flight) while it waits; a bounded wait in front of a per-tenant cap also keeps
///   a noisy tenant's excess calls queued in the server. Use [`Bulkhead`] with the wait
///   protocol for one dependency that callers should queue for.
///
/// **Concurrency.** Lock-free: nothing ever waits. Per key, the calls in flight never exceed
/// the cap: admission is [`Bulkhead`]'s compare-and-swap on the entry's count, made while the
/// entry is pinned. A key may in addition hold slots of the overflow bulkhead, taken while it
/// had no entry (`loom_keyed_bulkhead` and `keyed_bulkhead_stress` check both claims).
///
/// ```
/// use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
/// use resilix::RejectReason;
///
/// static PER_TENANT: KeyedBulkhead<64> = KeyedBulkhead::new(match BulkheadConfig::new(2) {
///     Ok(c) => c,
///     Err(_) => panic!("invalid bulkhead config"),
/// });
///
/// let a = PER_TENANT.try_admit(7).unwrap();
/// let b = PER_TENANT.try_admit(7).unwrap();
/// let refused = PER_TENANT.try_admit(7).unwrap_err();
/// assert_eq!(refused.reason(), RejectReason::BulkheadFull, "tenant 7 is at its cap");
/// let other = PER_TENANT.try_admit(8).expect("tenant 8 has its own cap");
/// assert_eq!(PER_TENANT.held(7), Some(2));
/// // Tenant 7 has calls in flight: only tenant 8's entry, once its call ends, can go.
/// drop(other);
/// assert_eq!(PER_TENANT.evict_idle(), 1);
/// assert!(PER_TENANT.placed(7) && !PER_TENANT.placed(8));
/// drop((a, b));
/// ```
#[derive(Debug)]
pub struct KeyedBulkhead<const N: usize> {
    cap: u32,
    table: KeyTable<Entry, N>,
    overflow: Bulkhead,
}

impl<const N: usize> KeyedBulkhead<N> {
    crate::sync::const_fn_unless_loom! {
        /// An empty table giving each key `config`'s cap (and the overflow bulkhead the same).
        /// A [`BulkheadConfig`] that exists is valid, so this cannot fail.
        ///
        /// ```
        /// use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
        ///
        /// let t: KeyedBulkhead<16> = KeyedBulkhead::new(BulkheadConfig::new(4).unwrap());
        /// assert_eq!((t.len(), t.capacity(), t.max_concurrent()), (0, 16, 4));
        /// assert_eq!(t.overflow().max_concurrent(), 4);
        /// ```
        pub fn new(config: BulkheadConfig) -> Self {
            const { assert!(N > 0, "a keyed bulkhead needs at least one entry") };
            KeyedBulkhead {
                cap: config.max_concurrent(),
                table: KeyTable::new(new_entries()),
                overflow: Bulkhead::new(config),
            }
        }
    }

    /// Takes a slot of `key`'s own cap (placing the key if it has no entry), or of the overflow
    /// bulkhead when it cannot be placed; refuses with [`RejectReason::BulkheadFull`].
    pub fn try_admit(&self, key: u64) -> Result<KeyedPermit<'_>, Rejection> {
        let entry = self
            .table
            .find(key)
            .or_else(|| self.table.insert(key, Entry::is_idle, |_| ()));
        let Some(entry) = entry else {
            return match self.overflow.try_admit() {
                Ok(p) => Ok(KeyedPermit {
                    held_at_admission: p.held_at_admission(),
                    from: Source::Overflow(p),
                }),
                Err(full) => Err(full.into()),
            };
        };
        match entry.slots.try_acquire(self.cap) {
            Ok(held) => Ok(KeyedPermit {
                held_at_admission: held,
                from: Source::Entry(entry),
            }),
            Err(_) => {
                entry.tag.unpin();
                Err(Rejection::new(RejectReason::BulkheadFull))
            }
        }
    }

    /// A [`Policy`] admitting calls through `key`'s bulkhead, for the bulkhead slot of a
    /// [`Pipeline`](crate::pipeline::Pipeline) built per call.
    ///
    /// ```
    /// use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
    /// use resilix::call::CallOptions;
    /// use resilix::permit::Env;
    /// use resilix::pipeline::Pipeline;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let per_tenant: KeyedBulkhead<32> = KeyedBulkhead::new(BulkheadConfig::new(1).unwrap());
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::from_secs(1), &mut rng);
    /// let pipeline = Pipeline::new().bulkhead(per_tenant.for_key(3));
    /// let mut call = pipeline.call(env.now, CallOptions::default());
    /// let attempt = call.admit(&mut env).unwrap();
    /// assert_eq!(per_tenant.held(3), Some(1));
    /// let mut second = pipeline.call(env.now, CallOptions::default());
    /// assert!(second.admit(&mut env).is_err(), "tenant 3's one slot is taken");
    /// # drop(attempt);
    /// ```
    pub const fn for_key(&self, key: u64) -> ForKey<'_, N> {
        ForKey { table: self, key }
    }

    /// `key`'s calls in flight through its own entry, or `None` when the key has no entry.
    pub fn held(&self, key: u64) -> Option<u32> {
        let e = self.table.find(key)?;
        let held = e.slots.held();
        e.tag.unpin();
        Some(held)
    }

    /// Whether `key` has an entry of its own now (a snapshot).
    pub fn placed(&self, key: u64) -> bool {
        self.table.find(key).map(|e| e.tag.unpin()).is_some()
    }

    /// Each key's cap (and the overflow bulkhead's).
    pub const fn max_concurrent(&self) -> u32 {
        self.cap
    }

    /// The bulkhead shared by every key without an entry.
    pub const fn overflow(&self) -> &Bulkhead {
        &self.overflow
    }

    /// Frees every idle entry (no call in flight); returns how many. Returns 0 without doing
    /// anything if another thread is placing or evicting a key at this moment.
    pub fn evict_idle(&self) -> usize {
        self.table.evict(Entry::is_idle)
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
}

/// One key of a [`KeyedBulkhead`], as a [`Policy`].
#[derive(Debug)]
pub struct ForKey<'t, const N: usize> {
    table: &'t KeyedBulkhead<N>,
    key: u64,
}

impl<const N: usize> Clone for ForKey<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<const N: usize> Copy for ForKey<'_, N> {}

impl<const N: usize> ForKey<'_, N> {
    /// The key.
    pub const fn key(&self) -> u64 {
        self.key
    }
}

impl<const N: usize> Policy for ForKey<'_, N> {
    type Permit<'a>
        = KeyedPermit<'a>
    where
        Self: 'a;

    /// [`KeyedBulkhead::try_admit`] for this key: time and randomness play no part.
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<KeyedPermit<'a>, Rejection> {
        self.table.try_admit(self.key)
    }
}

#[derive(Debug)]
enum Source<'a> {
    /// The key's own entry, pinned.
    Entry(&'a Entry),
    /// Held for its `Drop`, which gives the overflow's slot back.
    Overflow(#[allow(dead_code)] BulkheadPermit<'a>),
}

/// A slot held in a [`KeyedBulkhead`]: settling (with any verdict) or dropping it gives the
/// slot back to the entry (or the overflow bulkhead) it came from, and only then unpins the
/// entry, so an entry with a slot held is never evicted.
#[must_use = "dropping a bulkhead permit releases its slot at once"]
#[derive(Debug)]
pub struct KeyedPermit<'a> {
    from: Source<'a>,
    held_at_admission: u32,
}

impl KeyedPermit<'_> {
    /// Slots held by its key (or the overflow) right after this one was taken, this one
    /// included: how close to the cap the admission was.
    pub const fn held_at_admission(&self) -> u32 {
        self.held_at_admission
    }

    /// Whether this call holds a slot of the shared overflow bulkhead (its key had no entry).
    pub const fn is_overflow(&self) -> bool {
        matches!(self.from, Source::Overflow(_))
    }
}

impl Permit for KeyedPermit<'_> {
    /// Gives the slot back; the verdict is not recorded (a bulkhead keeps no statistics).
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        _verdict: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
        // Drop does the release, so settle and cancel cannot diverge.
    }
}

impl Drop for KeyedPermit<'_> {
    fn drop(&mut self) {
        // The overflow's permit releases itself.
        if let Source::Entry(e) = self.from {
            // Released before the pin is given back: an unpinned entry holds no slot.
            e.slots.release();
            e.tag.unpin();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
