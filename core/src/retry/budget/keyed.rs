//! Retry budgets per key (a tenant, a route, an upstream host) under the shared one: the
//! answer to docs/design/spec.md §9's open question, "a single hostile key could consume all of it".
//!
//! # The answer
//!
//! A shared budget bounds the process, and that stays its job: a budget never refuses a first
//! attempt, so whatever one key does, the upstream sees at most the shared bound of extra
//! load. What a shared budget alone cannot do is divide that bound. One key whose calls all
//! fail (a tenant sending garbage, a route to a dead host) asks for a retry after every first
//! attempt and takes every retry the budget has, and every other key is back to "no retries"
//! for as long as it keeps failing. So [`KeyedBudget`] gives each key a small budget of its
//! own, and a retry is made only when **both its key's budget and the shared one grant it**.
//!
//! Each key's budget is a [`RatioBudget`]: at most 10% of the key's own first attempts over
//! a 10 s window, at least one retry per window ([`PER_KEY_DEFAULT`]). With the per-key ratio
//! equal to the shared ratio, the per-key allowances *partition* the shared one in proportion
//! to traffic: `Σ ⌊f_k · r⌋ ≤ ⌊(Σ f_k) · r⌋` for keys with `f_k` first attempts each. A key can
//! then spend only its own traffic's share, however hostile; the shared budget still bounds
//! what the partition leaves open (the per-key floors, the overflow entry below, and a shared
//! budget of another kind, such as a token bucket, which knows no traffic shares).
//!
//! The per-key kind is a ratio budget because its window empties with time, so an idle key's
//! entry can be reused; the shared kind `S` is any [`RetryBudget`], held by value or, to share
//! it with other pipelines, by reference. The key is asked first and its grant is a
//! reservation, taken back if the shared budget refuses: neither budget pays for a retry that
//! is not made.
//!
//! # The table
//!
//! The keyed table of [`KeyedRateLimiter`](crate::rate_limit::KeyedRateLimiter) and
//! [`KeyedBreaker`](crate::breaker::KeyedBreaker): `N` entries, a `u64` key in one of the 8
//! entries from its home (the table mixes the bits, so sequential ids spread).
//!
//! * **A new key** takes a free entry among its 8, else an idle one (its window empty), which
//!   starts over as a new budget. An entry with any first attempt or retry in its window is
//!   never evicted; [`evict_idle`](KeyedBudget::evict_idle) frees every idle entry at once.
//! * **When the table is full** of live entries (or, for one call, while another thread is
//!   placing or evicting a key), the key is counted in the **overflow** budget: one ratio
//!   budget with the per-key settings, shared by every key without an entry. Unplaced keys then
//!   share one sub-budget of 10% of their combined first attempts: a hostile unplaced key can
//!   take the other unplaced keys' retries, never a placed key's, and never more than the
//!   shared budget. Size `N` for the keys active within one window, not for all keys.
//!
//! **Memory**: per key, one entry: a 12-byte tag (state, pins, key) and a `RatioBudget<B>`
//! (`12 × B + 80` bytes on 64-bit targets, its settings block included). An entry is 216 bytes
//! with the default ten buckets and 144 with four (the `memory_per_key` test pins both); the
//! table adds the overflow budget, the shared budget `S` and the writer flag, whatever the
//! traffic. Construction is not `const`: build the table in `main` (or a once-cell) and share a
//! reference.
//!
//! **Idle gaps and concurrency**: an entry reads as empty after a gap of any length and as live
//! within its window; lock-free, nothing ever waits, and neither the key nor the shared budget
//! ever grants more than it allows.
//!
//! Design notes (the order of the grants, concurrency): docs/design/retry-and-budgets.md#keyed-budgets
//!
//! ```
//! use resilix::retry::budget::{KeyedBudget, RatioBudget, RetryBudget, PER_KEY_DEFAULT};
//! use resilix::time::Instant;
//! use resilix::VerdictKind;
//!
//! let shared = RatioBudget::with_defaults();
//! let per_tenant: KeyedBudget<64, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared)?;
//! let now = Instant::from_secs(1);
//! for tenant in [7, 8] {
//!     for _ in 0..100 {
//!         per_tenant.for_key(tenant).record_first_attempt(now);
//!     }
//! }
//! // Tenant 7 fails everything: its own 10% (10 of its 100 first attempts), then no more...
//! let hostile = (0..100).filter(|_| per_tenant.for_key(7).try_spend(now, VerdictKind::Transient));
//! assert_eq!(hostile.count(), 10);
//! // ...and tenant 8 keeps its own share of the shared 20.
//! let other = (0..100).filter(|_| per_tenant.for_key(8).try_spend(now, VerdictKind::Transient));
//! assert_eq!(other.count(), 10);
//! assert_eq!(shared.counts(now), (200, 20));
//! # Ok::<(), resilix::retry::budget::KeyedBudgetError>(())
//! ```

