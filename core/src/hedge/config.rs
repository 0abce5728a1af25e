//! What a hedge policy is told, and what it refuses to be told.

use core::fmt;
use core::time::Duration;

/// How a [`Hedge`](super::Hedge) is tuned. Every default cites its source.
///
/// ```
/// use core::time::Duration;
/// use resilix::hedge::HedgeConfig;
///
/// // Finagle's one knob: at most 2% more requests, so the delay is the p98 latency.
/// let config = HedgeConfig { max_extra_load_permille: 20, ..HedgeConfig::DEFAULT };
/// assert_eq!(config.quantile_permille(), 980);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HedgeConfig {
    /// The most extra requests hedging may add, in thousandths of the calls (Finagle's
    /// `maxExtraLoad`). It sets both the delay (the latency quantile `1 − load`: with 50, the
    /// p95) and the local cap (each call earns that share of a hedge). Default 50 (5%): "The
    /// Tail at Scale" (Dean & Barroso 2013): deferring the hedge until the first request "has
    /// been outstanding for more than the 95th-percentile expected latency" "limits the
    /// additional load to approximately 5%". 1 to 999.
    pub max_extra_load_permille: u32,
    /// The shortest delay ever used, whatever the quantile says. Default 1 ms (Finagle's
    /// `BackupRequestFilter` floor, also a tokio timer's resolution). Below it the delay is
    /// still at least one tick of the stored delay (1 µs), so a copy never leaves with its
    /// original: a histogram full of zeros (a cache in front, a mock) would double the load.
    pub min_delay: Duration,
    /// Samples per quantile window: the delay in force is the quantile of the last complete
    /// window of this many original latencies, refreshed each time a window fills (the
    /// settle that completes it computes it). No hedge is sent before the first window
    /// fills (tower's `min_data_points`), unless `fixed_delay` is set. Default 1000 (ours: at
    /// the default load, 50 samples lie above the p95, enough for a stable tail estimate;
    /// Finagle refreshes every 3 s over a 30 s window, a count needs no stored time). At
    /// least `1000 / max_extra_load_permille` (one sample above the quantile).
    pub window: u32,
    /// Hedge after this fixed delay instead of a quantile (the paper's BigTable run: "a
    /// hedging request after a 10ms delay"). `min_delay` still applies. Default `None`.
    pub fixed_delay: Option<Duration>,
    /// Copies beyond the original one call may send, each one delay after the previous.
    /// Default 1 (the paper, Finagle and tower send one backup). 1 to 15.
    pub max_hedges: u32,
    /// The local cap's depth, in hedges: the most hedges sent in a row after a quiet stretch
    /// before the steady `max_extra_load` share applies. The cap starts full. Default 100
    /// (ours: two windows' earnings at the defaults, 2 × 1000 × 5%; a fan-out asks for its
    /// hedges all at once, and in the simulator's 100-leaf fan-out a depth of 10 refused one
    /// hedge in five, which fell on the slow calls and left the p99.9 uncut; 50 refused 73 in
    /// 28,000; 100 none). 1 to 1,000,000.
    pub burst: u32,
    /// Whether the hedge records its calls on the shared budget. Default
    /// [`BudgetAccounting::Calls`].
    pub accounting: BudgetAccounting,
}

/// How a hedge policy uses the shared [`RetryBudget`](crate::retry::budget::RetryBudget).
///
/// Every hedge is charged to the budget as a retry after a `Timeout` (a copy is sent because
/// the original ran past its expected time; gRPC charges hedges to the retry throttle). What
/// differs is who records the calls the budget measures hedges against.
///
/// ```
/// use resilix::hedge::{BudgetAccounting, HedgeConfig};
///
/// // A retry over the same budget already records each call.
/// let config = HedgeConfig { accounting: BudgetAccounting::SpendOnly, ..HedgeConfig::DEFAULT };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BudgetAccounting {
    /// The hedge owns the call's accounting, as a retry policy does: each hedged call that
    /// ends with a counted verdict is a first attempt, a `Success` is recorded (as rescued by
    /// a retry when a hedge won), and any other failure as not retried. For hedging without a
    /// retry on the same budget.
    Calls,
    /// The hedge only spends. For a hedge inside a retry (or beside one) that records the
    /// same calls on the same budget: recording them twice would double the budget's base.
    SpendOnly,
}

