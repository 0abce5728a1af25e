//! What chaos injects, how often, and the checks that refuse a config that means nothing.

use core::fmt;
use core::time::Duration;

use crate::verdict::Verdict;

/// One in a million: the unit of every injection rate (integer, so targets without an FPU
/// draw exactly what others do).
pub const MILLION: u32 = 1_000_000;

/// What chaos injects into the attempts it sees, each at its own rate in parts per million.
///
/// Three kinds, reached in this order for each attempt (Polly's Simmy order: latency, then
/// fault, then outcome), each drawing only when reached and only when its rate is above zero:
///
/// * **latency**: the adapter waits `latency` before making the call (the wait counts against
///   the attempt's deadline, so timeouts fire as they would on a slow upstream);
/// * **fault**: the call is not made; the attempt settles with `fault`, a verdict of your
///   choice (`Transient` by default: a connection refused);
/// * **outcome**: the call is made and its verdict replaced by `outcome` (an upstream that
///   acted but answered `Overload`, say); the caller still gets the call's own output.
///
/// Rates compound as Simmy's chained strategies do: an outcome can only be substituted on an
/// attempt the fault left alone, so a 10% fault and a 10% outcome touch 10% + 9% of
/// attempts, and latency combines with either.
///
/// ```
/// use core::time::Duration;
/// use resilix::chaos::ChaosConfig;
/// use resilix::Verdict;
///
/// let config = ChaosConfig::NONE
///     .with_latency(50_000, Duration::from_millis(200)) // 5% of attempts wait 200 ms
///     .with_fault(10_000, Verdict::Transient)           // 1% fail without a call
///     .with_outcome(20_000, Verdict::Overload { retry_after: None });
/// assert_eq!(config.fault_ppm, 10_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ChaosConfig {
    /// Attempts delayed, per million. Default 0 (off).
    pub latency_ppm: u32,
    /// How long a delayed attempt waits before its call. Default 0; must be above zero when
    /// `latency_ppm` is.
    pub latency: Duration,
    /// Attempts failed without a call, per million. Default 0 (off).
    pub fault_ppm: u32,
    /// The verdict of a faulted attempt. Default `Transient`. Never `Rejected`: that verdict
    /// means one of our own policies refused, which chaos cannot stand for.
    pub fault: Verdict,
    /// Attempts whose verdict is replaced after the call, per million. Default 0 (off).
    pub outcome_ppm: u32,
    /// The verdict substituted. Default `Overload` without a Retry-After. Never `Rejected`.
    pub outcome: Verdict,
}

impl ChaosConfig {
    /// Nothing injected: the starting point for the `with_*` builders. (Ours: chaos is off
    /// unless you ask for it, as in Simmy, whose strategies default to a zero rate.)
    pub const NONE: ChaosConfig = ChaosConfig {
        latency_ppm: 0,
        latency: Duration::ZERO,
        fault_ppm: 0,
        fault: Verdict::Transient,
        outcome_ppm: 0,
        outcome: Verdict::Overload { retry_after: None },
    };

    /// Delays `ppm` attempts per million by `latency`.
    pub const fn with_latency(self, ppm: u32, latency: Duration) -> Self {
        ChaosConfig {
            latency_ppm: ppm,
            latency,
            ..self
        }
    }

    /// Fails `ppm` attempts per million with `verdict`, without a call.
    pub const fn with_fault(self, ppm: u32, verdict: Verdict) -> Self {
        ChaosConfig {
            fault_ppm: ppm,
            fault: verdict,
            ..self
        }
    }

    /// Replaces the verdict of `ppm` attempts per million with `verdict`, after the call.
    pub const fn with_outcome(self, ppm: u32, verdict: Verdict) -> Self {
        ChaosConfig {
            outcome_ppm: ppm,
            outcome: verdict,
            ..self
        }
    }

    /// Checks the config.
    pub(crate) const fn validate(&self) -> Result<(), ChaosConfigError> {
        if self.latency_ppm > MILLION || self.fault_ppm > MILLION || self.outcome_ppm > MILLION {
            return Err(ChaosConfigError::RateAboveOne);
        }
        if matches!(self.fault, Verdict::Rejected(_))
            || matches!(self.outcome, Verdict::Rejected(_))
        {
            return Err(ChaosConfigError::RejectedVerdict);
        }
        if self.latency_ppm > 0 && self.latency.is_zero() {
            return Err(ChaosConfigError::ZeroLatency);
        }
        Ok(())
    }
}

impl Default for ChaosConfig {
    fn default() -> Self {
        ChaosConfig::NONE
    }
}

/// Why a chaos config was refused.
///
/// ```
/// use resilix::chaos::{Chaos, ChaosConfig, ChaosConfigError};
/// use resilix::Verdict;
///
/// let twice = ChaosConfig::NONE.with_fault(2_000_000, Verdict::Transient);
/// assert_eq!(Chaos::new(twice).err(), Some(ChaosConfigError::RateAboveOne));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ChaosConfigError {
    /// A rate above one million per million.
    RateAboveOne,
    /// A fault or substituted outcome of `Rejected`.
    RejectedVerdict,
    /// Latency injected at a rate above zero, but for zero time.
    ZeroLatency,
}

impl fmt::Display for ChaosConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChaosConfigError::RateAboveOne => {
                "an injection rate must be at most 1,000,000 per million (every attempt)"
            }
            ChaosConfigError::RejectedVerdict => {
                "chaos cannot inject Rejected: that verdict means one of our own policies \
                 refused the call; inject the upstream's failure (Transient, Overload, \
                 Timeout, ...) and let the policies refuse"
            }
            ChaosConfigError::ZeroLatency => {
                "latency_ppm is above zero but latency is zero: set how long to wait, or a \
                 rate of 0"
            }
        })
    }
}

impl core::error::Error for ChaosConfigError {}
