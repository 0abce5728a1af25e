//! The retry budgets, plainly.
//!
//! * [`RatioModel`]: Google SRE's ratio budget with a floor. First attempts and granted retries
//!   per bucket period in a map keyed by the full `u64` period number, summed over the last
//!   `B` periods (bucketed exactly as the real window is documented to be: `window / B`
//!   buckets, rounded up to a nanosecond, covering between `B − 1` and `B` bucket lengths; see
//!   `core/src/mechanism/window.rs`), so single-threaded decisions are identical. A retry is granted
//!   while `retries + 1 ≤ max(floor, ⌊first_attempts × permille / 1000⌋)`.
//! * [`TokenBucketModel`]: the retry token bucket (gRPC A6, the AWS SDK quota, Brooker's
//!   adaptive retries) in thousandths of a token as a `u64`; it has no time at all, which the
//!   differential runs confirm over idle gaps of any length.
//!
//! [`BudgetTwin`] plays the retry policy's part: each call's first attempt settles with a
//! verdict; a retryable failure asks the budget for a retry (up to three attempts per call),
//! and a granted retry is a new open attempt of the same call; a failure out of attempts is
//! recorded as unretried; a success is recorded with the kind of failure retried last. Both
//! budgets hear the same calls at the same instants; their grants and books must agree.

use crate::window::Periods;
use resilix::random::Random;
use resilix::retry::budget::{
    Charge, RatioBudget, RatioBudgetConfig, RetryBudget, RetrySuccess, TokenBucket,
    TokenBucketConfig,
};
use resilix::time::Instant;
use resilix::verdict::{Verdict, VerdictKind};

use crate::twin::{Decision, Twin};

/// A budget's semantics, with `&mut self` and wide time.
pub trait BudgetModel {
    /// A call's first attempt settled at `now` (never for `Rejected`).
    fn record_first_attempt(&mut self, now: Instant);
    /// A retry after a failure of kind `after`: granted or not.
    fn try_spend(&mut self, now: Instant, after: VerdictKind) -> bool;
    /// A retryable failure that will not be retried for another reason.
    fn record_unretried_failure(&mut self, now: Instant, after: VerdictKind);
    /// A call ended in `Success`, after retrying a failure of kind `retried_after` if any.
    fn record_success(&mut self, now: Instant, retried_after: Option<VerdictKind>);
    /// The books at `now`: (first attempts, retries) in the window for the ratio budget,
    /// (balance in thousandths, 0) for the token bucket.
    fn books(&self, now: Instant) -> (u64, u64);
}

/// The books of a real budget, in the terms of [`BudgetModel::books`].
pub trait Books {
    /// See [`BudgetModel::books`].
    fn books(&self, now: Instant) -> (u64, u64);
}

impl<const B: usize> Books for RatioBudget<B> {
    fn books(&self, now: Instant) -> (u64, u64) {
        let (f, r) = self.counts(now);
        (u64::from(f), u64::from(r))
    }
}

impl Books for TokenBucket {
    fn books(&self, _now: Instant) -> (u64, u64) {
        (u64::from(self.balance().as_milli()), 0)
    }
}

/// The ratio budget's semantics in wide time.
#[derive(Clone, Debug)]
pub struct RatioModel {
    permille: u64,
    floor: u64,
    /// (first attempts, retries) per bucket period.
    window: Periods,
}

impl RatioModel {
    /// The model of a `RatioBudget<buckets>` with `config` (one the real budget accepts).
    pub fn new(config: &RatioBudgetConfig, buckets: usize) -> RatioModel {
        RatioModel {
            permille: u64::from(config.max_retry_permille),
            floor: u64::from(config.min_retries_per_window),
            window: Periods::new(config.window, buckets),
        }
    }

    fn totals(&self, now: Instant) -> (u64, u64) {
        self.window.totals(now)
    }

    /// How many retries the window allows at `now`, in total.
    pub fn allowance(&self, now: Instant) -> u64 {
        let (firsts, _) = self.totals(now);
        (firsts * self.permille / 1000).max(self.floor)
    }

    fn add(&mut self, now: Instant, firsts: u64, retries: u64) {
        self.window.add(now, firsts, retries);
    }
}

impl BudgetModel for RatioModel {
    fn record_first_attempt(&mut self, now: Instant) {
        self.add(now, 1, 0);
    }

    fn try_spend(&mut self, now: Instant, _after: VerdictKind) -> bool {
        let (_, retries) = self.totals(now);
        let granted = retries < self.allowance(now);
        if granted {
            self.add(now, 0, 1);
        }
        granted
    }

    fn record_unretried_failure(&mut self, _now: Instant, _after: VerdictKind) {}

    fn record_success(&mut self, _now: Instant, _retried_after: Option<VerdictKind>) {}

