//! Experiment: Gradient2 under rare timeouts (issue 13, point 4).
//!
//! A healthy upstream (flat 10 ms latency, never overloaded) is called at 5,000 calls/s
//! (evenly spaced, so 50 in flight) through the real adaptive `Limiter` (Gradient2,
//! Netflix's limits 20..200, 1 s windows) for 120 s. One call in N times out instead of
//! answering. Three drop rules, the same everything else:
//!
//! * **before**: any drop in a window cuts the limit by 10% (`drop_threshold: 0.0`, the rule
//!   of the base commit, and of Netflix's AIMD under `WindowedLimit`);
//! * **Netflix**: drops ignored (`Gradient2::NETFLIX`, `drop_backoff: 1.0`: upstream's
//!   `Gradient2Limit` never reads `didDrop`);
//! * **after**: the default, a window is congested only when more than 2% of its outcomes
//!   drop (BBR's `BBRLossThresh`).
//!
//! The acceptance criteria (issue 13): at 1 timeout in 10,000 the limit stays within 10% of
//! its no-drop value and refusals rise by at most 1 point; frequent drops (1 in 20) still cut
//! the limit; the Netflix behaviour is selectable. The "before" rows reproduce the issue's
//! figures (limit 100 / 78 / 25 / 20, refusals 9.9% / – / 53% / 60%).

use std::cell::Cell;
use std::time::{Duration, Instant as WallClock};

