//! `[pipelines.NAME.limiter]`: the adaptive concurrency limiter, an algorithm preset and any
//! field of the core's `LimiterConfig` over it.

use resilix::limiter::{
    Aimd, Algorithm, Gradient2, Limiter, LimiterConfig, LimiterConfigError, Vegas,
};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Problem, join};
use crate::value::ConfigDuration;

/// An adaptive limiter. `algorithm` picks the core's preset ([`LimiterConfig::gradient2`], the
/// default, [`LimiterConfig::vegas`] or [`LimiterConfig::aimd`]); every other field overrides
/// that preset's value, and the algorithm's own parameters go in the table of its name.
///
/// ```toml
/// [pipelines.search.limiter]
/// algorithm = "gradient2"      # or "vegas", "aimd"
/// initial_limit = 20
/// min_limit = 20
/// max_limit = 200
/// min_window = "1s"
/// max_window = "1s"
/// window_samples = 10
/// min_rtt = "100us"
/// probe_multiplier = 30
/// queue_factor = 1.0
/// queue_rungs = 4
/// [pipelines.search.limiter.gradient2]   # only with algorithm = "gradient2"
/// smoothing = 0.2
/// queue_size = 4
/// long_window = 600
/// rtt_tolerance = 1.5
/// drop_backoff = 0.9
/// drop_threshold = 0.02
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimiterSection {
    /// The preset. Default `gradient2`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<AlgorithmName>,
    /// The limit at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_limit: Option<u32>,
    /// The limit never goes below this, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_limit: Option<u32>,
    /// The limit never goes above this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_limit: Option<u32>,
    /// A window closes no sooner than this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_window: Option<ConfigDuration>,
    /// A window closes no later than this (at most an hour).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_window: Option<ConfigDuration>,
    /// Samples a window needs before it may close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_samples: Option<u32>,
    /// Shorter samples are ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<ConfigDuration>,
    /// The baseline is re-probed every this many windows (0 never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_multiplier: Option<u32>,
    /// The queue zone's size as a factor of the limit, in `[1, 16]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_factor: Option<f32>,
    /// Rungs of the queue zone's shedding ladder, `1..=1000`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_rungs: Option<u32>,
    /// Gradient2's parameters (only with `algorithm = "gradient2"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gradient2: Option<Gradient2Section>,
    /// Vegas's parameters (only with `algorithm = "vegas"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegas: Option<VegasSection>,
    /// AIMD's parameters (only with `algorithm = "aimd"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aimd: Option<AimdSection>,
}

/// The limiter's algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlgorithmName {
    /// Netflix's Gradient2 (the default).
    #[default]
    Gradient2,
    /// TCP Vegas.
    Vegas,
    /// Additive increase, multiplicative decrease.
    Aimd,
}

impl AlgorithmName {
    fn name(self) -> &'static str {
        match self {
            AlgorithmName::Gradient2 => "algorithm = \"gradient2\"",
            AlgorithmName::Vegas => "algorithm = \"vegas\"",
            AlgorithmName::Aimd => "algorithm = \"aimd\"",
        }
    }
}

/// The core's [`Gradient2`]; absent fields are its defaults (Netflix's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)] // the core's fields, documented there
pub struct Gradient2Section {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_window: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_tolerance: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop_backoff: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop_threshold: Option<f32>,
}

/// The core's [`Vegas`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VegasSection {
    /// Weight of the new limit per window, in (0, 1]. Default 1.0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<f32>,
}

/// The core's [`Aimd`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AimdSection {
    /// Factor applied on a drop, in [0.5, 1). Default 0.9.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_ratio: Option<f32>,
    /// A window slower than this on average counts as a drop. Default 5 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<ConfigDuration>,
}

