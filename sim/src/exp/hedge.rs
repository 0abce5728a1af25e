//! Experiment: hedged requests in a fan-out service ("The Tail at Scale", Dean & Barroso,
//! CACM 2013), through the real `resilix::hedge::Hedge` and a shared `RatioBudget`.
//!
//! Each request fans out to 100 leaves and finishes when the slowest leaf answers (the paper's
//! BigTable read of 1,000 keys across 100 servers). A leaf call's latency is long-tailed: a
//! lognormal body (median 1 ms, σ = 1, so a leaf's p99 is ≈ 10 ms, the paper's Table 1) and,
//! one call in 1,000, a hiccup of 100 ms to 2 s (a garbage collection, a compaction, a queue
//! behind a slow request: the paper's sources of variability). A copy goes to another replica,
//! so its latency is an independent draw. Requests arrive as a Poisson stream of 200/s.
//!
//! Every leaf call is one `HedgeCall` of one shared `Hedge` (the decisions, the delay, the
//! local cap are the library's); the simulation sends the copy when the plan says, takes the
//! first answer and reports it with `finish`. Configurations:
//!
//! * **none**: no hedging;
//! * **fixed 10 ms**: the paper's BigTable run ("a hedging request after a 10ms delay");
//! * **p95**: the default, `max_extra_load` 5%, delay from the latency quantile;
//! * under **degradation** (the second half of the run, every leaf body 20× slower): the fixed
//!   10 ms hedge with no cap and no budget (tower's `Hedge` shape) against the same with the
//!   local cap and the shared budget, and the p95 policy.
//!
//! The `--check` criteria, from the paper:
//!
//! * H1: hedging at the p95 adds 5% ± 1.5 points of leaf requests ("limits the additional load
//!   to approximately 5%"; the ±1.5 allows the histogram's 6.25% quantile error and the
//!   windows' lag);
//! * H2: it cuts the fan-out p99.9 by at least 10× (the paper: 1,800 → 74 ms, 24×; an "order
//!   of magnitude" is the claim we hold ourselves to, since our tail is a model of theirs);
//! * H3: the fixed 10 ms hedge adds at most 3% (the paper: 2%; our leaf p99 of 10 ms puts
//!   about 1.1% of calls past 10 ms) and also cuts p99.9 by at least 10×;
//! * H4: when the upstream degrades, the uncapped fixed hedge hedges more than 50% of calls (a
//!   hedge storm: the paper's fixed 10 ms is past nearly every call of a 20× slower upstream)
//!   while the capped ones stay within the local cap's exact bound, 5% of the calls + the
//!   burst;
//! * H5: no refused hedge cancels anything: every leaf call gets exactly one answer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant as WallClock};

use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::hedge::{Hedge, HedgeCall, HedgeConfig, NextCopy};
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, RetryBudget, Unlimited};
use resilix::time::Instant;

use super::Ctx;
use crate::report::{Check, Section, Table, fmt_num};
use crate::svg::{Chart, Series};

const LEAVES: usize = 100;
const RATE: f64 = 200.0;
const HICCUP_ODDS: u64 = 1000;

/// A leaf call's latency in ns; `slow` multiplies the body (a degraded upstream).
fn leaf_latency(rng: &mut SeededRandom, slow: f64) -> u64 {
    if rng.below(HICCUP_ODDS) == 0 {
        return 100_000_000 + rng.below(1_900_000_000);
    }
    // Box–Muller: a standard normal from two uniforms.
    let (u1, u2) = (1.0 - rng.unit(), rng.unit());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (1e6 * slow * z.exp()) as u64
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    None,
    Fixed10,
    Quantile,
}

struct Setup {
    name: &'static str,
    kind: Kind,
    capped: bool,
    /// From which request on every leaf body is 20× slower.
    degrade_from: Option<usize>,
}

#[derive(Default, Clone)]
struct Outcome {
    /// Fan-out latency of each request, ns.
    requests: Vec<u64>,
    leaf_calls: u64,
    hedges: u64,
    refused: u64,
    answers: u64,
    /// In the degraded phase only.
    degraded_calls: u64,
    degraded_hedges: u64,
    /// Budget grants to hedges vs the calls (the budget's own view).
    delay_ms: Vec<(f64, f64)>,
}

enum Ev {
    /// Leaf call `i`'s next copy is due.
    Due(usize),
    /// Leaf call `i` answered by copy `copy`.
    Answer(usize, u32),
}

struct Leaf {
    plan: Option<HedgeCall>,
    request: usize,
    done: bool,
    slow: f64,
}