    fn books(&self, now: Instant) -> (u64, u64) {
        self.totals(now)
    }
}

/// The retry token bucket's semantics: a balance in thousandths of a token.
#[derive(Clone, Debug)]
pub struct TokenBucketModel {
    config: TokenBucketConfig,
    balance: u64,
}

impl TokenBucketModel {
    /// The model of a `TokenBucket` with `config` (one the real bucket accepts).
    pub fn new(config: &TokenBucketConfig) -> TokenBucketModel {
        TokenBucketModel {
            config: *config,
            balance: u64::from(config.initial.as_milli()),
        }
    }

    /// `TokenBucket::reconfigure`, single-threaded: `config` in force from now on, the
    /// balance carried over and clamped to its capacity (`config` one the real bucket
    /// accepts).
    pub fn reconfigure(&mut self, config: &TokenBucketConfig) {
        self.config = *config;
        self.balance = self.balance.min(u64::from(config.capacity.as_milli()));
    }

    fn cost(&self, after: VerdictKind) -> u64 {
        u64::from(match after {
            VerdictKind::Timeout => self.config.timeout_retry_cost.as_milli(),
            _ => self.config.retry_cost.as_milli(),
        })
    }
}

impl BudgetModel for TokenBucketModel {
    fn record_first_attempt(&mut self, _now: Instant) {}

    fn try_spend(&mut self, _now: Instant, after: VerdictKind) -> bool {
        let cost = self.cost(after);
        let granted = self.balance >= cost + u64::from(self.config.floor.as_milli());
        match self.config.charge {
            // Every failure pays, granted or not (gRPC A6), down to zero.
            Charge::EveryFailure => self.balance = self.balance.saturating_sub(cost),
            Charge::GrantedRetry if granted => self.balance -= cost,
            Charge::GrantedRetry => {}
        }
        granted
    }

    fn record_unretried_failure(&mut self, _now: Instant, after: VerdictKind) {
        if self.config.charge == Charge::EveryFailure {
            self.balance = self.balance.saturating_sub(self.cost(after));
        }
    }

    fn record_success(&mut self, _now: Instant, retried_after: Option<VerdictKind>) {
        let amount = match (retried_after, self.config.retry_success) {
            (None, _) => u64::from(self.config.first_try_success.as_milli()),
            (Some(_), RetrySuccess::Deposit(t)) => u64::from(t.as_milli()),
            (Some(kind), RetrySuccess::RefundCost) => self.cost(kind),
        };
        self.balance = (self.balance + amount).min(u64::from(self.config.capacity.as_milli()));
    }

    fn books(&self, _now: Instant) -> (u64, u64) {
        (self.balance, 0)
    }
}

/// The most attempts the twin's retry policy makes per call (the first and two retries).
pub const MAX_ATTEMPTS: u32 = 3;

/// One open attempt of a call.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    /// 1 for the first attempt.
    number: u32,
    /// The kind of failure that caused this attempt, for a retry.
    retried_after: Option<VerdictKind>,
}

/// A real budget beside its model, driven as a retry policy drives a budget.
pub struct BudgetTwin<'a, R: RetryBudget + Books, M: BudgetModel> {
    real: &'a R,
    model: M,
    open: Vec<Attempt>,
    granted: u64,
    refused: u64,
}

impl<'a, R: RetryBudget + Books, M: BudgetModel> BudgetTwin<'a, R, M> {
    /// Twins `real` with `model` (both fresh).
    pub fn new(real: &'a R, model: M) -> Self {
        BudgetTwin {
            real,
            model,
            open: Vec::new(),
            granted: 0,
            refused: 0,
        }
    }

    /// Retries (granted, refused) by both so far.
    pub fn grants(&self) -> (u64, u64) {
        (self.granted, self.refused)
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Both record a first attempt at `now`.
    pub fn first_attempt(&mut self, now: Instant) {
        self.real.record_first_attempt(now);
        self.model.record_first_attempt(now);
    }

    /// Both decide a retry after `after` at `now`; answers the grant, or the disagreement.
    pub fn spend(&mut self, now: Instant, after: VerdictKind) -> Result<bool, String> {
        let real = self.real.try_spend(now, after);
        let model = self.model.try_spend(now, after);
        if real == model {
            if real {
                self.granted += 1;
            } else {
                self.refused += 1;
            }
            Ok(real)
        } else {
            Err(format!(
                "retry after {after:?}: real granted {real}, model {model}"
            ))
        }
    }
}

/// A budget twin over a [`RatioBudget`].
pub type RatioTwin<'a, const B: usize> = BudgetTwin<'a, RatioBudget<B>, RatioModel>;

/// A budget twin over a [`TokenBucket`].
pub type TokenBucketTwin<'a> = BudgetTwin<'a, TokenBucket, TokenBucketModel>;

/// Twins a ratio budget built with `config` and its fresh model.
pub fn ratio_twin<'a, const B: usize>(
    real: &'a RatioBudget<B>,
    config: &RatioBudgetConfig,
) -> RatioTwin<'a, B> {
    BudgetTwin::new(real, RatioModel::new(config, B))
}

