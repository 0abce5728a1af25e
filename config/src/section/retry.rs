//! `[pipelines.NAME.retry]`: attempts, backoff, the Retry-After cap, and the shared budget it
//! spends from (by name).

use std::sync::Arc;

use resilix::retry::{Backoff, Retry, RetryConfig, RetryConfigError, Strategy, UncertainRetry};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Problem, join};
use crate::policy::{Budget, ConfiguredBudget};
use crate::value::ConfigDuration;

/// A retry policy. Absent fields are the core's defaults ([`RetryConfig::DEFAULT`]: three
/// attempts, full jitter from 100 ms to 20 s, Retry-After up to 300 s, `Uncertain` retried);
/// without `budget`, retries are bounded by the attempts alone.
///
/// ```toml
/// [pipelines.payments.retry]
/// max_attempts = 3
/// backoff = { base = "100ms", cap = "10s", jitter = "full" }   # or "equal", "decorrelated", "none"
/// max_retry_after = "5m"
/// uncertain_retry = "always"          # or "idempotent-only"
/// budget = "process"                  # a [budgets.process] table
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySection {
    /// The most attempts, the first included, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// The wait between attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<BackoffSection>,
    /// The longest upstream Retry-After worth waiting for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_after: Option<ConfigDuration>,
    /// Whether a failure after which the upstream may have acted (a 500) is retried for a
    /// call not declared idempotent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertain_retry: Option<UncertainRetryField>,
    /// The name of a `[budgets.NAME]` table this retry spends from, shared with every other
    /// retry that names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
}

/// The backoff formula: capped exponential growth from `base` to `cap`, with the jitter named.
/// Absent fields are [`Backoff::DEFAULT`]'s (full jitter, 100 ms, 20 s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffSection {
    /// The first ceiling's half (`base · 2^attempt`, AWS's convention), above zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<ConfigDuration>,
    /// No delay is longer, at least `base`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap: Option<ConfigDuration>,
    /// The jitter (AWS's "Exponential Backoff And Jitter").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Jitter>,
}

/// Which of AWS's formulas: the core's [`Strategy`], less `None` (retry at once, for
/// firmware loops that pace themselves).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Jitter {
    /// A uniform draw below the ceiling (the default; AWS's winner).
    Full,
    /// Half the ceiling plus a draw over the other half.
    Equal,
    /// Between `base` and three times the previous delay.
    Decorrelated,
    /// No jitter: capped exponential.
    None,
}

/// The core's [`UncertainRetry`], in kebab case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UncertainRetryField {
    /// Retried for any call (the default).
    Always,
    /// Retried only for a call declared idempotent.
    IdempotentOnly,
}

impl RetrySection {
    /// The core config, validated by the core's constructors.
    ///
    /// ```
    /// use resilix::retry::RetryConfig;
    /// use resilix_config::section::RetrySection;
    ///
    /// assert_eq!(RetrySection::default().core_config("retry")?, RetryConfig::DEFAULT);
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    pub fn core_config(&self, path: &str) -> Result<RetryConfig, ConfigError> {
        let d = Backoff::DEFAULT;
        let b = self.backoff.unwrap_or_default();
        let strategy = match b.jitter {
            None => d.strategy(),
            Some(Jitter::Full) => Strategy::FullJitter,
            Some(Jitter::Equal) => Strategy::EqualJitter,
            Some(Jitter::Decorrelated) => Strategy::Decorrelated,
            Some(Jitter::None) => Strategy::Exponential,
        };
        let fail = |e: RetryConfigError| {
            let field = match e {
                RetryConfigError::ZeroAttempts => "max_attempts",
                RetryConfigError::ZeroBase => "backoff.base",
                RetryConfigError::CapBelowBase => "backoff.cap",
                // a rule newer than this mapping (the core's errors are non-exhaustive): the section's path
                _ => "",
            };
            ConfigError::new(join(path, field), Problem::Retry(e))
        };
        let backoff = Backoff::new(
            strategy,
            b.base.map_or(d.base(), |x| x.0),
            b.cap.map_or(d.cap(), |x| x.0),
        )
        .map_err(fail)?;
        let d = RetryConfig::DEFAULT;
        let config = RetryConfig::new(self.max_attempts.unwrap_or(d.max_attempts()), backoff)
            .map_err(fail)?
            .with_max_retry_after(self.max_retry_after.map_or(d.max_retry_after(), |x| x.0))
            .with_uncertain_retry(match self.uncertain_retry {
                None => d.uncertain_retry(),
                Some(UncertainRetryField::Always) => UncertainRetry::Always,
                Some(UncertainRetryField::IdempotentOnly) => UncertainRetry::IdempotentOnly,
            });
        Ok(config)
    }

    /// The retry policy, spending from the budget `budgets` finds under this section's name.
    pub fn build(
        &self,
        path: &str,
        budgets: &dyn Fn(&str) -> Option<Arc<Budget>>,
    ) -> Result<Retry<ConfiguredBudget>, ConfigError> {
        let config = self.core_config(path)?;
        let budget = match &self.budget {
            None => ConfiguredBudget::UNLIMITED,
            Some(name) => ConfiguredBudget::shared(budgets(name).ok_or_else(|| {
                ConfigError::new(join(path, "budget"), Problem::UnknownBudget(name.clone()))
            })?),
        };
        Ok(Retry::new(config, budget))
    }
}
