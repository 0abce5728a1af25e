//! The inbound admission's configuration and its validation.

use core::fmt;
use core::time::Duration;

use super::capacity::CapacityConfig;
use super::codel::CodelConfig;
use crate::limiter::{LimiterConfig, LimiterConfigError, MAX_LIMIT, MAX_WINDOW};

/// The largest queue an inbound admission accepts (2^20 waiting requests).
pub const MAX_QUEUE: u32 = 1 << 20;
/// The longest CoDel interval accepted: an hour (a standing queue of an hour is an outage).
pub const MAX_INTERVAL: Duration = Duration::from_secs(3_600);

/// Everything an [`Inbound`](super::Inbound) is built from. Start from
/// [`InboundConfig::adaptive`] or [`InboundConfig::fixed`] and change fields.
///
/// ```
/// use resilix::inbound::{Inbound, InboundConfig};
/// let config = InboundConfig { queue: 50, ..InboundConfig::fixed(8) };
/// assert!(Inbound::new(config).is_ok());
/// let bad = InboundConfig { reserved: 1.0, ..InboundConfig::fixed(8) };
/// assert_eq!(
///     Inbound::new(bad).unwrap_err().to_string(),
///     "reserved must be in [0, 1): a share of the limit kept for critical traffic"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InboundConfig {
    /// The concurrency limit's ceiling and in-flight count: a fixed limit
    /// ([`InboundConfig::fixed`]), or any of the limiter's algorithms.
    pub limiter: LimiterConfig,
    /// The adaptive inbound limit ([`CapacityRule`](super::CapacityRule)), under the
    /// limiter's limit; `None` for the limiter's limit alone. Default
    /// [`CapacityConfig::DEFAULT`] in [`InboundConfig::adaptive`], `None` in
    /// [`InboundConfig::fixed`].
    pub capacity: Option<CapacityConfig>,
    /// How many requests may wait for a slot. Default 100 (Netflix `LifoBlockingLimiter`'s
    /// backlog). 0: no queue, a request either runs at once or is shed.
    pub queue: u32,
    /// The share of the limit and of the queue kept for more critical traffic under load, in
    /// `[0, 1)`: SHEDDABLE requests fill at most `1 − reserved` of each, CRITICAL_PLUS all
    /// (see [`Priority::share_of`](super::Priority::share_of)). Default 0.2 (Stripe's fleet
    /// shedder keeps 20 % for critical requests).
    pub reserved: f32,
    /// CoDel's target and interval, which are also Fail at Scale's M and N: a queue that has
    /// not been empty for `interval` is standing, and then a request may wait at most
    /// `target` and the newest is served first; otherwise a request may wait `interval`.
    /// Default 5 ms / 100 ms (RFC 8289, Fail at Scale).
    pub codel: CodelConfig,
    /// The wait a shed request is told (`Retry-After`). Default 1 s (ours: `Retry-After`
    /// counts whole seconds, and a second is ten CoDel intervals, long enough for a standing
    /// queue to drain or for the limit to have moved).
    pub retry_after: Duration,
}

impl InboundConfig {
    /// The adaptive limit: the inbound capacity rule ([`CapacityConfig::DEFAULT`]: from 20,
    /// between 1 and 4,096) under a fixed ceiling of 4,096, and the defaults above. (Until
    /// issue 36 this was Netflix Gradient2 on the handler's latency, whose limit stayed at 20
    /// or above for a handler of 2: Gradient2 compares with its own long-term latency, which
    /// rises with the queue it lets in.)
    pub const fn adaptive() -> InboundConfig {
        let capacity = CapacityConfig::DEFAULT;
        InboundConfig {
            capacity: Some(capacity),
            ..InboundConfig::fixed(capacity.max)
        }
    }

    /// A fixed limit of `limit` concurrent requests (the limiter never moves it), with the
    /// defaults above.
    pub const fn fixed(limit: u32) -> InboundConfig {
        InboundConfig {
            limiter: LimiterConfig {
                initial_limit: limit,
                min_limit: limit,
                max_limit: limit,
                probe_multiplier: 0,
                ..LimiterConfig::gradient2()
            },
            capacity: None,
            queue: 100,
            reserved: 0.2,
            codel: CodelConfig::RFC_8289,
            retry_after: Duration::from_secs(1),
        }
    }
}

impl Default for InboundConfig {
    fn default() -> Self {
        InboundConfig::adaptive()
    }
}

/// Why an [`InboundConfig`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum InboundConfigError {
    /// The limiter's config was refused.
    Limiter(LimiterConfigError),
    /// `queue` above [`MAX_QUEUE`].
    QueueTooLarge,
    /// `reserved` outside `[0, 1)` (or NaN).
    ReservedOutOfRange,
    /// `codel.target` was zero: every wait would be too long.
    TargetZero,
    /// `codel.interval` not above `codel.target`, or above [`MAX_INTERVAL`].
    IntervalOutOfRange,
    /// The capacity's limits not `1 ≤ min ≤ initial ≤ max ≤` [`MAX_LIMIT`].
    CapacityLimits,
    /// The capacity's windows not `0 < min_window ≤ max_window ≤` [`MAX_WINDOW`], or
    /// `window_samples` zero.
    CapacityWindow,
}