use resilix::Verdict;
use resilix::limiter::{Algorithm, Gradient2, Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix::time::Instant;

use super::Ctx;
use crate::engine::{ClientKind, Engine, Workload};
use crate::net::Delay;
use crate::observer::Tally;
use crate::report::{Check, Section, Table, fmt_num};
use crate::upstream::Flaky;

/// One periodic client at 5,000 calls/s: a call every 200 µs exactly, so 50 in flight (the
/// issue's setup: its no-drop figures, limit 100 and 9.9% refused, are reproduced exactly).
const CLIENTS: usize = 1;
const RATE_PER_CLIENT: f64 = 5_000.0;
const LATENCY: Duration = Duration::from_millis(10);
const SECS: u64 = 120;
/// The limit is averaged over the last this many seconds (after the ramp-up).
const TAIL_SECS: u64 = 60;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    Before,
    Netflix,
    After,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Before => "before: any drop cuts",
            Rule::Netflix => "Netflix: drops ignored",
            Rule::After => "after: drops > 2% cut",
        }
    }

    fn config(self) -> LimiterConfig {
        let g = match self {
            Rule::Before => Gradient2 {
                drop_threshold: 0.0,
                ..Gradient2::DEFAULT
            },
            Rule::Netflix => Gradient2::NETFLIX,
            Rule::After => Gradient2::DEFAULT,
        };
        LimiterConfig {
            algorithm: Algorithm::Gradient2(g),
            ..LimiterConfig::gradient2()
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Row {
    /// The final limit.
    limit: u32,
    /// The mean limit over the last `TAIL_SECS` s, sampled at admissions.
    tail: f64,
    /// Calls refused, of all calls.
    refused: f64,
    timeouts: u64,
}

fn simulate(ctx: &Ctx, rule: Rule, drop_every: Option<u64>, seed: u64) -> Row {
    let limiter = Limiter::new(rule.config()).expect("valid config");
    let w = Workload {
        clients: CLIENTS,
        rate: RATE_PER_CLIENT,
        kind: ClientKind::Periodic,
        duration: Duration::from_secs(SECS),
        warmup: Duration::ZERO,
        net: Delay::Fixed(Duration::ZERO),
        idempotent: false,
        bucket: Duration::ZERO,
    };
    let up = Flaky {
        p: drop_every.map_or(0.0, |n| 1.0 / n as f64),
        service: LATENCY,
        failure: Verdict::Timeout,
    };
    let (sum, n) = (Cell::new(0.0f64), Cell::new(0u64));
    let tail_from = Instant::from_secs(SECS - TAIL_SECS);
    let watch = |now: Instant, _: u64| {
        if now >= tail_from {
            sum.set(sum.get() + f64::from(limiter.limit()));
            n.set(n.get() + 1);
        }
    };
    let stacks = [Pipeline::new().limiter(&limiter)];
    let tally = Tally::default();
    let o = Engine::new(&stacks, up, w, &tally)
        .watch(&watch)
        .run(ctx.master ^ 0xd209, seed);
    Row {
        limit: limiter.limit(),
        tail: sum.get() / n.get().max(1) as f64,
        refused: o.all.refused as f64 / o.all.calls.max(1) as f64,
        timeouts: o.all.timeouts,
    }
}

/// The issue's figures for the base rule: (1 in N, limit, refused %).
const ISSUE: [(Option<u64>, f64, Option<f64>); 4] = [
    (None, 100.0, Some(9.9)),
    (Some(100_000), 78.0, None),
    (Some(10_000), 25.0, Some(53.0)),
    (Some(5_000), 20.0, Some(60.0)),
];
/// Frequent drops: one call in 20 times out (5% of every window).
const FREQUENT: u64 = 20;

fn rate_name(every: Option<u64>) -> String {
    match every {
        None => "none".into(),
        Some(n) => format!("1 in {}", fmt_num(n as f64)),
    }
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let mut s = Section::new(
        "rare_drops",
        "Gradient2 under rare timeouts: a healthy limit survives 1 timeout in 10,000",
        &format!(
            "One periodic client at {RATE_PER_CLIENT} calls/s (a call every 200 µs, 50 in flight) \
             through \
             one real `Limiter` (Gradient2, Netflix limits 20..200, 1 s windows) to an upstream \
             that answers every call after exactly {} ms, for {SECS} s; one call in N times out \
             instead (`Verdict::Timeout`, settled at the same 10 ms). Three drop rules: before \
             (any drop in a window cuts the limit by 10%: `drop_threshold 0.0`, the base \
             commit's rule), Netflix (drops ignored: `Gradient2::NETFLIX`, `drop_backoff \
             1.0`), after (the default: only a window with more than 2% drops cuts). Refused is \
             over the whole run, ramp-up from the initial limit of 20 included; the tail limit \
             is the mean over the last {TAIL_SECS} s. Which calls time out is random: every \
             before row is the mean over 2 seeds (quick) or 8 (full); the others over 1 or 8.",
            LATENCY.as_millis()
        ),
    );
    let mut rates: Vec<Option<u64>> = ISSUE.iter().map(|r| r.0).collect();
    rates.push(Some(FREQUENT));
    // Which calls time out is random, and with "any drop cuts" the collapse depends on when
    // the first drops land: seed to seed the base rule's limit at 1 in 10,000 spans 20..38
    // and its refusals 43..53% (masters 1..4). So its rows are run on several seeds. The
    // other rules' limits do not depend on where rare drops land; in the quick profile they
    // run on one seed (every criterion is still checked on every seed run).
    let seeds = ctx.seeds(8, 2);
    let seeds_of = |rule: Rule| {
        if rule == Rule::Before {
            seeds
        } else {
            ctx.seeds(8, 1)
        }
    };
    let mut rows: Vec<(Rule, Option<u64>, Vec<Row>)> = Vec::new();
    for rule in [Rule::Before, Rule::After, Rule::Netflix] {
        for &every in &rates {
            // Netflix only where it differs from "after": the rare rates change nothing for
            // either, so one rare row and the frequent row show the contrast.
            if rule == Rule::Netflix && !matches!(every, None | Some(10_000) | Some(FREQUENT)) {
                continue;
            }
            let runs = (0..seeds)
                .map(|seed| simulate(ctx, rule, every, seed))
                .collect();
            rows.push((rule, every, runs));
        }
    }
    let runs = |rule: Rule, every: Option<u64>| -> &[Row] {
        rows.iter()
            .find(|(r, e, _)| *r == rule && *e == every)
            .map(|(_, _, runs)| runs.as_slice())
            .expect("simulated")
    };
    let mean_of = |runs: &[Row], f: fn(&Row) -> f64| -> f64 {
        super::mean(&runs.iter().map(f).collect::<Vec<_>>())
    };
    let limit = |r: &Row| f64::from(r.limit);
    let refused = |r: &Row| r.refused * 100.0;
    let tail = |r: &Row| r.tail;

    let mut t = Table::new(
        "rare_drops",
        &format!(
            "Final limit, tail-mean limit and calls refused, by drop rule and timeout rate \
             (means of {seeds} seeds before, {} after and Netflix)",
            seeds_of(Rule::After)
        ),
        &[
            "rule",
            "timeouts",
            "final limit",
            "tail mean limit",
            "refused %",
            "timeouts seen",
            "issue 13 (before)",
        ],
    );
    for (rule, every, rs) in &rows {
        let issue = if *rule == Rule::Before {
            ISSUE
                .iter()
                .find(|r| r.0 == *every)
                .map(|(_, l, r)| match r {
                    Some(r) => format!("{l:.0}, {r}%"),
                    None => format!("{l:.0}"),
                })
                .unwrap_or_else(|| "–".into())
        } else {
            "–".into()
        };
        t.row(vec![
            rule.name().into(),
            rate_name(*every),
            fmt_num(mean_of(rs, limit)),
            fmt_num(mean_of(rs, tail)),
            fmt_num(mean_of(rs, refused)),
            fmt_num(mean_of(rs, |r| r.timeouts as f64)),
            issue,
        ]);
    }
    s.tables.push(t);

    // The base rule reproduces the issue's collapse. The no-drop row is deterministic (no
    // randomness reaches it) and matches exactly; the dropping rows are means over seeds, with
    // tolerances covering the seed spread above.
    for (every, want_limit, want_refused) in ISSUE {
        let rs = runs(Rule::Before, every);
        let tol = if every.is_none() { 0.02 } else { 0.25 };
        s.checks.push(Check::rel(
            "D0",
            &format!("before, {}: final limit (issue 13)", rate_name(every)),
            mean_of(rs, limit),
            want_limit,
            tol,
        ));
        if let Some(r) = want_refused {
            // ±10 points for the dropping rows: one seed's refusals at 1 in 10,000 range over
            // 43..53%, the issue's single figure (53%) at the top of that range.
            let tol = if every.is_none() { 0.1 } else { 10.0 };
            s.checks.push(Check::abs(
                "D0",
                &format!("before, {}: refused % (issue 13)", rate_name(every)),
                mean_of(rs, refused),
                r,
                tol,
            ));
        }
    }

    // The acceptance criteria, on every seed against the same seed without drops.
    let healthy = runs(Rule::After, None);
    for every in [Some(100_000), Some(10_000), Some(5_000)] {
        let rs = runs(Rule::After, every);
        let worst_limit = rs
            .iter()
            .zip(healthy)
            .map(|(r, h)| (limit(r) - limit(h)).abs() / limit(h))
            .fold(0.0, f64::max);
        let worst_rise = rs
            .iter()
            .zip(healthy)
            .map(|(r, h)| refused(r) - refused(h))
            .fold(f64::MIN, f64::max);
        s.checks.push(Check::new(
            "D1",
            &format!(
                "after, {}: limit within 10% of the no-drop limit (worst seed)",
                rate_name(every)
            ),
            format!("{}% off", fmt_num(worst_limit * 100.0)),
            format!("no-drop {} ± 10%", fmt_num(mean_of(healthy, limit))),
            "±10%".into(),
            worst_limit <= 0.10,
        ));
        s.checks.push(Check::new(
            "D2",
            &format!(
                "after, {}: refusals rise by at most 1 point (worst seed)",
                rate_name(every)
            ),
            format!("{:+} points", fmt_num(worst_rise)),
            format!("no-drop {}% + 1", fmt_num(mean_of(healthy, refused))),
            "≤ +1 point".into(),
            worst_rise <= 1.0,
        ));
    }
    let frequent = runs(Rule::After, Some(FREQUENT));
    let frequent_max = frequent.iter().map(limit).fold(0.0, f64::max);
    s.checks.push(Check::new(
        "D3",
        "after, 1 in 20 (5% of each window): frequent drops still cut the limit (every seed)",
        format!(
            "max {} (tail {})",
            fmt_num(frequent_max),
            fmt_num(mean_of(frequent, tail))
        ),
        format!(
            "≤ half of {} (the floor is 20)",
            fmt_num(mean_of(healthy, limit))
        ),
        "holds".into(),
        frequent_max * 2.0 <= mean_of(healthy, limit),
    ));
    let netflix_healthy = runs(Rule::Netflix, None);
    let netflix_frequent = runs(Rule::Netflix, Some(FREQUENT));
    let (nf, nh) = (
        mean_of(netflix_frequent, limit),
        mean_of(netflix_healthy, limit),
    );
    s.checks.push(Check::new(
        "D4",
        "Netflix (drop_backoff 1.0) selectable: even 1 in 20 leaves the no-drop limit",
        format!("{} vs {}", fmt_num(nf), fmt_num(nh)),
        "equal within 10%".into(),
        "±10%".into(),
        (nf - nh).abs() <= 0.10 * nh,
    ));
    s.notes.push(
        "Why \"any drop\" collapses: a 1 s window holds about 5,000 outcomes, so at 1 timeout \
         in 10,000 half the windows hold a drop and each cuts the limit by 10%, while a \
         healthy window grows it by only 0.8 of a call (smoothing 0.2 × queue 4). The 2% \
         threshold reads a drop rate, not a drop: rare timeouts are noise, a shedding upstream \
         (5% and more of every window) is still congestion."
            .into(),
    );
    s.seconds = started.elapsed().as_secs_f64();
    s
}
