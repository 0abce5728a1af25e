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
//! # Drops
//!
//! Upstream ignores drops (the `didDrop` argument of `Gradient2Limit._update` is never read;
//! concurrency-limits #176), so an upstream that sheds with fast 503s, whose latency stays
//! flat, is never backed off from. Netflix's loss-based algorithms go the other way: AIMD
//! (`AIMDLimit`) and GradientLimit v1 multiply the limit by 0.9 on any drop, and under
//! `WindowedLimit` a window with any drop counts as one drop (TCP Reno halves once per round
//! trip on any loss, the same rule). With a thousand calls a window, "any drop" is a rate:
//! one timeout in 10,000 calls then cuts half the windows by 10%, which the +0.8 call of
//! growth per window cannot make up, and a healthy limiter collapses to its floor.
//!
//! So a window is read as congested only when its drops exceed `drop_threshold` of its
//! outcomes (latency samples plus drops): 2% by default, BBR's `BBRLossThresh` (the loss rate
//! per round trip BBR tolerates before it backs off, draft-ietf-ccwg-bbr §"Probing for
//! bandwidth"), and the rate below which Google Congestion Control still raises its rate
//! (draft-ietf-rmcat-gcc-02 §5.5). A congested window multiplies the limit by `drop_backoff`
//! (0.9, GradientLimit v1's and AIMD's backoff, and the value #146 settled on). A window whose
//! drops stay below the threshold updates from its latency like any other; the latency of a
//! dropped call never enters the average either way, so fast rejections cannot make the
//! upstream look quick (the #176 concern).
//!
//! * `drop_threshold: 0.0` is the old rule: any drop cuts (Netflix AIMD under `WindowedLimit`).
//! * `drop_backoff: 1.0` is Netflix Gradient2's own behaviour: drops ignored
//!   ([`Gradient2::NETFLIX`]).
//!
//! A small window (the default `window_samples` is 10) with one drop is 10% dropped and cuts:
//! at low traffic one timeout is strong evidence; at high traffic it is noise.

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
    /// Factor applied to the limit after a congested window (see `drop_threshold`), in
    /// [0.5, 1.0]. Default 0.9 (Netflix GradientLimit v1's and AIMD's backoff, and
    /// concurrency-limits #146). 1.0 ignores drops, as Netflix's Gradient2 does.
    pub drop_backoff: f32,
    /// A window is congested when its drops (`Overload`, `Timeout`) exceed this fraction of
    /// its outcomes, in [0, 1). Default 0.02 (ours, after BBR's 2% `BBRLossThresh` and GCC's 2%
    /// low-loss bound; see the module docs). 0.0 backs off on any drop.
    pub drop_threshold: f32,
}

impl Gradient2 {
    /// Netflix's defaults.
    pub const DEFAULT: Gradient2 = Gradient2 {
        smoothing: 0.2,
        queue_size: 4,
        long_window: 600,
        rtt_tolerance: 1.5,
        drop_backoff: 0.9,
        drop_threshold: 0.02,
    };

    /// Netflix's Gradient2 exactly: drops ignored (`drop_backoff` 1.0), every other parameter
    /// its default.
    ///
    /// ```
    /// use resilix::limiter::{Algorithm, Gradient2, Limiter, LimiterConfig};
    /// let config = LimiterConfig {
    ///     algorithm: Algorithm::Gradient2(Gradient2::NETFLIX),
    ///     ..LimiterConfig::gradient2()
    /// };
    /// assert!(Limiter::new(config).is_ok());
    /// ```
    pub const NETFLIX: Gradient2 = Gradient2 {
        drop_backoff: 1.0,
        ..Gradient2::DEFAULT
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
    /// `drop_threshold` in Q16.
    pub(crate) threshold: u32,
}

/// Whether a window with `drops` drops among `outcomes` outcomes is congested: drops above
/// `threshold` (Q16) of the outcomes. Exact in 64 bits.
pub(crate) const fn congested(drops: u32, outcomes: u32, threshold: u32) -> bool {
    drops > 0
        && (drops as u64) * (super::fixed::UNIT as u64) > (threshold as u64) * (outcomes as u64)
}

impl Gradient2Rule {
    /// The next limit and long-term RTT after one window.
    pub(crate) const fn update(
        &self,
        limit: u32,
        base: Baseline,
        w: &WindowSummary,
    ) -> (u32, Baseline) {
        if self.backoff < UNIT
            && congested(w.drops, w.samples.saturating_add(w.drops), self.threshold)
        {
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
            threshold: ratio_from_f32(g.drop_threshold),
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
            samples: 1,
            drops: 0,
        }
    }