impl fmt::Display for InboundConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Limiter(e) => write!(f, "limiter: {e}"),
            Self::QueueTooLarge => write!(f, "queue must be at most {MAX_QUEUE}"),
            Self::ReservedOutOfRange => f.write_str(
                "reserved must be in [0, 1): a share of the limit kept for critical traffic",
            ),
            Self::TargetZero => f.write_str("codel.target must be above zero"),
            Self::IntervalOutOfRange => {
                f.write_str("codel.interval must be above codel.target and at most 1 hour")
            }
            Self::CapacityLimits => write!(
                f,
                "capacity limits must satisfy 1 <= min <= initial <= max <= {MAX_LIMIT}"
            ),
            Self::CapacityWindow => f.write_str(
                "capacity windows must satisfy 0 < min_window <= max_window <= 1 hour, \
                 with window_samples above zero",
            ),
        }
    }
}

impl core::error::Error for InboundConfigError {}

/// Checks everything but the limiter (which checks itself); answers `reserved` in millionths.
pub(crate) const fn check(c: &InboundConfig) -> Result<u32, InboundConfigError> {
    if c.queue > MAX_QUEUE {
        return Err(InboundConfigError::QueueTooLarge);
    }
    // Written so NaN fails the comparison and is refused.
    if !(c.reserved >= 0.0 && c.reserved < 1.0) {
        return Err(InboundConfigError::ReservedOutOfRange);
    }
    if c.codel.target.is_zero() {
        return Err(InboundConfigError::TargetZero);
    }
    let (target, interval) = (c.codel.target.as_nanos(), c.codel.interval.as_nanos());
    if interval <= target || interval > MAX_INTERVAL.as_nanos() {
        return Err(InboundConfigError::IntervalOutOfRange);
    }
    if let Some(k) = &c.capacity {
        if k.min == 0 || k.min > k.initial || k.initial > k.max || k.max > MAX_LIMIT {
            return Err(InboundConfigError::CapacityLimits);
        }
        let (lo, hi) = (k.min_window.as_nanos(), k.max_window.as_nanos());
        if lo == 0 || lo > hi || hi > MAX_WINDOW.as_nanos() || k.window_samples == 0 {
            return Err(InboundConfigError::CapacityWindow);
        }
    }
    let reserved = (c.reserved * 1_000_000.0 + 0.5) as u32;
    // A share just below 1 rounds to a million: keep it a share, never the whole.
    Ok(if reserved > 999_999 {
        999_999
    } else {
        reserved
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn every_invalid_field_is_refused_with_its_own_error() {
        let ok = InboundConfig::fixed(4);
        assert_eq!(check(&ok), Ok(200_000));
        let cases = [
            (
                InboundConfig {
                    queue: MAX_QUEUE + 1,
                    ..ok
                },
                InboundConfigError::QueueTooLarge,
            ),
            (
                InboundConfig {
                    reserved: -0.1,
                    ..ok
                },
                InboundConfigError::ReservedOutOfRange,
            ),
            (
                InboundConfig {
                    reserved: f32::NAN,
                    ..ok
                },
                InboundConfigError::ReservedOutOfRange,
            ),
            (
                InboundConfig {
                    reserved: 1.0,
                    ..ok
                },
                InboundConfigError::ReservedOutOfRange,
            ),
            (
                InboundConfig {
                    codel: CodelConfig {
                        target: Duration::ZERO,
                        ..ok.codel
                    },
                    ..ok
                },
                InboundConfigError::TargetZero,
            ),
            (
                InboundConfig {
                    codel: CodelConfig {
                        interval: Duration::from_millis(5),
                        ..ok.codel
                    },
                    ..ok
                },
                InboundConfigError::IntervalOutOfRange,
            ),
            (
                InboundConfig {
                    codel: CodelConfig {
                        interval: MAX_INTERVAL + Duration::from_nanos(1),
                        ..ok.codel
                    },
                    ..ok
                },
                InboundConfigError::IntervalOutOfRange,
            ),
        ];
        let k = CapacityConfig::DEFAULT;
        let with = |capacity| InboundConfig {
            capacity: Some(capacity),
            ..ok
        };
        let cases = cases.into_iter().chain([
            (
                with(CapacityConfig { min: 0, ..k }),
                InboundConfigError::CapacityLimits,
            ),
            (
                with(CapacityConfig { min: 21, ..k }),
                InboundConfigError::CapacityLimits,
            ),
            (
                with(CapacityConfig {
                    initial: 5_000,
                    ..k
                }),
                InboundConfigError::CapacityLimits,
            ),
            (
                with(CapacityConfig {
                    max: MAX_LIMIT + 1,
                    initial: 20,
                    ..k
                }),
                InboundConfigError::CapacityLimits,
            ),
            (
                with(CapacityConfig {
                    min_window: Duration::ZERO,
                    ..k
                }),
                InboundConfigError::CapacityWindow,
            ),
            (
                with(CapacityConfig {
                    min_window: Duration::from_secs(11),
                    ..k
                }),
                InboundConfigError::CapacityWindow,
            ),
            (
                with(CapacityConfig {
                    max_window: MAX_WINDOW + Duration::from_nanos(1),
                    ..k
                }),
                InboundConfigError::CapacityWindow,
            ),
            (
                with(CapacityConfig {
                    window_samples: 0,
                    ..k
                }),
                InboundConfigError::CapacityWindow,
            ),
        ]);
        assert_eq!(check(&InboundConfig::adaptive()), Ok(200_000));
        assert_eq!(
            check(&with(CapacityConfig {
                min: 20,
                max: 20,
                ..k
            })),
            Ok(200_000)
        );
        for (config, error) in cases {
            assert_eq!(check(&config), Err(error));
            assert!(!error.to_string().is_empty());
        }
        assert_eq!(
            check(&InboundConfig {
                reserved: 0.999_999_9,
                ..ok
            }),
            Ok(999_999)
        );
        assert_eq!(
            check(&InboundConfig {
                queue: 0,
                reserved: 0.0,
                ..ok
            }),
            Ok(0)
        );
    }
}
