//! Reading criterion's output: the two facts the summary needs from each benchmark directory,
//! without a JSON dependency (criterion's files are machine-written and flat enough).

use std::collections::BTreeMap;
use std::path::Path;

/// Median nanoseconds per iteration, by criterion's full benchmark id.
pub type Estimates = BTreeMap<String, f64>;

/// The benchmark's full id (`"full_id"` in `benchmark.json`), unescaped.
pub fn full_id(benchmark_json: &str) -> Option<String> {
    let start = benchmark_json.find("\"full_id\"")? + "\"full_id\"".len();
    let rest = benchmark_json[start..].trim_start().strip_prefix(':')?;
    let rest = rest.trim_start().strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                other => out.push(other), // \" \\ \/
            },
            c => out.push(c),
        }
    }
    None
}

/// The median's point estimate (nanoseconds per iteration) in `estimates.json`.
pub fn median_ns(estimates_json: &str) -> Option<f64> {
    let median = estimates_json.find("\"median\"")? + "\"median\"".len();
    let rest = &estimates_json[median..];
    let at = rest.find("\"point_estimate\"")? + "\"point_estimate\"".len();
    let rest = rest[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(rest.len());
    let value: f64 = rest[..end].parse().ok()?;
    value.is_finite().then_some(value)
}

/// Every benchmark under `dir` that has a `baseline` directory (criterion's `new`, or a name
/// given to `--save-baseline`) holding both files.
pub fn load(dir: &Path, baseline: &str) -> Estimates {
    let mut found = Estimates::new();
    walk(dir, baseline, &mut found);
    found
}

fn walk(dir: &Path, baseline: &str, found: &mut Estimates) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == baseline) {
            let id = std::fs::read_to_string(path.join("benchmark.json"))
                .ok()
                .and_then(|s| full_id(&s));
            let median = std::fs::read_to_string(path.join("estimates.json"))
                .ok()
                .and_then(|s| median_ns(&s));
            if let (Some(id), Some(median)) = (id, median) {
                found.insert(id, median);
            }
        } else {
            walk(&path, baseline, found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Trimmed from a real criterion 0.8 run.
    pub const BENCHMARK: &str = r#"{"group_id":"bulkhead/resilix/admit+settle/1t","function_id":null,"value_str":null,"throughput":null,"full_id":"bulkhead/resilix/admit+settle/1t","directory_name":"bulkhead_resilix_admit+settle_1t","title":"bulkhead/resilix/admit+settle/1t"}"#;
    pub const ESTIMATES: &str = r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":12.9,"upper_bound":13.4},"point_estimate":13.1,"standard_error":0.12},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":12.7,"upper_bound":12.8},"point_estimate":12.75,"standard_error":0.03},"median_abs_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":0.1,"upper_bound":0.2},"point_estimate":0.15,"standard_error":0.01},"slope":null,"std_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":0.5,"upper_bound":1.5},"point_estimate":1.0,"standard_error":0.2}}"#;

    #[test]
    fn reads_the_full_id() {
        assert_eq!(
            full_id(BENCHMARK).as_deref(),
            Some("bulkhead/resilix/admit+settle/1t")
        );
        assert_eq!(
            full_id(r#"{"full_id" : "a\"b\\c\/d\u00e9"}"#).as_deref(),
            Some("a\"b\\c/dé")
        );
        assert_eq!(full_id(r#"{"full_id":"unterminated"#), None);
        assert_eq!(full_id(r#"{"title":"x"}"#), None);
    }

    #[test]
    fn reads_the_median_not_the_mean_nor_its_deviation() {
        assert_eq!(median_ns(ESTIMATES), Some(12.75));
        assert_eq!(
            median_ns(r#"{"median":{"point_estimate":3.5e-1}}"#),
            Some(0.35)
        );
        assert_eq!(median_ns(r#"{"mean":{"point_estimate":1.0}}"#), None);
        assert_eq!(median_ns(r#"{"median":{"point_estimate":NaN}}"#), None);
    }

    #[test]
    fn loads_a_baseline_from_a_tree() {
        let root = std::env::temp_dir().join(format!("bench-summary-{}", std::process::id()));
        let put = |bench: &str, baseline: &str, id: &str, median: f64| {
            let d = root.join(bench).join(baseline);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("benchmark.json"), format!(r#"{{"full_id":"{id}"}}"#)).unwrap();
            std::fs::write(
                d.join("estimates.json"),
                format!(r#"{{"median":{{"point_estimate":{median}}}}}"#),
            )
            .unwrap();
        };
        put("a_1t", "new", "a/1t", 10.0);
        put("a_1t", "run1", "a/1t", 11.0);
        put("group/b_2t", "new", "b/2t", 20.0);
        // A directory with only one of the two files is skipped.
        std::fs::create_dir_all(root.join("c").join("new")).unwrap();

        let new = load(&root, "new");
        let run1 = load(&root, "run1");
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(new.len(), 2);
        assert_eq!(new["a/1t"], 10.0);
        assert_eq!(new["b/2t"], 20.0);
        assert_eq!(run1.len(), 1);
        assert_eq!(run1["a/1t"], 11.0);
        assert!(load(Path::new("/no/such/dir"), "new").is_empty());
    }
}
