//! Experiment 4: Marc Brooker, "Fixing retries with token buckets and circuit breakers"
//! (2022), his `retry_sim` setup with the real `Retry`, the real `TokenBucket` and the real
//! `RetryBreaker`.

use std::time::{Duration, Instant as WallClock};

use resilix::Verdict;
use resilix::pipeline::Pipeline;
use resilix::retry::budget::{
    RetryBreaker, RetryBreakerConfig, RetryBudget, TokenBucket, TokenBucketConfig, Unlimited,
};
use resilix::retry::{Backoff, Retry, RetryConfig};

use super::Ctx;
use crate::engine::{ClientKind, Engine, Workload};
use crate::net::Delay;
use crate::observer::Tally;
use crate::report::{Check, Section, Table, fmt_num};
use crate::svg::{Chart, Series};
use crate::upstream::Flaky;

/// Brooker's `run_sims` (§3.4 of the reference), success % / load %, mean of seeds 1–3 of
/// his code: (p, no_retries, three_retries, adaptive, breaker).
const REPRO: [(f64, [(f64, f64); 4]); 8] = [
    (
        0.01,
        [
            (99.03, 100.0),
            (100.0, 100.9),
            (100.0, 101.0),
            (99.91, 100.8),
        ],
    ),
    (
        0.02,
        [
            (97.95, 100.0),
            (100.0, 101.9),
            (100.0, 102.1),
            (99.74, 101.7),
        ],
    ),
    (
        0.05,
        [
            (95.15, 100.0),
            (100.0, 105.4),
            (99.99, 105.2),
            (98.59, 103.8),
        ],
    ),
    (
        0.10,
        [
            (89.99, 100.0),
            (100.0, 110.8),
            (99.24, 110.0),
            (92.54, 103.1),
        ],
    ),
    (
        0.20,
        [
            (79.91, 100.0),
            (99.84, 124.4),
            (90.48, 113.4),
            (80.61, 100.3),
        ],
    ),
    (
        0.30,
        [
            (69.90, 100.0),
            (99.20, 141.5),
            (79.71, 113.9),
            (70.01, 100.1),
        ],
    ),
    (
        0.50,
        [
            (50.19, 100.0),
            (93.75, 187.4),
            (56.49, 114.2),
            (49.97, 100.0),
        ],
    ),
    (
        0.75,
        [
            (25.05, 100.0),
            (68.27, 273.2),
            (28.53, 114.2),
            (25.11, 100.0),
        ],
    ),
];

pub(super) fn workload() -> Workload {
    Workload {
        clients: 100,
        rate: 10.0,
        kind: ClientKind::Open,
        duration: Duration::from_secs(10),
        warmup: Duration::ZERO,
        net: Delay::Exponential {
            mean: Duration::from_millis(10),
        },
        idempotent: false,
        bucket: Duration::ZERO,
    }
}

/// (success %, load %) for `attempts` attempts per call and one budget per client.
fn point<B: RetryBudget>(
    ctx: &Ctx,
    p: f64,
    attempts: u32,
    make: impl Fn() -> B,
    seed: u64,
) -> (f64, f64) {
    point_with(ctx, workload(), p, attempts, make, seed)
}

/// [`point`] on workload `w` (the client-count experiment splits the same traffic).
pub(super) fn point_with<B: RetryBudget>(
    ctx: &Ctx,
    w: Workload,
    p: f64,
    attempts: u32,
    make: impl Fn() -> B,
    seed: u64,
) -> (f64, f64) {
    let config = RetryConfig::new(attempts, Backoff::NONE).expect("valid");
    let stacks: Vec<_> = (0..w.clients)
        .map(|_| Pipeline::new().retry(Retry::new(config, make())))
        .collect();
    let up = Flaky {
        p,
        service: Duration::ZERO,
        failure: Verdict::Transient,
    };
    let tally = Tally::default();
    let o = Engine::new(&stacks, up, w, &tally).run(ctx.master ^ 0xb200, seed);
    let a = o.all;
    (
        100.0 * a.succeeded as f64 / a.calls as f64,
        100.0 * a.sent as f64 / a.calls as f64,
    )
}

pub(super) fn averaged(seeds: u64, f: impl Fn(u64) -> (f64, f64)) -> (f64, f64) {
    let (mut s, mut l) = (0.0, 0.0);
    for seed in 0..seeds {
        let (a, b) = f(seed);
        s += a;
        l += b;
    }
    (s / seeds as f64, l / seeds as f64)
}

