//! Netflix's Gradient2: compare the window's latency with a long-term average and shrink the
//! limit in proportion, plus a little headroom so it keeps probing upward.
//!
//! Source: `Netflix/concurrency-limits` `Gradient2Limit.java` (HEAD 78a74b9), read in
//! `published-results.md` §7.1. Per window, with `short` the window's average RTT:
//!
//! ```text
//! long     = EMA(600) of short            (plain mean for the first 10 windows)
//! if long / short > 2: long *= 0.95       (recover fast after a load spike)
//! if in_flight < limit / 2: hold          (app-limited: no evidence for more)
//! gradient = clamp(tolerance · long / short, 0.5, 1.0)
//! new      = limit · gradient + queue_size
//! limit    = clamp(limit · (1 - smoothing) + new · smoothing, min, max)
//! ```
//!
//! One departure, decided here: upstream ignores drops (concurrency-limits #176), so an
//! upstream that sheds with fast 503s, whose latency stays flat, is never backed off from. We
//! read a window with any drop (`Overload`, `Timeout`) as congestion and multiply the limit by
//! `drop_backoff` (0.9, the backoff of Netflix's GradientLimit v1 and AIMD, and the value #146
//! settled on). The latency of a dropped call never enters the average either way, so fast
//! rejections cannot make the upstream look quick (the #176 concern).

use super::fixed::{CALL, Rtt, UNIT, mul_ratio, smooth};
use super::sample::{Baseline, WindowSummary};

/// Gradient2's parameters. Defaults are Netflix's.
///
/// ```
/// use resilix::limiter::Gradient2;
/// let g = Gradient2 { rtt_tolerance: 1.0, ..Gradient2::DEFAULT };
/// assert_eq!(g.queue_size, 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gradient2 {
    /// Weight of the new estimate per window, in (0, 1]. Default 0.2 (Netflix).
    pub smoothing: f32,
    /// Calls of headroom added each window, so the limit keeps probing. Default 4 (Netflix).
    pub queue_size: u32,
    /// Windows in the long-term RTT average. Default 600 (Netflix).
    pub long_window: u32,
    /// How much slower than the long-term RTT a window may be before the limit shrinks, at
    /// least 1.0. Default 1.5 (Netflix). The limit settles where latency is about this factor
    /// over the baseline: against an upstream that queues beyond its capacity `C`, 1.5 settles
    /// near `1.5·C + queue_size`; 1.0 near `C + queue_size`.
    pub rtt_tolerance: f32,
    /// Factor applied to the limit after a window with a drop, in [0.5, 1). Default 0.9
    /// (ours; Netflix GradientLimit v1's backoff and concurrency-limits #146).
    pub drop_backoff: f32,
}

impl Gradient2 {
    /// Netflix's defaults.
    pub const DEFAULT: Gradient2 = Gradient2 {
        smoothing: 0.2,
        queue_size: 4,
        long_window: 600,
        rtt_tolerance: 1.5,
        drop_backoff: 0.9,
    };
}

impl Default for Gradient2 {
    fn default() -> Self {
        Gradient2::DEFAULT
    }
}

/// Windows averaged plainly before the long-term RTT becomes an EMA (Netflix's warmup).
pub(crate) const WARMUP: u32 = 10;

/// Gradient2 compiled to fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gradient2Rule {
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) smoothing: u32,
    pub(crate) queue: u32,
    pub(crate) long_window: u32,
    pub(crate) tolerance: u32,
    pub(crate) backoff: u32,
}

impl Gradient2Rule {
    /// The next limit and long-term RTT after one window.
    pub(crate) const fn update(
        &self,
        limit: u32,
        base: Baseline,
        w: &WindowSummary,
    ) -> (u32, Baseline) {
        if w.dropped {
            return (self.clamp(mul_ratio(limit, self.backoff)), base);
        }
        let short = match w.rtt {
            Some(r) => (if r.0 == 0 { 1 } else { r.0 }) as u64,
            None => return (limit, base),
        };
        let count = base.count;
        let mut long = if count < WARMUP {
            (base.rtt.0 as u64 * count as u64 + short) / (count as u64 + 1)
        } else {
            // long + (short - long) · 2 / (window + 1), rounded to nearest, in i64.
            let l = base.rtt.0 as i64;
            let d = (short as i64 - l) * 2;
            let n = self.long_window as i64 + 1;
            let step = if d >= 0 {
                (d + n / 2) / n
            } else {
                (d - n / 2) / n
            };
            (l + step) as u64
        };
        if long > 2 * short {
            long = long * 95 / 100;
        }
        let base = Baseline {
            rtt: Rtt(super::fixed::sat(long)),
            count: count.saturating_add(1),
        };
        if (w.max_in_flight as u64) * 2 * (CALL as u64) < limit as u64 {
            return (limit, base);
        }
        let mut gradient = self.tolerance as u64 * long / short;
        if gradient < UNIT as u64 / 2 {
            gradient = UNIT as u64 / 2;
        }
        if gradient > UNIT as u64 {
            gradient = UNIT as u64;
        }
        let new = mul_ratio(limit, gradient as u32).saturating_add(self.queue);
        (self.clamp(smooth(limit, new, self.smoothing)), base)
    }

