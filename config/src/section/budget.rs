//! `[budgets.NAME]`: a retry budget shared by every retry that names it.

use std::sync::Arc;

use resilix::retry::budget::{
    BudgetConfigError, Charge, RatioBudget, RatioBudgetConfig, RetryBreaker, RetryBreakerConfig,
    RetrySuccess, TokenBucket, TokenBucketConfig, Tokens,
};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::error::{ConfigError, Problem, join};
use crate::policy::Budget;
use crate::value::{ConfigDuration, TokenAmount};

/// A shared retry budget, of the `kind` named; each kind reads only its own fields (another
/// kind's field is refused, never ignored). Absent fields are the core's defaults.
///
/// ```toml
/// [budgets.process]
/// kind = "token-bucket"            # the AWS SDK's quota unless a preset or field says otherwise
/// preset = "aws-sdk-standard"      # or "grpc-a6-example", "brooker-2022"
/// capacity = 500                   # tokens, to three decimals
/// initial = 500
/// retry_cost = 5
/// timeout_retry_cost = 10
/// first_try_success = 1
/// retry_success = "refund-cost"    # or a number of tokens to deposit
/// floor = 0
/// charge = "granted-retry"         # or "every-failure"
///
/// [budgets.grpc]
/// kind = "grpc"                    # gRPC A6 retry throttling
/// max_tokens = 10
/// token_ratio = 0.1
///
/// [budgets.sre]
/// kind = "ratio"                   # Google SRE: retries per thousand first attempts
/// max_retry_permille = 100
/// min_retries_per_window = 3
/// window = "10s"
///
/// [budgets.brooker]
/// kind = "retry-breaker"           # Brooker's retry circuit breaker
/// max_failure_permille = 100
/// min_attempts = 10
/// window = "10s"
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// Which budget.
    pub kind: BudgetKind,
    /// A token bucket's starting point (`token-bucket` only). Default `aws-sdk-standard`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<TokenBucketPreset>,
    /// `token-bucket`: the most it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<TokenAmount>,
    /// `token-bucket`: what it holds at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial: Option<TokenAmount>,
    /// `token-bucket`: the cost of a retry after an overload or transient failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_cost: Option<TokenAmount>,
    /// `token-bucket`: the cost of a retry after a timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_retry_cost: Option<TokenAmount>,
    /// `token-bucket`: deposited when a call succeeds at its first attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_try_success: Option<TokenAmount>,
    /// `token-bucket`: what a call that succeeds after retrying gives back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_success: Option<RetrySuccessField>,
    /// `token-bucket`: a retry needs the balance minus its cost to stay at or above this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<TokenAmount>,
    /// `token-bucket`: what a retry is charged for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub charge: Option<ChargeField>,
    /// `grpc`: A6's `maxTokens`, in (0, 1000]. Default 10 (A6's example).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<TokenAmount>,
    /// `grpc`: A6's `tokenRatio`, above 0. Default 0.1 (A6's example).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ratio: Option<TokenAmount>,
    /// `ratio`: retries per thousand first attempts, at most 1000. Default 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_permille: Option<u32>,
    /// `ratio`: retries always allowed per window. Default 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_retries_per_window: Option<u32>,
    /// `retry-breaker`: retry while failures per thousand attempts are at most this, 1..=999.
    /// Default 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_failure_permille: Option<u32>,
    /// `retry-breaker`: below this many attempts in the window, always retry. Default 10.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_attempts: Option<u32>,
    /// `ratio` and `retry-breaker`: how far back they count. Default 10 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<ConfigDuration>,
}

/// The kinds of budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetKind {
    /// The core's `TokenBucket` (AWS SDK quota, Brooker's adaptive retries, gRPC A6).
    TokenBucket,
    /// A token bucket set up as gRPC A6 retry throttling from `max_tokens` and `token_ratio`.
    Grpc,
    /// The core's `RatioBudget` (Google SRE).
    Ratio,
    /// The core's `RetryBreaker` (Brooker 2022).
    RetryBreaker,
}

impl BudgetKind {
    fn name(self) -> &'static str {
        match self {
            BudgetKind::TokenBucket => "kind = \"token-bucket\"",
            BudgetKind::Grpc => "kind = \"grpc\"",
            BudgetKind::Ratio => "kind = \"ratio\"",
            BudgetKind::RetryBreaker => "kind = \"retry-breaker\"",
        }
    }
}

/// The core's token-bucket presets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenBucketPreset {
    /// [`TokenBucketConfig::AWS_SDK_STANDARD`] (the core's `TokenBucket::default()`).
    #[default]
    AwsSdkStandard,
    /// [`TokenBucketConfig::GRPC_A6_EXAMPLE`].
    GrpcA6Example,
    /// [`TokenBucketConfig::BROOKER_2022`].
    #[serde(rename = "brooker-2022")]
    Brooker2022,
}