use core::fmt;
use core::time::Duration;

use super::{BudgetConfigError, RatioBudget, RatioBudgetConfig, RetryBudget};
use crate::keyed::{KeyTable, Slot, Tag};
use crate::time::Instant;
use crate::verdict::VerdictKind;

/// Each key's budget by default: 10% of its first attempts, at least one retry per 10 s.
///
/// * `max_retry_permille` 100: the shared [`RatioBudgetConfig::DEFAULT`]'s 10% (Google SRE).
///   Ours to pick it equal: then the per-key allowances partition the shared one by traffic
///   (see the [module docs](self)), so no key spends more than its own share.
/// * `min_retries_per_window` 1: ours. A quiet key can still retry once per window (the
///   low-traffic hole of docs/design/spec.md §4), and it is below the shared floor of 3, so one key alone
///   cannot take all of a quiet process's floor retries.
/// * `window` 10 s: the shared default's (after Finagle's 10 s). It is also how long a key
///   stays placed after its last first attempt or retry before its entry can be reused.
///
/// ```
/// use resilix::retry::budget::{PER_KEY_DEFAULT, RatioBudgetConfig};
/// assert_eq!(PER_KEY_DEFAULT.max_retry_permille, RatioBudgetConfig::DEFAULT.max_retry_permille);
/// assert_eq!(PER_KEY_DEFAULT.min_retries_per_window, 1);
/// ```
pub const PER_KEY_DEFAULT: RatioBudgetConfig = RatioBudgetConfig {
    max_retry_permille: 100,
    min_retries_per_window: 1,
    window: Duration::from_secs(10),
};

/// Why a keyed budget was refused.
///
/// ```
/// use resilix::retry::budget::{
///     BudgetConfigError, KeyedBudget, KeyedBudgetError, PER_KEY_DEFAULT, RatioBudgetConfig,
///     Unlimited,
/// };
///
/// let none = KeyedBudget::<0, _>::new(PER_KEY_DEFAULT, Unlimited).unwrap_err();
/// assert_eq!(none, KeyedBudgetError::ZeroCapacity);
/// assert!(none.to_string().contains("at least one entry"));
/// let never =
///     RatioBudgetConfig { max_retry_permille: 0, min_retries_per_window: 0, ..PER_KEY_DEFAULT };
/// let bad = KeyedBudget::<8, _>::new(never, Unlimited).unwrap_err();
/// assert_eq!(bad, KeyedBudgetError::PerKey(BudgetConfigError::NeverRetries));
/// assert!(bad.to_string().starts_with("the per-key budget: "));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum KeyedBudgetError {
    /// A table of no entries (`N = 0`): every key would share the overflow budget.
    ZeroCapacity,
    /// The per-key ratio budget's settings were refused, for this reason.
    PerKey(BudgetConfigError),
}

