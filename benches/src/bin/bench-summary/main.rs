//! Reads criterion's output and prints the side-by-side table of issue 10: ours, the peer, the
//! ratio, per operation, with the goal and whether it is met; then the one-thread/two-thread
//! table and the allocations per call of the async stacks.
//!
//! ```text
//! cargo bench -p resilix-benches -- --save-baseline run1
//! cargo bench -p resilix-benches -- --save-baseline run2
//! cargo run -p resilix-benches --bin bench-summary -- --baseline run1 --baseline run2
//! ```
//!
//! Without `--baseline` it reads criterion's latest run (`new`). `--dir` overrides where
//! criterion's output is (default: `$CARGO_TARGET_DIR/criterion`, else the workspace's
//! `target/criterion`).

mod parse;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

fn default_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("criterion")
}

/// `YYYY-MM-DD` for days since 1970-01-01 (Howard Hinnant's civil-from-days).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// One line on what the figures were taken on.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    format!("{cpu}, {cores} cores, load average {load} when summarised")
}

fn main() -> ExitCode {
    let mut dir = default_dir();
    let mut baselines = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--dir", Some(d)) => dir = PathBuf::from(d),
            ("--baseline", Some(b)) => baselines.push(b),
            _ => {
                eprintln!("usage: bench-summary [--dir DIR] [--baseline NAME]...");
                return ExitCode::from(2);
            }
        }
    }
    if baselines.is_empty() {
        baselines.push("new".to_string());
    }
    let runs: Vec<(String, parse::Estimates)> = baselines
        .iter()
        .map(|b| (b.clone(), parse::load(&dir, b)))
        .collect();
    if runs.iter().all(|(_, est)| est.is_empty()) {
        eprintln!(
            "no criterion results for {baselines:?} under {}; run `cargo bench -p resilix-benches` first",
            dir.display()
        );
        return ExitCode::FAILURE;
    }
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    println!(
        "Measured {} on {}. Medians of per-op thread CPU time (ns); ratio = ours ÷ peer.\n",
        civil_date(days as i64),
        machine()
    );
    println!("{}", table::comparison_table(&runs));
    println!("One thread, and two threads on one shared instance (per-op time each thread saw):\n");
    println!("{}", table::contention_table(&runs));
    if let Ok(text) = std::fs::read_to_string(dir.join("allocations.txt")) {
        println!("Heap allocations per call in tokio after warm-up (counting allocator):\n");
        println!("{}", table::allocation_table(&text));
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(59), "1970-03-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_000), "2024-10-04");
        assert_eq!(civil_date(-1), "1969-12-31");
    }
}
