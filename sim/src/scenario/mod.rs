//! `sim scenario FILE.toml`: the user's own pipeline against the user's own upstream.
//!
//! A scenario file (see `sim/scenarios/` and [`mod@file`]) describes clients, an upstream that
//! queues and fails over time, the run, the pipeline (the `[pipeline]` table, in the format
//! the service loads at start-up) and assertions about the outcome. The run drives the real
//! resilix policies built from that table; the report is a directory of SVG plots, CSV
//! series and a `report.md`; `--check` turns the assertions into an exit code; `--compare`
//! runs a second pipeline on the same scenario and seed, side by side.

pub mod assert;
pub mod engine;
pub mod file;
pub mod metrics;
pub mod pipeline;
pub mod server;
pub mod units;

use std::fmt::Write as _;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use self::assert::Assertion;
use self::engine::{Meter, RunOutput};
use self::file::Scenario;
use self::metrics::{METRICS, Metric, value};
use crate::report::{Table, fmt_num};
use crate::svg::{Chart, Series};

/// The command line of `sim scenario`.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub file: PathBuf,
    pub quick: bool,
    pub check: bool,
    pub out: Option<PathBuf>,
    /// Replaces the scenario's own `[pipeline]`.
    pub pipeline: Option<PathBuf>,
    /// A second pipeline run on the same scenario and seed.
    pub compare: Option<PathBuf>,
    pub seed: Option<u64>,
    pub quiet: bool,
}

pub use self::pipeline::Source;

/// One pipeline's run.
pub struct Run {
    pub label: String,
    pub source: Source,
    pub out: RunOutput,
    pub verdicts: Vec<assert::Verdict>,
}

/// Everything a scenario run produced.
pub struct Outcome {
    pub scenario: Scenario,
    pub assertions: Vec<Assertion>,
    pub runs: Vec<Run>,
    pub seed: u64,
}

impl Outcome {
    /// Assertions that failed for the first pipeline (the one `--check` judges).
    pub fn failed(&self) -> Vec<(usize, &assert::Verdict)> {
        self.runs[0]
            .verdicts
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.pass)
            .collect()
    }
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map_or_else(|| "pipeline".into(), |s| s.to_string_lossy().into_owned())
}

