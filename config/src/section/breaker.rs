//! `[pipelines.NAME.breaker]`: every field of the core's `breaker::Config`, and its window.

use core::time::Duration;

use resilix::breaker::{self, Breaker, CallRing, OpenBackoff, SlowCalls, TimeBuckets};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Problem, join};
use crate::policy::ConfiguredBreaker;
use crate::value::{ConfigDuration, Switch};

/// The words of a count window's ring: 64 words hold the last 1,024 calls (256 bytes).
pub const COUNT_WINDOW_WORDS: usize = 64;

/// The buckets of a time window: the core's default (ten, Hystrix's rolling window).
pub const TIME_WINDOW_BUCKETS: usize = 10;

/// A breaker. Every field may be left out for the core's default ([`breaker::Config`] lists
/// each with its source); an `Option` field of the core can be set to `"off"`.
///
/// ```toml
/// [pipelines.payments.breaker]
/// failure_rate_above_percent = 50     # or "off"
/// minimum_calls = 20
/// slow_calls = { slower_than = "2s", above_percent = 80 }   # default off
/// consecutive_failures = 5            # default off
/// open_wait = "5s"
/// open_backoff = { multiplier_percent = 200, max_wait = "5m" }   # default off
/// open_jitter_percent = 10
/// half_open_probes = 1
/// probes_to_close = 1                 # default: all of half_open_probes
/// max_half_open_wait = "60s"          # or "off"
/// window = { length = "10s" }         # or { calls = 100 }, the last N calls (at most 1024)
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSection {
    /// Open above this failure percentage, `0..=99`, or `"off"`. Default 50.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_rate_above_percent: Option<Switch<u8>>,
    /// The fewest calls in the window before a rate may open the circuit. Default 20.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_calls: Option<u32>,
    /// Open on the share of slow calls. Default off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_calls: Option<Switch<SlowCallsSection>>,
    /// Open after this many failures in a row. Default off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<Switch<u32>>,
    /// How long the circuit stays open before a probe. Default 5 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_wait: Option<ConfigDuration>,
    /// Grow the wait on consecutive re-opens. Default off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_backoff: Option<Switch<OpenBackoffSection>>,
    /// Each wait is shortened by up to this percentage at random, `0..=99`. Default 10.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_jitter_percent: Option<u8>,
    /// Probes admitted at once in half-open, `1..=15`. Default 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub half_open_probes: Option<u8>,
    /// Probes that must succeed to close. Default: all of `half_open_probes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes_to_close: Option<u8>,
    /// The longest half-open period, or `"off"` to wait on probes for ever. Default 60 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_half_open_wait: Option<Switch<ConfigDuration>>,
    /// The window outcomes are counted in. Default the last 10 s in ten buckets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowSection>,
}

/// The core's [`SlowCalls`]: both fields are needed (the core has no default for them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowCallsSection {
    /// A call at least this long is slow.
    pub slower_than: ConfigDuration,
    /// Open when the slow share is above this percentage, `0..=99`.
    pub above_percent: u8,
}

/// The core's [`OpenBackoff`]: both fields are needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBackoffSection {
    /// Growth per consecutive re-open, in percent (200 doubles), at least 100.
    pub multiplier_percent: u32,
    /// The cap, at least `open_wait`.
    pub max_wait: ConfigDuration,
}

/// A time window (`length`) or a count window (`calls`), not both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSection {
    /// Count the last stretch of time, in ten buckets. Default 10 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<ConfigDuration>,
    /// Count the last N calls, `1..=1024`, at least `minimum_calls` when a rate is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
}

/// Which window a breaker counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerWindow {
    /// The last `length` of time in ten buckets.
    Time(Duration),
    /// The last `calls` calls.
    Count(u32),
}

