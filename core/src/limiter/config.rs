//! The limiter's configuration, its validation, and its compilation to fixed point.

use core::fmt;
use core::time::Duration;

use super::aimd::{Aimd, AimdRule};
use super::fixed::{CALL, Rtt, UNIT, ratio_from_f32};
use super::gradient2::{Gradient2, Gradient2Rule};
use super::sample::{Baseline, WindowSummary};
use super::vegas::{Vegas, VegasRule};

/// The largest limit a limiter accepts (2^20 calls), so a limit fits Q24.8 with room to spare.
pub const MAX_LIMIT: u32 = 1 << 20;
/// The longest window a limiter accepts.
pub const MAX_WINDOW: Duration = Duration::from_secs(3_600);

/// Which algorithm moves the limit.
///
/// ```
/// use resilix::limiter::{Algorithm, Vegas};
/// let a = Algorithm::Vegas(Vegas::DEFAULT);
/// assert!(matches!(a, Algorithm::Vegas(_)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Algorithm {
    /// Netflix Gradient2: the default.
    Gradient2(Gradient2),
    /// Netflix Vegas.
    Vegas(Vegas),
    /// Additive increase, multiplicative decrease; recommended for clients by Netflix.
    Aimd(Aimd),
}

/// Everything a [`Limiter`](super::Limiter) is built from. Start from [`LimiterConfig::gradient2`],
/// [`LimiterConfig::vegas`] or [`LimiterConfig::aimd`], which carry that algorithm's published
/// limits, and change fields.
///
/// ```
/// use resilix::limiter::{Limiter, LimiterConfig};
/// let config = LimiterConfig { min_limit: 1, queue_factor: 2.0, ..LimiterConfig::gradient2() };
/// assert!(Limiter::new(config).is_ok());
/// let bad = LimiterConfig { min_limit: 0, ..LimiterConfig::gradient2() };
/// assert_eq!(Limiter::new(bad).unwrap_err().to_string(), "min_limit must be at least 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LimiterConfig {
    /// The algorithm and its parameters.
    pub algorithm: Algorithm,
    /// The limit before any window has closed.
    pub initial_limit: u32,
    /// The limit never falls below this (at least 1, so a call can always probe).
    pub min_limit: u32,
    /// The limit never rises above this (at most [`MAX_LIMIT`]).
    pub max_limit: u32,
    /// Shortest window. Default 1 s (Netflix `WindowedLimit`).
    pub min_window: Duration,
    /// Longest window. Default 1 s (Netflix `WindowedLimit`).
    pub max_window: Duration,
    /// Outcomes a window needs before it closes. Default 10 (Netflix `WindowedLimit`).
    pub window_samples: u32,
    /// Latencies below this are discarded. Default 100 µs (Netflix `WindowedLimit`).
    pub min_rtt: Duration,
    /// The baseline is refreshed every `U[0.5, 1) · probe_multiplier · limit` windows; 0 never
    /// refreshes it. Default 30 (Netflix Vegas `probeMultiplier`).
    pub probe_multiplier: u32,
    /// Calls beyond the limit may wait, up to `limit × queue_factor` in all; at least 1.0.
    /// Default 1.0: no queue zone (failsafe-go queues only when asked).
    pub queue_factor: f32,
    /// Rungs of the shedding ladder in the queue zone, at least 1. Default 4 (ours: sheds
    /// 0, 25, 50, 75 % as the waiting room fills).
    pub queue_rungs: u32,
}

const WINDOWED: LimiterConfig = LimiterConfig {
    algorithm: Algorithm::Gradient2(Gradient2::DEFAULT),
    initial_limit: 20,
    min_limit: 20,
    max_limit: 200,
    min_window: Duration::from_secs(1),
    max_window: Duration::from_secs(1),
    window_samples: 10,
    min_rtt: Duration::from_micros(100),
    probe_multiplier: 30,
    queue_factor: 1.0,
    queue_rungs: 4,
};

impl LimiterConfig {
    /// Gradient2 with Netflix's limits: initial 20, min 20, max 200.
    pub const fn gradient2() -> Self {
        WINDOWED
    }

    /// Vegas with Netflix's limits: initial 20, min 1, max 1000.
    pub const fn vegas() -> Self {
        LimiterConfig {
            algorithm: Algorithm::Vegas(Vegas::DEFAULT),
            min_limit: 1,
            max_limit: 1000,
            ..WINDOWED
        }
    }

    /// AIMD with Netflix's limits: initial 20, min 20, max 200.
    pub const fn aimd() -> Self {
        LimiterConfig {
            algorithm: Algorithm::Aimd(Aimd::DEFAULT),
            ..WINDOWED
        }
    }
}

