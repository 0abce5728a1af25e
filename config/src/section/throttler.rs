//! `[pipelines.NAME.throttler]`: the core's `ThrottlerConfig`, field for field.

use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig, ThrottlerConfigError};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Problem, join};
use crate::value::ConfigDuration;

/// Google SRE client-side throttling. Every field defaults to the core's
/// ([`ThrottlerConfig::DEFAULT`]: K = 2.0, cap 0.9, two minutes, 10 requests, local refusals
/// counted as requests).
///
/// ```toml
/// [pipelines.search.throttler]
/// accepts_multiplier = 2.0
/// max_rejection_rate = 0.9
/// window = "2m"
/// min_requests = 10
/// local_rejections = "count-as-requests"   # or "ignore"
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottlerSection {
    /// K, at least 1.0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepts_multiplier: Option<f64>,
    /// The highest rejection probability, in `[0, 1)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rejection_rate: Option<f64>,
    /// How far back requests and accepts are counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<ConfigDuration>,
    /// Below this many requests in the window, nothing is shed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<u32>,
    /// Whether the throttler's own refusals count as requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rejections: Option<LocalRejectionsField>,
}

/// The core's [`LocalRejections`], in kebab case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalRejectionsField {
    /// The SRE book's rule (the core's default).
    CountAsRequests,
    /// failsafe-go's rule.
    Ignore,
}

impl ThrottlerSection {
    /// The core config, absent fields at their defaults (validated by [`build`](Self::build)).
    ///
    /// ```
    /// use resilix::throttler::ThrottlerConfig;
    /// use resilix_config::section::ThrottlerSection;
    ///
    /// assert_eq!(ThrottlerSection::default().core_config(), ThrottlerConfig::DEFAULT);
    /// ```
    pub fn core_config(&self) -> ThrottlerConfig {
        let d = ThrottlerConfig::DEFAULT;
        ThrottlerConfig {
            accepts_multiplier: self.accepts_multiplier.unwrap_or(d.accepts_multiplier),
            max_rejection_rate: self.max_rejection_rate.unwrap_or(d.max_rejection_rate),
            window: self.window.map_or(d.window, |w| w.0),
            min_requests: self.min_requests.unwrap_or(d.min_requests),
            local_rejections: match self.local_rejections {
                None => d.local_rejections,
                Some(LocalRejectionsField::CountAsRequests) => LocalRejections::CountAsRequests,
                Some(LocalRejectionsField::Ignore) => LocalRejections::Ignore,
            },
        }
    }

    /// The throttler, validated by the core's constructor.
    pub fn build(&self, path: &str) -> Result<Throttler, ConfigError> {
        Throttler::new(self.core_config())
            .map_err(|e| ConfigError::new(join(path, field_of(&e)), Problem::Throttler(e)))
    }
}

fn field_of(e: &ThrottlerConfigError) -> &'static str {
    use ThrottlerConfigError as E;
    match e {
        E::AcceptsMultiplierBelowOne => "accepts_multiplier",
        E::MaxRejectionRateAtLeastOne | E::MaxRejectionRateNegative => "max_rejection_rate",
        E::ZeroWindow | E::WindowShorterThanBuckets => "window",
        E::MinRequestsUnreachable => "min_requests",
        _ => "",
    }
}
