//! Timeout advice: the attempt timeout the latency an upstream has shown suggests.
//!
//! The essay's (docs/design/essay.md) rule: "a timeout at the 99th percentile plus a margin cuts off the
//! pathological tail without failing the merely slow. Setting it at the mean fails a fifth of
//! good requests; setting it at ten times the p99 means it never fires and you have written a
//! comment rather than a control." [`TimeoutAdvice::suggest`] reads that number off the
//! [`DurationHistogram`] an upstream's observer keeps (settled attempts only, so our own
//! refusals never pull it down), and [`TimeoutAdvice::assess`] says which of the three a
//! configured timeout is.
//!
//! Attempts that timed out are in the histogram at about the timeout itself (the duration is
//! cut there). So when more than `1 − quantile` of the attempts time out, the quantile *is*
//! the timeout and the advice lands above it: [`TimeoutFit::Binding`], the timeout is cutting
//! more than the tail. During an incident that is the upstream getting slower, and the essay's (docs/design/essay.md)
//! warning applies: raising the timeout then makes things worse. Read the advice over a calm
//! period (sample, then [`DurationHistogram::reset`], per period, for a recent window).
//!
//! ```
//! use core::time::Duration;
//! use resilix::observe::{DurationHistogram, TimeoutAdvice, TimeoutFit};
//!
//! let latency = DurationHistogram::new();
//! for ms in 1..=1000 {
//!     latency.record(Duration::from_micros(ms * 100)); // 0.1 ms to 100 ms, evenly
//! }
//! let advice = TimeoutAdvice::DEFAULT; // p99 + 25 %, from 100 samples
//! let suggested = advice.suggest(&latency).unwrap();
//! assert!(suggested > Duration::from_millis(115) && suggested < Duration::from_millis(132));
//! assert_eq!(advice.assess(Duration::from_secs(2), suggested), TimeoutFit::Comment);
//! assert_eq!(advice.assess(Duration::from_millis(150), suggested), TimeoutFit::Control);
//! assert_eq!(advice.assess(Duration::from_millis(50), suggested), TimeoutFit::Binding);
//! ```

use core::fmt;
use core::time::Duration;

use super::histogram::DurationHistogram;

/// How the suggested timeout is read from a latency histogram. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeoutAdvice {
    quantile: f64,
    margin_percent: u32,
    min_samples: u64,
}

/// Why a [`TimeoutAdvice`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AdviceError {
    /// The quantile must be above 0 and at most 1 (0.99 is the p99; 99 is not).
    QuantileOutOfRange,
    /// At least one sample is needed to read a quantile.
    NoSamples,
}

impl fmt::Display for AdviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AdviceError::QuantileOutOfRange => {
                "timeout advice: the quantile must be in (0, 1] (0.99 for the p99, not 99)"
            }
            AdviceError::NoSamples => "timeout advice: min_samples must be at least 1",
        })
    }
}

impl core::error::Error for AdviceError {}

/// What a configured timeout is, against the advice (the essay's (docs/design/essay.md) three cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TimeoutFit {
    /// Below the advice: it cuts more than the tail (or the upstream is slower than it was).
    Binding,
    /// From the advice to [`COMMENT_FACTOR`] times it: a control.
    Control,
    /// More than [`COMMENT_FACTOR`] times the advice: it never fires, "a comment rather than
    /// a control".
    Comment,
}

/// A timeout more than this many times the advice is a comment. Ours: the essay (docs/design/essay.md) names ten
/// times the p99; the advice already holds a 25 % margin, so four times it is five times the
/// p99, halfway there on a log scale.
pub const COMMENT_FACTOR: u32 = 4;

impl TimeoutAdvice {
    /// The p99 plus 25 %, once 100 attempts are in the histogram. The quantile is the essay's (docs/design/essay.md);
    /// the margin is ours: four times the default histogram's 6.25 % readout error, so the
    /// advice is never below the true p99 plus a sixth; 100 samples is the fewest for which
    /// the nearest rank of 0.99 is not the maximum.
    pub const DEFAULT: TimeoutAdvice = TimeoutAdvice {
        quantile: 0.99,
        margin_percent: 25,
        min_samples: 100,
    };