/// Runs the scenario for every pipeline and checks the assertions on each.
pub fn simulate(o: &Options) -> Result<Outcome, String> {
    let text = fs::read_to_string(&o.file)
        .map_err(|e| format!("cannot read {}: {e}", o.file.display()))?;
    let scenario =
        Scenario::parse(&text, o.quick).map_err(|e| format!("{}: {e}", o.file.display()))?;
    let assertions = scenario
        .asserts
        .iter()
        .map(|a| a.line().and_then(|l| Assertion::parse(&l, &scenario)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", o.file.display()))?;
    let seed = o.seed.unwrap_or(scenario.run.seed);
    let mut pipelines = vec![match &o.pipeline {
        Some(p) => pipeline::read(p)?,
        None => Source {
            label: stem(&o.file),
            budgets: scenario.budgets.clone(),
            pipeline: scenario.pipeline.clone(),
        },
    }];
    if let Some(c) = &o.compare {
        let mut other = pipeline::read(c)?;
        if other.label == pipelines[0].label {
            other.label += " (compared)";
        }
        pipelines.push(other);
    }
    let show = !o.quiet && std::io::stderr().is_terminal();
    let mut runs = Vec::new();
    for source in pipelines {
        let label = source.label.clone();
        let stacks = (0..scenario.run.instances)
            .map(|_| pipeline::build(&source))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{label}: {e}"))?;
        let mut meter = Meter::new(&format!("scenario {label}"), show);
        let out = engine::run(&scenario, &stacks, &pipeline::gauges, seed, &mut |f| {
            meter.tick(f)
        })?;
        meter.finish();
        let verdicts = assertions.iter().map(|a| a.check(&out)).collect();
        runs.push(Run {
            label,
            source,
            out,
            verdicts,
        });
    }
    Ok(Outcome {
        scenario,
        assertions,
        runs,
        seed,
    })
}

/// `fmt_num`, with zero written as 0.
fn num(x: f64) -> String {
    if x == 0.0 { "0".into() } else { fmt_num(x) }
}

fn show(m: Metric, v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if m.is_latency() => {
            if x >= 1.0 {
                format!("{} s", num(x))
            } else {
                format!("{} ms", num(x * 1e3))
            }
        }
        Some(x) => num(x),
    }
}

/// The windows of the summary: the whole run, each episode, and after the last one.
fn windows(o: &Outcome) -> Vec<(String, std::ops::Range<usize>)> {
    let out = &o.runs[0].out;
    let w = out.bucket.as_secs_f64();
    let idx = |t: f64, up: bool| -> usize {
        let x = t / w;
        let i = if up {
            (x - 1e-9).ceil()
        } else {
            (x + 1e-9).floor()
        };
        (i.max(0.0) as usize).min(out.buckets.len())
    };
    let mut v = vec![("overall".to_string(), 0..out.buckets.len())];
    let mut eps: Vec<_> = o.scenario.episodes.iter().collect();
    eps.sort_by_key(|e| e.1.from.0);
    for (name, e) in &eps {
        v.push((
            format!("during {name}"),
            idx(e.from.secs(), true)..idx(e.to.secs(), false),
        ));
    }
    if let Some((name, e)) = eps.iter().max_by(|a, b| a.1.to.0.cmp(&b.1.to.0)) {
        let from = idx(e.to.secs(), true);
        if from < out.buckets.len() {
            v.push((format!("after {name}"), from..out.buckets.len()));
        }
    }
    v.retain(|(_, r)| !r.is_empty());
    v
}

const SUMMARY: [Metric; 11] = [
    Metric::Offered,
    Metric::UpstreamLoad,
    Metric::LoadAmplification,
    Metric::Goodput,
    Metric::LatencyP50,
    Metric::LatencyP99,
    Metric::QueueLength,
    Metric::Wasted,
    Metric::BreakerOpen,
    Metric::ThrottlerRejection,
    Metric::BudgetBalance,
];

pub fn summary(o: &Outcome) -> Table {
    let ws = windows(o);
    let mut header = vec!["metric", "pipeline"];
    header.extend(ws.iter().map(|(n, _)| n.as_str()));
    let mut t = Table::new("summary", "Summary", &header);
    for m in SUMMARY.iter().chain([Metric::LimiterLimit].iter()) {
        for r in &o.runs {
            if !m.present(&r.out) {
                continue;
            }
            let mut row = vec![m.name().to_string(), r.label.clone()];
            row.extend(
                ws.iter()
                    .map(|(_, range)| show(*m, value(&r.out, *m, None, range.clone()))),
            );
            t.row(row);
        }
    }
    t
}

pub fn assertions_table(o: &Outcome) -> Table {
    let mut header = vec!["assertion".to_string(), "window used".to_string()];
    for r in &o.runs {
        header.push(r.label.clone());
    }
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new("assertions", "Assertions", &h);
    for (i, a) in o.assertions.iter().enumerate() {
        let span = o.runs[0].verdicts[i].span;
        let mut row = vec![
            a.text.clone(),
            format!("[{} s, {} s)", num(span.0), num(span.1)),
        ];
        for r in &o.runs {
            let v = &r.verdicts[i];
            row.push(format!(
                "{} {}",
                if v.pass { "PASS" } else { "FAIL" },
                show(a.metric, v.measured)
            ));
        }
        t.row(row);
    }
    t
}

/// One CSV of every series of one run.
pub fn series_csv(r: &Run) -> String {
    let out = &r.out;
    let present: Vec<&(&str, Metric, &str, &str)> =
        METRICS.iter().filter(|(_, m, ..)| m.present(out)).collect();
    let mut s = String::from("time_s");
    for (n, ..) in &present {
        let _ = write!(s, ",{n}");
    }
    if out.groups.len() > 1 {
        for g in &out.groups {
            for m in [Metric::Offered, Metric::Goodput, Metric::LatencyP99] {
                let _ = write!(s, ",{}[{g}]", m.name());
            }
        }
    }
    s.push('\n');
    let w = out.bucket.as_secs_f64();
    let cell = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
    for i in 0..out.buckets.len() {
        let _ = write!(s, "{:.3}", i as f64 * w);
        for (_, m, ..) in &present {
            let _ = write!(s, ",{}", cell(value(out, *m, None, i..i + 1)));
        }
        if out.groups.len() > 1 {
            for g in 0..out.groups.len() {
                for m in [Metric::Offered, Metric::Goodput, Metric::LatencyP99] {
                    let _ = write!(s, ",{}", cell(value(out, m, Some(g), i..i + 1)));
                }
            }
        }
        s.push('\n');
    }
    s
}

/// The x axis: seconds, minutes or hours, whichever reads best for the run's length.
fn time_unit(secs: f64) -> (f64, &'static str) {
    if secs >= 7200.0 {
        (3600.0, "time (h)")
    } else if secs >= 600.0 {
        (60.0, "time (min)")
    } else {
        (1.0, "time (s)")
    }
}

fn chart(o: &Outcome, title: &str, y: &str, lines: &[(Metric, &str)]) -> Chart {
    let (scale, x_label) = time_unit(o.scenario.run.duration.secs());
    let mut series = Vec::new();
    let offered = |r: &Run| -> Vec<Option<f64>> {
        (0..r.out.buckets.len())
            .map(|i| value(&r.out, Metric::Offered, None, i..i + 1))
            .collect()
    };
    let offered_shared = o.runs.iter().all(|r| offered(r) == offered(&o.runs[0]));
    for r in &o.runs {
        let w = r.out.bucket.as_secs_f64();
        for (m, name) in lines {
            if !m.present(&r.out) {
                continue;
            }
            let points: Vec<(f64, f64)> = (0..r.out.buckets.len())
                .filter_map(|i| {
                    value(&r.out, *m, None, i..i + 1).map(|v| (((i as f64) + 0.5) * w / scale, v))
                })
                .collect();
            // The same open-loop arrivals reach every pipeline: one line says so.
            let shared = *m == Metric::Offered && offered_shared;
            if shared && !std::ptr::eq(r, &o.runs[0]) {
                continue;
            }
            let label = if o.runs.len() == 1 || shared {
                name.to_string()
            } else if lines.len() == 1 {
                r.label.clone()
            } else {
                format!("{}: {name}", r.label)
            };
            series.push(Series {
                name: label,
                points,
                dashed: false,
            });
        }
    }
    // Episodes as dashed outlines reaching the top of the data.
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let mut eps: Vec<_> = o.scenario.episodes.iter().collect();
    eps.sort_by_key(|e| e.1.from.0);
    for (name, e) in eps {
        let (a, b) = (
            e.from.secs() / scale,
            e.to.secs().min(o.scenario.run.duration.secs()) / scale,
        );
        series.push(Series {
            name: format!("{name} (episode)"),
            points: vec![(a, 0.0), (a, top), (b, top), (b, 0.0)],
            dashed: true,
        });
    }
    Chart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y.into(),
        series,
        log_y: false,
    }
}