impl Default for LimiterConfig {
    fn default() -> Self {
        LimiterConfig::gradient2()
    }
}

/// Why a [`LimiterConfig`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LimiterConfigError {
    /// `min_limit` was 0: the limiter could shut for good.
    MinLimitZero,
    /// Not `min_limit ≤ initial_limit ≤ max_limit`.
    LimitsOutOfOrder,
    /// `max_limit` above [`MAX_LIMIT`].
    MaxLimitTooLarge,
    /// `min_window` was zero or above `max_window`, or `max_window` above [`MAX_WINDOW`].
    BadWindow,
    /// `window_samples` was 0.
    WindowSamplesZero,
    /// A numeric parameter lay outside its range; names it and the range.
    OutOfRange {
        /// The field.
        field: &'static str,
        /// Its valid range.
        expected: &'static str,
    },
}

impl fmt::Display for LimiterConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MinLimitZero => f.write_str("min_limit must be at least 1"),
            Self::LimitsOutOfOrder => {
                f.write_str("limits must satisfy min_limit <= initial_limit <= max_limit")
            }
            Self::MaxLimitTooLarge => write!(f, "max_limit must be at most {MAX_LIMIT}"),
            Self::BadWindow => {
                f.write_str("windows must satisfy 0 < min_window <= max_window <= 1 hour")
            }
            Self::WindowSamplesZero => f.write_str("window_samples must be at least 1"),
            Self::OutOfRange { field, expected } => write!(f, "{field} must be {expected}"),
        }
    }
}

impl core::error::Error for LimiterConfigError {}

/// A config's algorithm compiled to fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    Gradient2(Gradient2Rule),
    Vegas(VegasRule),
    Aimd(AimdRule),
}

impl Rule {
    /// The same rule between other bounds (Q24.8): what a reconfiguration of the bounds
    /// changes, and all it may change of the rule.
    pub(crate) const fn with_bounds(self, min: u32, max: u32) -> Rule {
        match self {
            Rule::Gradient2(r) => Rule::Gradient2(Gradient2Rule { min, max, ..r }),
            Rule::Vegas(r) => Rule::Vegas(VegasRule { min, max, ..r }),
            Rule::Aimd(r) => Rule::Aimd(AimdRule { min, max, ..r }),
        }
    }

    /// The next limit and baseline after one window.
    pub(crate) const fn update(
        &self,
        limit: u32,
        base: Baseline,
        w: &WindowSummary,
    ) -> (u32, Baseline) {
        match self {
            Rule::Gradient2(r) => r.update(limit, base, w),
            Rule::Vegas(r) => r.update(limit, base, w),
            Rule::Aimd(r) => (r.update(limit, w), base),
        }
    }
}

const fn in_range(x: f32, lo: f32, hi: f32, lo_inclusive: bool, hi_inclusive: bool) -> bool {
    // Written so NaN fails every comparison and is refused.
    (if lo_inclusive { x >= lo } else { x > lo }) && (if hi_inclusive { x <= hi } else { x < hi })
}

const fn out(field: &'static str, expected: &'static str) -> LimiterConfigError {
    LimiterConfigError::OutOfRange { field, expected }
}

