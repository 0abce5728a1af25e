//! Additive increase, multiplicative decrease: the limit grows by one call per window while
//! the upstream keeps up, and is cut by a fraction on any drop or very slow window.
//!
//! Source: `Netflix/concurrency-limits` `AIMDLimit.java` (defaults from PR #114), read in
//! `other-systems.md` §4.4; recommended there for clients. Per window:
//!
//! ```text
//! drop or rtt > timeout   → ⌊limit · backoff_ratio⌋
//! in_flight · 2 ≥ limit   → limit + 1
//! otherwise               → hold            (app-limited)
//! limit = clamp(limit, min, max)
//! ```
//!
//! The old halving on reaching the max (#155, #174) is not reproduced; upstream removed it.

use super::fixed::{CALL, Rtt, mul_ratio};
use super::sample::WindowSummary;
use core::time::Duration;

/// AIMD's parameters. Defaults are Netflix's.
///
/// ```
/// use core::time::Duration;
/// use resilix::limiter::Aimd;
/// assert_eq!(Aimd::DEFAULT.timeout, Duration::from_secs(5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aimd {
    /// Factor applied on a drop, in [0.5, 1). Default 0.9 (Netflix).
    pub backoff_ratio: f32,
    /// A window whose average RTT exceeds this counts as a drop. Default 5 s (Netflix).
    pub timeout: Duration,
}

impl Aimd {
    /// Netflix's defaults.
    pub const DEFAULT: Aimd = Aimd {
        backoff_ratio: 0.9,
        timeout: Duration::from_secs(5),
    };
}

impl Default for Aimd {
    fn default() -> Self {
        Aimd::DEFAULT
    }
}

/// AIMD compiled to fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AimdRule {
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) backoff: u32,
    pub(crate) timeout: Rtt,
}

impl AimdRule {
    /// The next limit after one window.
    pub(crate) const fn update(&self, limit: u32, w: &WindowSummary) -> u32 {
        let slow = match w.rtt {
            Some(r) => r.0 > self.timeout.0,
            None => false,
        };
        let new = if w.dropped() || slow {
            // Whole calls, as upstream's `(int)(limit · ratio)`.
            mul_ratio(limit, self.backoff) / CALL * CALL
        } else if w.rtt.is_some() && (w.max_in_flight as u64) * 2 * (CALL as u64) >= limit as u64 {
            limit.saturating_add(CALL)
        } else {
            limit
        };
        if new < self.min {
            self.min
        } else if new > self.max {
            self.max
        } else {
            new
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::limiter::fixed::ratio_from_f32;

    fn rule(min: u32) -> AimdRule {
        AimdRule {
            min: min * CALL,
            max: 200 * CALL,
            backoff: ratio_from_f32(0.9),
            timeout: Rtt::from_duration(Duration::from_secs(5)),
        }
    }
    fn window(ms: u32, in_flight: u32, dropped: bool) -> WindowSummary {
        WindowSummary {
            rtt: Some(Rtt::from_micros(ms * 1000)),
            max_in_flight: in_flight,
            samples: 1,
            drops: dropped as u32,
        }
    }

    #[test]
    fn additive_increase_when_busy() {
        assert_eq!(
            rule(20).update(20 * CALL, &window(10, 10, false)),
            21 * CALL
        );
        assert_eq!(
            rule(20).update(20 * CALL, &window(10, 9, false)),
            20 * CALL,
            "app-limited"
        );
        assert_eq!(
            rule(20).update(200 * CALL, &window(10, 200, false)),
            200 * CALL,
            "max"
        );
    }

    #[test]
    fn multiplicative_decrease_on_drop_or_timeout() {
        assert_eq!(rule(1).update(100 * CALL, &window(10, 1, true)), 90 * CALL);
        assert_eq!(
            rule(1).update(19 * CALL, &window(10, 1, true)),
            17 * CALL,
            "⌊17.1⌋"
        );
        assert_eq!(
            rule(1).update(100 * CALL, &window(5_001, 100, false)),
            90 * CALL,
            "> 5 s"
        );
        assert_eq!(
            rule(1).update(100 * CALL, &window(5_000, 100, false)),
            101 * CALL,
            "= 5 s"
        );
        assert_eq!(
            rule(20).update(20 * CALL, &window(10, 1, true)),
            20 * CALL,
            "min"
        );
        assert_eq!(
            rule(1).update(CALL, &window(10, 1, true)),
            CALL,
            "never zero"
        );
        let drops_only = WindowSummary {
            rtt: None,
            max_in_flight: 5,
            samples: 0,
            drops: 1,
        };
        assert_eq!(rule(1).update(10 * CALL, &drops_only), 9 * CALL);
    }
}
