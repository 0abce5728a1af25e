//! Brooker 2022, "The effect of client count": the same total traffic (100 calls/s) split over
//! 10, 100 and 1,000 clients, each with its own real budget: the token bucket
//! (`TokenBucket`, preset `BROOKER_2022`) and the retry circuit breaker (`RetryBreaker`,
//! preset `BROOKER_2022`), beside our default breaker (a 10-attempt minimum).

use std::time::Instant as WallClock;

use resilix::retry::budget::{
    RetryBreaker, RetryBreakerConfig, TokenBucket, TokenBucketConfig, Unlimited,
};

use super::Ctx;
use super::brooker::{averaged, brooker_breaker, point_with, workload};
use crate::engine::Workload;
use crate::report::{Check, Section, Table, fmt_num};
use crate::svg::{Chart, Series};

const CLIENTS: [usize; 3] = [10, 100, 1_000];
/// Brooker's `run_sims_clients`: 100 calls/s in total.
const TOTAL_RATE: f64 = 100.0;

fn split(clients: usize) -> Workload {
    Workload {
        clients,
        rate: TOTAL_RATE / clients as f64,
        ..workload()
    }
}

/// (no retries, adaptive, breaker, our default breaker), each (success %, load %).
type Row = [(f64, f64); 4];

fn row(ctx: &Ctx, seeds: u64, clients: usize, p: f64) -> Row {
    let w = split(clients);
    let none = averaged(seeds, |seed| point_with(ctx, w, p, 1, || Unlimited, seed));
    let adaptive = averaged(seeds, |seed| {
        point_with(
            ctx,
            w,
            p,
            u32::MAX,
            || TokenBucket::new(TokenBucketConfig::BROOKER_2022).expect("preset is valid"),
            seed,
        )
    });
    let breaker = averaged(seeds, |seed| {
        point_with(ctx, w, p, 4, brooker_breaker, seed)
    });
    let ours = averaged(seeds, |seed| {
        point_with(
            ctx,
            w,
            p,
            4,
            || -> RetryBreaker {
                RetryBreaker::new(RetryBreakerConfig::DEFAULT).expect("default is valid")
            },
            seed,
        )
    });
    [none, adaptive, breaker, ours]
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let seeds = ctx.seeds(10, 5);
    let mut s = Section::new(
        "brooker-clients",
        "Brooker 2022: the effect of client count on the token bucket and the retry breaker",
        "Brooker's `run_sims_clients`: 100 calls/s in total, split evenly over 10, 100 or \
         1,000 open-loop clients for 10 s then drain; every hop Exp(mean 10 ms); the server \
         fails each attempt independently with probability p; retries are immediate. Each \
         client has its own real pipeline and budget: adaptive (`TokenBucket` \
         `BROOKER_2022`, no attempt cap), breaker (`RetryBreaker` `BROOKER_2022` under a \
         4-attempt `Retry`: 10% threshold, no minimum, cumulative) and ours (`RetryBreaker` \
         `DEFAULT`: 10%, at least 10 attempts in a 10 s window). The post: \"The circuit \
         breaker strategy is tripping too early, and approaching the performance of the no \
         retries approach. The token bucket strategy (starting with a full bucket) doesn't \
         deplete its bucket fast enough, converging on the behavior of n retries.\"",
    );
    let ps: Vec<f64> = if ctx.quick {
        vec![0.05, 0.5]
    } else {
        vec![0.01, 0.05, 0.1, 0.2, 0.3, 0.5]
    };
    let mut t = Table::new(
        "clients",
        "Success % / load % by client count (same total traffic)",
        &[
            "p %",
            "clients",
            "calls/client",
            "no retries",
            "three retries (closed form)",
            "adaptive",
            "breaker",
            "ours (min 10)",
        ],
    );
    let fmt = |v: (f64, f64)| format!("{:.2} / {:.1}", v.0, v.1);
    // series[strategy][clients index] = points (p %, success %)
    let mut success: Vec<Vec<Vec<(f64, f64)>>> = vec![vec![Vec::new(); CLIENTS.len()]; 2];
    for &p in &ps {
        let closed = (
            100.0 * (1.0 - p.powi(4)),
            100.0 * (1.0 + p + p * p + p * p * p),
        );
        let rows: Vec<Row> = CLIENTS.iter().map(|&n| row(ctx, seeds, n, p)).collect();
        for (i, (&n, r)) in CLIENTS.iter().zip(&rows).enumerate() {
            t.row(vec![
                fmt_num(100.0 * p),
                n.to_string(),
                fmt_num(TOTAL_RATE * 10.0 / n as f64),
                fmt(r[0]),
                fmt(closed),
                fmt(r[1]),
                fmt(r[2]),
                fmt(r[3]),
            ]);
            success[0][i].push((100.0 * p, r[1].0));
            success[1][i].push((100.0 * p, r[2].0));
        }
        let [few, _, many] = [&rows[0], &rows[1], &rows[2]];
        // The breaker trips earlier the fewer calls each client sees (its own small sample):
        // at p = 5%, below its threshold, success falls as clients are added.
        if (p - 0.05).abs() < 1e-9 {
            let b: Vec<f64> = rows.iter().map(|r| r[2].0).collect();
            s.checks.push(Check::claim(
                "BC1",
                "breaker, p=5%: success falls as the same traffic is split over more clients",
                format!("{} > {} > {}", fmt_num(b[0]), fmt_num(b[1]), fmt_num(b[2])),
                "\"tripping too early\" with more clients",
                b[0] > b[1] && b[1] > b[2],
            ));
            // Ours keeps three retries' success with one call per client: below the
            // minimum every retry is granted.
            s.checks.push(Check::abs(
                "BC4",
                "ours (min 10 attempts), 1,000 clients, p=5%: success % ≈ three retries (ours)",
                many[3].0,
                closed.0,
                1.0,
            ));
        }
        // 1,000 clients see about one call each: the first failure is a 100% rate, so the
        // breaker never retries, i.e. no retries' load.
        s.checks.push(Check::new(
            "BC2",
            &format!("breaker, 1,000 clients, p={p}: load % ≈ no retries"),
            fmt_num(many[2].1),
            "→ no retries".into(),
            "≤ 100.5".into(),
            many[2].1 <= 100.5,
        ));
        if p <= 0.5 {
            // A full bucket of 5 gives every client's few calls all the retries they want:
            // at least three retries' work and success.
            s.checks.push(Check::new(
                "BC3",
                &format!("adaptive, 1,000 clients, p={p}: load % ≥ three retries' − 1"),
                fmt_num(many[1].1),
                format!("→ n retries ({})", fmt_num(closed.1)),
                format!("≥ {}", fmt_num(closed.1 - 1.0)),
                many[1].1 >= closed.1 - 1.0,
            ));
        }
        if p >= 0.3 {
            // 100 calls per client: the plateau 1 + 0.1(1−p) (deposit per success) plus the
            // 4 usable initial tokens over 100 calls, plus 1 pt (reference §3.5; the same
            // bound as `brooker`'s B2, whose clients also see 100 calls each).
            let calls = TOTAL_RATE * 10.0 / CLIENTS[0] as f64;
            let bound = 100.0 * (1.0 + 0.1 * (1.0 - p) + 4.0 / calls + 0.01);
            s.checks.push(Check::new(
                "BC3",
                &format!("adaptive, 10 clients, p={p}: load % on its plateau"),
                fmt_num(few[1].1),
                "≈114 (deposit per try)".into(),
                format!("≤ {}", fmt_num(bound)),
                few[1].1 <= bound,
            ));
        }
    }
    s.tables.push(t);
    for (k, name) in ["adaptive", "breaker"].iter().enumerate() {
        s.charts.push((
            format!("{name}-success"),
            Chart {
                title: format!("Brooker 2022, client count: {name} success % vs failure rate"),
                x_label: "failure rate %".into(),
                y_label: "success %".into(),
                series: CLIENTS
                    .iter()
                    .enumerate()
                    .map(|(i, n)| Series {
                        name: format!("{n} clients"),
                        points: success[k][i].clone(),
                        dashed: false,
                    })
                    .collect(),
                log_y: false,
            },
        ));
    }
    s.notes.push(
        "Neither budget is ideal (the post's conclusion): with many clients each seeing few \
         calls, the breaker degrades to no retries and the token bucket to plain n retries. \
         Our default breaker's 10-attempt minimum keeps retries for clients too quiet to have \
         a rate (three retries' success at 1,000 clients), at the price of no protection for \
         them: share one breaker per process (`&breaker` in every `Retry`) so it sees enough \
         traffic to have a rate."
            .into(),
    );
    s.seconds = started.elapsed().as_secs_f64();
    s
}