impl BreakerSection {
    /// The core config and window this section means, every absent field at the core's
    /// default. Not yet validated: [`build`](Self::build) does that, by the core.
    ///
    /// ```
    /// use resilix::breaker::{Config, DEFAULT_WINDOW};
    /// use resilix_config::section::{BreakerSection, BreakerWindow};
    ///
    /// let (config, window) = BreakerSection::default().core_config("breaker")?;
    /// assert_eq!(config, Config::DEFAULT);
    /// assert_eq!(window, BreakerWindow::Time(DEFAULT_WINDOW));
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    pub fn core_config(&self, path: &str) -> Result<(breaker::Config, BreakerWindow), ConfigError> {
        let d = breaker::Config::DEFAULT;
        let half_open_probes = self.half_open_probes.unwrap_or(d.half_open_probes);
        let config = breaker::Config {
            failure_rate_above_percent: switch_or(
                self.failure_rate_above_percent,
                d.failure_rate_above_percent,
            ),
            minimum_calls: self.minimum_calls.unwrap_or(d.minimum_calls),
            slow_calls: switch_or(self.slow_calls, None).map(|s| SlowCalls {
                slower_than: s.slower_than.0,
                above_percent: s.above_percent,
            }),
            consecutive_failures: switch_or(self.consecutive_failures, d.consecutive_failures),
            open_wait: self.open_wait.map_or(d.open_wait, |w| w.0),
            open_backoff: switch_or(self.open_backoff, None).map(|b| OpenBackoff {
                multiplier_percent: b.multiplier_percent,
                max_wait: b.max_wait.0,
            }),
            open_jitter_percent: self.open_jitter_percent.unwrap_or(d.open_jitter_percent),
            half_open_probes,
            // The core's documented default: all of the half-open probes.
            probes_to_close: self.probes_to_close.unwrap_or(half_open_probes),
            max_half_open_wait: switch_or(
                self.max_half_open_wait.map(|s| match s {
                    Switch::On(w) => Switch::On(w.0),
                    Switch::Off => Switch::Off,
                }),
                d.max_half_open_wait,
            ),
        };
        let window = match self.window.unwrap_or_default() {
            WindowSection {
                length: Some(_),
                calls: Some(_),
            } => {
                return Err(ConfigError::new(
                    join(path, "window"),
                    Problem::WindowTwoKinds,
                ));
            }
            WindowSection {
                calls: Some(calls), ..
            } => BreakerWindow::Count(calls),
            WindowSection { length, .. } => {
                BreakerWindow::Time(length.map_or(breaker::DEFAULT_WINDOW, |l| l.0))
            }
        };
        Ok((config, window))
    }

    /// The breaker, built and validated by the core's constructor.
    pub fn build(&self, path: &str) -> Result<ConfiguredBreaker, ConfigError> {
        let (config, window) = self.core_config(path)?;
        let built = match window {
            BreakerWindow::Time(length) => {
                Breaker::<TimeBuckets<TIME_WINDOW_BUCKETS>>::time_based(config, length)
                    .map(ConfiguredBreaker::Time)
            }
            BreakerWindow::Count(calls) => {
                Breaker::<CallRing<COUNT_WINDOW_WORDS>>::count_based(config, calls)
                    .map(ConfiguredBreaker::Count)
            }
        };
        built.map_err(|e| ConfigError::new(join(path, field_of(&e, window)), Problem::Breaker(e)))
    }
}

fn switch_or<T>(field: Option<Switch<T>>, default: Option<T>) -> Option<T> {
    match field {
        None => default,
        Some(s) => s.into_option(),
    }
}

/// The field a breaker error is about.
fn field_of(e: &breaker::ConfigError, window: BreakerWindow) -> &'static str {
    use breaker::ConfigError as E;
    match e {
        E::FailureRateOutOfRange(_) | E::NeverOpens => "failure_rate_above_percent",
        E::MinimumCallsZero => "minimum_calls",
        E::SlowCallRateOutOfRange(_) => "slow_calls.above_percent",
        E::SlowCallDurationZero => "slow_calls.slower_than",
        E::ConsecutiveFailuresZero => "consecutive_failures",
        E::OpenWaitZero => "open_wait",
        E::BackoffShrinks(_) => "open_backoff.multiplier_percent",
        E::BackoffCapBelowWait => "open_backoff.max_wait",
        E::JitterOutOfRange(_) => "open_jitter_percent",
        E::ProbesOutOfRange(_) => "half_open_probes",
        E::ProbesToCloseOutOfRange { .. } => "probes_to_close",
        E::HalfOpenWaitZero => "max_half_open_wait",
        E::WindowEmpty | E::WindowShorterThanBuckets => match window {
            BreakerWindow::Time(_) => "window.length",
            BreakerWindow::Count(_) => "window.calls",
        },
        E::WindowAboveCapacity { .. } | E::WindowBelowMinimumCalls { .. } => "window.calls",
        _ => "",
    }
}
