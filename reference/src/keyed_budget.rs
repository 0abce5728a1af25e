//! The keyed retry budget, plainly: [`crate::keyed::Table`] of ratio models, and the shared
//! budget's model.
//!
//! What it means (the same as `resilix::retry::budget::KeyedBudget`, single-threaded):
//!
//! * A first attempt or a retry for a key is counted in its table entry's budget, placed by
//!   the table's rules; a budget is idle with no first attempt and no retry in its window
//!   (and a budget has no calls in flight); a key without an entry is counted in the overflow
//!   budget, shared by every key without one.
//! * A retry is granted when the key's budget and the shared budget both grant it; the key's
//!   books then hold it and the shared budget's do. When the key refuses, the shared budget is
//!   not asked: it records an unretried failure. When the key would grant and the shared budget
//!   refuses, the key's books stay as they were. (The real table reserves first and takes the
//!   reservation back; single-threaded, the two are the same.)
//! * First attempts reach both the key's budget and the shared one; unretried failures and
//!   successes reach the shared one only (a ratio budget records neither).
//! * `evict_idle` frees every idle entry.

use resilix::random::Random;
use resilix::retry::budget::{KeyedBudget, RatioBudgetConfig, RetryBudget, Unlimited};
use resilix::time::Instant;
use resilix::verdict::{Verdict, VerdictKind};

use crate::budget::{Books, BudgetModel, MAX_ATTEMPTS, RatioModel};
pub use crate::keyed::Home;
use crate::keyed::{Arrivals, Idle, Table, agree, key};
use crate::twin::{Decision, Twin};

/// The absent shared budget is its own model: it grants everything and keeps no books.
impl BudgetModel for Unlimited {
    fn record_first_attempt(&mut self, _now: Instant) {}
    fn try_spend(&mut self, _now: Instant, _after: VerdictKind) -> bool {
        true
    }
    fn record_unretried_failure(&mut self, _now: Instant, _after: VerdictKind) {}
    fn record_success(&mut self, _now: Instant, _retried_after: Option<VerdictKind>) {}
    fn books(&self, _now: Instant) -> (u64, u64) {
        (0, 0)
    }
}

impl Books for Unlimited {
    fn books(&self, _now: Instant) -> (u64, u64) {
        (0, 0)
    }
}

impl Idle for RatioModel {
    fn is_idle(&self, now: Instant) -> bool {
        self.books(now) == (0, 0)
    }
}

/// The keyed budget, plainly.
#[derive(Clone, Debug)]
pub struct KeyedBudgetModel<M: BudgetModel> {
    table: Table<RatioModel>,
    shared: M,
}

impl<M: BudgetModel> KeyedBudgetModel<M> {
    /// An empty table of `n` entries of ratio budgets with `per_key` over `buckets` buckets,
    /// under `shared` (a fresh model).
    pub fn new(per_key: &RatioBudgetConfig, buckets: usize, n: usize, shared: M) -> Self {
        KeyedBudgetModel {
            table: Table::new(RatioModel::new(per_key, buckets), n),
            shared,
        }
    }

    /// Where `key`'s books are at `now`, placing the key if it can.
    pub fn place(&mut self, key: u64, now: Instant) -> Home {
        self.table.place(key, now)
    }

    /// A first attempt of `key` settled at `now`.
    pub fn record_first_attempt(&mut self, key: u64, now: Instant) {
        let home = self.place(key, now);
        self.table.model(home).record_first_attempt(now);
        self.shared.record_first_attempt(now);
    }

    /// A retry for `key` after a failure of kind `after`: granted by both, or not.
    pub fn try_spend(&mut self, key: u64, now: Instant, after: VerdictKind) -> bool {
        let home = self.place(key, now);
        let own = self.table.model(home);
        let (_, retries) = own.books(now);
        if retries >= own.allowance(now) {
            self.shared.record_unretried_failure(now, after);
            return false;
        }
        if !self.shared.try_spend(now, after) {
            return false;
        }
        let granted = self.table.model(home).try_spend(now, after);
        assert!(granted, "the key's room was checked above");
        true
    }

    /// A retryable failure that will not be retried for another reason.
    pub fn record_unretried_failure(&mut self, now: Instant, after: VerdictKind) {
        self.shared.record_unretried_failure(now, after);
    }

    /// A call ended in `Success`.
    pub fn record_success(&mut self, now: Instant, retried_after: Option<VerdictKind>) {
        self.shared.record_success(now, retried_after);
    }

    /// `counts`: the key's own (first attempts, retries) at `now`, `None` without an entry.
    pub fn counts(&self, key: u64, now: Instant) -> Option<(u64, u64)> {
        self.table.get(key).map(|b| b.books(now))
    }

    /// The overflow budget's books at `now`.
    pub fn overflow_books(&self, now: Instant) -> (u64, u64) {
        self.table.overflow().books(now)
    }