fn simulate<B: RetryBudget>(
    hedge: Option<&Hedge<B>>,
    setup: &Setup,
    requests: usize,
    seed: u64,
) -> Outcome {
    let mut rng = SeededRandom::new(seed);
    let mut out = Outcome::default();
    let idem = CallOptions::default().idempotent(true);
    let mut heap: BinaryHeap<Reverse<(u64, u64, usize, u32)>> = BinaryHeap::new();
    let mut leaves: Vec<Leaf> = Vec::with_capacity(requests * LEAVES);
    let mut request_start = vec![0u64; requests];
    let mut request_left = vec![LEAVES; requests];
    out.requests = vec![0; requests];
    let mut seq = 0u64;
    let mut t = 1_000_000_000u64;
    let mut push = |heap: &mut BinaryHeap<_>, at: u64, i: usize, ev: Ev| {
        seq += 1;
        let (leaf, copy) = match ev {
            Ev::Due(i) => (i, 0),
            Ev::Answer(i, c) => (i, c),
        };
        let _ = i;
        heap.push(Reverse((at, seq, leaf, copy)));
    };
    let mut next_request = 0usize;
    let mut next_arrival = t;
    loop {
        let next_event = heap.peek().map(|Reverse((at, ..))| *at);
        if next_request < requests && next_event.is_none_or(|e| next_arrival <= e) {
            // A request arrives: its 100 leaf calls start.
            t = next_arrival;
            let r = next_request;
            next_request += 1;
            request_start[r] = t;
            let slow = match setup.degrade_from {
                Some(from) if r >= from => 20.0,
                _ => 1.0,
            };
            for _ in 0..LEAVES {
                let i = leaves.len();
                let mut plan = hedge.map(|h| h.begin(Instant::from_nanos(t), idem));
                out.leaf_calls += 1;
                if slow > 1.0 {
                    out.degraded_calls += 1;
                }
                if let (Some(h), Some(p)) = (hedge, plan.as_mut())
                    && let NextCopy::Wait { until } = p.poll(h, Instant::from_nanos(t), &())
                {
                    push(&mut heap, until.as_nanos(), i, Ev::Due(i));
                }
                push(
                    &mut heap,
                    t + leaf_latency(&mut rng, slow),
                    i,
                    Ev::Answer(i, 1),
                );
                leaves.push(Leaf {
                    plan,
                    request: r,
                    done: false,
                    slow,
                });
            }
            let gap = -(1.0 - rng.unit()).ln() / RATE;
            next_arrival = t + (gap * 1e9) as u64;
            continue;
        }
        let Some(Reverse((at, _, i, copy))) = heap.pop() else {
            break;
        };
        t = at;
        let now = Instant::from_nanos(t);
        let leaf = &mut leaves[i];
        if leaf.done {
            continue; // a loser's answer, or a timer after the answer: cancelled
        }
        if copy == 0 {
            let (Some(h), Some(p)) = (hedge, leaf.plan.as_mut()) else {
                continue;
            };
            match p.poll(h, now, &()) {
                NextCopy::Send { copy } => {
                    out.hedges += 1;
                    if leaf.slow > 1.0 {
                        out.degraded_hedges += 1;
                    }
                    let slow = leaf.slow;
                    push(
                        &mut heap,
                        t + leaf_latency(&mut rng, slow),
                        i,
                        Ev::Answer(i, copy),
                    );
                    if let NextCopy::Wait { until } = p.poll(h, now, &()) {
                        push(&mut heap, until.as_nanos(), i, Ev::Due(i));
                    }
                }
                NextCopy::Wait { until } => push(&mut heap, until.as_nanos(), i, Ev::Due(i)),
                NextCopy::Refused(_) => out.refused += 1,
                NextCopy::Never => {}
            }
            continue;
        }
        // The first answer wins; the others are cancelled (their events skipped).
        leaf.done = true;
        out.answers += 1;
        if let (Some(h), Some(p)) = (hedge, leaf.plan.take()) {
            p.finish(h, now, copy, &Verdict::Success, &());
            if i % 5_000 == 0
                && let Some(d) = h.delay()
            {
                out.delay_ms
                    .push(((t - 1_000_000_000) as f64 / 1e9, d.as_secs_f64() * 1e3));
            }
        }
        let r = leaf.request;
        request_left[r] -= 1;
        if request_left[r] == 0 {
            out.requests[r] = t - request_start[r];
        }
    }
    out
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1e6
}

