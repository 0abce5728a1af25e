//! The comparisons the issue asks about, each judged against its goal, and the markdown they
//! print as. Pure: estimates in, text out.

use std::fmt::Write as _;

use crate::parse::Estimates;

/// A figure read from the estimates: one benchmark, or one minus another (the overhead a
/// stack adds over the bare call).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// One benchmark's median, in ns.
    Bench(&'static str),
    /// The first benchmark's median minus the second's.
    Over(&'static str, &'static str),
    /// The first minus the second, plus the third: an overhead with one more measured part.
    OverPlus(&'static str, &'static str, &'static str),
}

impl Measure {
    /// The figure, if every benchmark it needs was run.
    pub fn value(self, est: &Estimates) -> Option<f64> {
        match self {
            Measure::Bench(id) => est.get(id).copied(),
            Measure::Over(a, b) => Some(est.get(a)? - est.get(b)?),
            Measure::OverPlus(a, b, c) => Some(est.get(a)? - est.get(b)? + est.get(c)?),
        }
    }
}

/// What a row must show to meet its goal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Goal {
    /// No goal: shown for reference.
    None,
    /// ours ÷ peer at most this.
    RatioAtMost(f64),
    /// ours at most this many nanoseconds.
    NsAtMost(f64),
}

impl Goal {
    fn describe(self, peer: &str) -> String {
        match self {
            Goal::None => "—".to_string(),
            Goal::RatioAtMost(1.0) => format!("≤ {peer}"),
            Goal::RatioAtMost(r) => format!("≤ {r} × {peer}"),
            Goal::NsAtMost(ns) => format!("≤ {ns} ns"),
        }
    }

    /// Whether `ours` (and the ratio to the peer, if there is a peer) meets the goal; `None`
    /// when there is no goal or a figure is missing.
    pub fn met(self, ours: Option<f64>, ratio: Option<f64>) -> Option<bool> {
        match self {
            Goal::None => None,
            Goal::RatioAtMost(r) => ratio.map(|x| x <= r),
            Goal::NsAtMost(ns) => ours.map(|x| x <= ns),
        }
    }
}

/// One line of the main table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// What is compared.
    pub op: &'static str,
    /// Our figure.
    pub ours: Measure,
    /// Who we are compared with.
    pub peer_name: &'static str,
    /// Their figure.
    pub peer: Option<Measure>,
    /// The goal from issue 10.
    pub goal: Goal,
}

/// The cells of one row for one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cells {
    /// Our figure, ns.
    pub ours: Option<f64>,
    /// The peer's figure, ns.
    pub peer: Option<f64>,
    /// ours ÷ peer.
    pub ratio: Option<f64>,
    /// Whether the goal is met.
    pub met: Option<bool>,
}

impl Row {
    /// This row's cells in one run.
    pub fn cells(&self, est: &Estimates) -> Cells {
        let ours = self.ours.value(est);
        let peer = self.peer.and_then(|p| p.value(est));
        let ratio = match (ours, peer) {
            (Some(o), Some(p)) if p > 0.0 => Some(o / p),
            _ => None,
        };
        Cells {
            ours,
            peer,
            ratio,
            met: self.goal.met(ours, ratio),
        }
    }
}

const fn row(
    op: &'static str,
    ours: &'static str,
    peer_name: &'static str,
    peer: &'static str,
    goal: Goal,
) -> Row {
    Row {
        op,
        ours: Measure::Bench(ours),
        peer_name,
        peer: Some(Measure::Bench(peer)),
        goal,
    }
}

const CAS_2T: &str = "floor/cas/2t";
const BARE: &str = "async/bare/call/1t";
/// The async bench leaves the rate limiter out of its pipeline (it cannot admit millions of
/// calls a second); its measured allowed path is added back.
const RATE_LIMIT: &str = "rate_limit/resilix/allowed/1t";
const TOKIO_EXECUTE: &str = "async/resilix-tokio-execute/call/1t";

