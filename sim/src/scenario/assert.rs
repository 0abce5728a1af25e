//! Assertions a scenario makes about its run, one line each:
//!
//! ```text
//! load_amplification < 1.2 during outage
//! goodput > 90% after outage + 30s
//! max(queue_length) <= 50 from 2m to slowdown.end
//! latency_p99[checkout] < 800ms before slowdown
//! ```
//!
//! ```text
//! line   := figure OP value [window]
//! figure := [max( | min(] METRIC [ '[' CLIENT ']' ] [)]
//! OP     := <  <=  >  >=
//! value  := a number; 90% for 0.9; 250ms, 2s for latencies (seconds otherwise)
//! window := during EPISODE | after TIME | before TIME | from TIME [to TIME] | overall
//! TIME   := (EPISODE | EPISODE.start | EPISODE.end | DURATION | start | end) [+ DURATION | - DURATION]
//! ```
//!
//! `after EPISODE` starts at the episode's end and `before EPISODE` ends at its start; no
//! window means the whole run. A figure is taken over the window as a whole (its totals,
//! then the ratio or the percentile); `max(..)`/`min(..)` take the largest or smallest of
//! its time-series points instead. Windows are narrowed to whole time-series buckets, and the
//! report prints the span actually used.

use std::ops::Range;

use super::engine::RunOutput;
use super::file::Scenario;
use super::metrics::{Agg, METRICS, Metric, aggregate};
use super::units::duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Assertion {
    pub text: String,
    pub agg: Agg,
    pub metric: Metric,
    pub group: Option<usize>,
    pub op: Op,
    pub value: f64,
    /// `[from, to)` in seconds.
    pub window: (f64, f64),
}

/// One assertion's outcome on one run.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub measured: Option<f64>,
    pub pass: bool,
    /// The span actually measured, in seconds.
    pub span: (f64, f64),
}

fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let special = matches!(c, '<' | '>' | '(' | ')' | '[' | ']' | '+') || c.is_whitespace();
        if special && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        match c {
            '<' | '>' => {
                if chars.peek() == Some(&'=') {
                    chars.next();
                    out.push(format!("{c}="));
                } else {
                    out.push(c.to_string());
                }
            }
            '(' | ')' | '[' | ']' | '+' => out.push(c.to_string()),
            c if c.is_whitespace() => {}
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn number(v: &str, m: Metric, line: &str) -> Result<f64, String> {
    if let Some(p) = v.strip_suffix('%') {
        let x: f64 = p
            .parse()
            .map_err(|_| format!("assert {line:?}: cannot read {v:?} as a percentage"))?;
        return Ok(x / 100.0);
    }
    if let Ok(x) = v.parse::<f64>() {
        return Ok(x);
    }
    if m.is_latency() {
        return duration(v)
            .map(|d| d.as_secs_f64())
            .map_err(|e| format!("assert {line:?}: {e}"));
    }
    Err(format!(
        "assert {line:?}: {v:?} is not a number ({} is in {}; durations like 250ms are for latencies)",
        m.name(),
        m.unit()
    ))
}

struct Cursor<'t> {
    t: &'t [String],
    i: usize,
    line: &'t str,
}

impl<'t> Cursor<'t> {
    fn peek(&self) -> Option<&str> {
        self.t.get(self.i).map(String::as_str)
    }
    fn next(&mut self, what: &str) -> Result<&'t str, String> {
        let v = self
            .t
            .get(self.i)
            .ok_or_else(|| format!("assert {:?}: ends where {what} was expected", self.line))?;
        self.i += 1;
        Ok(v)
    }
    fn expect(&mut self, tok: &str) -> Result<(), String> {
        let v = self.next(&format!("`{tok}`"))?;
        if v != tok {
            return Err(format!(
                "assert {:?}: expected `{tok}`, found `{v}`",
                self.line
            ));
        }
        Ok(())
    }
}