/// The core's [`Charge`], in kebab case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChargeField {
    /// Every retryable failure costs (gRPC A6).
    EveryFailure,
    /// Only a granted retry costs (the AWS SDK).
    GrantedRetry,
}

/// The core's [`RetrySuccess`]: `"refund-cost"`, or a number of tokens to deposit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetrySuccessField {
    /// Refund the cost of the retry that succeeded.
    RefundCost,
    /// Deposit this amount.
    Deposit(TokenAmount),
}

impl Serialize for RetrySuccessField {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RetrySuccessField::RefundCost => s.serialize_str("refund-cost"),
            RetrySuccessField::Deposit(t) => t.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for RetrySuccessField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RetrySuccessField;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("\"refund-cost\" or a number of tokens to deposit")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RetrySuccessField, E> {
                match v {
                    "refund-cost" => Ok(RetrySuccessField::RefundCost),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RetrySuccessField, E> {
                TokenAmount::deserialize(de::value::U64Deserializer::<E>::new(v))
                    .map(RetrySuccessField::Deposit)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RetrySuccessField, E> {
                TokenAmount::deserialize(de::value::I64Deserializer::<E>::new(v))
                    .map(RetrySuccessField::Deposit)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RetrySuccessField, E> {
                TokenAmount::deserialize(de::value::F64Deserializer::<E>::new(v))
                    .map(RetrySuccessField::Deposit)
            }
        }
        d.deserialize_any(V)
    }
}

/// What a section means in the core's terms, before validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetCore {
    /// A token bucket (also what `grpc` builds).
    TokenBucket(TokenBucketConfig),
    /// A ratio budget.
    Ratio(RatioBudgetConfig),
    /// A retry breaker.
    RetryBreaker(RetryBreakerConfig),
}

impl BudgetSection {
    /// A section of `kind` with every other field absent (the core's defaults).
    pub fn of_kind(kind: BudgetKind) -> BudgetSection {
        BudgetSection {
            kind,
            preset: None,
            capacity: None,
            initial: None,
            retry_cost: None,
            timeout_retry_cost: None,
            first_try_success: None,
            retry_success: None,
            floor: None,
            charge: None,
            max_tokens: None,
            token_ratio: None,
            max_retry_permille: None,
            min_retries_per_window: None,
            max_failure_permille: None,
            min_attempts: None,
            window: None,
        }
    }