pub fn charts(o: &Outcome) -> Vec<(&'static str, Chart)> {
    let mut v = vec![
        (
            "load",
            chart(
                o,
                "Offered load and load reaching the upstream",
                "per second",
                &[
                    (Metric::Offered, "offered"),
                    (Metric::UpstreamLoad, "at the upstream"),
                ],
            ),
        ),
        (
            "amplification",
            chart(
                o,
                "Load amplification",
                "attempts at the upstream ÷ calls",
                &[(Metric::LoadAmplification, "amplification")],
            ),
        ),
        (
            "goodput",
            chart(
                o,
                "Goodput",
                "share of calls that succeeded",
                &[(Metric::Goodput, "goodput")],
            ),
        ),
        (
            "latency",
            chart(
                o,
                "Call latency (start to end, any outcome)",
                "seconds",
                &[(Metric::LatencyP50, "p50"), (Metric::LatencyP99, "p99")],
            ),
        ),
        (
            "queue",
            chart(
                o,
                "Upstream queue length",
                "requests waiting",
                &[(Metric::QueueLength, "queue")],
            ),
        ),
    ];
    let gauges = [
        (
            "breaker",
            Metric::BreakerOpen,
            "Breaker state",
            "0 closed, 0.5 half-open, 1 open",
        ),
        (
            "limiter",
            Metric::LimiterLimit,
            "Adaptive limiter's limit",
            "calls in flight",
        ),
        (
            "throttler",
            Metric::ThrottlerRejection,
            "Throttler rejection probability",
            "probability",
        ),
        (
            "budget",
            Metric::BudgetBalance,
            "Retry budget balance",
            "tokens / retries left",
        ),
    ];
    for (file, m, title, y) in gauges {
        if o.runs.iter().any(|r| m.present(&r.out)) {
            v.push((file, chart(o, title, y, &[(m, m.name())])));
        }
    }
    v
}