/// A point in time: an episode's edge or a duration, shifted.
fn time(c: &mut Cursor, sc: &Scenario, default_edge: Edge) -> Result<f64, String> {
    let line = c.line;
    let word =
        c.next("a time (an episode, EPISODE.start, EPISODE.end, a duration, start or end)")?;
    let episode = |name: &str, edge: Edge| -> Result<f64, String> {
        let e = sc.episodes.get(name).ok_or_else(|| {
            let names: Vec<&str> = sc.episodes.keys().map(String::as_str).collect();
            format!(
                "assert {line:?}: no episode {name:?} (episodes: {}; or a duration like 90s, start, end)",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )
        })?;
        Ok(match edge {
            Edge::Start => e.from.secs(),
            Edge::End => e.to.secs(),
        })
    };
    let mut t = if word == "end" {
        sc.run.duration.secs()
    } else if word == "start" {
        0.0
    } else if let Some(name) = word.strip_suffix(".start") {
        episode(name, Edge::Start)?
    } else if let Some(name) = word.strip_suffix(".end") {
        episode(name, Edge::End)?
    } else if word.starts_with(|ch: char| ch.is_ascii_digit()) {
        duration(word)
            .map_err(|e| format!("assert {line:?}: {e}"))?
            .as_secs_f64()
    } else {
        episode(word, default_edge)?
    };
    while let Some(sign @ ("+" | "-")) = c.peek() {
        let plus = sign == "+";
        c.i += 1;
        let d = c.next("a duration")?;
        let d = duration(d)
            .map_err(|e| format!("assert {line:?}: {e}"))?
            .as_secs_f64();
        t += if plus { d } else { -d };
    }
    Ok(t)
}

#[derive(Clone, Copy)]
enum Edge {
    Start,
    End,
}

impl Assertion {
    pub fn parse(line: &str, sc: &Scenario) -> Result<Assertion, String> {
        let toks = tokens(line);
        let mut c = Cursor {
            t: &toks,
            i: 0,
            line,
        };
        let first = c.next("a metric")?;
        let (agg, name) = match (first, c.peek()) {
            ("max", Some("(")) => {
                c.i += 1;
                (Agg::Max, c.next("a metric")?)
            }
            ("min", Some("(")) => {
                c.i += 1;
                (Agg::Min, c.next("a metric")?)
            }
            (name, _) => (Agg::Whole, name),
        };
        let metric = Metric::parse(name).map_err(|e| format!("assert {line:?}: {e}"))?;
        let mut group = None;
        if c.peek() == Some("[") {
            c.i += 1;
            let g = c.next("a client name")?;
            if !metric.per_group() {
                let ok: Vec<&str> = METRICS
                    .iter()
                    .filter(|(_, m, ..)| m.per_group())
                    .map(|(n, ..)| *n)
                    .collect();
                return Err(format!(
                    "assert {line:?}: {name} is not per client; these are: {}",
                    ok.join(", ")
                ));
            }
            group = Some(sc.clients.keys().position(|k| k == g).ok_or_else(|| {
                let names: Vec<&str> = sc.clients.keys().map(String::as_str).collect();
                format!(
                    "assert {line:?}: no client {g:?} (clients: {})",
                    names.join(", ")
                )
            })?);
            c.expect("]")?;
        }
        if agg != Agg::Whole {
            c.expect(")")?;
        }
        let op = match c.next("an operator (<, <=, >, >=)")? {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            other => {
                return Err(format!(
                    "assert {line:?}: `{other}` is not an operator: <, <=, > or >="
                ));
            }
        };
        let value = number(c.next("a value")?, metric, line)?;
        let end = sc.run.duration.secs();
        let window = match c.peek() {
            None | Some("overall") => {
                c.i += usize::from(c.peek().is_some());
                (0.0, end)
            }
            Some("during") => {
                c.i += 1;
                let name = c.next("an episode")?;
                let from = time(
                    &mut Cursor {
                        t: &[format!("{name}.start")],
                        i: 0,
                        line,
                    },
                    sc,
                    Edge::Start,
                )?;
                let to = time(
                    &mut Cursor {
                        t: &[format!("{name}.end")],
                        i: 0,
                        line,
                    },
                    sc,
                    Edge::End,
                )?;
                (from, to)
            }
            Some("after") => {
                c.i += 1;
                (time(&mut c, sc, Edge::End)?, end)
            }
            Some("before") => {
                c.i += 1;
                (0.0, time(&mut c, sc, Edge::Start)?)
            }
            Some("from") => {
                c.i += 1;
                let from = time(&mut c, sc, Edge::Start)?;
                let to = if c.peek() == Some("to") {
                    c.i += 1;
                    time(&mut c, sc, Edge::End)?
                } else {
                    end
                };
                (from, to)
            }
            Some(other) => {
                return Err(format!(
                    "assert {line:?}: `{other}` does not start a window: during, after, before, from or overall"
                ));
            }
        };
        if let Some(extra) = c.peek() {
            return Err(format!("assert {line:?}: unexpected `{extra}` at the end"));
        }
        let window = (window.0.max(0.0), window.1.min(end));
        if window.1 <= window.0 {
            return Err(format!(
                "assert {line:?}: the window [{} s, {} s) is empty (the run lasts {end} s)",
                window.0, window.1
            ));
        }
        Ok(Assertion {
            text: line.to_string(),
            agg,
            metric,
            group,
            op,
            value,
            window,
        })
    }

