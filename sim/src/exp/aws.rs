//! Experiment 1: AWS "Exponential Backoff And Jitter" (Brooker, 2015), the OCC model of its
//! published simulator, with the real `Retry` and `Backoff` of resilix.

use std::time::{Duration, Instant as WallClock};

use resilix::pipeline::Pipeline;
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};

use super::{Ctx, linear_fit, quadratic_fit};
use crate::net::Delay;
use crate::occ;
use crate::report::{Check, Section, Table, fmt_num};
use crate::svg::{Chart, Series};

pub const STRATEGIES: [(Strategy, &str); 5] = [
    (Strategy::None, "None"),
    (Strategy::Exponential, "Exponential"),
    (Strategy::FullJitter, "FullJitter"),
    (Strategy::EqualJitter, "EqualJitter"),
    (Strategy::Decorrelated, "Decorr"),
];

/// The published setup: base 5 ms, cap 2 s, every hop |N(10 ms, 2 ms)|, no attempt limit.
pub fn pipeline(strategy: Strategy) -> Pipeline<Retry> {
    let backoff = Backoff::new(strategy, Duration::from_millis(5), Duration::from_secs(2))
        .expect("published backoff is valid");
    let config = RetryConfig::new(u32::MAX, backoff).expect("valid retry config");
    Pipeline::new().retry(Retry::unbudgeted(config))
}

pub fn net() -> Delay {
    Delay::AbsNormal {
        mean: Duration::from_millis(10),
        sd: Duration::from_millis(2),
    }
}

/// Mean (calls, completion ms) over `runs` runs.
pub fn point(strategy: Strategy, n: usize, runs: u64, master: u64) -> (f64, f64) {
    let p = pipeline(strategy);
    let (mut calls, mut ms) = (0.0, 0.0);
    for r in 0..runs {
        let out = occ::run(
            &p,
            n,
            net(),
            master ^ (n as u64) << 32 ^ (strategy as u64) << 48,
            r,
        );
        assert_eq!(out.gave_up, 0, "the published clients never give up");
        calls += out.calls as f64;
        ms += out.completion.as_secs_f64() * 1e3;
    }
    (calls / runs as f64, ms / runs as f64)
}

/// Published N = 100 values (§1.5 check 1: fig-read and repro agree).
const N100: [(&str, f64, f64); 5] = [
    ("None", 2420.0, 2030.0),
    ("Exponential", 1850.0, 63000.0),
    ("FullJitter", 795.0, 4880.0),
    ("EqualJitter", 812.0, 6650.0),
    ("Decorr", 1000.0, 4500.0),
];