impl fmt::Display for KeyedBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyedBudgetError::ZeroCapacity => f.write_str(
                "a keyed budget needs at least one entry: capacity 0 would make every key \
                 share the one overflow budget (use the shared budget alone for that)",
            ),
            KeyedBudgetError::PerKey(e) => write!(f, "the per-key budget: {e}"),
        }
    }
}

impl core::error::Error for KeyedBudgetError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            KeyedBudgetError::ZeroCapacity => None,
            KeyedBudgetError::PerKey(e) => Some(e),
        }
    }
}

#[derive(Debug)]
struct Entry<const B: usize> {
    tag: Tag,
    budget: RatioBudget<B>,
}

impl<const B: usize> Slot for Entry<B> {
    fn tag(&self) -> &Tag {
        &self.tag
    }
}

/// Whether forgetting `budget` loses nothing at `now`: nothing in its window, so it and a new
/// budget decide every later retry alike.
fn is_idle<const B: usize>(budget: &RatioBudget<B>, now: Instant) -> bool {
    budget.counts(now) == (0, 0)
}

/// A fixed table of up to `N` per-key ratio budgets (`B` buckets each), one overflow budget
/// for keys without an entry, and the shared budget `S` every retry must also be granted by.
/// See the [module docs](self) for what it answers, the order of the grants and the memory.
///
/// A caller uses one key's view, [`for_key`](Self::for_key), wherever a [`RetryBudget`] goes,
/// as a keyed breaker's view goes in a pipeline's breaker slot:
///
/// ```
/// use resilix::call::{CallOptions, Next};
/// use resilix::permit::Env;
/// use resilix::pipeline::Pipeline;
/// use resilix::random::SeededRandom;
/// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, TokenBucket};
/// use resilix::retry::{GiveUpReason, Retry, RetryConfig};
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let shared = TokenBucket::aws_sdk_standard(); // the process's budget, also used elsewhere
/// let per_route: KeyedBudget<128, &TokenBucket> = KeyedBudget::new(PER_KEY_DEFAULT, &shared)?;
/// let mut rng = SeededRandom::new(7);
/// let mut env = Env::new(Instant::from_secs(1), &mut rng);
/// let route = 42;
/// // Per call: a pipeline whose retry spends from this route's budget and the shared one.
/// let pipeline = Pipeline::new().retry(Retry::new(RetryConfig::DEFAULT, per_route.for_key(route)));
/// let mut call = pipeline.call(env.now, CallOptions::default());
/// let attempt = call.admit(&mut env).unwrap();
/// // The route's floor grants one retry in its first window...
/// let Next::RetryAt(at) = call.settle(attempt, &Verdict::Transient, &mut env) else { panic!() };
/// env.now = at;
/// let attempt = call.admit(&mut env).unwrap();
/// // ...and no second: 10% of one first attempt is none.
/// let next = call.settle(attempt, &Verdict::Transient, &mut env);
/// assert_eq!(next, Next::GiveUp(GiveUpReason::BudgetExceeded));
/// assert_eq!(per_route.counts(route, env.now), Some((1, 1)));
/// # Ok::<(), resilix::retry::budget::KeyedBudgetError>(())
/// ```
#[derive(Debug)]
pub struct KeyedBudget<const N: usize, S, const B: usize = 10> {
    table: KeyTable<Entry<B>, N>,
    overflow: RatioBudget<B>,
    shared: S,
}

impl<const N: usize, S: RetryBudget> KeyedBudget<N, S, 10> {
    /// A table of per-key budgets with `per_key` over ten buckets (the default instantiation)
    /// under `shared`, or the reason it is refused: `N = 0`, or a `per_key` config that
    /// [`RatioBudget::new`] refuses. Other bucket counts: [`KeyedBudget::with_buckets`].
    ///
    /// ```
    /// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RatioBudget};
    ///
    /// let shared = RatioBudget::with_defaults();
    /// let t: KeyedBudget<16, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    /// assert_eq!((t.len(), t.capacity()), (0, 16));
    /// ```
    pub fn new(per_key: RatioBudgetConfig, shared: S) -> Result<Self, KeyedBudgetError> {
        Self::with_buckets(per_key, shared)
    }
}

