//! Netflix's Vegas (TCP Vegas applied to concurrency): estimate how many calls are queued at
//! the upstream from how much slower the window is than the no-load latency, and steer that
//! queue into a band.
//!
//! Source: `Netflix/concurrency-limits` `VegasLimit.java` (HEAD 78a74b9), read in
//! `published-results.md` §7.1 and `other-systems.md` §4.1. With `L = ⌊limit⌋` and
//! `log = max(1, ⌊log10 L⌋)`:
//!
//! ```text
//! if no_load == 0 or rtt < no_load: no_load = rtt; hold
//! queue = ⌈L · (1 − no_load / rtt)⌉
//! drop                 → L − log
//! in_flight · 2 < L    → hold                 (app-limited)
//! queue ≤ log          → L + 6·log            (far below the band: grow fast)
//! queue < 3·log        → L + log
//! queue > 6·log        → L − log
//! otherwise            → hold
//! limit = (1 − smoothing)·limit + smoothing·clamp(new, min, max)
//! ```
//!
//! Upstream's own re-probe of `no_load` (reset to the current RTT after `U[0.5,1)·30·L`
//! samples) is replaced by the limiter's baseline refresh (see `sample.rs`), which resets it
//! to the lowest window RTT of the last period instead of a possibly loaded one.

use super::fixed::{CALL, smooth};
use super::sample::{Baseline, WindowSummary};

/// Vegas's parameters. Defaults are Netflix's.
///
/// ```
/// use resilix::limiter::Vegas;
/// assert_eq!(Vegas::DEFAULT.smoothing, 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vegas {
    /// Weight of the new estimate per window, in (0, 1]. Default 1.0: no smoothing (Netflix).
    pub smoothing: f32,
}

impl Vegas {
    /// Netflix's defaults.
    pub const DEFAULT: Vegas = Vegas { smoothing: 1.0 };
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas::DEFAULT
    }
}

/// Vegas compiled to fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VegasRule {
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) smoothing: u32,
}

/// `max(1, ⌊log10 l⌋)`: the step and the unit of Vegas's band.
pub(crate) const fn log10_at_least_one(l: u32) -> u32 {
    let mut n = l / 10;
    let mut log = 0;
    while n >= 10 {
        n /= 10;
        log += 1;
    }
    if l >= 10 {
        log += 1;
    }
    if log == 0 { 1 } else { log }
}