    /// Advice at `quantile` (in (0, 1]; the AWS Builders' Library picks p99.9 for a 0.1 %
    /// false-timeout rate) plus `margin_percent` of it, once `min_samples` attempts are in.
    ///
    /// ```
    /// use resilix::observe::{AdviceError, TimeoutAdvice};
    ///
    /// assert!(TimeoutAdvice::new(0.999, 10, 1000).is_ok());
    /// assert_eq!(TimeoutAdvice::new(99.0, 10, 1000), Err(AdviceError::QuantileOutOfRange));
    /// assert_eq!(TimeoutAdvice::new(0.99, 10, 0), Err(AdviceError::NoSamples));
    /// ```
    pub fn new(
        quantile: f64,
        margin_percent: u32,
        min_samples: u64,
    ) -> Result<TimeoutAdvice, AdviceError> {
        if !(quantile > 0.0 && quantile <= 1.0) {
            return Err(AdviceError::QuantileOutOfRange);
        }
        if min_samples == 0 {
            return Err(AdviceError::NoSamples);
        }
        Ok(TimeoutAdvice {
            quantile,
            margin_percent,
            min_samples,
        })
    }

    /// The suggested attempt timeout: the quantile of `latency` plus the margin (saturating),
    /// or `None` while fewer than `min_samples` attempts are in it.
    pub fn suggest<const P: u32, const B: usize>(
        &self,
        latency: &DurationHistogram<P, B>,
    ) -> Option<Duration> {
        if latency.count() < self.min_samples {
            return None;
        }
        let q = latency.quantile(self.quantile)?;
        let nanos = q.as_nanos() * (100 + u128::from(self.margin_percent)) / 100;
        Some(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }

    /// Which of the essay's (docs/design/essay.md) three a `configured` timeout is, against `suggested` (from
    /// [`Self::suggest`]).
    pub fn assess(&self, configured: Duration, suggested: Duration) -> TimeoutFit {
        if configured < suggested {
            TimeoutFit::Binding
        } else if configured > suggested.saturating_mul(COMMENT_FACTOR) {
            TimeoutFit::Comment
        } else {
            TimeoutFit::Control
        }
    }
}

impl Default for TimeoutAdvice {
    fn default() -> Self {
        TimeoutAdvice::DEFAULT
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn no_advice_below_the_minimum_then_the_quantile_plus_the_margin() {
        let h = DurationHistogram::new();
        let advice = TimeoutAdvice::new(0.5, 100, 3).unwrap();
        h.record(10 * MS);
        h.record(10 * MS);
        assert_eq!(advice.suggest(&h), None, "two of three samples");
        h.record(10 * MS);
        // One value: the quantile is exact (the min and max), doubled by a 100 % margin.
        assert_eq!(advice.suggest(&h), Some(20 * MS));
    }

    #[test]
    fn a_timeout_cutting_the_tail_reads_as_binding() {
        // 97 fast attempts and 3 cut at a 50 ms timeout: the p99 is the timeout.
        let h = DurationHistogram::new();
        for _ in 0..97 {
            h.record(5 * MS);
        }
        for _ in 0..3 {
            h.record(50 * MS);
        }
        let advice = TimeoutAdvice::DEFAULT;
        let suggested = advice.suggest(&h).unwrap();
        // 50 ms plus 25 %, within the histogram's 6.25 % readout error.
        assert!(
            suggested.abs_diff(Duration::from_micros(62_500)) <= Duration::from_micros(62_500) / 16
        );
        assert_eq!(advice.assess(50 * MS, suggested), TimeoutFit::Binding);
    }

    #[test]
    fn the_margin_saturates_and_the_bounds_of_the_fit_are_inclusive() {
        let h = DurationHistogram::new();
        h.record(Duration::MAX);
        let advice = TimeoutAdvice::new(1.0, u32::MAX, 1).unwrap();
        assert_eq!(
            advice.suggest(&h),
            Some(Duration::from_nanos(u64::MAX)),
            "saturates"
        );
        let s = 100 * MS;
        assert_eq!(advice.assess(s, s), TimeoutFit::Control);
        assert_eq!(advice.assess(4 * s, s), TimeoutFit::Control);
        assert_eq!(advice.assess(4 * s + MS, s), TimeoutFit::Comment);
        assert_eq!(advice.assess(s - MS, s), TimeoutFit::Binding);
    }

    #[test]
    fn refused_configs() {
        for q in [0.0, -0.1, 1.01, f64::NAN, f64::INFINITY] {
            assert_eq!(
                TimeoutAdvice::new(q, 0, 1),
                Err(AdviceError::QuantileOutOfRange),
                "{q}"
            );
        }
        assert!(AdviceError::NoSamples.to_string().contains("min_samples"));
    }
}