/// Writes the report directory: `report.md`, one SVG per chart, one CSV per pipeline, and
/// the summary and assertions as CSV.
pub fn write_report(o: &Outcome, dir: &Path, command: &str, quick: bool) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let sc = &o.scenario;
    let mut md = format!("# {}\n\n", sc.title.as_deref().unwrap_or("Scenario"));
    if let Some(d) = &sc.description {
        let _ = writeln!(md, "{}\n", d.trim());
    }
    let _ = writeln!(
        md,
        "`{command}`  \nseed {}, profile {}, {} s of calls in buckets of {} s; {} instance(s) of each pipeline.\n",
        o.seed,
        if quick { "quick" } else { "full" },
        fmt_num(sc.run.duration.secs()),
        fmt_num(o.runs[0].out.bucket.as_secs_f64()),
        sc.run.instances
    );
    let summary = summary(o);
    md.push_str(&summary.markdown());
    fs::write(dir.join("summary.csv"), summary.csv())?;
    if !o.assertions.is_empty() {
        let t = assertions_table(o);
        md.push('\n');
        md.push_str(&t.markdown());
        fs::write(dir.join("assertions.csv"), t.csv())?;
        if o.runs.len() > 1 {
            let _ = writeln!(
                md,
                "\n`--check` judges the first pipeline, `{}`.",
                o.runs[0].label
            );
        }
    }
    md.push('\n');
    for (name, c) in charts(o) {
        let file = format!("{name}.svg");
        fs::write(dir.join(&file), c.render())?;
        let _ = writeln!(md, "![{}]({file})\n", c.title);
    }
    md.push_str("## Data\n\n");
    for (i, r) in o.runs.iter().enumerate() {
        let file = if o.runs.len() == 1 {
            "series.csv".to_string()
        } else {
            format!("series-{}.csv", i + 1)
        };
        fs::write(dir.join(&file), series_csv(r))?;
        let _ = writeln!(md, "- `{}`: [{file}]({file}), one row per bucket", r.label);
    }
    md.push_str("\n## Pipelines\n\n");
    for r in &o.runs {
        // What ran, in the service's format (absent fields stay absent).
        let config = resilix_config::Config {
            budgets: r.source.budgets.clone(),
            pipelines: [(r.label.clone(), r.source.pipeline.clone())].into(),
        };
        let _ = writeln!(
            md,
            "`{}`, as a service's config file:\n\n```toml\n{}```\n",
            r.label,
            config.to_toml_string()
        );
    }
    md.push_str("## Metrics\n\n| name | unit | what |\n|---|---|---|\n");
    for (n, _, unit, what) in METRICS {
        let _ = writeln!(md, "| `{n}` | {unit} | {what} |");
    }
    fs::write(dir.join("report.md"), md)
}

/// `sim scenario`: run, print, write, judge. The exit status: 0, or 1 when `--check` finds a
/// failed assertion.
pub fn main(o: &Options, command: &str) -> Result<bool, String> {
    let outcome = simulate(o)?;
    let dir = o
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("sim-out").join(stem(&o.file)));
    println!("{}", summary(&outcome).text());
    if !outcome.assertions.is_empty() {
        println!("{}", assertions_table(&outcome).text());
    }
    write_report(&outcome, &dir, command, o.quick)
        .map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    let failed = outcome.failed();
    for (i, v) in &failed {
        let a = &outcome.assertions[*i];
        println!(
            "FAIL {:?}: measured {} over [{} s, {} s)",
            a.text,
            v.measured
                .map_or("nothing (no data in the window)".to_string(), |m| show(
                    a.metric,
                    Some(m)
                )),
            num(v.span.0),
            num(v.span.1)
        );
    }
    for r in &outcome.runs {
        println!(
            "{}: {} events; the last call drained at {} s",
            r.label,
            r.out.events,
            fmt_num(r.out.end.since_origin().as_secs_f64())
        );
    }
    println!(
        "{} assertion(s), {} failed for {}; report in {}",
        outcome.assertions.len(),
        failed.len(),
        outcome.runs[0].label,
        dir.join("report.md").display()
    );
    if o.check && outcome.assertions.is_empty() {
        println!("--check: the scenario has no [[assert]], so nothing was checked");
        return Ok(false);
    }
    Ok(!o.check || failed.is_empty())
}
