//! What a run measured, by name: the time series, the window figures of the summary and of
//! the assertions. One definition per metric, used by all three.

use std::ops::Range;

use super::engine::RunOutput;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Offered,
    UpstreamLoad,
    LoadAmplification,
    Goodput,
    GoodputRate,
    RefusedFraction,
    TimeoutFraction,
    LatencyP50,
    LatencyP90,
    LatencyP99,
    QueueLength,
    Utilization,
    Wasted,
    BreakerOpen,
    LimiterLimit,
    ThrottlerRejection,
    BudgetBalance,
}

/// Every metric: its name in files and assertions, its unit, and what it is.
pub const METRICS: [(&str, Metric, &str, &str); 17] = [
    (
        "offered",
        Metric::Offered,
        "calls/s",
        "calls started per second",
    ),
    (
        "upstream_load",
        Metric::UpstreamLoad,
        "req/s",
        "attempts reaching the upstream per second",
    ),
    (
        "load_amplification",
        Metric::LoadAmplification,
        "×",
        "attempts reaching the upstream ÷ calls started",
    ),
    (
        "goodput",
        Metric::Goodput,
        "share",
        "of the calls that ended, the share that succeeded",
    ),
    (
        "goodput_rate",
        Metric::GoodputRate,
        "calls/s",
        "calls that succeeded per second",
    ),
    (
        "refused_fraction",
        Metric::RefusedFraction,
        "share",
        "of the calls that ended, the share the pipeline refused before sending",
    ),
    (
        "timeout_fraction",
        Metric::TimeoutFraction,
        "share",
        "of the attempts sent, the share settled by a deadline",
    ),
    (
        "latency_p50",
        Metric::LatencyP50,
        "s",
        "median time from a call's start to its end (any outcome)",
    ),
    (
        "latency_p90",
        Metric::LatencyP90,
        "s",
        "90th percentile of the same",
    ),
    (
        "latency_p99",
        Metric::LatencyP99,
        "s",
        "99th percentile of the same",
    ),
    (
        "queue_length",
        Metric::QueueLength,
        "requests",
        "requests waiting at the upstream (time average)",
    ),
    (
        "utilization",
        Metric::Utilization,
        "share",
        "busy servers ÷ servers (time average)",
    ),
    (
        "wasted",
        Metric::Wasted,
        "share",
        "of the requests the upstream served, the share whose caller had stopped waiting",
    ),
    (
        "breaker_open",
        Metric::BreakerOpen,
        "share",
        "time the breaker was open (half-open counts half)",
    ),
    (
        "limiter_limit",
        Metric::LimiterLimit,
        "calls",
        "the adaptive limiter's limit",
    ),
    (
        "throttler_rejection",
        Metric::ThrottlerRejection,
        "probability",
        "the throttler's rejection probability",
    ),
    (
        "budget_balance",
        Metric::BudgetBalance,
        "tokens",
        "the retry budget's balance (tokens; retries left in the window; 1/0 for a retry breaker)",
    ),
];

impl Metric {
    pub fn parse(name: &str) -> Result<Metric, String> {
        METRICS
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, m, ..)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = METRICS.iter().map(|(n, ..)| *n).collect();
                format!(
                    "unknown metric {name:?}: expected one of {}",
                    names.join(", ")
                )
            })
    }

    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m, ..)| *m == self)
            .expect("listed")
            .0
    }

    pub fn unit(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m, ..)| *m == self)
            .expect("listed")
            .2
    }

    /// Whether `metric[group]` means something (a client group's own calls).
    pub fn per_group(self) -> bool {
        matches!(
            self,
            Metric::Offered
                | Metric::Goodput
                | Metric::GoodputRate
                | Metric::RefusedFraction
                | Metric::LatencyP50
                | Metric::LatencyP90
                | Metric::LatencyP99
        )
    }

    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::LatencyP50 | Metric::LatencyP90 | Metric::LatencyP99
        )
    }

    fn gauge(self) -> Option<usize> {
        match self {
            Metric::BreakerOpen => Some(0),
            Metric::LimiterLimit => Some(1),
            Metric::ThrottlerRejection => Some(2),
            Metric::BudgetBalance => Some(3),
            _ => None,
        }
    }

    /// Whether the run has this metric at all (a gauge needs its policy in the pipeline).
    pub fn present(self, out: &RunOutput) -> bool {
        self.gauge().is_none_or(|k| out.has_gauge[k])
    }
}

