//! `sim scenario` as a user runs it: the shipped examples pass their own assertions in the
//! quick profile and fail one with the other config; runs are reproducible; mistakes exit 2
//! naming what is valid.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("resilix-scenario-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .output()
        .expect("the sim binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// (scenario, the other config, an assertion of the scenario that the other config fails)
const EXAMPLES: [(&str, &str, &str); 3] = [
    (
        "retry-storm.toml",
        "retry-storm-no-budget.toml",
        "goodput > 95% after slowdown + 30s",
    ),
    (
        "timeout.toml",
        "timeout-at-mean.toml",
        "load_amplification < 1.05",
    ),
    (
        "breaker.toml",
        "breaker-none.toml",
        "load_amplification < 0.1 from outage.start + 5s to outage.end",
    ),
];

#[test]
fn each_example_passes_its_assertions_and_fails_one_with_the_other_config() {
    for (scenario, other, fails) in EXAMPLES {
        let file = root().join(scenario);
        let other = root().join(other);
        let dir = out_dir(scenario);
        let good = sim(&[
            "scenario",
            file.to_str().unwrap(),
            "--quick",
            "--check",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]);
        let (stdout, stderr) = text(&good);
        assert_eq!(
            good.status.code(),
            Some(0),
            "{scenario}:\n{stdout}\n{stderr}"
        );
        assert!(!stdout.contains("FAIL"), "{scenario}:\n{stdout}");
        for f in [
            "report.md",
            "series.csv",
            "summary.csv",
            "assertions.csv",
            "load.svg",
            "goodput.svg",
        ] {
            assert!(dir.join(f).is_file(), "{scenario}: no {f}");
        }
        // The same assertions against the other config: --check fails and says which, with
        // the value it measured.
        let bad = sim(&[
            "scenario",
            file.to_str().unwrap(),
            "--quick",
            "--check",
            "--quiet",
            "--pipeline",
            other.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        let (stdout, _) = text(&bad);
        assert_eq!(
            bad.status.code(),
            Some(1),
            "{scenario} with {other:?}:\n{stdout}"
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("FAIL {fails:?}: measured ")))
            .unwrap_or_else(|| panic!("{scenario}: no FAIL line for {fails:?}:\n{stdout}"));
        assert!(line.contains(" over ["), "{line}");
        // Compare mode runs both side by side and judges the scenario's own pipeline.
        let both = sim(&[
            "scenario",
            file.to_str().unwrap(),
            "--quick",
            "--check",
            "--quiet",
            "--compare",
            other.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        let (stdout, _) = text(&both);
        assert_eq!(
            both.status.code(),
            Some(0),
            "{scenario} --compare:\n{stdout}"
        );
        assert!(dir.join("series-1.csv").is_file() && dir.join("series-2.csv").is_file());
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(fails))
            .unwrap_or_else(|| panic!("no row for {fails:?}:\n{stdout}"));
        assert!(row.contains("PASS") && row.contains("FAIL"), "{row}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}

#[test]
fn the_same_seed_gives_identical_output_and_another_seed_does_not() {
    let file = root().join("retry-storm.toml");
    let other = root().join("retry-storm-no-budget.toml");
    let run = |seed: &str, name: &str| {
        let dir = out_dir(name);
        let o = sim(&[
            "scenario",
            file.to_str().unwrap(),
            "--quick",
            "--quiet",
            "--seed",
            seed,
            "--compare",
            other.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
        (dir, text(&o).0)
    };
    let (a, out_a) = run("7", "seed-a");
    let (b, out_b) = run("7", "seed-b");
    let (c, _) = run("8", "seed-c");
    assert_eq!(
        out_a.replace(a.to_str().unwrap(), ""),
        out_b.replace(b.to_str().unwrap(), "")
    );
    for f in [
        "series-1.csv",
        "series-2.csv",
        "summary.csv",
        "assertions.csv",
        "load.svg",
        "latency.svg",
        "budget.svg",
    ] {
        assert_eq!(
            read(&a, f),
            read(&b, f),
            "{f} differs between two runs of seed 7"
        );
    }
    assert_ne!(
        read(&a, "series-1.csv"),
        read(&c, "series-1.csv"),
        "seeds 7 and 8 agree"
    );
    for d in [a, b, c] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn nothing_is_written_to_stderr_when_it_is_not_a_terminal() {
    let dir = out_dir("stderr");
    let o = sim(&[
        "scenario",
        root().join("breaker.toml").to_str().unwrap(),
        "--quick",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o).1, "", "no progress on a pipe");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mistakes_exit_2_naming_what_is_valid() {
    let dir = out_dir("mistakes");
    std::fs::create_dir_all(&dir).unwrap();
    let base = std::fs::read_to_string(root().join("breaker.toml")).unwrap();
    for (edit, says) in [
        (
            ("servers = 30", "servers = 30\nwarp = 9"),
            "unknown field `warp`",
        ),
        (("open_wait = \"5s\"", "open_wiat = \"5s\""), "open_wiat"),
        (
            ("half_open_probes = 1", "half_open_probes = 0"),
            "pipeline.breaker.half_open_probes",
        ),
        (
            ("kind = \"outage\"", "kind = \"meteor\""),
            "`outage`, `overload`, `slowdown`, `capacity`",
        ),
        (
            ("goodput > 99%", "goodput ~ 99%"),
            "`~` is not an operator: <, <=, > or >=",
        ),
        (
            ("after outage + 10s", "after outrage + 10s"),
            "no episode \"outrage\"",
        ),
    ] {
        let file = dir.join("edited.toml");
        assert!(base.contains(edit.0), "{}", edit.0);
        std::fs::write(&file, base.replacen(edit.0, edit.1, 1)).unwrap();
        let o = sim(&["scenario", file.to_str().unwrap(), "--quiet"]);
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{edit:?}: {stderr}");
        assert!(stderr.contains(says), "{edit:?}: {stderr}");
    }
    let o = sim(&["scenario", "x.toml", "--fast"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("expected one of --quick, --check, --quiet")
    );
    // --check on a scenario that asserts nothing proves nothing: it fails.
    let file = dir.join("no-asserts.toml");
    let cut = base.find("[[assert]]").unwrap();
    let quick = base.find("[quick]").unwrap();
    std::fs::write(&file, format!("{}{}", &base[..cut], &base[quick..])).unwrap();
    let o = sim(&[
        "scenario",
        file.to_str().unwrap(),
        "--quick",
        "--check",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o).0);
    assert!(text(&o).0.contains("nothing was checked"));
    let _ = std::fs::remove_dir_all(&dir);
}
