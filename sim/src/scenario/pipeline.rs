//! The scenario's pipeline: the service's own config format, built by `resilix-config`.
//!
//! A scenario's `[pipeline]` is what a service's config file has under `[pipelines.NAME]`,
//! and its `[budgets.NAME]` are the service's shared budgets, so a pipeline is copied between
//! the two unchanged. [`build`] is the one place a pipeline comes from:
//! `PipelineConfig::build`, the function the service itself calls at start-up and on
//! reload, so the simulation drives exactly the policies the service would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use resilix::breaker::CircuitState;
use resilix::time::Instant;
use resilix_config::section::{BudgetSection, PipelineConfig};
use resilix_config::{Budget, Config, ConfiguredPipeline};
use serde::Deserialize;

/// The pipeline a config builds.
pub type Built = ConfiguredPipeline;

/// A pipeline to run: its config and the budgets it may name.
#[derive(Clone, Debug)]
pub struct Source {
    pub label: String,
    pub budgets: BTreeMap<String, BudgetSection>,
    pub pipeline: PipelineConfig,
}

/// The pipeline of `source`, built fresh (new policies and new budgets each call, so one
/// instance's state never leaks into another's or into the next run). Errors carry the
/// field's path (`pipeline.breaker.half_open_probes: ...`).
pub fn build(source: &Source) -> Result<Built, String> {
    let mut budgets: BTreeMap<&str, Arc<Budget>> = BTreeMap::new();
    for (name, b) in &source.budgets {
        budgets.insert(
            name,
            b.build(&format!("budgets.{name}"))
                .map_err(|e| e.to_string())?,
        );
    }
    let lookup = |name: &str| budgets.get(name).cloned();
    source
        .pipeline
        .build("pipeline", &lookup)
        .map_err(|e| e.to_string())
}

/// A policy's state at one instant, for the time series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gauges {
    /// 0 closed (or disabled), 0.5 half-open, 1 open: averaged over time it reads as the
    /// share of time the circuit refused calls.
    pub breaker_open: Option<f64>,
    pub limiter_limit: Option<f64>,
    pub throttler_rejection: Option<f64>,
    /// Tokens left (token bucket), retries left in the window (ratio budget), or 1 while a
    /// retry breaker allows retries and 0 while it is tripped.
    pub budget_balance: Option<f64>,
}

pub fn gauges(p: &Built, now: Instant) -> Gauges {
    let breaker_open = p.breaker_ref().as_ref().map(|b| match b.state() {
        CircuitState::Closed | CircuitState::Disabled => 0.0,
        CircuitState::HalfOpen => 0.5,
        CircuitState::Open | CircuitState::ForcedOpen => 1.0,
    });
    let limiter_limit = p.limiter_ref().as_ref().map(|l| f64::from(l.limit()));
    let throttler_rejection = p
        .throttler_ref()
        .as_ref()
        .map(|t| t.rejection_probability(now).as_f64());
    let budget_balance =
        p.retry_policy()
            .get()
            .and_then(|r| r.budget().get())
            .map(|b| match &**b {
                Budget::TokenBucket(b) => f64::from(b.balance().as_milli()) / 1000.0,
                Budget::Ratio(b) => {
                    let (first, retries) = b.counts(now);
                    f64::from(b.allowance(first).saturating_sub(retries))
                }
                Budget::RetryBreaker(b) => {
                    if b.is_tripped(now) {
                        0.0
                    } else {
                        1.0
                    }
                }
            });
    Gauges {
        breaker_open,
        limiter_limit,
        throttler_rejection,
        budget_balance,
    }
}

/// A file holding one pipeline: its `[pipeline]` and the `[budgets]` it names.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineFile {
    #[serde(default)]
    budgets: BTreeMap<String, BudgetSection>,
    pipeline: PipelineConfig,
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map_or_else(|| "pipeline".into(), |s| s.to_string_lossy().into_owned())
}

