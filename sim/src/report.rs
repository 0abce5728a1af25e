//! Results: checks (ours beside the published figure, tolerance, PASS/FAIL), tables and
//! plots per experiment, printed for people and written as CSV, JSON and markdown.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use crate::svg::Chart;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
}

/// One acceptance check.
pub struct Check {
    pub id: String,
    pub what: String,
    pub ours: String,
    pub published: String,
    pub tolerance: String,
    pub status: Status,
}

impl Check {
    /// `ours` within `published` ± `rel` (relative).
    pub fn rel(id: &str, what: &str, ours: f64, published: f64, rel: f64) -> Check {
        let ok = (ours - published).abs() <= rel * published.abs();
        Check::new(
            id,
            what,
            fmt_num(ours),
            fmt_num(published),
            format!("±{}%", fmt_num(rel * 100.0)),
            ok,
        )
    }

    /// `ours` within `published` ± `abs`.
    pub fn abs(id: &str, what: &str, ours: f64, published: f64, abs: f64) -> Check {
        let ok = (ours - published).abs() <= abs;
        Check::new(
            id,
            what,
            fmt_num(ours),
            fmt_num(published),
            format!("±{}", fmt_num(abs)),
            ok,
        )
    }

    /// A claim that holds or not, with the measured evidence in `ours`.
    pub fn claim(id: &str, what: &str, ours: String, published: &str, ok: bool) -> Check {
        Check::new(id, what, ours, published.to_string(), "holds".into(), ok)
    }

    pub fn new(
        id: &str,
        what: &str,
        ours: String,
        published: String,
        tolerance: String,
        ok: bool,
    ) -> Check {
        Check {
            id: id.into(),
            what: what.into(),
            ours,
            published,
            tolerance,
            status: if ok { Status::Pass } else { Status::Fail },
        }
    }
}

pub struct Table {
    pub name: String,
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(name: &str, title: &str, header: &[&str]) -> Table {
        Table {
            name: name.into(),
            title: title.into(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                if i < w.len() {
                    w[i] = w[i].max(c.chars().count());
                }
            }
        }
        w
    }

    pub fn text(&self) -> String {
        let w = self.widths();
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w.get(i).copied().unwrap_or(0);
                let _ = write!(s, "{c:>pad$}  ");
            }
            s.trim_end().to_string()
        };
        let mut s = format!("{}\n{}\n", self.title, line(&self.header));
        for r in &self.rows {
            s.push_str(&line(r));
            s.push('\n');
        }
        s
    }

    pub fn markdown(&self) -> String {
        let mut s = format!("**{}**\n\n| {} |\n|", self.title, self.header.join(" | "));
        for _ in &self.header {
            s.push_str("---|");
        }
        s.push('\n');
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        s
    }

    pub fn csv(&self) -> String {
        let mut s = self
            .header
            .iter()
            .map(|c| csv_cell(c))
            .collect::<Vec<_>>()
            .join(",");
        s.push('\n');
        for r in &self.rows {
            s.push_str(&r.iter().map(|c| csv_cell(c)).collect::<Vec<_>>().join(","));
            s.push('\n');
        }
        s
    }
}

