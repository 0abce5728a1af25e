//! The retry token bucket: successes deposit, retries (or failures) withdraw, and below a
//! floor retries stop. Brooker's adaptive retries, gRPC A6 retry throttling and the AWS SDK
//! retry quota are three settings of it.
//!
//! The balance is a count of thousandths of a token in 31 bits of one `AtomicU32`, updated by
//! compare-and-swap: the accounting is exact integer arithmetic (no float drift, no FPU), a
//! concurrent withdrawal can never overspend, and 32-bit targets update it natively. gRPC A6
//! itself keeps three decimals of `maxTokens` and `tokenRatio`, so thousandths lose nothing.
//! The decision is a pure function of (balance, cost, floor); the atomic only stores it.
//!
//! **Reconfiguration** ([`TokenBucket::reconfigure`]) is the rate limiter's design: the
//! settings live in two slots, and bit 31 of the balance word names the slot in force, so every
//! spend and deposit reads its settings from the slot its own word names and its
//! compare-and-swap fails if a reconfiguration moved the word meanwhile. The switch (slot and
//! balance carried over, clamped to the new capacity) is one compare-and-swap: no decision
//! pairs the old settings with the new balance or the reverse.
//!
//! Design notes (the slot bit and the one admitted ABA):
//! docs/design/retry-and-budgets.md#token-bucket

use crate::retry::budget::{BudgetConfigError, RetryBudget};
use crate::sync::{AtomicBool, AtomicU32, Ordering};
use crate::time::Instant;
use crate::verdict::VerdictKind;

/// An amount of retry tokens, in thousandths of a token.
///
/// ```
/// use resilix::retry::budget::Tokens;
///
/// assert_eq!(Tokens::whole(5), Tokens::milli(5_000));
/// assert_eq!(Tokens::milli(100).as_milli(), 100); // gRPC's tokenRatio 0.1
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tokens(u32);

impl Tokens {
    /// No tokens.
    pub const ZERO: Tokens = Tokens(0);

    /// `n` whole tokens, saturating at `u32::MAX` thousandths (about 4.29 million tokens).
    pub const fn whole(n: u32) -> Tokens {
        Tokens(n.saturating_mul(1000))
    }

    /// `n` thousandths of a token.
    pub const fn milli(n: u32) -> Tokens {
        Tokens(n)
    }

    /// The amount in thousandths of a token.
    pub const fn as_milli(self) -> u32 {
        self.0
    }
}

/// What a retry is charged for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Charge {
    /// Every retryable failure costs, retried or not, and a retry is granted only if the
    /// balance after the charge is still at or above the floor (gRPC A6: "every failed RPC
    /// will decrement the token_count"; grpc-go charges before comparing). The bucket then
    /// tracks the failure ratio, and a refused failure still drains it.
    EveryFailure,
    /// Only a granted retry costs; a refused one leaves the balance alone (the AWS SDK: the
    /// retry token is acquired only if `capacity − cost ≥ 0`; Brooker's adaptive retries).
    GrantedRetry,
}

/// What a call that succeeds after retrying gives back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RetrySuccess {
    /// Deposit this amount (gRPC: `tokenRatio` for every successful RPC, retried or not).
    Deposit(Tokens),
    /// Refund the cost of the retry that succeeded (the AWS SDK).
    RefundCost,
}

/// A token bucket's settings. Use a preset or fill every field; [`TokenBucket::new`] checks
/// them.
///
/// ```
/// use resilix::retry::budget::{TokenBucketConfig, Tokens};
///
/// let grpc = TokenBucketConfig::grpc(Tokens::whole(10), Tokens::milli(100))?;
/// assert_eq!(grpc, TokenBucketConfig::GRPC_A6_EXAMPLE);
/// // Retries stop when the balance is not above maxTokens / 2.
/// assert_eq!(grpc.floor, Tokens::milli(5_001));
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TokenBucketConfig {
    /// The most the bucket holds: at most [`TokenBucketConfig::MAX_CAPACITY`].
    pub capacity: Tokens,
    /// What it holds at construction.
    pub initial: Tokens,
    /// The cost of a retry after an overload or a transient failure.
    pub retry_cost: Tokens,
    /// The cost of a retry after a timeout.
    pub timeout_retry_cost: Tokens,
    /// Deposited when a call succeeds at its first attempt.
    pub first_try_success: Tokens,
    /// What a call that succeeds after retrying gives back.
    pub retry_success: RetrySuccess,
    /// A retry is granted only if the balance minus its cost stays at or above this.
    pub floor: Tokens,
    /// Whether every retryable failure costs, or only granted retries.
    pub charge: Charge,
}