/// The comparisons of issue 10, in the order its goals are stated.
pub const ROWS: &[Row] = &[
    // single thread, beside the peer a user would pick instead
    row(
        "rate limiter: allowed",
        "rate_limit/resilix/allowed/1t",
        "governor",
        "rate_limit/governor/allowed/1t",
        Goal::RatioAtMost(1.0),
    ),
    row(
        "rate limiter: refused",
        "rate_limit/resilix/refused/1t",
        "governor",
        "rate_limit/governor/refused/1t",
        Goal::RatioAtMost(1.0),
    ),
    row(
        "breaker closed (time window): admit+settle",
        "breaker/resilix/closed/admit+settle/1t",
        "recloser",
        "breaker/recloser/closed/admit+settle/1t",
        Goal::RatioAtMost(0.7),
    ),
    row(
        "breaker closed (100-call window): admit+settle",
        "breaker/resilix/closed-count/admit+settle/1t",
        "recloser",
        "breaker/recloser/closed/admit+settle/1t",
        Goal::RatioAtMost(0.7),
    ),
    row(
        "breaker closed (time window): admit+settle",
        "breaker/resilix/closed/admit+settle/1t",
        "failsafe",
        "breaker/failsafe/closed/admit+settle/1t",
        Goal::None,
    ),
    row(
        "breaker open: refused",
        "breaker/resilix/open/refused/1t",
        "recloser",
        "breaker/recloser/open/refused/1t",
        Goal::None,
    ),
    row(
        "breaker open: refused",
        "breaker/resilix/open/refused/1t",
        "failsafe",
        "breaker/failsafe/open/refused/1t",
        Goal::None,
    ),
    row(
        "retry budget: deposit+withdraw",
        "retry/resilix/budget/deposit+withdraw/1t",
        "tower TpsBudget",
        "retry/tower-tpsbudget/deposit+withdraw/1t",
        Goal::RatioAtMost(0.25),
    ),
    row(
        "bulkhead: admit+settle",
        "bulkhead/resilix/admit+settle/1t",
        "tokio Semaphore",
        "bulkhead/tokio-semaphore/try_acquire+drop/1t",
        Goal::RatioAtMost(0.7),
    ),
    row(
        "bulkhead: refused",
        "bulkhead/resilix/refused/1t",
        "tokio Semaphore",
        "bulkhead/tokio-semaphore/refused/1t",
        Goal::None,
    ),
    row(
        "one backoff delay",
        "retry/resilix/backoff-delay/1t",
        "backon",
        "retry/backon/backoff-delay/1t",
        Goal::RatioAtMost(1.0),
    ),
    Row {
        op: "full pipeline: admit+settle",
        ours: Measure::Bench("pipeline/resilix/full/admit+settle/1t"),
        peer_name: "—",
        peer: None,
        goal: Goal::NsAtMost(80.0),
    },
    // two threads on one shared instance
    row(
        "2 threads: breaker closed admit+settle",
        "breaker/resilix/closed/admit+settle/2t",
        "recloser (2 threads)",
        "breaker/recloser/closed/admit+settle/2t",
        Goal::RatioAtMost(0.25),
    ),
    row(
        "2 threads: throttler admit+settle",
        "throttler/resilix/healthy/admit+settle/2t",
        "recloser (2 threads)",
        "breaker/recloser/closed/admit+settle/2t",
        Goal::RatioAtMost(0.25),
    ),
    row(
        "2 threads: breaker closed admit+settle",
        "breaker/resilix/closed/admit+settle/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: throttler admit+settle",
        "throttler/resilix/healthy/admit+settle/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: rate limiter allowed",
        "rate_limit/resilix/allowed/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: bulkhead admit+settle",
        "bulkhead/resilix/admit+settle/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: limiter admit+settle",
        "limiter/resilix/gradient2/admit+settle/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: retry budget",
        "retry/resilix/budget/deposit+withdraw/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: histogram record",
        "histogram/resilix/record/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::RatioAtMost(2.0),
    ),
    row(
        "2 threads: full pipeline",
        "pipeline/resilix/full/admit+settle/2t",
        "2 × contended CAS",
        CAS_2T,
        Goal::None,
    ),
    // async, per call over the bare call
    Row {
        op: "tokio: added per call, resilix-tokio execute (full pipeline + deadline)",
        ours: Measure::OverPlus(TOKIO_EXECUTE, BARE, RATE_LIMIT),
        peer_name: "tower 5-layer stack",
        peer: Some(Measure::Over("async/tower-stack/call/1t", BARE)),
        goal: Goal::NsAtMost(200.0),
    },
    Row {
        op: "tokio: added per call, resilix-tokio execute (full pipeline + deadline)",
        ours: Measure::OverPlus(TOKIO_EXECUTE, BARE, RATE_LIMIT),
        peer_name: "tower-resilience 4 layers",
        peer: Some(Measure::Over("async/tower-resilience/call/1t", BARE)),
        goal: Goal::None,
    },
    Row {
        op: "tokio: added per call, resilix-tokio execute (full pipeline + deadline)",
        ours: Measure::OverPlus(TOKIO_EXECUTE, BARE, RATE_LIMIT),
        peer_name: "tokio::time::timeout alone",
        peer: Some(Measure::Over("async/tokio-timeout/call/1t", BARE)),
        goal: Goal::None,
    },
    Row {
        op: "tokio: added per call, core execute + tokio timer (full pipeline + deadline)",
        ours: Measure::OverPlus("async/resilix-core-execute/call/1t", BARE, RATE_LIMIT),
        peer_name: "tower 5-layer stack",
        peer: Some(Measure::Over("async/tower-stack/call/1t", BARE)),
        goal: Goal::NsAtMost(200.0),
    },
    Row {
        op: "tokio: added per call, resilix-tokio execute without a deadline",
        ours: Measure::OverPlus(
            "async/resilix-tokio-execute-no-deadline/call/1t",
            BARE,
            RATE_LIMIT,
        ),
        peer_name: "tower 5-layer stack",
        peer: Some(Measure::Over("async/tower-stack/call/1t", BARE)),
        goal: Goal::None,
    },
    Row {
        op: "tokio: added per call, resilix-tokio tower Layer (full pipeline + deadline)",
        ours: Measure::OverPlus("async/resilix-tokio-layer/call/1t", BARE, RATE_LIMIT),
        peer_name: "tower 5-layer stack",
        peer: Some(Measure::Over("async/tower-stack/call/1t", BARE)),
        goal: Goal::NsAtMost(200.0),
    },
];