/// The reproduction with the published code, seed 1 (§1.4), calls / ms, for the table.
const REPRO: [(usize, [(f64, f64); 5]); 8] = [
    (
        10,
        [
            (50.0, 382.0),
            (51.0, 3590.0),
            (38.0, 465.0),
            (42.0, 732.0),
            (37.0, 434.0),
        ],
    ),
    (
        20,
        [
            (151.0, 596.0),
            (151.0, 14817.0),
            (99.0, 1012.0),
            (107.0, 1683.0),
            (102.0, 802.0),
        ],
    ),
    (
        30,
        [
            (286.0, 772.0),
            (277.0, 22486.0),
            (171.0, 1633.0),
            (183.0, 2674.0),
            (180.0, 1261.0),
        ],
    ),
    (
        50,
        [
            (687.0, 1132.0),
            (624.0, 36237.0),
            (332.0, 2922.0),
            (347.0, 4303.0),
            (376.0, 2164.0),
        ],
    ),
    (
        70,
        [
            (1262.0, 1499.0),
            (1058.0, 48417.0),
            (509.0, 3801.0),
            (526.0, 5386.0),
            (607.0, 3264.0),
        ],
    ),
    (
        100,
        [
            (2421.0, 2027.0),
            (1853.0, 62862.0),
            (797.0, 4879.0),
            (812.0, 6658.0),
            (1002.0, 4530.0),
        ],
    ),
    (
        150,
        [
            (5143.0, 2873.0),
            (3549.0, 86037.0),
            (1317.0, 6285.0),
            (1323.0, 8246.0),
            (1758.0, 6602.0),
        ],
    ),
    (
        190,
        [
            (7997.0, 3538.0),
            (5186.0, 101357.0),
            (1771.0, 7427.0),
            (1759.0, 9487.0),
            (2441.0, 7887.0),
        ],
    ),
];

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let runs = ctx.seeds(100, 100);
    let ns: Vec<usize> = if ctx.quick {
        vec![10, 50, 70, 100, 190]
    } else {
        (1..=19).map(|i| 10 * i).collect()
    };
    let mut s = Section::new(
        "aws",
        "AWS backoff and jitter (OCC model)",
        &format!(
            "One row under optimistic concurrency, N clients each updating it once (read, then \
             write; a stale write fails and the client backs off and reads again), every hop \
             |N(10 ms, 2 ms)|, base 5 ms, cap 2 s, no attempt limit, exactly as \
             `aws-samples/aws-arch-backoff-simulator`. Each client's update is one call through \
             a real `Pipeline` with `Retry` and the real `Backoff`; a failed write is \
             `Transient`. Mean of {runs} runs per point. Calls = writes (the work); time = when \
             the last client succeeds."
        ),
    );
    // results[strategy][n index] = (calls, ms)
    let mut results = vec![Vec::new(); STRATEGIES.len()];
    for &n in &ns {
        for (si, (strategy, _)) in STRATEGIES.iter().enumerate() {
            results[si].push(point(*strategy, n, runs, ctx.master));
        }
    }
    let idx = |n: usize| ns.iter().position(|&m| m == n);
    let get = |name: &str, n: usize| {
        let si = STRATEGIES.iter().position(|(_, m)| *m == name).unwrap();
        results[si][idx(n).unwrap()]
    };

    let mut t = Table::new(
        "calls-time",
        "Calls (writes) and completion time (ms) per strategy, ours vs the published code's (seed 1, §1.4)",
        &[
            "N",
            "None calls",
            "pub",
            "Expo calls",
            "pub",
            "Full calls",
            "pub",
            "Equal calls",
            "pub",
            "Decorr calls",
            "pub",
            "None ms",
            "pub",
            "Expo ms",
            "pub",
            "Full ms",
            "pub",
            "Equal ms",
            "pub",
            "Decorr ms",
            "pub",
        ],
    );
    for (i, &n) in ns.iter().enumerate() {
        let repro = REPRO.iter().find(|(m, _)| *m == n).map(|(_, v)| v);
        let p = |si: usize, time: bool| {
            repro
                .map(|v| fmt_num(if time { v[si].1 } else { v[si].0 }))
                .unwrap_or_else(|| "".into())
        };
        let mut row = vec![n.to_string()];
        for time in [false, true] {
            for (si, series) in results.iter().enumerate() {
                let (calls, ms) = series[i];
                row.push(format!("{:.0}", if time { ms } else { calls }));
                row.push(p(si, time));
            }
        }
        t.row(row);
    }
    s.tables.push(t);

    // A1: N = 100 absolute values.
    for (name, calls, ms) in N100 {
        let (c, m) = get(name, 100);
        s.checks.push(Check::rel(
            "A1",
            &format!("N=100 {name} calls"),
            c,
            calls,
            0.05,
        ));
        s.checks.push(Check::rel(
            "A1",
            &format!("N=100 {name} time ms"),
            m,
            ms,
            0.10,
        ));
    }
    // A2: more than half.
    let (full, expo, none) = (
        get("FullJitter", 100).0,
        get("Exponential", 100).0,
        get("None", 100).0,
    );
    s.checks.push(Check::new(
        "A2",
        "N=100 Full/Exponential calls < 0.5",
        fmt_num(full / expo),
        "≈0.43".into(),
        "< 0.5".into(),
        full / expo < 0.5,
    ));
    s.checks.push(Check::new(
        "A2",
        "N=100 Full/None calls < 0.5",
        fmt_num(full / none),
        "≈0.33".into(),
        "< 0.5".into(),
        full / none < 0.5,
    ));
    // A3: orderings for N in 30..=100.
    let mut calls_ok = true;
    let mut time_ok = true;
    let mut worst_eq_full: f64 = 0.0;
    let mut min_expo_over_full = f64::MAX;
    for &n in ns.iter().filter(|&&n| (50..=100).contains(&n)) {
        let c = |k| get(k, n).0;
        let m = |k| get(k, n).1;
        calls_ok &= c("None") > c("Exponential")
            && c("Exponential") > c("Decorr")
            && c("Decorr") > c("EqualJitter");
        let eq_full = (c("EqualJitter") - c("FullJitter")) / c("FullJitter");
        worst_eq_full = worst_eq_full.max(eq_full.abs());
        time_ok &= m("Exponential") > m("EqualJitter")
            && m("EqualJitter") > m("FullJitter")
            && m("FullJitter") > m("Decorr")
            && m("Decorr") > m("None");
        min_expo_over_full = min_expo_over_full.min(m("Exponential") / m("FullJitter"));
    }
    s.checks.push(Check::claim(
        "A3",
        "calls None > Expo > Decorr > Equal, N 50–100",
        if calls_ok {
            "holds".into()
        } else {
            "violated".into()
        },
        "None > Expo > Decorr > Equal ≳ Full",
        calls_ok,
    ));
    s.checks.push(Check::new(
        "A3",
        "calls |Equal − Full| / Full, worst N 50–100",
        fmt_num(worst_eq_full),
        "≈ same".into(),
        "≤ 0.05".into(),
        worst_eq_full <= 0.05,
    ));
    s.checks.push(Check::claim(
        "A3",
        "time Expo > Equal > Full > Decorr > None, N 50–100",
        if time_ok {
            "holds".into()
        } else {
            "violated".into()
        },
        "Expo ≫ Equal > Full > Decorr > None",
        time_ok,
    ));
    s.checks.push(Check::new(
        "A3",
        "time Expo / Full, smallest over N 50–100",
        fmt_num(min_expo_over_full),
        "15–30×".into(),
        "≥ 10".into(),
        min_expo_over_full >= 10.0,
    ));
    // Shapes.
    let xs: Vec<f64> = ns.iter().map(|&n| n as f64).collect();
    let none_ms: Vec<f64> = results[0].iter().map(|r| r.1).collect();
    let none_calls: Vec<f64> = results[0].iter().map(|r| r.0).collect();
    let (_, _, r2) = linear_fit(&xs, &none_ms);
    s.checks.push(Check::new(
        "A4",
        "None time linear in N (R²)",
        format!("{r2:.4}"),
        "linear".into(),
        "R² > 0.99".into(),
        r2 > 0.99,
    ));
    let (_, _, c2) = quadratic_fit(&xs, &none_calls);
    s.checks.push(Check::new(
        "A4",
        "None calls ~N² (quadratic coefficient)",
        format!("{c2:.3}"),
        "~N²".into(),
        "> 0.05".into(),
        c2 > 0.05,
    ));
    let full_calls: Vec<f64> = results[2].iter().map(|r| r.0).collect();
    let above: Vec<usize> = (0..ns.len()).filter(|&i| ns[i] >= 50).collect();
    let (_, _, r2_full) = linear_fit(
        &above.iter().map(|&i| xs[i]).collect::<Vec<_>>(),
        &above.iter().map(|&i| full_calls[i]).collect::<Vec<_>>(),
    );
    s.checks.push(Check::new(
        "A4",
        "FullJitter calls ~linear above N=50 (R²)",
        format!("{r2_full:.4}"),
        "nearly linear".into(),
        "R² > 0.98".into(),
        r2_full > 0.98,
    ));

    s.notes.push(
        "Orderings are checked for N = 50–100, not 30–100 as the reference suggests: the \
         published code itself breaks them at N = 30 (its seed-1 run gives Decorr 180 < Equal \
         183 calls, and Equal 183 vs Full 171, 7% apart)."
            .into(),
    );
    // Charts: ours solid, the published code's reproduction dashed.
    for (name, time, title, ylabel, log) in [
        (
            "calls",
            false,
            "Work: calls (writes) vs clients",
            "calls",
            false,
        ),
        ("time", true, "Completion time vs clients", "ms", true),
    ] {
        let mut series = Vec::new();
        for (si, (_, label)) in STRATEGIES.iter().enumerate() {
            series.push(Series {
                name: format!("{label} (ours)"),
                points: ns
                    .iter()
                    .zip(&results[si])
                    .map(|(&n, r)| (n as f64, if time { r.1 } else { r.0 }))
                    .collect(),
                dashed: false,
            });
        }
        for (si, (_, label)) in STRATEGIES.iter().enumerate() {
            series.push(Series {
                name: format!("{label} (published code)"),
                points: REPRO
                    .iter()
                    .map(|(n, v)| (*n as f64, if time { v[si].1 } else { v[si].0 }))
                    .collect(),
                dashed: true,
            });
        }
        s.charts.push((
            name.into(),
            Chart {
                title: title.into(),
                x_label: "competing clients N".into(),
                y_label: ylabel.into(),
                series,
                log_y: log,
            },
        ));
    }
    s.seconds = started.elapsed().as_secs_f64();
    s
}
