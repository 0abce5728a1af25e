//! What a breaker is told: thresholds, waits and probes, each default with its source.

use core::fmt;
use core::time::Duration;

use super::word::MAX_PROBES;

/// When calls slower than a threshold should open the circuit (resilience4j's slow-call rate).
///
/// A call counts as slow when it settles at least `slower_than` after it was admitted, whatever
/// its verdict. The circuit opens when, with at least
/// [`minimum_calls`](Config::minimum_calls) in the window, the share of slow calls is *above*
/// `above_percent`.
///
/// ```
/// use core::time::Duration;
/// use resilix::breaker::{Config, SlowCalls};
///
/// let config = Config {
///     slow_calls: Some(SlowCalls { slower_than: Duration::from_secs(2), above_percent: 80 }),
///     ..Config::DEFAULT
/// };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowCalls {
    /// A call at least this long is slow. resilience4j's default is 60 s; there is no good
    /// universal value: take your latency p99 plus a margin.
    pub slower_than: Duration,
    /// Open when the slow share exceeds this percentage, `0..=99`.
    pub above_percent: u8,
}

/// How the open wait grows when the circuit re-opens after failed probes.
///
/// The `n`-th consecutive re-open waits `open_wait × (multiplier_percent / 100)^n`, capped at
/// `max_wait`; a probe that closes the circuit resets `n` to zero. Finagle grows from 5 s to
/// 300 s; Envoy caps at 300 s; resilience4j's `waitIntervalFunctionInOpenState` (#671).
///
/// ```
/// use core::time::Duration;
/// use resilix::breaker::{Config, OpenBackoff};
///
/// let config = Config {
///     open_backoff: Some(OpenBackoff { multiplier_percent: 200, max_wait: Duration::from_secs(300) }),
///     ..Config::DEFAULT
/// };
/// assert_eq!(config.longest_open_wait(), Duration::from_secs(300));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenBackoff {
    /// Growth per consecutive re-open, in percent: 200 doubles. At least 100.
    pub multiplier_percent: u32,
    /// The cap. At least [`Config::open_wait`].
    pub max_wait: Duration,
}

/// A breaker's configuration. Start from [`Config::DEFAULT`] and change what you need.
///
/// | field | default | source |
/// |---|---|---|
/// | `failure_rate_above_percent` | `Some(50)`: open when more than half failed | the essay (docs/design/essay.md) ("a failure rate above half"), Hystrix `errorThresholdPercentage` 50; resilience4j 50 (but at-or-above), Polly 10 |
/// | `minimum_calls` | 20 | the essay (docs/design/essay.md) ("at least twenty requests in the window"), Hystrix `requestVolumeThreshold` 20; resilience4j and Polly use 100 |
/// | window | 10 s in 10 buckets (the breaker's constructor) | Hystrix rolling statistics; resilience4j counts the last 100 calls |
/// | `slow_calls` | off | resilience4j's slow-call rate, off unless asked for |
/// | `consecutive_failures` | off | Finagle and Envoy use 5 when they count consecutive failures |
/// | `open_wait` | 5 s | Hystrix `sleepWindow` and Polly `BreakDuration` (resilience4j and failsafe-go wait 60 s) |
/// | `open_backoff` | off | resilience4j keeps a fixed wait unless told otherwise |
/// | `open_jitter_percent` | 10: each wait is shortened by up to 10 % at random | ours: enough to spread a fleet's probes, small enough not to matter to one client |
/// | `half_open_probes` | 1 | the essay (docs/design/essay.md) ("a single trial request"), Hystrix, Polly; resilience4j admits 10 |
/// | `probes_to_close` | all of `half_open_probes` | resilience4j and failsafe-go's default success threshold |
/// | `max_half_open_wait` | `Some(60 s)`: a probe unsettled after a minute counts as failed | ours, after resilience4j's `maxWaitDurationInHalfOpenState`, whose default (0 = wait forever) leaves a hung probe holding the circuit half-open for ever; 60 s is nginx's default `proxy_read_timeout` and AWS ALB's default idle timeout, so a probe still running then would have been cut off by the proxy in front of most upstreams |
///
/// ```
/// use resilix::breaker::Config;
///
/// let config = Config { minimum_calls: 50, half_open_probes: 3, probes_to_close: 2, ..Config::DEFAULT };
/// assert!(config.validate().is_ok());
/// assert!(Config { probes_to_close: 4, ..config }.validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Open when, with at least `minimum_calls` in the window, the percentage of failures
    /// (overload, transient, timeout) is *strictly above* this, `0..=99`. `None` turns the
    /// failure rate off (use the slow-call rate or the consecutive-failure count instead).
    pub failure_rate_above_percent: Option<u8>,
    /// The fewest calls in the window before either rate may open the circuit, at least 1.
    pub minimum_calls: u32,
    /// Optionally open on the share of slow calls.
    pub slow_calls: Option<SlowCalls>,
    /// Optionally open after this many failures in a row, whatever the window says (at least 1).
    pub consecutive_failures: Option<u32>,
    /// How long the circuit stays open before it admits a probe. Not zero.
    pub open_wait: Duration,
    /// Optionally grow the wait on each consecutive re-open.
    pub open_backoff: Option<OpenBackoff>,
    /// Each wait is shortened by a random amount of up to this percentage, `0..=99`, drawn from
    /// the caller's randomness, so a fleet that opened together does not probe together.
    pub open_jitter_percent: u8,
    /// How many probes half-open admits at once, `1..=15`.
    pub half_open_probes: u8,
    /// How many of those must succeed to close, `1..=half_open_probes`. The circuit re-opens
    /// as soon as so many have failed that this can no longer be reached.
    pub probes_to_close: u8,
    /// The longest the circuit stays half-open waiting on its probes. A call arriving after
    /// it, with the circuit still half-open, re-opens the circuit instead (the unsettled probes
    /// count as failed: the wait grows as for any failed probe, and their late outcomes are
    /// ignored), so a probe that never settles cannot hold the circuit half-open forever.
    /// While the probes are all taken, refusals carry this instant as their retry-at.
    /// `None` waits on the probes forever (resilience4j's default of 0, not recommended: a
    /// probe that hangs then blocks the circuit for good). Not zero.
    pub max_half_open_wait: Option<Duration>,
}

