//! `[pipelines.NAME.rate_limit]`: GCRA, `count` cells per `per`, with a burst.

use core::time::Duration;

use resilix::rate_limit::{Rate, RateLimitConfig, RateLimitConfigError, RateLimiter};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Problem, join};
use crate::value::ConfigDuration;

/// A rate limiter. `count` is required (a rate has no sensible default); `per` defaults to one
/// second, `burst` to one period's worth (`count`, governor's and the core's default).
///
/// ```toml
/// [pipelines.payments.rate_limit]
/// count = 100
/// per = "1s"
/// burst = 20
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSection {
    /// Cells per period.
    pub count: u32,
    /// The period. Default 1 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per: Option<ConfigDuration>,
    /// How many cells a full bucket admits at once. Default `count`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

impl RateLimitSection {
    /// The core config, absent fields at their defaults (validated by [`build`](Self::build)).
    ///
    /// ```
    /// use resilix::rate_limit::{Rate, RateLimitConfig};
    /// use resilix_config::section::RateLimitSection;
    ///
    /// let section = RateLimitSection { count: 50, per: None, burst: None };
    /// assert_eq!(section.core_config(), RateLimitConfig::new(Rate::per_second(50)));
    /// ```
    pub fn core_config(&self) -> RateLimitConfig {
        let per = self.per.map_or(Duration::from_secs(1), |p| p.0);
        let config = RateLimitConfig::new(Rate::new(self.count, per));
        match self.burst {
            Some(burst) => config.with_burst(burst),
            None => config,
        }
    }

    /// The rate limiter, validated by the core's constructor.
    pub fn build(&self, path: &str) -> Result<RateLimiter, ConfigError> {
        RateLimiter::new(self.core_config())
            .map_err(|e| ConfigError::new(join(path, field_of(&e)), Problem::RateLimit(e)))
    }
}

fn field_of(e: &RateLimitConfigError) -> &'static str {
    use RateLimitConfigError as E;
    match e {
        E::ZeroRate => "count",
        E::ZeroPeriod => "per",
        E::ZeroBurst | E::BurstTooLarge => "burst",
        // The interval and the burst together: the section is the field.
        _ => "",
    }
}