    /// The fields set, by name.
    fn set_fields(&self) -> [(&'static str, bool); 16] {
        [
            ("preset", self.preset.is_some()),
            ("capacity", self.capacity.is_some()),
            ("initial", self.initial.is_some()),
            ("retry_cost", self.retry_cost.is_some()),
            ("timeout_retry_cost", self.timeout_retry_cost.is_some()),
            ("first_try_success", self.first_try_success.is_some()),
            ("retry_success", self.retry_success.is_some()),
            ("floor", self.floor.is_some()),
            ("charge", self.charge.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
            ("token_ratio", self.token_ratio.is_some()),
            ("max_retry_permille", self.max_retry_permille.is_some()),
            (
                "min_retries_per_window",
                self.min_retries_per_window.is_some(),
            ),
            ("max_failure_permille", self.max_failure_permille.is_some()),
            ("min_attempts", self.min_attempts.is_some()),
            ("window", self.window.is_some()),
        ]
    }

    /// The core config this section means (validated by [`build`](Self::build)).
    ///
    /// ```
    /// use resilix::retry::budget::TokenBucketConfig;
    /// use resilix_config::section::{BudgetCore, BudgetKind, BudgetSection};
    ///
    /// let section = BudgetSection::of_kind(BudgetKind::TokenBucket);
    /// assert_eq!(
    ///     section.core_config("budgets.process")?,
    ///     BudgetCore::TokenBucket(TokenBucketConfig::AWS_SDK_STANDARD)
    /// );
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    pub fn core_config(&self, path: &str) -> Result<BudgetCore, ConfigError> {
        let own: &[&str] = match self.kind {
            BudgetKind::TokenBucket => &[
                "preset",
                "capacity",
                "initial",
                "retry_cost",
                "timeout_retry_cost",
                "first_try_success",
                "retry_success",
                "floor",
                "charge",
            ],
            BudgetKind::Grpc => &["max_tokens", "token_ratio"],
            BudgetKind::Ratio => &["max_retry_permille", "min_retries_per_window", "window"],
            BudgetKind::RetryBreaker => &["max_failure_permille", "min_attempts", "window"],
        };
        if let Some((field, _)) = self
            .set_fields()
            .into_iter()
            .find(|(name, set)| *set && !own.contains(name))
        {
            return Err(ConfigError::new(
                join(path, field),
                Problem::NotForKind {
                    kind: self.kind.name(),
                },
            ));
        }
        let tokens = |field: Option<TokenAmount>, default: Tokens| field.map_or(default, |t| t.0);
        Ok(match self.kind {
            BudgetKind::TokenBucket => {
                let p = match self.preset.unwrap_or_default() {
                    TokenBucketPreset::AwsSdkStandard => TokenBucketConfig::AWS_SDK_STANDARD,
                    TokenBucketPreset::GrpcA6Example => TokenBucketConfig::GRPC_A6_EXAMPLE,
                    TokenBucketPreset::Brooker2022 => TokenBucketConfig::BROOKER_2022,
                };
                BudgetCore::TokenBucket(TokenBucketConfig {
                    capacity: tokens(self.capacity, p.capacity),
                    initial: tokens(self.initial, p.initial),
                    retry_cost: tokens(self.retry_cost, p.retry_cost),
                    timeout_retry_cost: tokens(self.timeout_retry_cost, p.timeout_retry_cost),
                    first_try_success: tokens(self.first_try_success, p.first_try_success),
                    retry_success: match self.retry_success {
                        None => p.retry_success,
                        Some(RetrySuccessField::RefundCost) => RetrySuccess::RefundCost,
                        Some(RetrySuccessField::Deposit(t)) => RetrySuccess::Deposit(t.0),
                    },
                    floor: tokens(self.floor, p.floor),
                    charge: match self.charge {
                        None => p.charge,
                        Some(ChargeField::EveryFailure) => Charge::EveryFailure,
                        Some(ChargeField::GrantedRetry) => Charge::GrantedRetry,
                    },
                })
            }
            BudgetKind::Grpc => {
                let d = TokenBucketConfig::GRPC_A6_EXAMPLE;
                let max = tokens(self.max_tokens, d.capacity);
                let ratio = tokens(self.token_ratio, d.first_try_success);
                let config = TokenBucketConfig::grpc(max, ratio)
                    .map_err(|e| ConfigError::new(join(path, field_of(&e)), Problem::Budget(e)))?;
                BudgetCore::TokenBucket(config)
            }
            BudgetKind::Ratio => {
                let d = RatioBudgetConfig::DEFAULT;
                BudgetCore::Ratio(RatioBudgetConfig {
                    max_retry_permille: self.max_retry_permille.unwrap_or(d.max_retry_permille),
                    min_retries_per_window: self
                        .min_retries_per_window
                        .unwrap_or(d.min_retries_per_window),
                    window: self.window.map_or(d.window, |w| w.0),
                })
            }
            BudgetKind::RetryBreaker => {
                let d = RetryBreakerConfig::DEFAULT;
                BudgetCore::RetryBreaker(RetryBreakerConfig {
                    max_failure_permille: self
                        .max_failure_permille
                        .unwrap_or(d.max_failure_permille),
                    min_attempts: self.min_attempts.unwrap_or(d.min_attempts),
                    window: self.window.map_or(d.window, |w| w.0),
                })
            }
        })
    }

    /// The budget, validated by the core's constructor, in an `Arc` to share.
    pub fn build(&self, path: &str) -> Result<Arc<Budget>, ConfigError> {
        let fail = |e: BudgetConfigError| {
            let field = match (e, self.kind) {
                (BudgetConfigError::ZeroCost, _)
                    if self.retry_cost.is_none_or(|c| c.0 != Tokens::ZERO) =>
                {
                    "timeout_retry_cost"
                }
                (BudgetConfigError::ZeroCapacity, BudgetKind::Grpc) => "max_tokens",
                _ => field_of(&e),
            };
            ConfigError::new(join(path, field), Problem::Budget(e))
        };
        let budget = match self.core_config(path)? {
            BudgetCore::TokenBucket(c) => TokenBucket::new(c).map(Budget::TokenBucket),
            BudgetCore::Ratio(c) => RatioBudget::new(c).map(Budget::Ratio),
            BudgetCore::RetryBreaker(c) => RetryBreaker::new(c).map(Budget::RetryBreaker),
        }
        .map_err(fail)?;
        Ok(Arc::new(budget))
    }
}

fn field_of(e: &BudgetConfigError) -> &'static str {
    use BudgetConfigError as E;
    match e {
        E::EmptyWindow | E::WindowShorterThanBuckets => "window",
        E::NeverRetries | E::RatioAboveOne => "max_retry_permille",
        E::ZeroCapacity | E::CapacityAboveMax => "capacity",
        E::InitialAboveCapacity => "initial",
        E::ZeroCost => "retry_cost",
        E::FloorUnreachable => "floor",
        E::GrpcMaxTokensOutOfRange => "max_tokens",
        E::GrpcZeroTokenRatio => "token_ratio",
        E::FailureThresholdZero | E::FailureThresholdNotBelowOne => "max_failure_permille",
        E::MinAttemptsUnreachable => "min_attempts",
        // a rule newer than this mapping (the core's errors are non-exhaustive): the section's path
        _ => "",
    }
}