/// Twins a token bucket built with `config` and its fresh model.
pub fn token_bucket_twin<'a>(
    real: &'a TokenBucket,
    config: &TokenBucketConfig,
) -> TokenBucketTwin<'a> {
    BudgetTwin::new(real, TokenBucketModel::new(config))
}

/// A [`TokenBucketTwin`] that, before one arrival in `one_in`, reconfigures both the real
/// bucket and the model to a config drawn from `pool` (each one the real bucket accepts).
pub struct ReconfiguringBucketTwin<'a> {
    twin: TokenBucketTwin<'a>,
    pool: Vec<TokenBucketConfig>,
    one_in: u64,
    /// Reconfigurations made.
    pub reconfigured: u64,
}

impl<'a> ReconfiguringBucketTwin<'a> {
    /// Wraps `twin` (fresh), drawing from `pool`.
    pub fn new(twin: TokenBucketTwin<'a>, pool: Vec<TokenBucketConfig>, one_in: u64) -> Self {
        ReconfiguringBucketTwin {
            twin,
            pool,
            one_in,
            reconfigured: 0,
        }
    }

    /// The twin inside.
    pub fn twin(&self) -> &TokenBucketTwin<'a> {
        &self.twin
    }

    /// The twin inside, to drive directly.
    pub fn twin_mut(&mut self) -> &mut TokenBucketTwin<'a> {
        &mut self.twin
    }

    /// Both reconfigure to `config` at `now`; the real one must accept it.
    pub fn reconfigure(&mut self, config: &TokenBucketConfig, now: Instant) -> Result<(), String> {
        let mut rng = resilix::random::SeededRandom::new(0);
        self.twin
            .real
            .reconfigure(*config, &mut resilix::permit::Env::new(now, &mut rng))
            .map_err(|e| format!("reconfigure to {config:?}: {e}"))?;
        self.twin.model.reconfigure(config);
        self.reconfigured += 1;
        if self.twin.real.config() != *config {
            return Err(format!(
                "config in force {:?}, not {config:?}",
                self.twin.real.config()
            ));
        }
        self.twin.check(now)
    }
}

impl Twin for ReconfiguringBucketTwin<'_> {
    fn open(&self) -> usize {
        self.twin.open()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        if self.one_in > 0 && !self.pool.is_empty() && rng.below(self.one_in) == 0 {
            let config = self.pool[rng.below(self.pool.len() as u64) as usize];
            self.reconfigure(&config, now)?;
        }
        self.twin.arrive(now, rng)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        self.twin.end(now, index, verdict, rng)
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        let (balance, capacity) = (self.twin.real.balance(), self.twin.real.config().capacity);
        if balance > capacity {
            return Err(format!(
                "balance {balance:?} above the capacity {capacity:?}"
            ));
        }
        self.twin.check(now)
    }
}

impl<R: RetryBudget + Books, M: BudgetModel> Twin for BudgetTwin<'_, R, M> {
    fn open(&self) -> usize {
        self.open.len()
    }

    fn arrive(&mut self, _now: Instant, _rng: &mut dyn Random) -> Result<Decision, String> {
        // A budget admits every first attempt; its decisions are the retries.
        self.open.push(Attempt {
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
            return Ok(()); // cancelled: nothing is recorded
        };
        let kind = verdict.kind();
        if kind == VerdictKind::Rejected {
            return Ok(()); // refused before it was a request
        }
        if attempt.number == 1 {
            self.first_attempt(now);
        }
        match kind {
            VerdictKind::Success => {
                self.real.record_success(now, attempt.retried_after);
                self.model.record_success(now, attempt.retried_after);
            }
            VerdictKind::Overload
            | VerdictKind::Transient
            | VerdictKind::Uncertain
            | VerdictKind::Timeout => {
                if attempt.number < MAX_ATTEMPTS {
                    if self.spend(now, kind)? {
                        self.open.push(Attempt {
                            number: attempt.number + 1,
                            retried_after: Some(kind),
                        });
                    }
                } else {
                    self.real.record_unretried_failure(now, kind);
                    self.model.record_unretried_failure(now, kind);
                }
            }
            VerdictKind::Answered | VerdictKind::Rejected => {}
        }
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        let real = self.real.books(now);
        let model = self.model.books(now);
        if real == model {
            Ok(())
        } else {
            Err(format!("books: real {real:?}, model {model:?}"))
        }
    }
}