fn ratio(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// Nearest-rank percentile.
pub fn percentile(v: &mut [f32], p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f32::total_cmp);
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(f64::from(v[rank - 1]))
}

/// `metric` over the buckets in `range`, for one client group or all of them. `None` when it
/// is undefined there (no calls ended, no policy of that kind).
pub fn value(out: &RunOutput, m: Metric, group: Option<usize>, range: Range<usize>) -> Option<f64> {
    let bs = &out.buckets[range.clone()];
    if bs.is_empty() {
        return None;
    }
    let secs = bs.len() as f64 * out.bucket.as_secs_f64();
    let groups = |f: &dyn Fn(&super::engine::GroupBucket) -> u64| -> u64 {
        bs.iter()
            .flat_map(|b| b.groups.iter().enumerate())
            .filter(|(g, _)| group.is_none_or(|x| x == *g))
            .map(|(_, gb)| f(gb))
            .sum()
    };
    let sum = |f: &dyn Fn(&super::engine::Bucket) -> u64| -> u64 { bs.iter().map(f).sum() };
    match m {
        Metric::Offered => Some(groups(&|g| g.calls) as f64 / secs),
        Metric::UpstreamLoad => Some(sum(&|b| b.arrivals) as f64 / secs),
        Metric::LoadAmplification => ratio(sum(&|b| b.arrivals), groups(&|g| g.calls)),
        Metric::Goodput => ratio(groups(&|g| g.succeeded), groups(&|g| g.ended)),
        Metric::GoodputRate => Some(groups(&|g| g.succeeded) as f64 / secs),
        Metric::RefusedFraction => ratio(groups(&|g| g.refused), groups(&|g| g.ended)),
        Metric::TimeoutFraction => ratio(sum(&|b| b.timeouts), sum(&|b| b.sent)),
        Metric::LatencyP50 | Metric::LatencyP90 | Metric::LatencyP99 => {
            let mut v: Vec<f32> = bs
                .iter()
                .flat_map(|b| b.groups.iter().enumerate())
                .filter(|(g, _)| group.is_none_or(|x| x == *g))
                .flat_map(|(_, gb)| gb.latencies.iter().copied())
                .collect();
            let p = match m {
                Metric::LatencyP50 => 0.5,
                Metric::LatencyP90 => 0.9,
                _ => 0.99,
            };
            percentile(&mut v, p)
        }
        Metric::QueueLength => Some(bs.iter().map(|b| b.queue_area).sum::<f64>() / secs),
        Metric::Utilization => {
            let cap: f64 = bs.iter().map(|b| b.capacity_area).sum();
            (cap > 0.0).then(|| bs.iter().map(|b| b.busy_area).sum::<f64>() / cap)
        }
        Metric::Wasted => ratio(sum(&|b| b.wasted), sum(&|b| b.served)),
        Metric::BreakerOpen
        | Metric::LimiterLimit
        | Metric::ThrottlerRejection
        | Metric::BudgetBalance => {
            let k = m.gauge().expect("a gauge");
            let n: u32 = bs.iter().map(|b| b.gauge_n[k]).sum();
            (n > 0).then(|| bs.iter().map(|b| b.gauge_sum[k]).sum::<f64>() / f64::from(n))
        }
    }
}

/// How a window figure is taken from its buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    /// Over the window as a whole (totals, then the ratio or percentile).
    Whole,
    /// The largest bucket value in the window.
    Max,
    /// The smallest.
    Min,
}

pub fn aggregate(
    out: &RunOutput,
    m: Metric,
    group: Option<usize>,
    range: Range<usize>,
    agg: Agg,
) -> Option<f64> {
    match agg {
        Agg::Whole => value(out, m, group, range),
        Agg::Max | Agg::Min => {
            let vals = range.filter_map(|i| value(out, m, group, i..i + 1));
            if agg == Agg::Max {
                vals.reduce(f64::max)
            } else {
                vals.reduce(f64::min)
            }
        }
    }
}