    /// The buckets wholly inside the window.
    pub fn buckets(&self, out: &RunOutput) -> Range<usize> {
        let w = out.bucket.as_secs_f64();
        let first = ((self.window.0 / w) - 1e-9).ceil().max(0.0) as usize;
        let last = (((self.window.1 / w) + 1e-9).floor() as usize).min(out.buckets.len());
        first..last.max(first)
    }

    pub fn check(&self, out: &RunOutput) -> Verdict {
        let r = self.buckets(out);
        let w = out.bucket.as_secs_f64();
        let span = (r.start as f64 * w, r.end as f64 * w);
        let measured = aggregate(out, self.metric, self.group, r, self.agg);
        Verdict {
            measured,
            pass: measured.is_some_and(|m| self.op.holds(m, self.value)),
            span,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::file::Scenario;

    fn scenario() -> Scenario {
        Scenario::parse(
            r#"
            [run]
            duration = "10m"
            [clients.web]
            kind = "open"
            rate = 10
            [clients.batch]
            kind = "open"
            rate = 1
            [upstream]
            servers = 2
            queue = 10
            latency = { dist = "constant", value = "10ms" }
            [episodes.outage]
            kind = "outage"
            from = "2m"
            to = "5m"
            [pipeline]
            "#,
            false,
        )
        .unwrap()
    }

    #[test]
    fn the_grammar_reads_every_window_and_figure() {
        let sc = scenario();
        let a = |s: &str| Assertion::parse(s, &sc).unwrap_or_else(|e| panic!("{e}"));
        let x = a("load_amplification < 1.2 during outage");
        assert_eq!(
            (x.metric, x.op, x.value, x.window),
            (Metric::LoadAmplification, Op::Lt, 1.2, (120.0, 300.0))
        );
        let x = a("goodput > 90% after outage + 30s");
        assert_eq!((x.value, x.window), (0.9, (330.0, 600.0)));
        let x = a("max(queue_length) <= 50 from 1m to outage.end - 10s");
        assert_eq!((x.agg, x.op, x.window), (Agg::Max, Op::Le, (60.0, 290.0)));
        let x = a("latency_p99[batch] < 800ms before outage");
        assert_eq!((x.group, x.value, x.window), (Some(0), 0.8, (0.0, 120.0)));
        let x = a("goodput>=0.5");
        assert_eq!((x.op, x.window), (Op::Ge, (0.0, 600.0)));
        let x = a("min(goodput[web]) > 0.1 from outage.start to end");
        assert_eq!(
            (x.agg, x.group, x.window),
            (Agg::Min, Some(1), (120.0, 600.0))
        );
    }

    #[test]
    fn mistakes_are_refused_naming_what_is_valid() {
        let sc = scenario();
        for (s, says) in [
            ("goodputt > 0.9", "expected one of offered, upstream_load"),
            ("goodput = 0.9", "<, <=, > or >="),
            ("goodput > 0.9 during outtage", "episodes: outage"),
            (
                "goodput > 0.9 while outage",
                "during, after, before, from or overall",
            ),
            ("goodput > 2s", "not a number"),
            (
                "queue_length[web] < 3",
                "not per client; these are: offered, goodput",
            ),
            ("goodput[api] > 0.9", "clients: batch, web"),
            ("goodput > 0.9 after 20m", "is empty"),
            ("goodput > 0.9 during outage extra", "unexpected `extra`"),
            ("max(goodput > 0.9", "expected `)`"),
            ("goodput >", "ends where a value was expected"),
        ] {
            let e = Assertion::parse(s, &sc)
                .err()
                .unwrap_or_else(|| panic!("{s} accepted"));
            assert!(e.contains(says), "{s}: {e}");
        }
    }
}