impl TokenBucketConfig {
    /// gRPC A6's example `"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}`: from a
    /// full bucket of 10 with every attempt failing, exactly 4 retries (9, 8, 7, 6) and then
    /// throttled at 5; from 5.0, 11 successes before the next retry.
    pub const GRPC_A6_EXAMPLE: TokenBucketConfig =
        match TokenBucketConfig::grpc(Tokens::milli(10_000), Tokens::milli(100)) {
            Ok(c) => c,
            Err(_) => panic!("the A6 example is valid"),
        };

    /// The AWS SDK standard retry mode's quota (before the 2026 change): 500 tokens, starting
    /// full; a retry costs 5, a retry after a timeout 10; a first-try success deposits 1, a
    /// successful retry refunds its cost. From a full bucket with everything failing: 100
    /// retries (50 after timeouts).
    pub const AWS_SDK_STANDARD: TokenBucketConfig = TokenBucketConfig {
        capacity: Tokens::whole(500),
        initial: Tokens::whole(500),
        retry_cost: Tokens::whole(5),
        timeout_retry_cost: Tokens::whole(10),
        first_try_success: Tokens::whole(1),
        retry_success: RetrySuccess::RefundCost,
        floor: Tokens::ZERO,
        charge: Charge::GrantedRetry,
    };

    /// Brooker's "adaptive" strategy as simulated (2022): capacity 5 starting full, each retry
    /// costs 1 and needs more than one whole token (`bucket > 1.0`), each success deposits
    /// 0.1. (His code deposits on every first try; the post's prose, and this preset, on
    /// success.)
    pub const BROOKER_2022: TokenBucketConfig = TokenBucketConfig {
        capacity: Tokens::whole(5),
        initial: Tokens::whole(5),
        retry_cost: Tokens::whole(1),
        timeout_retry_cost: Tokens::whole(1),
        first_try_success: Tokens::milli(100),
        retry_success: RetrySuccess::Deposit(Tokens::milli(100)),
        floor: Tokens::milli(1),
        charge: Charge::GrantedRetry,
    };

    /// gRPC A6 retry throttling with `maxTokens` and `tokenRatio` (both to three decimals,
    /// as A6 keeps them): the bucket starts full, every retryable failure costs one token,
    /// every successful RPC deposits `tokenRatio`, and retries are allowed while the balance
    /// after the failure's charge is above `maxTokens / 2`. A6 requires `maxTokens` in
    /// (0, 1000] and `tokenRatio` > 0.
    pub const fn grpc(max_tokens: Tokens, token_ratio: Tokens) -> Result<Self, BudgetConfigError> {
        if max_tokens.0 == 0 || max_tokens.0 > 1_000_000 {
            return Err(BudgetConfigError::GrpcMaxTokensOutOfRange);
        }
        if token_ratio.0 == 0 {
            return Err(BudgetConfigError::GrpcZeroTokenRatio);
        }
        Ok(TokenBucketConfig {
            capacity: max_tokens,
            initial: max_tokens,
            retry_cost: Tokens::whole(1),
            timeout_retry_cost: Tokens::whole(1),
            first_try_success: token_ratio,
            retry_success: RetrySuccess::Deposit(token_ratio),
            // "token_count > maxTokens / 2" over integer thousandths t and m:
            // t > m / 2 ⇔ 2t > m ⇔ t ≥ ⌊m / 2⌋ + 1.
            floor: Tokens(max_tokens.0 / 2 + 1),
            charge: Charge::EveryFailure,
        })
    }

    /// The largest capacity a bucket takes: 2^31 − 1 thousandths (2,147,483.647 tokens). The
    /// balance word's top bit names the settings slot in force (see the [module
    /// docs](self)); gRPC A6 caps `maxTokens` at 1000 and the AWS SDK's quota is 500.
    pub const MAX_CAPACITY: Tokens = Tokens(BALANCE);

