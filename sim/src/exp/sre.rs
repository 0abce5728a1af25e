//! Experiment 2: Google SRE retry amplification (ch. 21 and 22) with the real `Retry`, the
//! real `RatioBudget`, and layered pipelines.

use std::time::{Duration, Instant as WallClock};

use resilix::Verdict;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, RetryBudget, Unlimited};
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix::time::Instant;

use super::Ctx;
use crate::engine::{ClientKind, Engine, Workload};
use crate::net::Delay;
use crate::observer::Tally;
use crate::report::{Check, Section, Table, fmt_num};
use crate::svg::{Chart, Series};
use crate::upstream::Flaky;

fn retry<B: RetryBudget>(attempts: u32, budget: B) -> Retry<B> {
    Retry::new(
        RetryConfig::new(attempts, Backoff::NONE).expect("valid"),
        budget,
    )
}

fn workload(ctx: &Ctx) -> Workload {
    Workload {
        clients: 100,
        rate: 10.0,
        kind: ClientKind::Open,
        duration: Duration::from_secs(if ctx.quick { 30 } else { 120 }),
        // Two budget windows, so the ratio budget is in its steady state.
        warmup: Duration::from_secs(20),
        net: Delay::Exponential {
            mean: Duration::from_millis(10),
        },
        idempotent: false,
        bucket: Duration::ZERO,
    }
}

/// Attempts reaching the backend per first try, in the steady state, with rejection
/// probability `q` (every rejection `Overload`, which is retryable).
fn load<B: RetryBudget>(ctx: &Ctx, q: f64, make: impl Fn() -> B, seed: u64) -> f64 {
    let w = workload(ctx);
    let stacks: Vec<_> = (0..w.clients)
        .map(|_| Pipeline::new().retry(retry(3, make())))
        .collect();
    let up = Flaky {
        p: q,
        service: Duration::from_millis(1),
        failure: Verdict::Overload { retry_after: None },
    };
    let tally = Tally::default();
    let o = Engine::new(&stacks, up, w, &tally).run(ctx.master ^ 0x5e, seed);
    o.steady.sent as f64 / o.steady.calls as f64
}