fn ns(x: Option<f64>) -> String {
    match x {
        None => "—".to_string(),
        Some(x) if x.abs() < 10.0 => format!("{x:.2}"),
        Some(x) if x.abs() < 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.0}"),
    }
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("—".to_string(), |r| format!("{r:.2}"))
}

/// "yes" when every run that measured it met the goal, "no" when none did, "mixed" between;
/// "—" without a goal, "not measured" when no run has the figures.
pub fn verdict(runs: &[Cells], goal: Goal) -> &'static str {
    if goal == Goal::None {
        return "—";
    }
    let judged: Vec<bool> = runs.iter().filter_map(|c| c.met).collect();
    match (judged.iter().all(|&m| m), judged.iter().any(|&m| m)) {
        _ if judged.is_empty() => "not measured",
        (true, _) => "yes",
        (false, true) => "mixed",
        (false, false) => "no",
    }
}

/// Whether two threads really fought over one cache line in this run: a compare-and-swap
/// loop on one shared word must then cost well over twice its uncontended time. On a machine
/// busy with other work the two bench threads seldom run at the same moment, and the
/// two-thread figures are single-thread figures in disguise.
pub fn contended(est: &Estimates) -> Option<bool> {
    let one = est.get("floor/cas/1t")?;
    let two = est.get(CAS_2T)?;
    Some(*two >= 2.0 * *one)
}

impl Row {
    /// A row about two threads on one instance.
    fn two_threads(&self) -> bool {
        matches!(self.ours, Measure::Bench(id) if id.ends_with("/2t"))
    }
}

/// The main table: per row, each run's ours / peer / ratio, then the goal and the verdict.
/// Two-thread goals are not judged in a run where the threads did not contend (see
/// [`contended`]).
pub fn comparison_table(runs: &[(String, Estimates)]) -> String {
    let mut out = String::from("| operation | compared with |");
    for (name, _) in runs {
        let _ = write!(out, " ours {name} (ns) | peer {name} (ns) | ratio {name} |");
    }
    out.push_str(" goal | met |\n|---|---|");
    for _ in runs {
        out.push_str("---:|---:|---:|");
    }
    out.push_str("---|---|\n");
    for row in ROWS {
        let cells: Vec<Cells> = runs
            .iter()
            .map(|(_, est)| {
                let mut c = row.cells(est);
                if row.two_threads() && contended(est) != Some(true) {
                    c.met = None;
                }
                c
            })
            .collect();
        if cells.iter().all(|c| c.ours.is_none() && c.peer.is_none()) {
            continue;
        }
        let _ = write!(out, "| {} | {} |", row.op, row.peer_name);
        for c in &cells {
            let _ = write!(
                out,
                " {} | {} | {} |",
                ns(c.ours),
                ns(c.peer),
                ratio(c.ratio)
            );
        }
        let peer = match row.goal {
            Goal::RatioAtMost(_) if row.peer == Some(Measure::Bench(CAS_2T)) => "contended CAS",
            _ => row.peer_name,
        };
        let judged = match verdict(&cells, row.goal) {
            "not measured" if row.two_threads() && cells.iter().any(|c| c.ours.is_some()) => {
                "not judged: no contention in these runs"
            }
            v => v,
        };
        let _ = writeln!(out, " {} | {} |", row.goal.describe(peer), judged);
    }
    out
}