    const fn validate(&self) -> Result<(), BudgetConfigError> {
        if self.capacity.0 == 0 {
            return Err(BudgetConfigError::ZeroCapacity);
        }
        if self.capacity.0 > BALANCE {
            return Err(BudgetConfigError::CapacityAboveMax);
        }
        if self.initial.0 > self.capacity.0 {
            return Err(BudgetConfigError::InitialAboveCapacity);
        }
        if self.retry_cost.0 == 0 || self.timeout_retry_cost.0 == 0 {
            return Err(BudgetConfigError::ZeroCost);
        }
        let cheapest = if self.retry_cost.0 < self.timeout_retry_cost.0 {
            self.retry_cost.0
        } else {
            self.timeout_retry_cost.0
        };
        if self.floor.0 as u64 + cheapest as u64 > self.capacity.0 as u64 {
            return Err(BudgetConfigError::FloorUnreachable);
        }
        Ok(())
    }
}

/// Bits 0–30 of the balance word: the balance in thousandths. Bit 31: the slot in force.
const BALANCE: u32 = u32::MAX >> 1;
/// The flag bit in a slot's capacity word ([`Charge::EveryFailure`]) and floor word
/// ([`RetrySuccess::RefundCost`]); both values stay below 2^31 (capacity by validation, the
/// floor because floor + cost ≤ capacity).
const FLAG: u32 = 1 << 31;

/// One of the two settings a balance word can name: a [`TokenBucketConfig`] in seven words,
/// each read only by the operations that need it.
#[derive(Debug)]
struct Slot {
    /// The capacity, with [`FLAG`] for [`Charge::EveryFailure`].
    capacity: AtomicU32,
    initial: AtomicU32,
    retry_cost: AtomicU32,
    timeout_retry_cost: AtomicU32,
    first_try_success: AtomicU32,
    /// The deposit of [`RetrySuccess::Deposit`] (zero for `RefundCost`).
    retry_deposit: AtomicU32,
    /// The floor, with [`FLAG`] for [`RetrySuccess::RefundCost`].
    floor: AtomicU32,
}

/// A config as a slot's seven words, in [`Slot`]'s field order.
const fn words(c: &TokenBucketConfig) -> [u32; 7] {
    let every_failure = matches!(c.charge, Charge::EveryFailure);
    let (retry_deposit, refund) = match c.retry_success {
        RetrySuccess::Deposit(t) => (t.0, false),
        RetrySuccess::RefundCost => (0, true),
    };
    [
        c.capacity.0 | if every_failure { FLAG } else { 0 },
        c.initial.0,
        c.retry_cost.0,
        c.timeout_retry_cost.0,
        c.first_try_success.0,
        retry_deposit,
        c.floor.0 | if refund { FLAG } else { 0 },
    ]
}

// The slot's words are read after an `Acquire` load of the balance word that names the slot
// (or of a later read-modify-write in its release sequence), which synchronises with the
// reconfiguration's compare-and-swap that wrote the slot before naming it: Relaxed loads see
// the slot as written (the rate limiter's `Slot::load` argument, word for word).
impl Slot {
    crate::sync::const_fn_unless_loom! {
        fn new(c: &TokenBucketConfig) -> Self {
            let [capacity, initial, retry_cost, timeout_retry_cost, first_try_success, retry_deposit, floor] =
                words(c);
            Slot {
                capacity: AtomicU32::new(capacity),
                initial: AtomicU32::new(initial),
                retry_cost: AtomicU32::new(retry_cost),
                timeout_retry_cost: AtomicU32::new(timeout_retry_cost),
                first_try_success: AtomicU32::new(first_try_success),
                retry_deposit: AtomicU32::new(retry_deposit),
                floor: AtomicU32::new(floor),
            }
        }
    }

    fn store(&self, c: &TokenBucketConfig) {
        let w = words(c);
        for (word, value) in self.fields().into_iter().zip(w) {
            word.store(value, Ordering::Relaxed);
        }
    }