impl HedgeConfig {
    /// The defaults: at most 5% extra load (hedge at the p95), a 1 ms floor, 1000-sample
    /// windows, one hedge per call, a local cap 100 hedges deep, calls recorded on the budget.
    pub const DEFAULT: HedgeConfig = HedgeConfig {
        max_extra_load_permille: 50,
        min_delay: Duration::from_millis(1),
        window: 1000,
        fixed_delay: None,
        max_hedges: 1,
        burst: 100,
        accounting: BudgetAccounting::Calls,
    };

    /// The latency quantile the delay is read at, in thousandths: `1000 − max_extra_load`.
    pub const fn quantile_permille(&self) -> u32 {
        1000u32.saturating_sub(self.max_extra_load_permille)
    }

    /// Checks every field, and answers the first problem.
    ///
    /// ```
    /// use resilix::hedge::{HedgeConfig, HedgeConfigError};
    ///
    /// let no_load = HedgeConfig { max_extra_load_permille: 0, ..HedgeConfig::DEFAULT };
    /// assert_eq!(no_load.validate(), Err(HedgeConfigError::LoadOutOfRange));
    /// ```
    pub const fn validate(&self) -> Result<(), HedgeConfigError> {
        let load = self.max_extra_load_permille;
        if load == 0 || load >= 1000 {
            return Err(HedgeConfigError::LoadOutOfRange);
        }
        if self.window == 0 || (self.window as u64) * (load as u64) < 1000 {
            return Err(HedgeConfigError::WindowTooShort);
        }
        if self.max_hedges == 0 || self.max_hedges > MAX_HEDGES {
            return Err(HedgeConfigError::HedgesOutOfRange);
        }
        if self.burst == 0 || self.burst > MAX_BURST {
            return Err(HedgeConfigError::BurstOutOfRange);
        }
        if super::decide::micros_ceil(self.min_delay) > u32::MAX as u64 {
            return Err(HedgeConfigError::DelayTooLong);
        }
        if let Some(d) = self.fixed_delay
            && super::decide::micros_ceil(d) > u32::MAX as u64
        {
            return Err(HedgeConfigError::DelayTooLong);
        }
        Ok(())
    }
}

impl Default for HedgeConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The most hedges per call: a dozen copies of one request is a storm, not a hedge.
pub(crate) const MAX_HEDGES: u32 = 15;
/// The deepest local cap: its balance, in thousandths of a hedge, must fit a `u32`.
pub(crate) const MAX_BURST: u32 = 1_000_000;

/// Why a hedge configuration was refused.
///
/// ```
/// use resilix::hedge::{HedgeConfig, HedgeConfigError};
///
/// let err = HedgeConfig { burst: 0, ..HedgeConfig::DEFAULT }.validate().unwrap_err();
/// assert_eq!(err, HedgeConfigError::BurstOutOfRange);
/// assert!(err.to_string().contains("burst"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum HedgeConfigError {
    /// `max_extra_load_permille` is 0 (never hedges) or 1000 and above (the quantile would be
    /// the minimum latency or below: every call hedged at once).
    LoadOutOfRange,
    /// `window` has no sample above the quantile: the delay would be the window's maximum.
    WindowTooShort,
    /// `max_hedges` is 0 or above 15.
    HedgesOutOfRange,
    /// `burst` is 0 (never hedges) or above 1,000,000.
    BurstOutOfRange,
    /// `min_delay` or `fixed_delay` is longer than the stored delay holds (2^32 µs, 71 min).
    DelayTooLong,
}

impl fmt::Display for HedgeConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HedgeConfigError::LoadOutOfRange => {
                "max_extra_load_permille must be 1 to 999 (50 hedges at the p95, the paper's \
                 5%); for no hedging, do not hedge"
            }
            HedgeConfigError::WindowTooShort => {
                "the quantile window must hold at least one sample above the quantile: window \
                 x max_extra_load_permille >= 1000"
            }
            HedgeConfigError::HedgesOutOfRange => {
                "max_hedges must be 1 to 15 (the paper, Finagle and tower send one)"
            }
            HedgeConfigError::BurstOutOfRange => {
                "the local cap's burst must be 1 to 1,000,000 hedges"
            }
            HedgeConfigError::DelayTooLong => {
                "min_delay and fixed_delay must be at most 2^32 microseconds (about 71 minutes)"
            }
        })
    }
}

impl core::error::Error for HedgeConfigError {}