    /// The shared budget's model.
    pub fn shared(&self) -> &M {
        &self.shared
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

/// One open attempt of a call.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    key: u64,
    number: u32,
    retried_after: Option<VerdictKind>,
}

/// A [`KeyedBudget`] beside its model, driven as a retry policy per key drives it: each
/// arrival is a call's first attempt for one of keys `0..keys` (spread by a multiplier so
/// their homes collide), one in `evict_one_in` preceded by `evict_idle`; a settled attempt is
/// recorded and, when retryable with attempts left (three per call), asks for a retry, which if
/// granted is a new open attempt of the same key. [`check`](Twin::check) compares `len`, every
/// key's books, the overflow's and the shared budget's.
pub struct KeyedBudgetTwin<
    'a,
    const N: usize,
    S: RetryBudget + Books,
    const B: usize,
    M: BudgetModel,
> {
    real: &'a KeyedBudget<N, S, B>,
    model: KeyedBudgetModel<M>,
    arrivals: Arrivals,
    open: Vec<Attempt>,
    granted: u64,
    refused: u64,
}

impl<'a, const N: usize, S: RetryBudget + Books, const B: usize, M: BudgetModel>
    KeyedBudgetTwin<'a, N, S, B, M>
{
    /// `real` (fresh, built with `per_key`) and the model of its shared budget, fresh.
    pub fn new(
        real: &'a KeyedBudget<N, S, B>,
        per_key: &RatioBudgetConfig,
        shared: M,
        keys: u64,
        evict_one_in: u64,
    ) -> Self {
        KeyedBudgetTwin {
            real,
            model: KeyedBudgetModel::new(per_key, B, N, shared),
            arrivals: Arrivals::new(keys, evict_one_in),
            open: Vec::new(),
            granted: 0,
            refused: 0,
        }
    }

    /// The key numbered `i`.
    pub fn key(i: u64) -> u64 {
        key(i)
    }

    /// The model.
    pub fn model(&self) -> &KeyedBudgetModel<M> {
        &self.model
    }

    /// Retries (granted, refused) by both so far.
    pub fn grants(&self) -> (u64, u64) {
        (self.granted, self.refused)
    }

    /// Both record a first attempt of `key` at `now`.
    pub fn first_attempt(&mut self, key: u64, now: Instant) {
        self.real.for_key(key).record_first_attempt(now);
        self.model.record_first_attempt(key, now);
    }

    /// Both decide a retry of `key` after `after` at `now`; answers the grant, or the
    /// disagreement.
    pub fn spend(&mut self, key: u64, now: Instant, after: VerdictKind) -> Result<bool, String> {
        let real = self.real.for_key(key).try_spend(now, after);
        let model = self.model.try_spend(key, now, after);
        if real != model {
            return Err(format!(
                "key {key}: retry after {after:?}: real granted {real}, model {model}"
            ));
        }
        if real {
            self.granted += 1;
        } else {
            self.refused += 1;
        }
        Ok(real)
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

impl<const N: usize, S: RetryBudget + Books, const B: usize, M: BudgetModel> Twin
    for KeyedBudgetTwin<'_, N, S, B, M>
{
    fn open(&self) -> usize {
        self.open.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let (evict, key) = self.arrivals.draw(rng);
        if evict {
            self.evict_idle(now)?;
        }
        self.open.push(Attempt {
            key,
            number: 1,
            retried_after: None,
        });
        Ok(Decision::Admitted)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        _rng: &mut dyn Random,
    ) -> Result<(), String> {
        let attempt = self.open.remove(index);
        let Some(verdict) = verdict else {
            return Ok(());
        };
        let kind = verdict.kind();
        if kind == VerdictKind::Rejected {
            return Ok(());
        }
        let key = attempt.key;
        if attempt.number == 1 {
            self.first_attempt(key, now);
        }
        match kind {
            VerdictKind::Success => {
                self.real
                    .for_key(key)
                    .record_success(now, attempt.retried_after);
                self.model.record_success(now, attempt.retried_after);
            }
            VerdictKind::Overload
            | VerdictKind::Transient
            | VerdictKind::Uncertain
            | VerdictKind::Timeout => {
                if attempt.number < MAX_ATTEMPTS {
                    if self.spend(key, now, kind)? {
                        self.open.push(Attempt {
                            key,
                            number: attempt.number + 1,
                            retried_after: Some(kind),
                        });
                    }
                } else {
                    self.real.for_key(key).record_unretried_failure(now, kind);
                    self.model.record_unretried_failure(now, kind);
                }
            }
            VerdictKind::Answered | VerdictKind::Rejected => {}
        }
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        self.arrivals.agree_table(
            "counts",
            (self.real.len(), self.model.len()),
            |key| {
                let real = self.real.counts(key, now);
                let real = real.map(|(f, r)| (u64::from(f), u64::from(r)));
                (real, self.model.counts(key, now))
            },
            (
                self.real.overflow().books(now),
                self.model.overflow_books(now),
            ),
        )?;
        agree(
            "shared",
            self.real.shared().books(now),
            self.model.shared().books(now),
        )?;
        Ok(())
    }
}