    #[test]
    fn a_long_rtt_of_exactly_twice_the_short_is_kept_and_only_above_it_decays() {
        // Warming up, the long RTT is the mean of the baseline and the window: (30 ms + 10 ms)
        // / 2 = 20 ms, exactly twice the window's 10 ms, which is not "above twice": kept.
        let cold = |rtt: Rtt| Baseline { rtt, count: 1 };
        let (_, b) = rule(1).update(20 * CALL, cold(Rtt::from_micros(30_000)), &window(10, 1));
        assert_eq!(b.rtt, Rtt::from_micros(20_000));
        // A sixteenth of a microsecond above it decays to 95%.
        let above = Rtt(Rtt::from_micros(30_000).0 + 2);
        let (_, b) = rule(1).update(20 * CALL, cold(above), &window(10, 1));
        assert_eq!(b.rtt, Rtt((Rtt::from_micros(20_000).0 + 1) * 95 / 100));
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

    /// A window over the threshold: `drops` of `drops + samples` outcomes.
    fn dropping(samples: u32, drops: u32) -> WindowSummary {
        WindowSummary {
            samples,
            drops,
            ..window(10, 100)
        }
    }

    #[test]
    fn a_congested_window_backs_off_and_a_drop_only_window_too() {
        let w = dropping(9, 1); // 10% dropped
        let (l, b) = rule(1).update(100 * CALL, warm(10), &w);
        assert_eq!(l, 90 * CALL);
        assert_eq!(
            b,
            warm(10),
            "a congested window teaches nothing about latency"
        );
        let w = WindowSummary {
            rtt: None,
            samples: 0,
            ..w
        };
        assert_eq!(rule(1).update(100 * CALL, warm(10), &w).0, 90 * CALL);
        assert_eq!(rule(1).update(20 * CALL, warm(10), &w).0, 18 * CALL);
        assert_eq!(
            rule(20).update(20 * CALL, warm(10), &w).0,
            20 * CALL,
            "never below min"
        );
    }

    /// The threshold is a strict bound on the drop fraction, exact in integers: 2% is
    /// 1,311/65,536 in Q16 (2.0004%), so 1 drop in 50 outcomes (2%) is not over it and
    /// 2 in 99 (2.02%) is.
    #[test]
    fn rare_drops_under_the_threshold_update_from_latency() {
        let r = rule(1);
        let healthy = r.update(100 * CALL, warm(10), &window(10, 100));
        for (samples, drops) in [(4_999, 1), (9_990, 10), (49, 1), (98, 1)] {
            let w = dropping(samples, drops);
            assert_eq!(
                r.update(100 * CALL, warm(10), &w),
                healthy,
                "{drops} of {}: like a window without drops",
                samples + drops
            );
        }
        for (samples, drops) in [(97, 2), (48, 2), (0, 1), (4_800, 200)] {
            assert_eq!(
                r.update(100 * CALL, warm(10), &dropping(samples, drops)).0,
                90 * CALL,
                "{drops} of {}: congested",
                samples + drops
            );
        }
        assert!(!congested(0, 0, 0), "no drops is never congested");
        assert!(congested(1, 1_000_000, 0), "threshold 0: any drop");
        assert!(!congested(u32::MAX, u32::MAX, UNIT), "never above 100%");
    }

    #[test]
    fn backoff_one_ignores_drops_as_netflix_does() {
        let netflix = Gradient2Rule {
            backoff: UNIT,
            threshold: 0,
            ..rule(1)
        };
        let healthy = netflix.update(100 * CALL, warm(10), &window(10, 100));
        assert_eq!(
            netflix.update(100 * CALL, warm(10), &dropping(1, 99)),
            healthy,
            "99% dropped, still only latency counts"
        );
        let drops_only = WindowSummary {
            rtt: None,
            samples: 0,
            drops: 5,
            max_in_flight: 100,
        };
        assert_eq!(
            netflix.update(100 * CALL, warm(10), &drops_only),
            (100 * CALL, warm(10)),
            "a drop-only window holds"
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
            samples: 0,
            drops: 0,
        };
        assert_eq!(r.update(33 * CALL, warm(1), &w), (33 * CALL, warm(1)));
    }
}