    fn fields(&self) -> [&AtomicU32; 7] {
        [
            &self.capacity,
            &self.initial,
            &self.retry_cost,
            &self.timeout_retry_cost,
            &self.first_try_success,
            &self.retry_deposit,
            &self.floor,
        ]
    }

    /// The whole config (for `config()`, off the hot path).
    fn load(&self) -> TokenBucketConfig {
        let [
            capacity,
            initial,
            retry_cost,
            timeout_retry_cost,
            first_try_success,
            retry_deposit,
            floor,
        ] = self.fields().map(|w| w.load(Ordering::Relaxed));
        TokenBucketConfig {
            capacity: Tokens(capacity & BALANCE),
            initial: Tokens(initial),
            retry_cost: Tokens(retry_cost),
            timeout_retry_cost: Tokens(timeout_retry_cost),
            first_try_success: Tokens(first_try_success),
            retry_success: if floor & FLAG != 0 {
                RetrySuccess::RefundCost
            } else {
                RetrySuccess::Deposit(Tokens(retry_deposit))
            },
            floor: Tokens(floor & BALANCE),
            charge: if capacity & FLAG != 0 {
                Charge::EveryFailure
            } else {
                Charge::GrantedRetry
            },
        }
    }

    #[inline(always)]
    fn capacity(&self) -> u32 {
        self.capacity.load(Ordering::Relaxed) & BALANCE
    }

    #[inline(always)]
    fn charges_every_failure(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) & FLAG != 0
    }

    #[inline(always)]
    fn charge(&self) -> Charge {
        if self.charges_every_failure() {
            Charge::EveryFailure
        } else {
            Charge::GrantedRetry
        }
    }

    #[inline(always)]
    fn floor(&self) -> u32 {
        self.floor.load(Ordering::Relaxed) & BALANCE
    }

    #[inline(always)]
    fn cost(&self, after: VerdictKind) -> u32 {
        match after {
            VerdictKind::Timeout => self.timeout_retry_cost.load(Ordering::Relaxed),
            _ => self.retry_cost.load(Ordering::Relaxed),
        }
    }

    /// What a success gives back: the first try's deposit, the retry's, or its cost.
    #[inline(always)]
    fn success_amount(&self, retried_after: Option<VerdictKind>) -> u32 {
        match retried_after {
            None => self.first_try_success.load(Ordering::Relaxed),
            Some(kind) if self.floor.load(Ordering::Relaxed) & FLAG != 0 => self.cost(kind),
            Some(_) => self.retry_deposit.load(Ordering::Relaxed),
        }
    }
}

/// The pure rule: is a retry of `cost` granted from `balance`, and what is the balance after?
const fn spend(balance: u32, cost: u32, floor: u32, charge: Charge) -> (u32, bool) {
    let granted = balance as u64 >= cost as u64 + floor as u64;
    match charge {
        Charge::EveryFailure => (balance.saturating_sub(cost), granted),
        Charge::GrantedRetry if granted => (balance - cost, true),
        Charge::GrantedRetry => (balance, false),
    }
}

/// The pure rule for a deposit: add, never above capacity.
const fn deposit(balance: u32, amount: u32, capacity: u32) -> u32 {
    let sum = balance.saturating_add(amount);
    if sum < capacity { sum } else { capacity }
}

/// A retry token bucket. See the [module docs](self) and [`TokenBucketConfig`]'s presets.
/// Every setting changes in place, the balance carried over: [`TokenBucket::reconfigure`].
///
/// ```
/// use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig};
/// use resilix::time::Instant;
/// use resilix::VerdictKind;
///
/// static BUDGET: TokenBucket = match TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE) {
///     Ok(b) => b,
///     Err(_) => panic!(),
/// };
/// let granted = (0..10).filter(|_| BUDGET.try_spend(Instant::ZERO, VerdictKind::Transient)).count();
/// assert_eq!(granted, 4); // 9, 8, 7, 6 — then 5 is not above maxTokens / 2
/// ```
#[derive(Debug)]
pub struct TokenBucket {
    /// Bit 31: the slot in force. Bits 0–30: the balance in thousandths.
    balance: AtomicU32,
    slots: [Slot; 2],
    /// Held by the one reconfiguration running (the only writer of the slot bit).
    reconfiguring: AtomicBool,
}

