use core::fmt;
use core::time::Duration;

use super::formula::{Formula, MILLION};

/// Whether the throttler's own refusals count as requests in its window.
///
/// The SRE book counts them ("requests attempted by the application layer, on top of the
/// adaptive throttling system"); failsafe-go does not. The choice sets the equilibrium under
/// overload (derived in the [module docs](crate::throttler)): counting them holds the traffic
/// that reaches an overloaded upstream near K × what it accepts; not counting them lets that
/// traffic grow with the square root of the offered load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LocalRejections {
    /// Count them as requests, never as accepts (Google SRE; the default).
    #[default]
    CountAsRequests,
    /// Leave them out: only calls that reached the upstream and settled count (failsafe-go).
    Ignore,
}

/// How a [`Throttler`](super::Throttler) sheds. Plain fields; every default cites its source.
///
/// ```
/// use core::time::Duration;
/// use resilix::throttler::{LocalRejections, ThrottlerConfig};
///
/// let aggressive = ThrottlerConfig {
///     accepts_multiplier: 1.1, // the SRE book's "more aggressive" alternative
///     ..ThrottlerConfig::DEFAULT
/// };
/// assert_eq!(aggressive.window, Duration::from_secs(120));
/// assert_eq!(aggressive.local_rejections, LocalRejections::CountAsRequests);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThrottlerConfig {
    /// K: the client keeps sending until requests reach K × accepts, then sheds the excess.
    /// Default 2.0 (Google SRE: "We generally prefer the 2x multiplier"). Must be at least
    /// 1.0: below that the throttler would shed traffic from a perfectly healthy upstream.
    /// Stored to a millionth. A K of 2^32 or more (up to infinity) has one meaning, since the
    /// window holds fewer requests than that: shed only while the upstream accepted nothing
    /// at all in the window.
    pub accepts_multiplier: f64,
    /// The highest rejection probability. Default 0.9 (failsafe-go). Must be below 1.0: at
    /// 1.0 the throttler stops sending entirely, never observes recovery, and never reopens.
    /// Stored to a millionth. 0.0 means a throttler that counts and reports
    /// [`rejection_probability`](super::Throttler::rejection_probability) but never sheds (a
    /// dry run).
    pub max_rejection_rate: f64,
    /// How far back requests and accepts are counted. Default two minutes (Google SRE).
    /// Counted in the throttler's `BUCKETS` buckets of `window / BUCKETS` (rounded up to a
    /// nanosecond), so the counts cover between `BUCKETS − 1` and `BUCKETS` bucket lengths.
    /// Must be at least `BUCKETS × 8 ns` (the shortest bucket), so that it is never lengthened.
    pub window: Duration,
    /// Below this many requests in the window nothing is shed (docs/design/spec.md §9's low-traffic hole:
    /// two minutes at 8 requests a minute is 16 samples). Default 10 (ours): a client that
    /// sends fewer than ten requests in two minutes is no load worth shedding, and three
    /// failures in a row must not cut it to a quarter of its traffic. 0 is the SRE book's
    /// formula unguarded.
    ///
    /// Must be reachable: at most one request per 10 ns of `window` (100 million requests a
    /// second, more than one shared counter can count: each request is an atomic add on the
    /// window's current bucket) and below `u32::MAX`, where the counts saturate. A larger
    /// value would mean a throttler that never sheds ([`ThrottlerConfigError::MinRequestsUnreachable`]);
    /// to observe without shedding, set `max_rejection_rate` to 0.0 instead.
    pub min_requests: u32,
    /// Whether the throttler's own refusals count as requests. Default
    /// [`LocalRejections::CountAsRequests`] (Google SRE).
    pub local_rejections: LocalRejections,
}

impl ThrottlerConfig {
    /// K = 2 (SRE), cap 0.9 (failsafe-go), two minutes (SRE), at least 10 requests (ours),
    /// local refusals counted (SRE).
    pub const DEFAULT: ThrottlerConfig = ThrottlerConfig {
        accepts_multiplier: 2.0,
        max_rejection_rate: 0.9,
        window: Duration::from_secs(120),
        min_requests: 10,
        local_rejections: LocalRejections::CountAsRequests,
    };