impl VegasRule {
    /// The next limit and no-load RTT after one window.
    pub(crate) const fn update(
        &self,
        limit: u32,
        base: Baseline,
        w: &WindowSummary,
    ) -> (u32, Baseline) {
        let l = if limit / CALL == 0 { 1 } else { limit / CALL };
        let log = log10_at_least_one(l);
        let mut base = base;
        let mut queue = 0u64;
        if let Some(rtt) = w.rtt {
            if base.rtt.0 == 0 || rtt.0 < base.rtt.0 {
                base.rtt = rtt;
                base.count = base.count.saturating_add(1);
                return (limit, base);
            }
            let (no_load, rtt) = (base.rtt.0 as u64, rtt.0 as u64);
            queue = (l as u64 * (rtt - no_load)).div_ceil(rtt);
        } else if !w.dropped() {
            return (limit, base);
        }
        let new = if w.dropped() {
            l.saturating_sub(log)
        } else if (w.max_in_flight as u64) * 2 < l as u64 {
            return (limit, base);
        } else if queue <= log as u64 {
            l.saturating_add(6 * log)
        } else if queue < 3 * log as u64 {
            l.saturating_add(log)
        } else if queue > 6 * log as u64 {
            l.saturating_sub(log)
        } else {
            return (limit, base);
        };
        let new = new.saturating_mul(CALL);
        let new = if new < self.min {
            self.min
        } else if new > self.max {
            self.max
        } else {
            new
        };
        (smooth(limit, new, self.smoothing), base)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::limiter::fixed::{Rtt, UNIT};

    const RULE: VegasRule = VegasRule {
        min: CALL,
        max: 1000 * CALL,
        smoothing: UNIT,
    };

    fn base(ms: u32) -> Baseline {
        Baseline {
            rtt: Rtt::from_micros(ms * 1000),
            count: 1,
        }
    }
    fn window(us: u32, in_flight: u32) -> WindowSummary {
        WindowSummary {
            rtt: Some(Rtt::from_micros(us)),
            max_in_flight: in_flight,
            samples: 1,
            drops: 0,
        }
    }

    #[test]
    fn log10_floored_at_one() {
        let cases = [
            (0, 1),
            (1, 1),
            (9, 1),
            (10, 1),
            (99, 1),
            (100, 2),
            (999, 2),
            (1000, 3),
            (u32::MAX, 9),
        ];
        for (l, want) in cases {
            assert_eq!(log10_at_least_one(l), want, "L = {l}");
        }
    }

    /// Netflix's VegasLimitTest: initial 10; 10 ms at 10 in flight sets the baseline; 10 ms at 11
    /// in flight has no queue, so 10 + beta (6) = 16.
    #[test]
    fn netflix_increase_case() {
        let b = Baseline {
            rtt: Rtt::ZERO,
            count: 0,
        };
        let (l, b) = RULE.update(10 * CALL, b, &window(10_000, 10));
        assert_eq!((l, b.rtt), (10 * CALL, Rtt::from_micros(10_000)));
        let (l, _) = RULE.update(l, b, &window(10_000, 11));
        assert_eq!(l, 16 * CALL);
    }

    /// Queue-size cases at L = 20 (alpha 3, beta 6, threshold 1) over a 10 ms baseline.
    #[test]
    fn queue_size_bands() {
        // (rtt µs, queue = ⌈20·(rtt − 10 ms)/rtt⌉, expected limit)
        let cases = [
            (10_000, 26), // queue 0 ≤ 1: + beta
            (10_500, 26), // ⌈0.95⌉ = 1 ≤ 1: + beta
            (11_000, 21), // ⌈1.82⌉ = 2 < 3: + 1
            (12_000, 20), // ⌈3.33⌉ = 4, within [3, 6]: hold
            (14_000, 20), // ⌈5.71⌉ = 6: hold
            (15_000, 19), // ⌈6.67⌉ = 7 > 6: − 1
            (20_000, 19), // 10 > 6: − 1
        ];
        for (rtt, want) in cases {
            let (l, b) = RULE.update(20 * CALL, base(10), &window(rtt, 20));
            assert_eq!(l, want * CALL, "rtt {rtt} µs");
            assert_eq!(b, base(10));
        }
    }

    /// The same bands at L = 200, where log10 is 2 (alpha 6, beta 12, threshold 2): the
    /// multiples of log are told apart from its quotients only above L = 99.
    #[test]
    fn queue_size_bands_scale_with_log10_of_the_limit() {
        // (rtt µs, queue = ⌈200·(rtt − 10 ms)/rtt⌉, expected limit)
        let cases = [
            (10_000, 212), // queue 0 ≤ 2: + beta
            (10_200, 202), // ⌈3.92⌉ = 4 < 6: + log
            (10_400, 200), // ⌈7.69⌉ = 8, within [6, 12]: hold
            (11_000, 198), // ⌈18.2⌉ = 19 > 12: − log
        ];
        for (rtt, want) in cases {
            let (l, _) = RULE.update(200 * CALL, base(10), &window(rtt, 200));
            assert_eq!(l, want * CALL, "rtt {rtt} µs");
        }
    }

    #[test]
    fn a_limit_below_one_call_counts_as_one() {
        // No queue at 1 call in flight: one call + beta (6), not zero + beta.
        let (l, _) = RULE.update(CALL / 2, base(10), &window(10_000, 1));
        assert_eq!(l, 7 * CALL);
    }

    #[test]
    fn lower_rtt_resets_the_baseline_and_holds() {
        let (l, b) = RULE.update(20 * CALL, base(10), &window(8_000, 20));
        assert_eq!((l, b.rtt), (20 * CALL, Rtt::from_micros(8_000)));
    }

    #[test]
    fn drops_decrease_app_limited_holds() {
        let mut w = window(30_000, 5);
        assert_eq!(
            RULE.update(20 * CALL, base(10), &w).0,
            20 * CALL,
            "5·2 < 20: hold"
        );
        w.drops = 1;
        assert_eq!(
            RULE.update(20 * CALL, base(10), &w).0,
            19 * CALL,
            "a drop beats app-limited"
        );
        w.rtt = None;
        assert_eq!(
            RULE.update(200 * CALL, base(10), &w).0,
            198 * CALL,
            "log10 200 = 2"
        );
        assert_eq!(RULE.update(CALL, base(10), &w).0, CALL, "never below min");
    }

    #[test]
    fn smoothing_and_max() {
        let half = VegasRule {
            smoothing: UNIT / 2,
            ..RULE
        };
        assert_eq!(
            half.update(20 * CALL, base(10), &window(10_000, 20)).0,
            23 * CALL
        );
        assert_eq!(
            RULE.update(1000 * CALL, base(10), &window(10_000, 1000)).0,
            1000 * CALL
        );
        let empty = WindowSummary {
            rtt: None,
            max_in_flight: 9,
            samples: 0,
            drops: 0,
        };
        assert_eq!(RULE.update(7 * CALL, base(1), &empty), (7 * CALL, base(1)));
    }
}