/// `PATH` or `PATH#NAME`: the service's own config file (TOML or JSON, `[pipelines.NAME]`:
/// the only one, or the one named, with its `[budgets]`), or a file with one `[pipeline]`
/// and its `[budgets]`.
pub fn read(spec: &Path) -> Result<Source, String> {
    let s = spec.to_string_lossy();
    let (path, name) = match s.rsplit_once('#') {
        Some((p, n)) => (PathBuf::from(p), Some(n.to_string())),
        None => (spec.to_path_buf(), None),
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json = path.extension().is_some_and(|e| e == "json");
    let service = json
        || text
            .parse::<toml::Table>()
            .map_err(|e| format!("{}: {e}", path.display()))?
            .contains_key("pipelines");
    if !service {
        if name.is_some() {
            return Err(format!(
                "{}: #NAME picks one of a service config's [pipelines.NAME], and this file has none",
                path.display()
            ));
        }
        let f: PipelineFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(Source {
            label: stem(&path),
            budgets: f.budgets,
            pipeline: f.pipeline,
        });
    }
    let config = Config::from_path(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let names: Vec<&String> = config.pipelines.keys().collect();
    let pick = match (&name, names.len()) {
        (Some(n), _) => n.clone(),
        (None, 1) => names[0].clone(),
        (None, n) => {
            return Err(format!(
                "{} has {n} pipelines: pick one with {}#NAME, NAME one of {}",
                path.display(),
                path.display(),
                names
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    };
    let pipeline = config.pipelines.get(&pick).cloned().ok_or_else(|| {
        format!(
            "{}: no pipeline {pick:?} (pipelines: {})",
            path.display(),
            names
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    Ok(Source {
        label: name.unwrap_or_else(|| stem(&path)),
        budgets: config.budgets,
        pipeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(budgets: &str, pipeline: &str) -> Source {
        Source {
            label: "t".into(),
            budgets: toml::from_str(budgets).unwrap(),
            pipeline: toml::from_str(pipeline).unwrap(),
        }
    }

    const BUDGETS: &str =
        "[sre]\nkind = \"ratio\"\nmax_retry_permille = 200\n[bucket]\nkind = \"token-bucket\"\n";

    #[test]
    fn every_slot_builds_and_reports_its_state() {
        let p = build(&source(
            BUDGETS,
            r#"
            attempt_timeout = "300ms"
            [retry]
            max_attempts = 3
            backoff = { base = "10ms", cap = "1s", jitter = "decorrelated" }
            budget = "sre"
            [throttler]
            accepts_multiplier = 1.5
            [breaker]
            open_wait = "2s"
            half_open_probes = 3
            probes_to_close = 2
            [limiter]
            algorithm = "aimd"
            [bulkhead]
            max_concurrent = 10
            "#,
        ))
        .unwrap();
        let g = gauges(&p, Instant::ZERO);
        assert_eq!(g.breaker_open, Some(0.0));
        assert_eq!(g.limiter_limit, Some(20.0));
        assert_eq!(g.throttler_rejection, Some(0.0));
        // 200 per mille of no first attempts, plus the floor of 3.
        assert_eq!(g.budget_balance, Some(3.0));
        let aws = build(&source(BUDGETS, "[retry]\nbudget = \"bucket\"")).unwrap();
        assert_eq!(gauges(&aws, Instant::ZERO).budget_balance, Some(500.0));
        let empty = build(&source("", "")).unwrap();
        assert_eq!(
            gauges(&empty, Instant::ZERO),
            Gauges {
                breaker_open: None,
                limiter_limit: None,
                throttler_rejection: None,
                budget_balance: None
            }
        );
    }

    #[test]
    fn each_build_is_a_fresh_pipeline() {
        let s = source(BUDGETS, "[retry]\nbudget = \"bucket\"");
        let (a, b) = (build(&s).unwrap(), build(&s).unwrap());
        let budget =
            |p: &Built| Arc::clone(p.retry_policy().get().unwrap().budget().get().unwrap());
        assert!(!Arc::ptr_eq(&budget(&a), &budget(&b)));
    }

    /// A pipeline comes from a pipeline file, or from the service's own config file (TOML or
    /// JSON), picked by name when it has several.
    #[test]
    fn pipelines_are_read_from_pipeline_files_and_service_configs() {
        let dir =
            std::env::temp_dir().join(format!("resilix-pipeline-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let one = write(
            "one.toml",
            "[budgets.b]\nkind = \"ratio\"\n[pipeline.retry]\nbudget = \"b\"\n",
        );
        let s = read(&one).unwrap();
        assert_eq!((s.label.as_str(), s.budgets.len()), ("one", 1));
        assert!(build(&s).is_ok());
        let service = write(
            "service.toml",
            "[pipelines.reads]\nattempt_timeout = \"1s\"\n[pipelines.writes.retry]\nmax_attempts = 2\n",
        );
        let e = read(&service).unwrap_err();
        assert!(
            e.contains("has 2 pipelines") && e.contains("reads, writes"),
            "{e}"
        );
        let writes = read(&PathBuf::from(format!("{}#writes", service.display()))).unwrap();
        assert_eq!(writes.label, "writes");
        assert_eq!(
            build(&writes)
                .unwrap()
                .retry_policy()
                .get()
                .unwrap()
                .config()
                .max_attempts(),
            2
        );
        let e = read(&PathBuf::from(format!("{}#deletes", service.display()))).unwrap_err();
        assert!(e.contains("no pipeline \"deletes\""), "{e}");
        let json = write(
            "service.json",
            r#"{"pipelines": {"reads": {"attempt_timeout": "250ms"}}}"#,
        );
        assert!(
            build(&read(&json).unwrap())
                .unwrap()
                .attempt_timeout_value()
                .is_some()
        );
        let typo = write("typo.toml", "[pipeline]\nattempt_timeuot = \"1s\"\n");
        let e = read(&typo).unwrap_err();
        assert!(e.contains("attempt_timeuot") && e.contains("line 2"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_core_refusals_name_the_field() {
        for (p, says) in [
            (
                "[breaker]\nhalf_open_probes = 0",
                "pipeline.breaker.half_open_probes",
            ),
            ("[retry]\nbudget = \"lots\"", "pipeline.retry.budget"),
            (
                "[bulkhead]\nmax_concurrent = 0",
                "pipeline.bulkhead.max_concurrent",
            ),
        ] {
            let e = build(&source(BUDGETS, p))
                .err()
                .unwrap_or_else(|| panic!("{p}"));
            assert!(e.contains(says), "{p}: {e}");
        }
    }
}