impl Config {
    /// The defaults of the table above.
    pub const DEFAULT: Config = Config {
        failure_rate_above_percent: Some(50),
        minimum_calls: 20,
        slow_calls: None,
        consecutive_failures: None,
        open_wait: Duration::from_secs(5),
        open_backoff: None,
        open_jitter_percent: 10,
        half_open_probes: 1,
        probes_to_close: 1,
        max_half_open_wait: Some(Duration::from_secs(60)),
    };

    /// The longest the circuit can stay open before a probe: the backoff cap, or the wait.
    pub const fn longest_open_wait(&self) -> Duration {
        match self.open_backoff {
            Some(b) => b.max_wait,
            None => self.open_wait,
        }
    }

    /// Checks every field; the first problem found is returned.
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if let Some(p) = self.failure_rate_above_percent
            && p > 99
        {
            return Err(ConfigError::FailureRateOutOfRange(p));
        }
        if self.minimum_calls == 0 {
            return Err(ConfigError::MinimumCallsZero);
        }
        if let Some(s) = self.slow_calls {
            if s.above_percent > 99 {
                return Err(ConfigError::SlowCallRateOutOfRange(s.above_percent));
            }
            if s.slower_than.is_zero() {
                return Err(ConfigError::SlowCallDurationZero);
            }
        }
        if let Some(0) = self.consecutive_failures {
            return Err(ConfigError::ConsecutiveFailuresZero);
        }
        if self.failure_rate_above_percent.is_none()
            && self.slow_calls.is_none()
            && self.consecutive_failures.is_none()
        {
            return Err(ConfigError::NeverOpens);
        }
        if self.open_wait.is_zero() {
            return Err(ConfigError::OpenWaitZero);
        }
        if let Some(b) = self.open_backoff {
            if b.multiplier_percent < 100 {
                return Err(ConfigError::BackoffShrinks(b.multiplier_percent));
            }
            if b.max_wait.as_nanos() < self.open_wait.as_nanos() {
                return Err(ConfigError::BackoffCapBelowWait);
            }
        }
        if self.open_jitter_percent > 99 {
            return Err(ConfigError::JitterOutOfRange(self.open_jitter_percent));
        }
        if self.half_open_probes == 0 || self.half_open_probes > MAX_PROBES {
            return Err(ConfigError::ProbesOutOfRange(self.half_open_probes));
        }
        if self.probes_to_close == 0 || self.probes_to_close > self.half_open_probes {
            return Err(ConfigError::ProbesToCloseOutOfRange {
                probes_to_close: self.probes_to_close,
                half_open_probes: self.half_open_probes,
            });
        }
        if let Some(w) = self.max_half_open_wait
            && w.is_zero()
        {
            return Err(ConfigError::HalfOpenWaitZero);
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::DEFAULT
    }
}