impl LimiterSection {
    /// The core config: the preset, then each field given (validated by
    /// [`build`](Self::build)). A parameter table of another algorithm is refused here.
    ///
    /// ```
    /// use resilix::limiter::LimiterConfig;
    /// use resilix_config::section::{AlgorithmName, LimiterSection};
    ///
    /// assert_eq!(LimiterSection::default().core_config("limiter")?, LimiterConfig::gradient2());
    /// let vegas = LimiterSection { algorithm: Some(AlgorithmName::Vegas), ..Default::default() };
    /// assert_eq!(vegas.core_config("limiter")?, LimiterConfig::vegas());
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    pub fn core_config(&self, path: &str) -> Result<LimiterConfig, ConfigError> {
        let algorithm = self.algorithm.unwrap_or_default();
        let not_for = |field: &str| {
            Err(ConfigError::new(
                join(path, field),
                Problem::NotForKind {
                    kind: algorithm.name(),
                },
            ))
        };
        let preset = match algorithm {
            AlgorithmName::Gradient2 => LimiterConfig::gradient2(),
            AlgorithmName::Vegas => LimiterConfig::vegas(),
            AlgorithmName::Aimd => LimiterConfig::aimd(),
        };
        let algorithm = match algorithm {
            AlgorithmName::Gradient2 => {
                if self.vegas.is_some() {
                    return not_for("vegas");
                }
                if self.aimd.is_some() {
                    return not_for("aimd");
                }
                let d = Gradient2::DEFAULT;
                let g = self.gradient2.unwrap_or_default();
                Algorithm::Gradient2(Gradient2 {
                    smoothing: g.smoothing.unwrap_or(d.smoothing),
                    queue_size: g.queue_size.unwrap_or(d.queue_size),
                    long_window: g.long_window.unwrap_or(d.long_window),
                    rtt_tolerance: g.rtt_tolerance.unwrap_or(d.rtt_tolerance),
                    drop_backoff: g.drop_backoff.unwrap_or(d.drop_backoff),
                    drop_threshold: g.drop_threshold.unwrap_or(d.drop_threshold),
                })
            }
            AlgorithmName::Vegas => {
                if self.gradient2.is_some() {
                    return not_for("gradient2");
                }
                if self.aimd.is_some() {
                    return not_for("aimd");
                }
                let v = self.vegas.unwrap_or_default();
                Algorithm::Vegas(Vegas {
                    smoothing: v.smoothing.unwrap_or(Vegas::DEFAULT.smoothing),
                })
            }
            AlgorithmName::Aimd => {
                if self.gradient2.is_some() {
                    return not_for("gradient2");
                }
                if self.vegas.is_some() {
                    return not_for("vegas");
                }
                let a = self.aimd.unwrap_or_default();
                Algorithm::Aimd(Aimd {
                    backoff_ratio: a.backoff_ratio.unwrap_or(Aimd::DEFAULT.backoff_ratio),
                    timeout: a.timeout.map_or(Aimd::DEFAULT.timeout, |t| t.0),
                })
            }
        };
        Ok(LimiterConfig {
            algorithm,
            initial_limit: self.initial_limit.unwrap_or(preset.initial_limit),
            min_limit: self.min_limit.unwrap_or(preset.min_limit),
            max_limit: self.max_limit.unwrap_or(preset.max_limit),
            min_window: self.min_window.map_or(preset.min_window, |w| w.0),
            max_window: self.max_window.map_or(preset.max_window, |w| w.0),
            window_samples: self.window_samples.unwrap_or(preset.window_samples),
            min_rtt: self.min_rtt.map_or(preset.min_rtt, |w| w.0),
            probe_multiplier: self.probe_multiplier.unwrap_or(preset.probe_multiplier),
            queue_factor: self.queue_factor.unwrap_or(preset.queue_factor),
            queue_rungs: self.queue_rungs.unwrap_or(preset.queue_rungs),
        })
    }

    /// The limiter, validated by the core's constructor.
    pub fn build(&self, path: &str) -> Result<Limiter, ConfigError> {
        let config = self.core_config(path)?;
        Limiter::new(config).map_err(|e| {
            let field = field_of(&e, &config);
            ConfigError::new(join(path, field), Problem::Limiter(e))
        })
    }
}

fn field_of(e: &LimiterConfigError, c: &LimiterConfig) -> &'static str {
    use LimiterConfigError as E;
    match e {
        E::MinLimitZero => "min_limit",
        E::LimitsOutOfOrder => "initial_limit",
        E::MaxLimitTooLarge => "max_limit",
        E::BadWindow if c.min_window.is_zero() || c.min_window > c.max_window => "min_window",
        E::BadWindow => "max_window",
        E::WindowSamplesZero => "window_samples",
        // The core names the field itself, in this file's spelling ("gradient2.smoothing").
        E::OutOfRange { field, .. } => field,
        // a rule newer than this mapping (the core's errors are non-exhaustive): the section's path
        _ => "",
    }
}