/// A user action through `layers` pipelines, each making up to `attempts[k]` attempts; the
/// bottom always fails. Returns how many calls reach the bottom.
fn layered(attempts: &[u32]) -> u64 {
    let pipelines: Vec<_> = attempts
        .iter()
        .map(|&a| Pipeline::new().retry(retry(a, Unlimited)))
        .collect();
    let mut rng = SeededRandom::new(1);
    let mut bottom = 0;
    fn go(
        k: usize,
        ps: &[Pipeline<Retry<Unlimited>>],
        rng: &mut SeededRandom,
        bottom: &mut u64,
    ) -> Verdict {
        if k == ps.len() {
            *bottom += 1;
            return Verdict::Transient;
        }
        let mut env = Env::new(Instant::ZERO, &mut *rng);
        let mut call = ps[k].call(Instant::ZERO, CallOptions::default());
        loop {
            let attempt = call.admit(&mut env).expect("nothing refuses");
            let inner = go(k + 1, ps, env.rng, bottom);
            match call.settle(attempt, &inner, &mut env) {
                Next::Done => return Verdict::Success,
                Next::RetryAt(_) => continue,
                // The layer gives up: its caller sees the failure, and may retry it.
                Next::GiveUp(_) => return Verdict::Transient,
            }
        }
    }
    go(0, &pipelines, &mut rng, &mut bottom);
    bottom
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let seeds = ctx.seeds(3, 2);
    let mut s = Section::new(
        "sre",
        "SRE retry amplification and layering",
        "100 open-loop clients × 10 calls/s, the backend rejects each attempt independently \
         with probability q (`Overload`). Each client has its own real pipeline: `Retry` with \
         3 attempts and no backoff, either unbudgeted or with its own `RatioBudget` (10% of \
         first attempts over 10 s, floor 3: the defaults). Load = attempts reaching the \
         backend ÷ first tries, after a 20 s warm-up. Layering: real pipelines nested, each \
         layer's attempt is a whole call to the layer below, the bottom always fails.",
    );
    let qs: Vec<f64> = if ctx.quick {
        vec![0.5, 0.99]
    } else {
        vec![0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99]
    };
    let mut t = Table::new(
        "amplification",
        "Load (attempts ÷ first tries) vs backend rejection probability q",
        &[
            "q",
            "3 attempts",
            "1+q+q²",
            "3 attempts + 10% budget",
            "bound",
        ],
    );
    let (mut plain_pts, mut budget_pts, mut formula_pts) = (vec![], vec![], vec![]);
    let mut at99 = (0.0, 0.0);
    for &q in &qs {
        let mut plain = 0.0;
        let mut budget = 0.0;
        for seed in 0..seeds {
            plain += load(ctx, q, || Unlimited, seed);
            budget += load(
                ctx,
                q,
                || RatioBudget::new(RatioBudgetConfig::DEFAULT).expect("default is valid"),
                seed,
            );
        }
        plain /= seeds as f64;
        budget /= seeds as f64;
        let formula = 1.0 + q + q * q;
        t.row(vec![
            fmt_num(q),
            fmt_num(plain),
            fmt_num(formula),
            fmt_num(budget),
            "≤ 1.111".into(),
        ]);
        plain_pts.push((q, plain));
        budget_pts.push((q, budget));
        formula_pts.push((q, formula));
        if q == 0.99 {
            at99 = (plain, budget);
        }
    }
    s.tables.push(t);
    s.checks.push(Check::rel(
        "S2",
        "3 attempts, q=0.99: load ÷ X (1+q+q²)",
        at99.0,
        2.9701,
        0.01,
    ));
    s.checks.push(Check::new(
        "S2",
        "3 attempts + 10% budget, q=0.99: load ÷ X",
        fmt_num(at99.1),
        "≤ 1.11 (\"just 1.1x\")".into(),
        "[1.09, 1.111]".into(),
        (1.09..=1.111).contains(&at99.1),
    ));
    for &(q, l) in plain_pts.iter().filter(|(q, _)| *q != 0.99) {
        s.checks.push(Check::rel(
            "S2",
            &format!("3 attempts, q={q}: load = 1+q+q²"),
            l,
            1.0 + q + q * q,
            0.01,
        ));
    }
    // Layering.
    let l3 = layered(&[4, 4, 4]);
    let one = layered(&[1, 1, 4]);
    let l5 = layered(&[3, 3, 3, 3, 3]);
    s.checks.push(Check::abs(
        "S3",
        "3 layers × 4 attempts: bottom calls",
        l3 as f64,
        64.0,
        0.0,
    ));
    s.checks.push(Check::abs(
        "S3",
        "retry only above the failing layer: bottom calls",
        one as f64,
        4.0,
        0.0,
    ));
    s.checks.push(Check::abs(
        "S3",
        "5 layers × 3 tries (Builders' Library): bottom calls",
        l5 as f64,
        243.0,
        0.0,
    ));
    s.charts.push((
        "amplification".into(),
        Chart {
            title: "Retry amplification: 3 attempts vs the 10% budget".into(),
            x_label: "backend rejection probability q".into(),
            y_label: "attempts per first try".into(),
            series: vec![
                Series {
                    name: "3 attempts (ours)".into(),
                    points: plain_pts,
                    dashed: false,
                },
                Series {
                    name: "3 attempts + budget (ours)".into(),
                    points: budget_pts,
                    dashed: false,
                },
                Series {
                    name: "1+q+q² (SRE)".into(),
                    points: formula_pts,
                    dashed: true,
                },
                Series {
                    name: "1.11 bound (SRE)".into(),
                    points: vec![(0.0, 1.111), (0.99, 1.111)],
                    dashed: true,
                },
            ],
            log_y: false,
        },
    ));
    s.seconds = started.elapsed().as_secs_f64();
    s
}