fn csv_cell(c: &str) -> String {
    if c.contains([',', '"', '\n']) {
        format!("\"{}\"", c.replace('"', "\"\""))
    } else {
        c.to_string()
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One experiment's results.
pub struct Section {
    pub id: &'static str,
    pub title: String,
    /// The setup in one paragraph (source, parameters, what is real).
    pub setup: String,
    pub checks: Vec<Check>,
    pub tables: Vec<Table>,
    pub charts: Vec<(String, Chart)>,
    pub notes: Vec<String>,
    pub seconds: f64,
}

impl Section {
    pub fn new(id: &'static str, title: &str, setup: &str) -> Section {
        Section {
            id,
            title: title.into(),
            setup: setup.into(),
            checks: Vec::new(),
            tables: Vec::new(),
            charts: Vec::new(),
            notes: Vec::new(),
            seconds: 0.0,
        }
    }

    pub fn failed(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .count()
    }
}

pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a >= 1000.0 || (a - a.round()).abs() < 1e-9 && a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// The checks of every section as one table.
pub fn checks_table(sections: &[Section]) -> Table {
    let mut t = Table::new(
        "checks",
        "Acceptance checks: ours beside the published figure",
        &["id", "check", "ours", "published", "tolerance", "result"],
    );
    for s in sections {
        for c in &s.checks {
            t.row(vec![
                c.id.clone(),
                c.what.clone(),
                c.ours.clone(),
                c.published.clone(),
                c.tolerance.clone(),
                match c.status {
                    Status::Pass => "PASS".into(),
                    Status::Fail => "FAIL".into(),
                },
            ]);
        }
    }
    t
}

/// Writes every table as CSV, every chart as SVG, the checks as CSV and JSON, and
/// `REPORT.md` embedding them.
pub fn write_all(dir: &Path, sections: &[Section], profile: &str, command: &str) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let checks = checks_table(sections);
    fs::write(dir.join("checks.csv"), checks.csv())?;
    let mut json = String::from("{\n  \"profile\": ");
    json.push_str(&json_str(profile));
    json.push_str(",\n  \"experiments\": [\n");
    for (i, s) in sections.iter().enumerate() {
        let _ = write!(
            json,
            "    {{\"id\": {}, \"title\": {}, \"seconds\": {:.2}, \"checks\": [",
            json_str(s.id),
            json_str(&s.title),
            s.seconds,
        );
        for (j, c) in s.checks.iter().enumerate() {
            let _ = write!(
                json,
                "{}\n      {{\"id\": {}, \"check\": {}, \"ours\": {}, \"published\": {}, \"tolerance\": {}, \"pass\": {}}}",
                if j > 0 { "," } else { "" },
                json_str(&c.id),
                json_str(&c.what),
                json_str(&c.ours),
                json_str(&c.published),
                json_str(&c.tolerance),
                c.status == Status::Pass
            );
        }
        let _ = writeln!(json, "]}}{}", if i + 1 < sections.len() { "," } else { "" });
    }
    json.push_str("  ]\n}\n");
    fs::write(dir.join("checks.json"), json)?;

    let mut md = String::from("# resilix simulator report\n\n");
    let _ = writeln!(
        md,
        "Generated by `{command}` (profile: {profile}). Every figure below is measured by driving \
         the real resilix policies on a simulated timeline with seeded randomness; the published \
         figure and its source are beside it.\n"
    );
    md.push_str(&checks.markdown());
    md.push('\n');
    for s in sections {
        let _ = writeln!(md, "## {} — {}\n\n{}\n", s.id, s.title, s.setup);
        for t in &s.tables {
            let file = format!("{}-{}.csv", s.id, t.name);
            fs::write(dir.join(&file), t.csv())?;
            md.push_str(&t.markdown());
            let _ = writeln!(md, "\n([{file}]({file}))\n");
        }
        for (name, chart) in &s.charts {
            let file = format!("{}-{}.svg", s.id, name);
            fs::write(dir.join(&file), chart.render())?;
            let _ = writeln!(md, "![{}]({file})\n", chart.title);
        }
        for n in &s.notes {
            let _ = writeln!(md, "- {n}");
        }
        let _ = writeln!(md, "\n_Run time: {:.1} s._\n", s.seconds);
    }
    fs::write(dir.join("REPORT.md"), md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_decide_pass_and_fail() {
        assert_eq!(
            Check::rel("a", "x", 104.0, 100.0, 0.05).status,
            Status::Pass
        );
        assert_eq!(
            Check::rel("a", "x", 106.0, 100.0, 0.05).status,
            Status::Fail
        );
        assert_eq!(Check::abs("a", "x", 0.94, 0.9, 0.05).status, Status::Pass);
        assert_eq!(Check::abs("a", "x", 0.96, 0.9, 0.05).status, Status::Fail);
    }

    #[test]
    fn csv_and_json_quote_what_they_must() {
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(json_str("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
    }
}
