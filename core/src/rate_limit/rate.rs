use core::fmt;
use core::time::Duration;

/// A rate with its unit spelled out: `count` cells per `per`.
///
/// `Rate::per_second(50)` is fifty a second, never one every fifty seconds (the confusion that
/// turned a 4 000 req/s limit into one request an hour under another crate's `per_second`).
///
/// ```
/// use core::time::Duration;
/// use resilix::rate_limit::Rate;
///
/// assert_eq!(Rate::per_second(50), Rate::new(50, Duration::from_secs(1)));
/// assert_eq!(Rate::per_minute(6).emission_interval(), Duration::from_secs(10));
/// assert_eq!(Rate::one_every(Duration::from_millis(250)), Rate::per_second(4).per_cell());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rate {
    count: u32,
    per: Duration,
}

impl Rate {
    /// `count` cells every `per`.
    pub const fn new(count: u32, per: Duration) -> Self {
        Rate { count, per }
    }

    /// `count` cells a second.
    pub const fn per_second(count: u32) -> Self {
        Rate::new(count, Duration::from_secs(1))
    }

    /// `count` cells a minute.
    pub const fn per_minute(count: u32) -> Self {
        Rate::new(count, Duration::from_secs(60))
    }

    /// `count` cells an hour.
    pub const fn per_hour(count: u32) -> Self {
        Rate::new(count, Duration::from_secs(3_600))
    }

    /// One cell every `interval`.
    pub const fn one_every(interval: Duration) -> Self {
        Rate::new(1, interval)
    }

    /// How many cells per period.
    pub const fn count(self) -> u32 {
        self.count
    }

    /// The period.
    pub const fn period(self) -> Duration {
        self.per
    }

    /// The same rate written as one cell per emission interval.
    pub const fn per_cell(self) -> Self {
        Rate::one_every(self.emission_interval())
    }

    /// The time one cell is worth: `per / count` (zero if `count` is zero).
    pub const fn emission_interval(self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        match self.per.checked_div(self.count) {
            Some(d) => d,
            None => Duration::ZERO,
        }
    }
}

/// A rate and a burst: the limiter admits at most `burst + rate × elapsed` cells in any span.
///
/// ```
/// use resilix::rate_limit::{Rate, RateLimitConfig};
///
/// let c = RateLimitConfig::new(Rate::per_second(100));
/// assert_eq!(c.burst, 100, "one period's worth, as governor's Quota");
/// let smooth = RateLimitConfig::new(Rate::per_second(100)).with_burst(1);
/// assert_eq!(smooth.burst, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RateLimitConfig {
    /// The sustained rate.
    pub rate: Rate,
    /// How many cells a full bucket admits at once. Default: one period's worth,
    /// `rate.count()` (governor's `Quota`). At least 1.
    pub burst: u32,
}

impl RateLimitConfig {
    /// `rate`, with a burst of one period's worth (governor's default).
    pub const fn new(rate: Rate) -> Self {
        RateLimitConfig {
            rate,
            burst: rate.count,
        }
    }

    /// The same rate with another burst.
    pub const fn with_burst(mut self, burst: u32) -> Self {
        self.burst = burst;
        self
    }
}

/// Why a [`RateLimitConfig`] was refused.
///
/// ```
/// use resilix::rate_limit::{Rate, RateLimitConfig, RateLimitConfigError, RateLimiter};
///
/// let err = RateLimiter::new(RateLimitConfig::new(Rate::per_second(0))).unwrap_err();
/// assert_eq!(err, RateLimitConfigError::ZeroRate);
/// assert!(format!("{err}").contains("admits nothing"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RateLimitConfigError {
    /// The rate's count is zero.
    ZeroRate,
    /// The rate's period is zero.
    ZeroPeriod,
    /// The burst is zero.
    ZeroBurst,
    /// A rate and burst that the 32-bit state cannot hold to within 0.1% (1% for intervals
    /// below 16 µs, on its finest ticks of 8 ns). The supported range: every emission
    /// interval (`period / count`) of 1.6 µs or more (up to 600,000 cells a second), to 0.1%
    /// from 16.4 µs (every rate up to 61,000 a second) and to 1% below; shorter intervals down
    /// to 0.8 µs (1,250,000 a second) only where they fall close enough to 8 ns ticks (a
    /// million a second does); and `burst × interval` within 2^30 ticks of the scale that
    /// holds the interval that closely: a burst of at least 260,000 cells at 0.1% (up to
    /// 560,000, depending on how the interval falls on the ticks), about 8.5 million at a
    /// million a second (1%).
    RateBeyondResolution,
    /// The burst is 2^30 cells or more: the 31-bit state word cannot count it. (Bursts above
    /// about 260,000 cells may already be refused as
    /// [`RateBeyondResolution`](Self::RateBeyondResolution).)
    BurstTooLarge,
    /// A [`KeyedRateLimiter`](super::KeyedRateLimiter) with capacity 0: every key would share
    /// the one overflow bucket, which is a plain [`RateLimiter`](super::RateLimiter).
    ZeroCapacity,
}

impl fmt::Display for RateLimitConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RateLimitConfigError::ZeroRate => {
                "the rate's count is zero: a limiter that admits nothing; remove it instead"
            }
            RateLimitConfigError::ZeroPeriod => {
                "the rate's period is zero: an infinite rate; remove the limiter instead"
            }
            RateLimitConfigError::ZeroBurst => {
                "the burst is zero: no call could ever be admitted; the smallest burst is 1"
            }
            RateLimitConfigError::RateBeyondResolution => {
                "this rate and burst cannot be held to within 0.1% (1% below 16 µs per cell) by \
                 the 32-bit state: supported are intervals (period / count) of 1.6 µs or more, \
                 up to 600,000 cells a second (to 0.1% up to 61,000 a second; some rates up to \
                 1,250,000 a second, such as a million), with a burst of at least 260,000 cells \
                 at 0.1% (about 8.5 million at a million a second, to 1%); lower the rate or \
                 the burst"
            }
            RateLimitConfigError::BurstTooLarge => {
                "the burst must be below 2^30 cells, the most the 32-bit state can count (and \
                 below about 260,000 cells to be held to 0.1% at every rate)"
            }
            RateLimitConfigError::ZeroCapacity => {
                "a keyed rate limiter with capacity 0 would make every key share one bucket: \
                 give it at least one entry, or use a plain RateLimiter for one shared bucket"
            }
        })
    }
}

impl core::error::Error for RateLimitConfigError {}