/// [`TokenBucket::aws_sdk_standard`].
impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket::aws_sdk_standard()
    }
}

impl TokenBucket {
    crate::sync::const_fn_unless_loom! {
        /// A bucket with `config`, holding `config.initial`.
        pub fn new(config: TokenBucketConfig) -> Result<Self, BudgetConfigError> {
            if let Err(e) = config.validate() {
                return Err(e);
            }
            Ok(TokenBucket {
                balance: AtomicU32::new(config.initial.0),
                slots: [Slot::new(&config), Slot::new(&config)],
                reconfiguring: AtomicBool::new(false),
            })
        }
    }

    crate::sync::const_fn_unless_loom! {
        /// The AWS SDK standard mode's bucket ([`TokenBucketConfig::AWS_SDK_STANDARD`]): valid by
        /// construction, so no `Result` (`const`, for a `static`). Also [`Default::default`].
        ///
        /// ```
        /// use resilix::retry::budget::{TokenBucket, Tokens};
        /// static BUDGET: TokenBucket = TokenBucket::aws_sdk_standard();
        /// assert_eq!(BUDGET.balance(), Tokens::whole(500));
        /// ```
        pub fn aws_sdk_standard() -> Self {
            match Self::new(TokenBucketConfig::AWS_SDK_STANDARD) {
                Ok(bucket) => bucket,
                Err(_) => panic!("the AWS SDK's config is valid (its doctest checks it)"),
            }
        }
    }

    /// The balance now (a snapshot).
    pub fn balance(&self) -> Tokens {
        Tokens(self.balance.load(Ordering::Acquire) & BALANCE)
    }

    /// The settings in force (a snapshot: a reconfiguration may replace them at any time).
    pub fn config(&self) -> TokenBucketConfig {
        let word = self.balance.load(Ordering::Acquire);
        self.slot(word).load()
    }

    /// Puts the initial balance of the config in force back, keeping the slot bit.
    pub(super) fn reset_balance(&self) {
        self.update(|_, slot| Some(slot.initial.load(Ordering::Relaxed)));
    }

    /// The slot a balance word names.
    #[inline(always)]
    fn slot(&self, word: u32) -> &Slot {
        &self.slots[(word >> 31) as usize]
    }

    /// One compare-and-swap loop for every change of the balance: `rule` maps the balance
    /// and the slot its word names to the next balance, or `None` for no change. The slot
    /// bit is kept, so a reconfiguration that moved the word makes the swap fail and `rule`
    /// run again under the new slot.
    #[inline(always)]
    fn update(&self, mut rule: impl FnMut(u32, &Slot) -> Option<u32>) {
        let mut word = self.balance.load(Ordering::Acquire);
        loop {
            let Some(next) = rule(word & BALANCE, self.slot(word)) else {
                return;
            };
            // AcqRel: a change is ordered after the one it builds on.
            match self.balance.compare_exchange_weak(
                word,
                (word & !BALANCE) | next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }
}

#[path = "token_bucket_reconfigure.rs"]
mod reconfigure;
pub use reconfigure::TokenBucketReconfigureError;

impl RetryBudget for TokenBucket {
    fn record_first_attempt(&self, _now: Instant) {}

    fn try_spend(&self, _now: Instant, after: VerdictKind) -> bool {
        let mut granted = false;
        // The rule may run several times under contention; only the run whose
        // compare-and-swap lands (or that changes nothing) decides `granted`.
        self.update(|b, slot| {
            let (next, ok) = spend(b, slot.cost(after), slot.floor(), slot.charge());
            granted = ok;
            (next != b).then_some(next)
        });
        granted
    }

    fn record_unretried_failure(&self, _now: Instant, after: VerdictKind) {
        self.update(|b, slot| {
            let charged = slot.charges_every_failure() && b != 0;
            charged.then(|| b.saturating_sub(slot.cost(after)))
        });
    }

    fn record_success(&self, _now: Instant, retried_after: Option<VerdictKind>) {
        self.update(|b, slot| {
            let next = deposit(b, slot.success_amount(retried_after), slot.capacity());
            (next != b).then_some(next)
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