/// Every benchmark measured on one thread and on two: the per-op cost each thread saw, and how
/// much sharing the instance slowed it down.
pub fn contention_table(runs: &[(String, Estimates)]) -> String {
    let mut out = String::from("| operation |");
    for (name, _) in runs {
        let _ = write!(
            out,
            " 1 thread {name} (ns) | 2 threads {name} (ns) | slowdown {name} |"
        );
    }
    out.push_str("\n|---|");
    for _ in runs {
        out.push_str("---:|---:|---:|");
    }
    out.push('\n');
    let mut ids: Vec<&String> = runs.iter().flat_map(|(_, est)| est.keys()).collect();
    ids.sort();
    ids.dedup();
    for one in ids {
        let Some(stem) = one.strip_suffix("/1t") else {
            continue;
        };
        let two = format!("{stem}/2t");
        if !runs.iter().any(|(_, est)| est.contains_key(&two)) {
            continue;
        }
        let _ = write!(out, "| {stem} |");
        for (_, est) in runs {
            let (a, b) = (est.get(one.as_str()).copied(), est.get(&two).copied());
            let slow = match (a, b) {
                (Some(a), Some(b)) if a > 0.0 => Some(b / a),
                _ => None,
            };
            let _ = write!(out, " {} | {} | {} |", ns(a), ns(b), ratio(slow));
        }
        out.push('\n');
    }
    out
}