    const fn clamp(&self, x: u32) -> u32 {
        if x < self.min {
            self.min
        } else if x > self.max {
            self.max
        } else {
            x
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::limiter::fixed::ratio_from_f32;

    fn rule(min_calls: u32) -> Gradient2Rule {
        let g = Gradient2::DEFAULT;
        Gradient2Rule {
            min: min_calls * CALL,
            max: 200 * CALL,
            smoothing: ratio_from_f32(g.smoothing),
            queue: g.queue_size * CALL,
            long_window: g.long_window,
            tolerance: ratio_from_f32(g.rtt_tolerance),
            backoff: ratio_from_f32(g.drop_backoff),
        }
    }

    fn warm(ms: u32) -> Baseline {
        Baseline {
            rtt: Rtt::from_micros(ms * 1000),
            count: WARMUP,
        }
    }

    fn window(ms: u32, in_flight: u32) -> WindowSummary {
        WindowSummary {
            rtt: Some(Rtt::from_micros(ms * 1000)),
            max_in_flight: in_flight,
            dropped: false,
        }
    }

    /// published-results.md §7.3: equal RTTs give 20·0.8 + (20 + 4)·0.2 = 20.8.
    #[test]
    fn equal_rtts_grow_by_the_smoothed_queue() {
        let (l, b) = rule(20).update(20 * CALL, warm(10), &window(10, 10));
        assert_eq!(l, 5325, "20.8 calls in Q24.8 is 5324.8, rounded");
        assert_eq!(
            b.rtt,
            Rtt::from_micros(10_000),
            "the EMA of equal samples is unchanged"
        );
    }

    /// §7.3: short = 3 · long gives gradient max(0.5, 1.5/3) = 0.5, so 16 + (10 + 4)·0.2 = 18.8;
    /// the default min limit of 20 would clamp it, so min 1. Upstream (and we) fold the sample
    /// into the long RTT first: long = 10 + 20·2/601 ms, gradient 0.5033, limit 18.81.
    #[test]
    fn triple_latency_halves_the_target() {
        let (l, _) = rule(1).update(20 * CALL, warm(10), &window(30, 20));
        assert_eq!(l, 4816, "18.8125 calls");
        assert_eq!((l * 10 + CALL / 2) / CALL, 188, "18.8 to one decimal");
        let mut w = window(30, 20);
        w.rtt = Some(Rtt::from_micros(40_000));
        let (l, _) = rule(1).update(20 * CALL, warm(10), &w);
        assert_eq!(
            l, 4813,
            "at 4× the gradient clamps at 0.5 exactly: 18.8 = 4812.8"
        );
        let (clamped, _) = rule(20).update(20 * CALL, warm(10), &window(30, 20));
        assert_eq!(clamped, 20 * CALL, "Netflix's min limit of 20 clamps it");
    }

    #[test]
    fn app_limited_holds_but_still_learns_the_baseline() {
        let (l, b) = rule(1).update(20 * CALL, warm(10), &window(30, 9));
        assert_eq!(l, 20 * CALL, "9 in flight < 20 / 2: no change");
        assert!(b.rtt > Rtt::from_micros(10_000));
        let (l, _) = rule(1).update(20 * CALL, warm(10), &window(10, 10));
        assert!(l > 20 * CALL, "10 in flight is not app-limited");
    }

    #[test]
    fn warmup_is_a_plain_mean_then_an_ema() {
        let r = rule(1);
        let b = Baseline {
            rtt: Rtt::ZERO,
            count: 0,
        };
        let (_, b) = r.update(20 * CALL, b, &window(10, 20));
        let (_, b) = r.update(20 * CALL, b, &window(20, 20));
        assert_eq!(
            b,
            Baseline {
                rtt: Rtt::from_micros(15_000),
                count: 2
            }
        );
        // After warmup: 10 ms + (16 ms − 10 ms)·2/601 = 10.01997 ms.
        let (_, b) = r.update(20 * CALL, warm(10), &window(16, 20));
        assert_eq!(b.rtt.0, 160_000 + (96_000 * 2 + 300) / 601);
    }

    #[test]
    fn fast_recovery_decays_a_long_rtt_twice_the_short() {
        let (_, b) = rule(1).update(20 * CALL, warm(30), &window(10, 20));
        // EMA first: 480000 + (160000−480000)·2/601 ≈ 478935; then ×0.95.
        let ema = 480_000i64 + ((-320_000i64 * 2) - 300) / 601;
        assert_eq!(b.rtt.0 as i64, ema * 95 / 100);
    }

    #[test]
    fn a_drop_backs_off_and_a_drop_only_window_too() {
        let mut w = window(1, 20);
        w.dropped = true;
        let (l, b) = rule(1).update(100 * CALL, warm(10), &w);
        assert_eq!(l, 90 * CALL);
        assert_eq!(
            b,
            warm(10),
            "a dropped window teaches nothing about latency"
        );
        w.rtt = None;
        assert_eq!(rule(1).update(100 * CALL, warm(10), &w).0, 90 * CALL);
        assert_eq!(rule(1).update(20 * CALL, warm(10), &w).0, 18 * CALL);
        assert_eq!(
            rule(20).update(20 * CALL, warm(10), &w).0,
            20 * CALL,
            "never below min"
        );
    }

    #[test]
    fn edges_zero_rtt_and_max() {
        let r = rule(1);
        let mut w = window(0, u32::MAX);
        w.rtt = Some(Rtt::ZERO);
        let (l, _) = r.update(200 * CALL, warm(10), &w);
        assert_eq!(l, 200 * CALL, "never above max");
        let (l, _) = r.update(
            20 * CALL,
            Baseline {
                rtt: Rtt(u32::MAX),
                count: u32::MAX,
            },
            &window(10, 20),
        );
        assert!((CALL..=200 * CALL).contains(&l));
        let w = WindowSummary {
            rtt: None,
            max_in_flight: 0,
            dropped: false,
        };
        assert_eq!(r.update(33 * CALL, warm(1), &w), (33 * CALL, warm(1)));
    }
}