impl<const N: usize, S: RetryBudget, const B: usize> KeyedBudget<N, S, B> {
    /// A table of per-key budgets with `per_key` over `B` buckets under `shared`, refused as
    /// [`new`](KeyedBudget::new) is. Fewer buckets, less memory per key, a coarser window.
    ///
    /// ```
    /// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, Unlimited};
    ///
    /// let t = KeyedBudget::<32, _, 4>::with_buckets(PER_KEY_DEFAULT, Unlimited).unwrap();
    /// assert_eq!(t.capacity(), 32);
    /// ```
    pub fn with_buckets(per_key: RatioBudgetConfig, shared: S) -> Result<Self, KeyedBudgetError> {
        if N == 0 {
            return Err(KeyedBudgetError::ZeroCapacity);
        }
        let overflow = RatioBudget::<B>::with_buckets(per_key).map_err(KeyedBudgetError::PerKey)?;
        let table = KeyTable::new(core::array::from_fn(|_| Entry {
            tag: Tag::new(),
            budget: match RatioBudget::with_buckets(per_key) {
                Ok(b) => b,
                Err(_) => unreachable!("the same config was accepted for the overflow budget"),
            },
        }));
        Ok(KeyedBudget {
            table,
            overflow,
            shared,
        })
    }

    /// `key`'s view of the table: a [`RetryBudget`] spending from `key`'s own budget and the
    /// shared one, for a [`Retry`](crate::retry::Retry) built per call.
    ///
    /// ```
    /// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RetryBudget, Unlimited};
    /// use resilix::time::Instant;
    /// use resilix::VerdictKind;
    ///
    /// let t: KeyedBudget<8, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    /// let now = Instant::from_secs(1);
    /// assert!(t.for_key(1).try_spend(now, VerdictKind::Transient), "the key's floor");
    /// assert!(!t.for_key(1).try_spend(now, VerdictKind::Transient));
    /// assert!(t.for_key(2).try_spend(now, VerdictKind::Transient), "another key's own");
    /// ```
    pub const fn for_key(&self, key: u64) -> ForKey<'_, N, S, B> {
        ForKey { table: self, key }
    }

    /// The budget every retry must also be granted by.
    pub const fn shared(&self) -> &S {
        &self.shared
    }

    /// The budget shared by every key without an entry.
    pub const fn overflow(&self) -> &RatioBudget<B> {
        &self.overflow
    }

    /// `key`'s own first attempts and retries in the window ending at `now`, or `None` when
    /// the key has no entry (its next call takes a new one or is counted in the overflow).
    ///
    /// ```
    /// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RetryBudget, Unlimited};
    /// use resilix::time::Instant;
    ///
    /// let t: KeyedBudget<1, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    /// let now = Instant::from_secs(1);
    /// t.for_key(1).record_first_attempt(now);
    /// t.for_key(2).record_first_attempt(now); // the one entry is live: key 2 overflows
    /// assert_eq!(t.counts(1, now), Some((1, 0)));
    /// assert_eq!(t.counts(2, now), None);
    /// assert!(t.placed(1) && !t.placed(2));
    /// assert_eq!(t.overflow().counts(now), (1, 0));
    /// assert_eq!((t.len(), t.capacity()), (1, 1));
    /// ```
    pub fn counts(&self, key: u64, now: Instant) -> Option<(u32, u32)> {
        let e = self.table.find(key)?;
        let counts = e.budget.counts(now);
        e.tag.unpin();
        Some(counts)
    }

    /// Whether `key` has an entry of its own now (a snapshot).
    pub fn placed(&self, key: u64) -> bool {
        self.table.find(key).map(|e| e.tag.unpin()).is_some()
    }

    /// Frees every entry whose window is empty at `now`; returns how many. Returns 0 without
    /// doing anything if another thread is placing or evicting a key at this moment.
    ///
    /// ```
    /// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RetryBudget, Unlimited};
    /// use resilix::time::Instant;
    ///
    /// let t: KeyedBudget<8, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    /// t.for_key(1).record_first_attempt(Instant::from_secs(1));
    /// t.for_key(2).record_first_attempt(Instant::from_secs(9));
    /// // At 12 s key 1's window (10 s) is empty, key 2's is not.
    /// assert_eq!(t.evict_idle(Instant::from_secs(12)), 1);
    /// assert!(!t.placed(1) && t.placed(2));
    /// ```
    pub fn evict_idle(&self, now: Instant) -> usize {
        self.table.evict(|e| is_idle(&e.budget, now))
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

    /// Runs `f` on `key`'s budget: its own entry's (placing the key if it has none), pinned
    /// while `f` runs, or the overflow budget's.
    fn with_key<T>(&self, key: u64, now: Instant, f: impl FnOnce(&RatioBudget<B>) -> T) -> T {
        let entry = self.table.find(key).or_else(|| {
            self.table.insert(
                key,
                |e| is_idle(&e.budget, now),
                // Idle already decides as new; zeroing also forgets counts from a later
                // timeline should time have gone backwards.
                |e| e.budget.window.clear(),
            )
        });
        match entry {
            Some(e) => {
                let out = f(&e.budget);
                e.tag.unpin();
                out
            }
            None => f(&self.overflow),
        }
    }

    /// The two grants in order (see the module docs): the key reserves, the shared budget
    /// decides, a refusal gives the key's reservation back.
    fn try_spend(&self, key: u64, now: Instant, after: VerdictKind) -> bool {
        self.with_key(key, now, |own| {
            if !own.try_spend(now, after) {
                self.shared.record_unretried_failure(now, after);
                return false;
            }
            if self.shared.try_spend(now, after) {
                return true;
            }
            own.refund_retry(now);
            false
        })
    }
}