/// Why a breaker configuration was refused. Nothing is clamped in silence.
///
/// ```
/// use resilix::breaker::{Config, ConfigError};
///
/// let bad = Config { half_open_probes: 0, ..Config::DEFAULT };
/// assert_eq!(bad.validate(), Err(ConfigError::ProbesOutOfRange(0)));
/// assert!(format!("{}", ConfigError::ProbesOutOfRange(0)).contains("1..=15"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ConfigError {
    /// The failure-rate threshold is 100 % or more: no rate can exceed it.
    FailureRateOutOfRange(u8),
    /// The minimum number of calls is zero: a rate over no calls is undefined.
    MinimumCallsZero,
    /// The slow-call-rate threshold is 100 % or more: no rate can exceed it.
    SlowCallRateOutOfRange(u8),
    /// The slow-call duration is zero: every call would be slow.
    SlowCallDurationZero,
    /// The consecutive-failure count is zero.
    ConsecutiveFailuresZero,
    /// No failure rate, slow-call rate or consecutive-failure count: the circuit could never
    /// open.
    NeverOpens,
    /// The open wait is zero: the circuit would probe at once and never shed.
    OpenWaitZero,
    /// The open-wait multiplier is below 100 %: waits would shrink.
    BackoffShrinks(u32),
    /// The open-wait cap is shorter than the open wait.
    BackoffCapBelowWait,
    /// The jitter is 100 % or more: a wait could shrink to nothing.
    JitterOutOfRange(u8),
    /// Half-open probes must be `1..=15`.
    ProbesOutOfRange(u8),
    /// The probes needed to close must be `1..=half_open_probes`.
    ProbesToCloseOutOfRange {
        /// As configured.
        probes_to_close: u8,
        /// As configured.
        half_open_probes: u8,
    },
    /// The maximum half-open wait is zero: every probe would expire as it is admitted (use
    /// `None` to wait on the probes forever).
    HalfOpenWaitZero,
    /// The window is empty (zero length, zero calls, or zero buckets).
    WindowEmpty,
    /// A time window shorter than 8 ns per bucket: its buckets could not be kept apart across
    /// idle gaps (see `time::era`), and a longer window than asked would be used in silence.
    WindowShorterThanBuckets,
    /// A count window larger than its ring's capacity.
    WindowAboveCapacity {
        /// As configured.
        calls: u32,
        /// What the ring holds: 16 calls per word.
        capacity: u32,
    },
    /// A count window smaller than the minimum number of calls: it could never hold enough
    /// calls to open.
    WindowBelowMinimumCalls {
        /// As configured.
        calls: u32,
        /// As configured.
        minimum_calls: u32,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ConfigError::FailureRateOutOfRange(p) => write!(
                f,
                "failure rate threshold {p}% is out of range 0..=99: the circuit opens when the rate is above it"
            ),
            ConfigError::MinimumCallsZero => {
                f.write_str("minimum calls is 0: use at least 1 (a rate over no calls is undefined)")
            }
            ConfigError::SlowCallRateOutOfRange(p) => write!(
                f,
                "slow-call rate threshold {p}% is out of range 0..=99: the circuit opens when the rate is above it"
            ),
            ConfigError::SlowCallDurationZero => {
                f.write_str("slow-call duration is 0: every call would count as slow")
            }
            ConfigError::ConsecutiveFailuresZero => {
                f.write_str("consecutive failures is 0: use at least 1, or None to turn it off")
            }
            ConfigError::NeverOpens => f.write_str(
                "no failure rate, slow-call rate or consecutive-failure count: the circuit could never open",
            ),
            ConfigError::OpenWaitZero => {
                f.write_str("open wait is 0: the circuit would probe at once and never shed load")
            }
            ConfigError::BackoffShrinks(m) => write!(
                f,
                "open-wait multiplier {m}% is below 100%: waits must not shrink"
            ),
            ConfigError::BackoffCapBelowWait => {
                f.write_str("open-wait cap is shorter than the open wait")
            }
            ConfigError::JitterOutOfRange(p) => write!(
                f,
                "open-wait jitter {p}% is out of range 0..=99: a wait could shrink to nothing"
            ),
            ConfigError::ProbesOutOfRange(n) => {
                write!(f, "half-open probes {n} is out of range 1..=15")
            }
            ConfigError::ProbesToCloseOutOfRange {
                probes_to_close,
                half_open_probes,
            } => write!(
                f,
                "probes to close {probes_to_close} is out of range 1..={half_open_probes} (the half-open probes)"
            ),
            ConfigError::HalfOpenWaitZero => f.write_str(
                "max half-open wait is 0: every probe would expire at once (use None to wait on probes forever)",
            ),
            ConfigError::WindowEmpty => {
                f.write_str("the window is empty: give it a length, calls, and buckets")
            }
            ConfigError::WindowShorterThanBuckets => f.write_str(
                "the time window is shorter than 8 ns per bucket: lengthen it or use fewer buckets",
            ),
            ConfigError::WindowAboveCapacity { calls, capacity } => write!(
                f,
                "a window of {calls} calls exceeds the ring's capacity of {capacity}: use more words (16 calls each)"
            ),
            ConfigError::WindowBelowMinimumCalls {
                calls,
                minimum_calls,
            } => write!(
                f,
                "a window of {calls} calls can never reach the minimum of {minimum_calls} calls"
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(all(test, not(loom)))]
mod tests;