/// `name count` lines (the async bench's `allocations.txt`) as a table.
pub fn allocation_table(text: &str) -> String {
    let mut out = String::from("| stack | heap allocations per call |\n|---|---:|\n");
    for line in text.lines() {
        if let Some((name, n)) = line.rsplit_once(' ')
            && let Ok(n) = n.parse::<f64>()
        {
            let _ = writeln!(
                out,
                "| {name} | {} |",
                format!("{n:.1}").trim_end_matches(".0")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(pairs: &[(&str, f64)]) -> Estimates {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn measures_read_one_bench_or_a_difference() {
        let e = est(&[("a", 150.0), ("b", 40.0)]);
        assert_eq!(Measure::Bench("a").value(&e), Some(150.0));
        assert_eq!(Measure::Over("a", "b").value(&e), Some(110.0));
        assert_eq!(Measure::Over("a", "missing").value(&e), None);
        assert_eq!(Measure::Bench("missing").value(&e), None);
        assert_eq!(Measure::OverPlus("a", "b", "b").value(&e), Some(150.0));
    }

    #[test]
    fn goals_judge_the_ratio_or_the_figure() {
        assert_eq!(Goal::RatioAtMost(0.7).met(Some(7.0), Some(0.7)), Some(true));
        assert_eq!(
            Goal::RatioAtMost(0.7).met(Some(7.1), Some(0.71)),
            Some(false)
        );
        assert_eq!(Goal::RatioAtMost(0.7).met(Some(7.0), None), None);
        assert_eq!(Goal::NsAtMost(80.0).met(Some(80.0), None), Some(true));
        assert_eq!(Goal::NsAtMost(80.0).met(Some(80.5), Some(0.1)), Some(false));
        assert_eq!(Goal::None.met(Some(1.0), Some(1.0)), None);
    }

    #[test]
    fn a_row_divides_ours_by_the_peer() {
        let r = row("x", "ours", "peer", "theirs", Goal::RatioAtMost(0.25));
        let c = r.cells(&est(&[("ours", 20.0), ("theirs", 100.0)]));
        assert_eq!(c.ratio, Some(0.2));
        assert_eq!(c.met, Some(true));
        let c = r.cells(&est(&[("ours", 30.0), ("theirs", 100.0)]));
        assert_eq!(c.met, Some(false));
        let c = r.cells(&est(&[("ours", 30.0), ("theirs", 0.0)]));
        assert_eq!(c.ratio, None, "no ratio to a zero");
    }

    #[test]
    fn the_verdict_spans_runs() {
        let cell = |met| Cells {
            ours: Some(1.0),
            peer: Some(1.0),
            ratio: Some(1.0),
            met,
        };
        let g = Goal::RatioAtMost(1.0);
        assert_eq!(verdict(&[cell(Some(true)), cell(Some(true))], g), "yes");
        assert_eq!(verdict(&[cell(Some(true)), cell(Some(false))], g), "mixed");
        assert_eq!(verdict(&[cell(Some(false)), cell(Some(false))], g), "no");
        assert_eq!(verdict(&[cell(None), cell(None)], g), "not measured");
        assert_eq!(verdict(&[cell(Some(false))], Goal::None), "—");
    }

    #[test]
    fn the_table_shows_measured_rows_and_skips_unmeasured_ones() {
        let run = est(&[
            ("bulkhead/resilix/admit+settle/1t", 10.0),
            ("bulkhead/tokio-semaphore/try_acquire+drop/1t", 20.0),
            ("pipeline/resilix/full/admit+settle/1t", 90.0),
        ]);
        let t = comparison_table(&[("run1".into(), run.clone()), ("run2".into(), run)]);
        assert!(t.contains("| bulkhead: admit+settle | tokio Semaphore | 10.0 | 20.0 | 0.50 | 10.0 | 20.0 | 0.50 | ≤ 0.7 × tokio Semaphore | yes |"), "{t}");
        assert!(
            t.contains(
                "| full pipeline: admit+settle | — | 90.0 | — | — | 90.0 | — | — | ≤ 80 ns | no |"
            ),
            "{t}"
        );
        assert!(
            !t.contains("rate limiter"),
            "unmeasured rows are left out: {t}"
        );
        assert!(t.starts_with("| operation | compared with | ours run1 (ns)"));
    }

    #[test]
    fn async_rows_compare_overheads_over_the_bare_call() {
        let run = est(&[
            ("async/bare/call/1t", 2.0),
            ("async/resilix-tokio-execute/call/1t", 132.0),
            ("async/tower-stack/call/1t", 262.0),
            ("rate_limit/resilix/allowed/1t", 5.0),
        ]);
        let t = comparison_table(&[("new".into(), run)]);
        assert!(t.contains("| tokio: added per call, resilix-tokio execute (full pipeline + deadline) | tower 5-layer stack | 135 | 260 | 0.52 | ≤ 200 ns | yes |"), "{t}");
    }

    #[test]
    fn two_thread_goals_wait_for_real_contention() {
        let quiet = est(&[
            ("floor/cas/1t", 5.0),
            ("floor/cas/2t", 5.5),
            ("bulkhead/resilix/admit+settle/2t", 15.0),
        ]);
        let t = comparison_table(&[("a".into(), quiet.clone())]);
        assert!(t.contains("| 15.0 | 5.50 | 2.73 | ≤ 2 × contended CAS | not judged: no contention in these runs |"), "{t}");
        let busy = est(&[
            ("floor/cas/1t", 5.0),
            ("floor/cas/2t", 40.0),
            ("bulkhead/resilix/admit+settle/2t", 60.0),
        ]);
        assert_eq!(contended(&busy), Some(true));
        assert_eq!(contended(&quiet), Some(false));
        let t = comparison_table(&[("a".into(), busy)]);
        assert!(
            t.contains("| 60.0 | 40.0 | 1.50 | ≤ 2 × contended CAS | yes |"),
            "{t}"
        );
    }

    #[test]
    fn contention_pairs_one_and_two_threads() {
        let run = est(&[("a/x/1t", 10.0), ("a/x/2t", 35.0), ("b/1t", 5.0)]);
        let t = contention_table(&[("new".into(), run)]);
        assert!(t.contains("| a/x | 10.0 | 35.0 | 3.50 |"), "{t}");
        assert!(!t.contains("| b |"), "no two-thread figure, no row: {t}");
    }

    #[test]
    fn allocations_become_a_table() {
        let t = allocation_table("async/bare 0\nasync/tower-resilience 10.0001\nnoise\n");
        assert!(t.contains("| async/bare | 0 |"), "{t}");
        assert!(t.contains("| async/tower-resilience | 10 |"), "{t}");
        assert!(!t.contains("noise"));
    }
}