/// One key of a [`KeyedBudget`], as a [`RetryBudget`]: a retry for this key is granted only
/// when both the key's budget and the shared one grant it.
///
/// ```
/// use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RetryBudget, TokenBucket};
/// use resilix::retry::{Retry, RetryConfig};
///
/// let shared = TokenBucket::aws_sdk_standard();
/// let per_host: KeyedBudget<16, &TokenBucket> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
/// fn is_a_budget(_: &impl RetryBudget) {}
/// is_a_budget(&per_host.for_key(3));
/// let retry = Retry::new(RetryConfig::DEFAULT, per_host.for_key(3));
/// # let _ = retry;
/// ```
#[derive(Debug)]
pub struct ForKey<'t, const N: usize, S, const B: usize> {
    table: &'t KeyedBudget<N, S, B>,
    key: u64,
}

impl<const N: usize, S, const B: usize> Clone for ForKey<'_, N, S, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<const N: usize, S, const B: usize> Copy for ForKey<'_, N, S, B> {}

impl<const N: usize, S, const B: usize> ForKey<'_, N, S, B> {
    /// The key.
    pub const fn key(&self) -> u64 {
        self.key
    }
}

impl<const N: usize, S: RetryBudget, const B: usize> RetryBudget for ForKey<'_, N, S, B> {
    fn record_first_attempt(&self, now: Instant) {
        let t = self.table;
        t.with_key(self.key, now, |own| own.record_first_attempt(now));
        t.shared.record_first_attempt(now);
    }

    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        self.table.try_spend(self.key, now, after)
    }

    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        // A ratio budget records nothing here; the shared one may (gRPC charges every failure).
        self.table.shared.record_unretried_failure(now, after);
    }

    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        self.table.shared.record_success(now, retried_after);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