/// Checks `c` and compiles its algorithm.
pub(crate) const fn compile(c: &LimiterConfig) -> Result<Rule, LimiterConfigError> {
    if c.min_limit == 0 {
        return Err(LimiterConfigError::MinLimitZero);
    }
    if c.max_limit > MAX_LIMIT {
        return Err(LimiterConfigError::MaxLimitTooLarge);
    }
    if !(c.min_limit <= c.initial_limit && c.initial_limit <= c.max_limit) {
        return Err(LimiterConfigError::LimitsOutOfOrder);
    }
    if c.min_window.is_zero()
        || c.min_window.as_nanos() > c.max_window.as_nanos()
        || c.max_window.as_nanos() > MAX_WINDOW.as_nanos()
    {
        return Err(LimiterConfigError::BadWindow);
    }
    if c.window_samples == 0 {
        return Err(LimiterConfigError::WindowSamplesZero);
    }
    if !in_range(c.queue_factor, 1.0, 16.0, true, true) {
        return Err(out("queue_factor", "in [1.0, 16.0]"));
    }
    if c.queue_rungs == 0 || c.queue_rungs > 1_000 {
        return Err(out("queue_rungs", "in [1, 1000]"));
    }
    if c.probe_multiplier > 1_000 {
        return Err(out("probe_multiplier", "in [0, 1000]"));
    }
    let (min, max) = (c.min_limit * CALL, c.max_limit * CALL);
    Ok(match c.algorithm {
        Algorithm::Gradient2(g) => {
            if !in_range(g.smoothing, 0.0, 1.0, false, true) {
                return Err(out("gradient2.smoothing", "in (0, 1]"));
            }
            if g.queue_size > MAX_LIMIT {
                return Err(out("gradient2.queue_size", "at most MAX_LIMIT"));
            }
            if g.long_window == 0 {
                return Err(out("gradient2.long_window", "at least 1"));
            }
            if !in_range(g.rtt_tolerance, 1.0, 100.0, true, true) {
                return Err(out("gradient2.rtt_tolerance", "in [1.0, 100.0]"));
            }
            if !in_range(g.drop_backoff, 0.5, 1.0, true, true) {
                return Err(out("gradient2.drop_backoff", "in [0.5, 1.0]"));
            }
            if !in_range(g.drop_threshold, 0.0, 1.0, true, false) {
                return Err(out("gradient2.drop_threshold", "in [0, 1)"));
            }
            Rule::Gradient2(Gradient2Rule {
                min,
                max,
                smoothing: ratio_from_f32(g.smoothing),
                queue: g.queue_size * CALL,
                long_window: g.long_window,
                tolerance: ratio_from_f32(g.rtt_tolerance),
                backoff: ratio_from_f32(g.drop_backoff),
                threshold: ratio_from_f32(g.drop_threshold),
            })
        }
        Algorithm::Vegas(v) => {
            if !in_range(v.smoothing, 0.0, 1.0, false, true) {
                return Err(out("vegas.smoothing", "in (0, 1]"));
            }
            let s = ratio_from_f32(v.smoothing);
            Rule::Vegas(VegasRule {
                min,
                max,
                smoothing: if s > UNIT { UNIT } else { s },
            })
        }
        Algorithm::Aimd(a) => {
            if !in_range(a.backoff_ratio, 0.5, 1.0, true, false) {
                return Err(out("aimd.backoff_ratio", "in [0.5, 1)"));
            }
            if a.timeout.is_zero() {
                return Err(out("aimd.timeout", "above zero"));
            }
            Rule::Aimd(AimdRule {
                min,
                max,
                backoff: ratio_from_f32(a.backoff_ratio),
                timeout: Rtt::from_duration(a.timeout),
            })
        }
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn a_window_range_is_refused_outside_its_bounds_and_accepted_at_them() {
        let with = |min_window, max_window| LimiterConfig {
            min_window,
            max_window,
            ..LimiterConfig::gradient2()
        };
        let bad = |c: LimiterConfig| matches!(compile(&c), Err(LimiterConfigError::BadWindow));
        let s = Duration::from_secs;
        assert!(bad(with(Duration::ZERO, s(1))), "a zero window");
        assert!(bad(with(s(2), s(1))), "min above max");
        assert!(
            !bad(with(s(1), s(1))),
            "min equal to max is one fixed window"
        );
        assert!(!bad(with(s(1), MAX_WINDOW)), "at the longest window");
        assert!(
            bad(with(s(1), MAX_WINDOW + Duration::from_nanos(1))),
            "past it"
        );
    }

    #[test]
    fn rungs_and_probing_are_refused_past_their_bounds_and_accepted_at_them() {
        let with = |queue_rungs, probe_multiplier| LimiterConfig {
            queue_rungs,
            probe_multiplier,
            ..LimiterConfig::gradient2()
        };
        assert!(compile(&with(1_000, 1_000)).is_ok(), "at both bounds");
        assert!(compile(&with(1_001, 30)).is_err(), "rungs past 1000");
        assert!(compile(&with(0, 30)).is_err(), "no rung");
        assert!(compile(&with(4, 1_001)).is_err(), "probing past 1000");
    }

    #[test]
    fn a_gradient2_queue_is_at_most_max_limit() {
        let with = |queue_size| LimiterConfig {
            algorithm: Algorithm::Gradient2(Gradient2 {
                queue_size,
                ..Gradient2::DEFAULT
            }),
            ..LimiterConfig::gradient2()
        };
        assert!(compile(&with(MAX_LIMIT)).is_ok());
        assert!(compile(&with(MAX_LIMIT + 1)).is_err());
    }

    #[test]
    fn defaults_compile_to_the_published_numbers() {
        let Ok(Rule::Gradient2(g)) = compile(&LimiterConfig::gradient2()) else {
            panic!()
        };
        assert_eq!(
            (g.min, g.max, g.queue, g.long_window),
            (20 * CALL, 200 * CALL, 4 * CALL, 600)
        );
        assert_eq!(
            (g.smoothing, g.tolerance, g.backoff, g.threshold),
            (13_107, 98_304, 58_982, 1_311)
        );
        let netflix = LimiterConfig {
            algorithm: Algorithm::Gradient2(Gradient2::NETFLIX),
            ..LimiterConfig::gradient2()
        };
        let Ok(Rule::Gradient2(n)) = compile(&netflix) else {
            panic!("drop_backoff 1.0 (Netflix: drops ignored) is accepted")
        };
        assert_eq!(n.backoff, UNIT);
        let Ok(Rule::Vegas(v)) = compile(&LimiterConfig::vegas()) else {
            panic!()
        };
        assert_eq!((v.min, v.max, v.smoothing), (CALL, 1000 * CALL, UNIT));
        let Ok(Rule::Aimd(a)) = compile(&LimiterConfig::aimd()) else {
            panic!()
        };
        assert_eq!(a.timeout, Rtt::from_duration(Duration::from_secs(5)));
    }

    #[test]
    fn every_invalid_field_is_refused_with_its_name() {
        let g = LimiterConfig::gradient2();
        let with_g = |f: fn(&mut Gradient2)| {
            let mut p = Gradient2::DEFAULT;
            f(&mut p);
            LimiterConfig {
                algorithm: Algorithm::Gradient2(p),
                ..g
            }
        };
        let cases: [(LimiterConfig, &str); 21] = [
            (
                LimiterConfig {
                    min_limit: 0,
                    initial_limit: 0,
                    ..g
                },
                "min_limit must be at least 1",
            ),
            (
                LimiterConfig {
                    initial_limit: 10,
                    ..g
                },
                "min_limit <= initial_limit",
            ),
            (
                LimiterConfig {
                    initial_limit: 201,
                    ..g
                },
                "initial_limit <= max_limit",
            ),
            (
                LimiterConfig {
                    max_limit: MAX_LIMIT + 1,
                    ..g
                },
                "max_limit must be at most",
            ),
            (
                LimiterConfig {
                    min_window: Duration::ZERO,
                    ..g
                },
                "0 < min_window",
            ),
            (
                LimiterConfig {
                    min_window: Duration::from_secs(2),
                    ..g
                },
                "min_window <= max_window",
            ),
            (
                LimiterConfig {
                    max_window: Duration::from_secs(3_601),
                    ..g
                },
                "1 hour",
            ),
            (
                LimiterConfig {
                    window_samples: 0,
                    ..g
                },
                "window_samples",
            ),
            (
                LimiterConfig {
                    queue_factor: 0.99,
                    ..g
                },
                "queue_factor",
            ),
            (
                LimiterConfig {
                    queue_factor: f32::NAN,
                    ..g
                },
                "queue_factor",
            ),
            (
                LimiterConfig {
                    queue_rungs: 0,
                    ..g
                },
                "queue_rungs",
            ),
            (with_g(|p| p.smoothing = 0.0), "gradient2.smoothing"),
            (with_g(|p| p.rtt_tolerance = 0.9), "gradient2.rtt_tolerance"),
            (with_g(|p| p.drop_backoff = 1.01), "gradient2.drop_backoff"),
            (with_g(|p| p.drop_backoff = 0.49), "gradient2.drop_backoff"),
            (
                with_g(|p| p.drop_threshold = 1.0),
                "gradient2.drop_threshold",
            ),
            (
                with_g(|p| p.drop_threshold = -0.01),
                "gradient2.drop_threshold",
            ),
            (with_g(|p| p.long_window = 0), "gradient2.long_window"),
            (
                LimiterConfig {
                    algorithm: Algorithm::Vegas(Vegas { smoothing: 1.5 }),
                    ..g
                },
                "vegas.smoothing",
            ),
            (
                LimiterConfig {
                    algorithm: Algorithm::Aimd(Aimd {
                        backoff_ratio: 0.4,
                        ..Aimd::DEFAULT
                    }),
                    ..g
                },
                "aimd.backoff_ratio",
            ),
            (
                LimiterConfig {
                    algorithm: Algorithm::Aimd(Aimd {
                        timeout: Duration::ZERO,
                        ..Aimd::DEFAULT
                    }),
                    ..g
                },
                "aimd.timeout",
            ),
        ];
        for (c, text) in cases {
            let e = compile(&c).unwrap_err().to_string();
            assert!(e.contains(text), "{e:?} should mention {text:?}");
        }
        let edge = LimiterConfig {
            min_limit: 1,
            initial_limit: 1,
            max_limit: MAX_LIMIT,
            queue_factor: 16.0,
            ..g
        };
        assert!(compile(&edge).is_ok(), "the edges themselves are valid");
    }
}