    /// Checks the config and turns it into the formula's integer parameters.
    pub(crate) const fn formula(&self) -> Result<Formula, ThrottlerConfigError> {
        let k = self.accepts_multiplier;
        // Infinity is a valid K (see the field's docs); NaN is not a number of at least 1.
        if k.is_nan() || k < 1.0 {
            return Err(ThrottlerConfigError::AcceptsMultiplierBelowOne);
        }
        let cap = self.max_rejection_rate;
        if !cap.is_finite() || cap < 0.0 {
            return Err(ThrottlerConfigError::MaxRejectionRateNegative);
        }
        // `as` saturates: an enormous K simply never sheds.
        let k_millionths = (k * MILLION as f64 + 0.5) as u64;
        let max_rejection_millionths = (cap * MILLION as f64 + 0.5) as u64;
        if max_rejection_millionths >= MILLION {
            return Err(ThrottlerConfigError::MaxRejectionRateAtLeastOne);
        }
        if self.window.is_zero() {
            return Err(ThrottlerConfigError::ZeroWindow);
        }
        if self.min_requests > max_min_requests(self.window) {
            return Err(ThrottlerConfigError::MinRequestsUnreachable);
        }
        Ok(Formula {
            k_millionths,
            max_rejection_millionths,
            min_requests: self.min_requests,
        })
    }
}

/// The fastest a throttler's window can count requests: one per 10 ns (ours: each request
/// is an atomic add on the shared current bucket, which no machine sustains faster).
pub(crate) const NANOS_PER_COUNTED_REQUEST: u64 = 10;

/// The largest `min_requests` a window of `window` can reach: one request per 10 ns of it,
/// and below `u32::MAX`, where the counts saturate.
pub(crate) const fn max_min_requests(window: Duration) -> u32 {
    let per_window = crate::time::duration_as_nanos_saturating(window) / NANOS_PER_COUNTED_REQUEST;
    let ceiling = (u32::MAX - 1) as u64;
    if per_window < ceiling {
        per_window as u32
    } else {
        u32::MAX - 1
    }
}

impl Default for ThrottlerConfig {
    fn default() -> Self {
        ThrottlerConfig::DEFAULT
    }
}

/// Why a [`ThrottlerConfig`] was refused.
///
/// ```
/// use resilix::throttler::{Throttler, ThrottlerConfig, ThrottlerConfigError};
///
/// let config = ThrottlerConfig { max_rejection_rate: 1.0, ..ThrottlerConfig::DEFAULT };
/// let err = Throttler::new(config).unwrap_err();
/// assert_eq!(err, ThrottlerConfigError::MaxRejectionRateAtLeastOne);
/// assert!(format!("{err}").contains("never observe recovery"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ThrottlerConfigError {
    /// `accepts_multiplier` is below 1.0 or not a number.
    AcceptsMultiplierBelowOne,
    /// `max_rejection_rate` is 1.0 or more (after rounding to a millionth).
    MaxRejectionRateAtLeastOne,
    /// `max_rejection_rate` is negative or not a number.
    MaxRejectionRateNegative,
    /// `window` is zero.
    ZeroWindow,
    /// The throttler's bucket count is zero.
    ZeroBuckets,
    /// `min_requests` is more than the window can ever hold (more than one request per 10 ns
    /// of window, or `u32::MAX`): the throttler would never shed.
    MinRequestsUnreachable,
    /// `window` is shorter than `BUCKETS × 8 ns`: its buckets would be shorter than the
    /// shortest a window keeps, and the window would silently be longer than configured.
    WindowShorterThanBuckets,
}

impl fmt::Display for ThrottlerConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ThrottlerConfigError::AcceptsMultiplierBelowOne => {
                "accepts_multiplier (K) must be a number of at least 1.0: below that the \
                 throttler sheds traffic from a healthy upstream (SRE uses 2.0)"
            }
            ThrottlerConfigError::MaxRejectionRateAtLeastOne => {
                "max_rejection_rate must be below 1.0: at 1.0 the throttler stops sending, \
                 would never observe recovery and could never reopen (failsafe-go uses 0.9)"
            }
            ThrottlerConfigError::MaxRejectionRateNegative => {
                "max_rejection_rate must be a number between 0.0 and 1.0 (exclusive)"
            }
            ThrottlerConfigError::ZeroWindow => {
                "window must be longer than zero (SRE uses two minutes)"
            }
            ThrottlerConfigError::ZeroBuckets => {
                "the throttler needs at least one time bucket (the default is 20)"
            }
            ThrottlerConfigError::MinRequestsUnreachable => {
                "min_requests must be reachable within the window: at most one request per \
                 10 ns of window and below u32::MAX; a larger value never sheds (to observe \
                 without shedding, set max_rejection_rate to 0.0)"
            }
            ThrottlerConfigError::WindowShorterThanBuckets => {
                "window must be at least 8 ns per bucket (BUCKETS x 8 ns), the shortest bucket \
                 a window keeps"
            }
        })
    }
}

impl core::error::Error for ThrottlerConfigError {}