struct Figures {
    p50: f64,
    p99: f64,
    p999: f64,
    extra: f64,
    degraded_extra: f64,
    degraded_calls: u64,
    refused: u64,
    one_answer_each: bool,
    delays: Vec<(f64, f64)>,
}

fn run_setup(setup: &Setup, requests: usize, seed: u64) -> Figures {
    let budget = RatioBudget::<10>::new(RatioBudgetConfig {
        max_retry_permille: 100,
        min_retries_per_window: 10,
        window: Duration::from_secs(10),
    })
    .expect("SRE's 10% budget");
    let config = match setup.kind {
        Kind::None | Kind::Quantile => HedgeConfig::DEFAULT,
        Kind::Fixed10 => HedgeConfig {
            fixed_delay: Some(Duration::from_millis(10)),
            ..HedgeConfig::DEFAULT
        },
    };
    let out = if setup.kind == Kind::None {
        simulate::<Unlimited>(None, setup, requests, seed)
    } else if setup.capped {
        let h = Hedge::new(config, &budget).expect("valid");
        simulate(Some(&h), setup, requests, seed)
    } else {
        // tower's shape: no budget, and a local cap too deep and too generous to bind.
        let uncapped = HedgeConfig {
            max_extra_load_permille: 999,
            burst: 1_000_000,
            ..config
        };
        let h = Hedge::new(uncapped, Unlimited).expect("valid");
        simulate(Some(&h), setup, requests, seed)
    };
    let mut sorted = out.requests.clone();
    sorted.sort_unstable();
    Figures {
        p50: quantile(&sorted, 0.5),
        p99: quantile(&sorted, 0.99),
        p999: quantile(&sorted, 0.999),
        extra: out.hedges as f64 / out.leaf_calls as f64,
        degraded_extra: if out.degraded_calls == 0 {
            0.0
        } else {
            out.degraded_hedges as f64 / out.degraded_calls as f64
        },
        degraded_calls: out.degraded_calls,
        refused: out.refused,
        one_answer_each: out.answers == out.leaf_calls,
        delays: out.delay_ms,
    }
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let requests = if ctx.quick { 6_000 } else { 30_000 };
    let seed = ctx.master ^ 0x4ed6e;
    let mut s = Section::new(
        "hedge",
        "Hedged requests: the tail at scale, on the shared budget",
        &format!(
            "{requests} requests, each fanned out to {LEAVES} leaves (Poisson, {RATE}/s); a leaf \
             call takes a lognormal time (median 1 ms, sigma 1: p99 about 10 ms) and, one call in \
             {HICCUP_ODDS}, a hiccup of 100 ms to 2 s; a copy is an independent draw (another \
             replica). The real Hedge policy decides every copy, charged to a shared RatioBudget \
             (10% of calls per 10 s, floor 10). Degradation: from half-way, every leaf body 20x slower (median 20 ms)."
        ),
    );
    let setups = [
        Setup {
            name: "no hedging",
            kind: Kind::None,
            capped: true,
            degrade_from: None,
        },
        Setup {
            name: "fixed 10 ms (the paper's run)",
            kind: Kind::Fixed10,
            capped: true,
            degrade_from: None,
        },
        Setup {
            name: "p95 (max_extra_load 5%, default)",
            kind: Kind::Quantile,
            capped: true,
            degrade_from: None,
        },
        Setup {
            name: "degraded: fixed 10 ms, no cap, no budget",
            kind: Kind::Fixed10,
            capped: false,
            degrade_from: Some(requests / 2),
        },
        Setup {
            name: "degraded: fixed 10 ms, local cap + budget",
            kind: Kind::Fixed10,
            capped: true,
            degrade_from: Some(requests / 2),
        },
        Setup {
            name: "degraded: p95, local cap + budget",
            kind: Kind::Quantile,
            capped: true,
            degrade_from: Some(requests / 2),
        },
    ];
    let figures: Vec<Figures> = setups
        .iter()
        .map(|st| run_setup(st, requests, seed))
        .collect();
    let mut t = Table::new(
        "hedge",
        "Fan-out latency (ms) and extra load",
        &[
            "setup",
            "p50",
            "p99",
            "p99.9",
            "extra leaf requests",
            "extra while degraded",
            "refused hedges",
        ],
    );
    for (st, f) in setups.iter().zip(&figures) {
        t.row(vec![
            st.name.into(),
            fmt_num(f.p50),
            fmt_num(f.p99),
            fmt_num(f.p999),
            format!("{:.2}%", f.extra * 100.0),
            if st.degrade_from.is_some() {
                format!("{:.2}%", f.degraded_extra * 100.0)
            } else {
                "–".into()
            },
            f.refused.to_string(),
        ]);
    }
    t.row(vec![
        "published: none → 10 ms hedge".into(),
        "–".into(),
        "–".into(),
        "1800 → 74".into(),
        "2%".into(),
        "–".into(),
        "–".into(),
    ]);
    s.tables.push(t);

    let (none, fixed, p95) = (&figures[0], &figures[1], &figures[2]);
    let (storm, capped, p95_degraded) = (&figures[3], &figures[4], &figures[5]);
    s.checks.push(Check::abs(
        "H1",
        "p95 hedging: extra leaf requests (%)",
        p95.extra * 100.0,
        5.0,
        1.5,
    ));
    s.checks.push(Check::new(
        "H2",
        "p95 hedging: fan-out p99.9 cut (none ÷ hedged)",
        format!(
            "{} → {} ms ({}x)",
            fmt_num(none.p999),
            fmt_num(p95.p999),
            fmt_num(none.p999 / p95.p999)
        ),
        "1800 → 74 ms (24x); at least 10x".into(),
        "≥ 10x".into(),
        none.p999 / p95.p999 >= 10.0,
    ));
    s.checks.push(Check::new(
        "H3",
        "fixed 10 ms: extra load (%) and p99.9 cut",
        format!(
            "{:.2}%, {}x",
            fixed.extra * 100.0,
            fmt_num(none.p999 / fixed.p999)
        ),
        "2%, 24x".into(),
        "≤ 3%, ≥ 10x".into(),
        fixed.extra <= 0.03 && none.p999 / fixed.p999 >= 10.0,
    ));
    // The local cap's exact bound over the degraded half: 5% of its calls plus the burst.
    let burst = f64::from(HedgeConfig::DEFAULT.burst);
    let bound = 0.05 + burst / capped.degraded_calls.max(1) as f64;
    s.checks.push(Check::new(
        "H4",
        "degraded upstream: hedge storm without a cap, capped with one",
        format!(
            "uncapped {:.1}%, capped {:.2}%, p95 {:.2}%",
            storm.degraded_extra * 100.0,
            capped.degraded_extra * 100.0,
            p95_degraded.degraded_extra * 100.0
        ),
        "no hedge storm (ours: capped ≤ 5% of calls + the burst of 100)".into(),
        format!("uncapped > 50%, capped ≤ {:.2}%", bound * 100.0),
        storm.degraded_extra > 0.5
            && capped.degraded_extra <= bound
            && p95_degraded.degraded_extra <= bound,
    ));
    s.checks.push(Check::claim(
        "H5",
        "a refused hedge cancels nothing: one answer per leaf call",
        format!(
            "{} refused; every call answered: {}",
            capped.refused + p95_degraded.refused,
            figures.iter().all(|f| f.one_answer_each)
        ),
        "failsafe-go #141 must not happen",
        figures.iter().all(|f| f.one_answer_each) && capped.refused > 0,
    ));

    s.charts.push((
        "hedge-delay".into(),
        Chart {
            title: "The p95 hedge delay as the upstream degrades half-way".into(),
            x_label: "time (s)".into(),
            y_label: "hedge delay (ms)".into(),
            series: vec![Series {
                name: "delay in force".into(),
                points: p95_degraded.delays.clone(),
                dashed: false,
            }],
            log_y: false,
        },
    ));
    let bars = |name: &str, f: &Figures| Series {
        name: name.into(),
        points: vec![(50.0, f.p50), (99.0, f.p99), (99.9, f.p999)],
        dashed: false,
    };
    s.charts.push((
        "hedge-tail".into(),
        Chart {
            title: "Fan-out latency percentiles, with and without hedging".into(),
            x_label: "percentile".into(),
            y_label: "latency (ms)".into(),
            series: vec![
                bars("no hedging", none),
                bars("fixed 10 ms", fixed),
                bars("p95 hedge", p95),
            ],
            log_y: true,
        },
    ));
    s.notes.push(
        "The paper's 1,800 → 74 ms used a fixed 10 ms delay; hedging at the p95 is its separate \
         recommendation (\"limits the additional load to approximately 5%\"). Our leaf model is \
         calibrated to its Table 1 (leaf p99 10 ms), not to BigTable's unpublished distribution, \
         so the figures are compared by shape: the order of magnitude, the extra load."
            .into(),
    );
    s.seconds = started.elapsed().as_secs_f64();
    s
}