/// Brooker's breaker: one per client, as in his code.
pub(super) fn brooker_breaker() -> RetryBreaker {
    RetryBreaker::new(RetryBreakerConfig::BROOKER_2022).expect("preset is valid")
}

/// B3, from the post and the reproduction of his code (reference §3.3–3.5): the breaker
/// matches three retries' load-free robustness only far below its threshold, "starts
/// tripping a little early" (p = 5%: below three retries by at least 0.5 pt of success, his
/// code 98.59% ± 0.7), is well below three retries at p = 10% (< 95%, his 92.54%) and
/// "drops down to match no retries" above it (p ≥ 20%: load ≤ 101%, success within 1.5 pt of
/// no retries). Where his code's figure exists, ours is within 2 pt of its success (our
/// denominator differs, see the note).
fn breaker_checks(
    s: &mut Section,
    p: f64,
    breaker: (f64, f64),
    three: (f64, f64),
    none: (f64, f64),
    published: Option<(f64, f64)>,
) {
    if (p - 0.05).abs() < 1e-9 {
        s.checks.push(Check::new(
            "B3",
            "breaker trips early, p=5%: three retries' success − breaker's (pt)",
            fmt_num(three.0 - breaker.0),
            "≈1.4 (100 − 98.59)".into(),
            "≥ 0.5".into(),
            three.0 - breaker.0 >= 0.5,
        ));
    }
    if (p - 0.10).abs() < 1e-9 {
        s.checks.push(Check::new(
            "B3",
            "breaker well below three retries, p=10%: success %",
            fmt_num(breaker.0),
            "92.54".into(),
            "< 95".into(),
            breaker.0 < 95.0,
        ));
    }
    if p >= 0.2 {
        s.checks.push(Check::new(
            "B3",
            &format!("breaker ≈ no retries above its threshold, p={p}: load %"),
            fmt_num(breaker.1),
            published.map(|v| fmt_num(v.1)).unwrap_or_default(),
            "≤ 101".into(),
            breaker.1 <= 101.0,
        ));
        s.checks.push(Check::abs(
            "B3",
            &format!("breaker ≈ no retries above its threshold, p={p}: success %"),
            breaker.0,
            none.0,
            1.5,
        ));
    }
    if let Some(v) = published {
        s.checks.push(Check::abs(
            "B3",
            &format!("breaker beside Brooker's code, p={p}: success %"),
            breaker.0,
            v.0,
            2.0,
        ));
    }
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let seeds = ctx.seeds(10, 5);
    let mut s = Section::new(
        "brooker",
        "Brooker 2022: retry strategies across failure rates",
        "Brooker's `retry_sim` `run_sims`: 100 open-loop clients × 10 calls/s for 10 s then \
         drain, every hop Exp(mean 10 ms), the server fails each attempt independently with \
         probability p, retries immediately. Each client has its own real pipeline: no \
         retries (`Retry` with 1 attempt), three retries (4 attempts), and adaptive (`Retry` \
         with the real `TokenBucket`, preset `BROOKER_2022`: capacity 5 starting full, a retry \
         costs 1 and needs more than 1 token, +0.1 per success; no attempt cap, as in his \
         code), and breaker (`Retry` with 4 attempts over the real `RetryBreaker`, preset \
         `BROOKER_2022`: no retry while the client's failure rate is above 10%, no minimum, \
         counters that outlast the run, as in his code). Success = calls answered ÷ calls; \
         load = attempts ÷ calls.",
    );
    let ps: Vec<f64> = if ctx.quick {
        vec![0.01, 0.05, 0.2, 0.5, 0.75]
    } else {
        REPRO.iter().map(|(p, _)| *p).collect()
    };
    let mut t = Table::new(
        "strategies",
        "Success % / load % — ours beside Brooker's code (repro, mean of seeds 1–3)",
        &[
            "p %",
            "no retries",
            "pub",
            "three retries",
            "pub",
            "closed form",
            "adaptive",
            "pub",
            "breaker",
            "pub",
        ],
    );
    let fmt = |v: (f64, f64)| format!("{:.2} / {:.1}", v.0, v.1);
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); 8];
    for &p in &ps {
        let none = averaged(seeds, |seed| point(ctx, p, 1, || Unlimited, seed));
        let three = averaged(seeds, |seed| point(ctx, p, 4, || Unlimited, seed));
        let adaptive = averaged(seeds, |seed| {
            point(
                ctx,
                p,
                u32::MAX,
                || TokenBucket::new(TokenBucketConfig::BROOKER_2022).expect("preset is valid"),
                seed,
            )
        });
        let breaker = averaged(seeds, |seed| point(ctx, p, 4, brooker_breaker, seed));
        let repro = REPRO.iter().find(|(q, _)| *q == p).map(|(_, v)| *v);
        let closed = (
            100.0 * (1.0 - p.powi(4)),
            100.0 * (1.0 + p + p * p + p * p * p),
        );
        t.row(vec![
            fmt_num(100.0 * p),
            fmt(none),
            repro.map(|r| fmt(r[0])).unwrap_or_default(),
            fmt(three),
            repro.map(|r| fmt(r[1])).unwrap_or_default(),
            fmt(closed),
            fmt(adaptive),
            repro.map(|r| fmt(r[2])).unwrap_or_default(),
            fmt(breaker),
            repro.map(|r| fmt(r[3])).unwrap_or_default(),
        ]);
        breaker_checks(&mut s, p, breaker, three, none, repro.map(|r| r[3]));
        s.checks.push(Check::abs(
            "B1",
            &format!("no retries, p={p}: success % = 100(1−p)"),
            none.0,
            100.0 * (1.0 - p),
            1.0,
        ));
        s.checks.push(Check::abs(
            "B1",
            &format!("three retries, p={p}: success % = 100(1−p⁴)"),
            three.0,
            closed.0,
            1.0,
        ));
        s.checks.push(Check::abs(
            "B1",
            &format!("three retries, p={p}: load % = 100(1+p+p²+p³)"),
            three.1,
            closed.1,
            1.0,
        ));
        if p <= 0.01 {
            s.checks.push(Check::abs(
                "B2",
                &format!("adaptive ≈ three retries at p={p}: load %"),
                adaptive.1,
                three.1,
                0.3,
            ));
        }
        if p >= 0.3 {
            // Deposit on success (the post's prose, our preset): plateau 1 + 0.1(1−p), plus
            // the 4 usable initial tokens spread over ~100 calls per client, plus 1 pt.
            let bound = 100.0 * (1.0 + 0.1 * (1.0 - p) + 4.0 / 100.0 + 0.01);
            s.checks.push(Check::new(
                "B2",
                &format!("adaptive plateau, p={p}: load %"),
                fmt_num(adaptive.1),
                "≈114 (deposit per try); 1+0.1(1−p) per success".into(),
                format!("≤ {}", fmt_num(bound)),
                adaptive.1 <= bound,
            ));
        }
        for (i, v) in [none, three, adaptive, breaker].into_iter().enumerate() {
            series[2 * i].push((100.0 * p, v.0));
            series[2 * i + 1].push((100.0 * p, v.1));
        }
    }
    s.tables.push(t);
    let names = ["no retries", "three retries", "adaptive", "breaker"];
    for (k, (title, ylabel)) in [("success", "success %"), ("load", "load %")]
        .iter()
        .enumerate()
    {
        let mut ser: Vec<Series> = (0..4)
            .map(|i| Series {
                name: format!("{} (ours)", names[i]),
                points: series[2 * i + k].clone(),
                dashed: false,
            })
            .collect();
        for i in 0..4 {
            ser.push(Series {
                name: format!(
                    "{} (Brooker code)",
                    ["no retries", "three retries", "adaptive", "breaker"][i]
                ),
                points: REPRO
                    .iter()
                    .map(|(p, v)| (100.0 * p, if k == 0 { v[i].0 } else { v[i].1 }))
                    .collect(),
                dashed: true,
            });
        }
        s.charts.push((
            (*title).into(),
            Chart {
                title: format!("Brooker 2022: {ylabel} vs failure rate"),
                x_label: "failure rate %".into(),
                y_label: (*ylabel).into(),
                series: ser,
                log_y: false,
            },
        ));
    }
    s.notes.push(
        "Adaptive: our preset deposits 0.1 per *success* (the post's prose); Brooker's code \
         deposits per *first try*, which is why his plateau is ≈114% and ours is lower \
         (≈ 1 + 0.1(1−p) plus the initial tokens)."
            .into(),
    );
    s.notes.push(
        "Breaker: the real `RetryBreaker` counts failures ÷ attempts (first tries and granted \
         retries); Brooker's code divides failures by first tries only, so ours trips a little \
         later while retries are being granted (at p = 5–10%, a few tenths of a point of \
         success). Both count every failed attempt, the one being retried included, and \
         neither has a minimum here: a client's first failure is a 100% rate, which is why \
         the breaker \"starts tripping a little early\" (the post) — each of 100 clients \
         breaks on its own small sample. The `brooker-clients` experiment splits the same \
         traffic over 10, 100 and 1,000 clients."
            .into(),
    );
    s.seconds = started.elapsed().as_secs_f64();
    s
}
