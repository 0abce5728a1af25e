//! The scenario file: what a user writes, read and validated before anything runs.
//!
//! Unknown fields are refused with the list of valid ones (serde's `deny_unknown_fields`);
//! fields that do not apply to the kind chosen are refused by [`Scenario::validate`] with the
//! ones that do, so a run is never silently not what the file says.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::units::Dur;
use crate::net::Delay;

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Shown at the top of the report.
    pub title: Option<String>,
    pub description: Option<String>,
    pub run: Run,
    pub clients: BTreeMap<String, Client>,
    pub upstream: UpstreamSpec,
    #[serde(default)]
    pub episodes: BTreeMap<String, Episode>,
    /// The pipeline, in the format a service loads at start-up: the table a service's
    /// config file has under `[pipelines.NAME]` (see `pipeline::build`).
    pub pipeline: resilix_config::section::PipelineConfig,
    /// The retry budgets the pipeline names, as a service's `[budgets.NAME]`.
    #[serde(default)]
    pub budgets: BTreeMap<String, resilix_config::section::BudgetSection>,
    #[serde(default, rename = "assert")]
    pub asserts: Vec<AssertSpec>,
    /// Merged onto the file for `--quick` (any field, same names).
    pub quick: Option<toml::Table>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// How long calls keep starting; then the run drains.
    pub duration: Dur,
    /// The master seed (`--seed` overrides it).
    #[serde(default = "one")]
    pub seed: u64,
    /// Width of one time-series point; default: the duration / 120.
    pub bucket: Option<Dur>,
    /// Service instances, each with its own pipeline built from the config; clients are
    /// spread over them.
    #[serde(default = "one_u32")]
    pub instances: u32,
    /// One network hop (request or reply): `fixed:D`, `normal:MEAN:SD` or `exp:MEAN`.
    pub network: Option<String>,
}

fn one() -> u64 {
    1
}
fn one_u32() -> u32 {
    1
}
fn yes() -> bool {
    true
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    /// Calls arrive at a rate whatever happens to earlier ones (a Poisson process).
    Open,
    /// A fixed population of users, each making one call, waiting for it, thinking, again.
    Closed,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Client {
    pub kind: ClientKind,
    /// Open: calls per second at the profile's scale 1.
    pub rate: Option<f64>,
    /// Closed: how many users.
    pub users: Option<u32>,
    /// Closed: the mean think time between one call's end and the user's next call.
    pub think: Option<Dur>,
    /// Closed: `exponential` (default) or `constant` think times.
    pub think_dist: Option<ThinkDist>,
    /// Scales the rate (open) or the number of active users (closed) over time.
    #[serde(default)]
    pub profile: Profile,
    /// Served first by the upstream's queue: higher is more important.
    #[serde(default)]
    pub priority: u8,
    /// Each call's overall deadline, retries included.
    pub deadline: Option<Dur>,
    /// Whether a timed-out attempt may be retried (the call is safe to repeat).
    #[serde(default = "yes")]
    pub idempotent: bool,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ThinkDist {
    Exponential,
    Constant,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(tag = "shape", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Profile {
    #[default]
    Constant,
    /// From each `at`, the scale is that step's `scale` (1.0 before the first step).
    Steps { steps: Vec<Step> },
    /// `min + (1 − min) · (1 + cos(2π (t − peak) / period)) / 2`: 1.0 at `peak`, `min`
    /// half a period away.
    Diurnal { period: Dur, min: f64, peak: Dur },
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub at: Dur,
    pub scale: f64,
}

impl Profile {
    pub fn scale(&self, t: f64) -> f64 {
        match self {
            Profile::Constant => 1.0,
            Profile::Steps { steps } => steps
                .iter()
                .rev()
                .find(|s| s.at.secs() <= t)
                .map_or(1.0, |s| s.scale),
            Profile::Diurnal { period, min, peak } => {
                let phase = std::f64::consts::TAU * (t - peak.secs()) / period.secs();
                min + (1.0 - min) * (1.0 + phase.cos()) / 2.0
            }
        }
    }

    /// The largest scale the profile reaches (the thinning bound for open arrivals).
    pub fn max_scale(&self) -> f64 {
        match self {
            Profile::Constant | Profile::Diurnal { .. } => 1.0,
            Profile::Steps { steps } => steps.iter().map(|s| s.scale).fold(1.0, f64::max),
        }
    }

    fn validate(&self) -> Result<(), String> {
        match self {
            Profile::Constant => Ok(()),
            Profile::Steps { steps } => {
                if steps.is_empty() {
                    return Err("profile.steps is empty".into());
                }
                for w in steps.windows(2) {
                    if w[1].at.0 <= w[0].at.0 {
                        return Err("profile.steps: each `at` must come after the previous".into());
                    }
                }
                if let Some(s) = steps
                    .iter()
                    .find(|s| !(s.scale >= 0.0 && s.scale.is_finite()))
                {
                    return Err(format!("profile.steps: scale {} must be ≥ 0", s.scale));
                }
                Ok(())
            }
            Profile::Diurnal { period, min, .. } => {
                if period.0.is_zero() {
                    return Err("profile.period must be above zero".into());
                }
                if !(0.0..=1.0).contains(min) {
                    return Err(format!("profile.min = {min}: must be in [0, 1]"));
                }
                Ok(())
            }
        }
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Discipline {
    /// First come, first served.
    #[default]
    Fcfs,
    /// Last come, first served: the newest waiter starts first (fresh requests, whose
    /// callers are still waiting, win over stale ones).
    Lifo,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    /// How many requests it serves at once.
    pub servers: u32,
    /// How many may wait for a server; beyond that, refused at once with an overload.
    pub queue: u32,
    #[serde(default)]
    pub discipline: Discipline,
    /// The service time of one request.
    pub latency: Latency,
    /// The share of requests answered with a transient failure outside any episode.
    #[serde(default)]
    pub failure_rate: f64,
    /// The Retry-After its queue-full refusals carry; none when absent.
    pub retry_after: Option<Dur>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Latency {
    Constant {
        value: Dur,
    },
    Exponential {
        mean: Dur,
    },
    /// Given by its median and 99th percentile, as latency is usually reported.
    Lognormal {
        p50: Dur,
        p99: Dur,
    },
    /// `fast` except for a `slow_fraction` of requests, which take `slow`.
    Bimodal {
        fast: Dur,
        slow: Dur,
        slow_fraction: f64,
    },
    /// Pareto (a power-law tail) from `min` with shape `alpha` (> 1 for a finite mean),
    /// capped at `max` when given.
    Pareto {
        min: Dur,
        alpha: f64,
        max: Option<Dur>,
    },
}

impl Latency {
    fn validate(&self, at: &str) -> Result<(), String> {
        match self {
            Latency::Lognormal { p50, p99 } if p99.0 <= p50.0 || p50.0.is_zero() => Err(format!(
                "{at}: a lognormal needs 0 < p50 < p99 (got {:?} and {:?})",
                p50.0, p99.0
            )),
            Latency::Bimodal { slow_fraction, .. } if !(0.0..=1.0).contains(slow_fraction) => Err(
                format!("{at}: slow_fraction = {slow_fraction} must be in [0, 1]"),
            ),
            Latency::Pareto { alpha, .. } if !(*alpha > 1.0 && alpha.is_finite()) => Err(format!(
                "{at}: alpha = {alpha} must be above 1 (at or below 1 the mean is infinite)"
            )),
            Latency::Pareto {
                min, max: Some(m), ..
            } if m.0 < min.0 => Err(format!("{at}: max must be at least min")),
            _ => Ok(()),
        }
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EpisodeKind {
    /// A share of requests fails (transient) at once or after `after`, without queueing.
    Outage,
    /// A share of requests is refused as overloaded, with `retry_after` when given.
    Overload,
    /// Service times multiplied by `factor`, or drawn from `latency` instead.
    Slowdown,
    /// Only `servers` serve (a fleet lost part of its hosts).
    Capacity,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Episode {
    pub kind: EpisodeKind,
    pub from: Dur,
    pub to: Dur,
    pub fraction: Option<f64>,
    pub after: Option<Dur>,
    pub retry_after: Option<Dur>,
    pub factor: Option<f64>,
    pub latency: Option<Latency>,
    pub servers: Option<u32>,
}

impl Episode {
    pub fn active(&self, t: Duration) -> bool {
        self.from.0 <= t && t < self.to.0
    }
}

/// An assertion: one line (`that`), or the line's parts as fields.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AssertSpec {
    pub that: Option<String>,
    pub metric: Option<String>,
    pub op: Option<String>,
    pub value: Option<toml::Value>,
    pub during: Option<String>,
    pub after: Option<String>,
    pub before: Option<String>,
    pub window: Option<String>,
}

impl AssertSpec {
    /// The assertion as one line of the grammar of `assert.rs`.
    pub fn line(&self) -> Result<String, String> {
        let parts = [
            self.metric.is_some(),
            self.op.is_some(),
            self.value.is_some(),
        ];
        let windows = [&self.during, &self.after, &self.before, &self.window]
            .iter()
            .filter(|w| w.is_some())
            .count();
        match &self.that {
            Some(line) => {
                if parts.iter().any(|p| *p) || windows > 0 {
                    return Err(format!(
                        "assert {line:?}: `that` is the whole assertion; drop metric, op, value, \
                         during, after, before and window"
                    ));
                }
                Ok(line.clone())
            }
            None => {
                if !parts.iter().all(|p| *p) {
                    return Err(
                        "assert: give `that = \"metric < value [window]\"`, or all of \
                                metric, op and value"
                            .into(),
                    );
                }
                if windows > 1 {
                    return Err("assert: at most one of during, after, before and window".into());
                }
                let value = match self.value.as_ref().expect("checked") {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Float(f) => f.to_string(),
                    other => {
                        return Err(format!(
                            "assert: value {other}: a number, or a string like \"250ms\" or \"90%\""
                        ));
                    }
                };
                let mut line = format!(
                    "{} {} {}",
                    self.metric.as_ref().expect("checked"),
                    self.op.as_ref().expect("checked"),
                    value
                );
                if let Some(w) = &self.during {
                    line += &format!(" during {w}");
                }
                if let Some(w) = &self.after {
                    line += &format!(" after {w}");
                }
                if let Some(w) = &self.before {
                    line += &format!(" before {w}");
                }
                if let Some(w) = &self.window {
                    line += &format!(" {w}");
                }
                Ok(line)
            }
        }
    }
}

/// `overlay` merged into `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, overlay: &toml::Table) {
    for (k, v) in overlay {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Scenario {
    /// Reads a scenario from its text; `quick` applies its `[quick]` overlay.
    pub fn parse(text: &str, quick: bool) -> Result<Scenario, String> {
        let s: Scenario = toml::from_str(text).map_err(|e| e.to_string())?;
        s.validate()?;
        if !quick {
            return Ok(s);
        }
        let Some(overlay) = s.quick.clone() else {
            return Ok(s);
        };
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        table.remove("quick");
        if overlay.contains_key("quick") {
            return Err("[quick] cannot contain another quick".into());
        }
        merge(&mut table, &overlay);
        let q: Scenario = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| format!("with [quick] applied: {}", e.message()))?;
        q.validate()
            .map_err(|e| format!("with [quick] applied: {e}"))?;
        Ok(q)
    }

    pub fn network(&self) -> Result<Delay, String> {
        match &self.run.network {
            None => Ok(Delay::Fixed(Duration::ZERO)),
            Some(s) => Delay::parse(s).map_err(|e| format!("run.network: {e}")),
        }
    }

    pub fn bucket(&self) -> Duration {
        self.run.bucket.map_or(self.run.duration.0 / 120, |b| b.0)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.run.duration.0.is_zero() {
            return Err("run.duration must be above zero".into());
        }
        let bucket = self.bucket();
        if bucket.is_zero() {
            return Err("run.bucket must be above zero".into());
        }
        if self.run.duration.0.as_secs_f64() / bucket.as_secs_f64() > 100_000.0 {
            return Err("run.bucket is too small: more than 100,000 points".into());
        }
        if self.run.instances == 0 {
            return Err("run.instances must be at least 1".into());
        }
        self.network()?;
        if self.clients.is_empty() {
            return Err(
                "[clients] is empty: add one, e.g. [clients.web] kind = \"open\", rate = 100"
                    .into(),
            );
        }
        for (name, c) in &self.clients {
            let at = format!("clients.{name}");
            let refuse = |field: &str, valid: &str| {
                Err(format!(
                    "{at}: {field} does not apply to kind = {:?}, which takes {valid}",
                    match c.kind {
                        ClientKind::Open => "open",
                        ClientKind::Closed => "closed",
                    }
                ))
            };
            match c.kind {
                ClientKind::Open => {
                    let open_fields = "rate, profile, priority, deadline, idempotent";
                    if c.users.is_some() {
                        return refuse("users", open_fields);
                    }
                    if c.think.is_some() {
                        return refuse("think", open_fields);
                    }
                    if c.think_dist.is_some() {
                        return refuse("think_dist", open_fields);
                    }
                    match c.rate {
                        None => {
                            return Err(format!(
                                "{at}: kind = \"open\" needs a rate (calls per second)"
                            ));
                        }
                        Some(r) if !(r > 0.0 && r.is_finite()) => {
                            return Err(format!("{at}: rate = {r} must be above zero"));
                        }
                        _ => {}
                    }
                }
                ClientKind::Closed => {
                    let closed_fields =
                        "users, think, think_dist, profile, priority, deadline, idempotent";
                    if c.rate.is_some() {
                        return refuse("rate", closed_fields);
                    }
                    match c.users {
                        None | Some(0) => {
                            return Err(format!(
                                "{at}: kind = \"closed\" needs users (at least 1)"
                            ));
                        }
                        _ => {}
                    }
                    if c.think.is_none() {
                        return Err(format!(
                            "{at}: kind = \"closed\" needs think (each user's pause between calls, e.g. \"1s\")"
                        ));
                    }
                }
            }
            c.profile.validate().map_err(|e| format!("{at}: {e}"))?;
            if c.deadline.is_some_and(|d| d.0.is_zero()) {
                return Err(format!("{at}: deadline must be above zero"));
            }
        }
        let u = &self.upstream;
        if u.servers == 0 {
            return Err("upstream.servers must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&u.failure_rate) {
            return Err(format!(
                "upstream.failure_rate = {} must be in [0, 1]",
                u.failure_rate
            ));
        }
        u.latency.validate("upstream.latency")?;
        for (name, e) in &self.episodes {
            let at = format!("episodes.{name}");
            if name == "end" || name == "start" {
                return Err(format!(
                    "{at}: `{name}` is reserved in assertions; pick another name"
                ));
            }
            if e.to.0 <= e.from.0 {
                return Err(format!("{at}: `to` must come after `from`"));
            }
            let (kind, valid): (&str, &[&str]) = match e.kind {
                EpisodeKind::Outage => ("outage", &["fraction", "after"]),
                EpisodeKind::Overload => ("overload", &["fraction", "retry_after"]),
                EpisodeKind::Slowdown => ("slowdown", &["factor", "latency"]),
                EpisodeKind::Capacity => ("capacity", &["servers"]),
            };
            for (field, given) in [
                ("fraction", e.fraction.is_some()),
                ("after", e.after.is_some()),
                ("retry_after", e.retry_after.is_some()),
                ("factor", e.factor.is_some()),
                ("latency", e.latency.is_some()),
                ("servers", e.servers.is_some()),
            ] {
                if given && !valid.contains(&field) {
                    return Err(format!(
                        "{at}: {field} does not apply to kind = {kind:?}, which takes from, to, {}",
                        valid.join(", ")
                    ));
                }
            }
            if let Some(f) = e.fraction
                && !(0.0..=1.0).contains(&f)
            {
                return Err(format!("{at}: fraction = {f} must be in [0, 1]"));
            }
            match e.kind {
                EpisodeKind::Slowdown => match (&e.factor, &e.latency) {
                    (Some(f), None) if *f > 0.0 && f.is_finite() => {}
                    (Some(f), None) => {
                        return Err(format!("{at}: factor = {f} must be above zero"));
                    }
                    (None, Some(l)) => l.validate(&format!("{at}.latency"))?,
                    _ => {
                        return Err(format!(
                            "{at}: a slowdown takes exactly one of factor (service times × factor) \
                             and latency (a distribution instead)"
                        ));
                    }
                },
                EpisodeKind::Capacity if e.servers.is_none() => {
                    return Err(format!("{at}: a capacity episode needs servers"));
                }
                _ => {}
            }
        }
        for a in &self.asserts {
            super::assert::Assertion::parse(&a.line()?, self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const MINIMAL: &str = r#"
        [run]
        duration = "10s"
        [clients.web]
        kind = "open"
        rate = 10
        [upstream]
        servers = 2
        queue = 10
        latency = { dist = "constant", value = "10ms" }
        [pipeline]
    "#;

    fn refusal(extra: &str) -> String {
        let text = format!("{MINIMAL}\n{extra}");
        match Scenario::parse(&text, false) {
            Ok(_) => panic!("accepted: {extra}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_minimal_file_reads() {
        let s = Scenario::parse(MINIMAL, false).unwrap();
        assert_eq!(s.run.duration.0, Duration::from_secs(10));
        assert_eq!(
            s.bucket(),
            Duration::from_millis(83) + Duration::from_nanos(333_333)
        );
        assert_eq!(s.run.seed, 1);
    }

    #[test]
    fn unknown_and_inapplicable_fields_are_refused_with_what_is_valid() {
        for (extra, says) in [
            (
                "[clients.api]\nkind = \"open\"\nrate = 1\nspeed = 3",
                "unknown field `speed`",
            ),
            (
                "[clients.api]\nkind = \"open\"\nrate = 1\nspeed = 3",
                "`users`",
            ),
            (
                "[clients.api]\nkind = \"bursty\"\nrate = 1",
                "expected `open` or `closed`",
            ),
            (
                "[clients.api]\nkind = \"open\"\nrate = 1\nusers = 3",
                "which takes rate, profile",
            ),
            ("[clients.api]\nkind = \"closed\"\nusers = 3", "needs think"),
            (
                "[clients.api]\nkind = \"closed\"\nusers = 3\nthink = \"1s\"\nrate = 2",
                "which takes users",
            ),
            (
                "[episodes.x]\nkind = \"outage\"\nfrom = \"1s\"\nto = \"2s\"\nfactor = 2.0",
                "which takes from, to, fraction, after",
            ),
            (
                "[episodes.x]\nkind = \"slowdown\"\nfrom = \"1s\"\nto = \"2s\"",
                "exactly one of factor",
            ),
            (
                "[episodes.x]\nkind = \"quake\"\nfrom = \"1s\"\nto = \"2s\"",
                "`outage`, `overload`, `slowdown`, `capacity`",
            ),
            (
                "[episodes.x]\nkind = \"outage\"\nfrom = \"3s\"\nto = \"2s\"",
                "must come after",
            ),
            (
                "[episodes.end]\nkind = \"outage\"\nfrom = \"1s\"\nto = \"2s\"",
                "reserved",
            ),
            (
                "[clients.api]\nkind = \"open\"\nrate = 1\ndeadline = \"5parsecs\"",
                "us, ms, s, m or h",
            ),
            (
                "[clients.api]\nkind = \"open\"\nrate = 1\nprofile = { shape = \"wavy\" }",
                "`constant`, `steps`, `diurnal`",
            ),
            (
                "[[assert]]\nthat = \"goodput > 0.9\"\nmetric = \"goodput\"",
                "`that` is the whole",
            ),
            (
                "[[assert]]\nmetric = \"goodput\"",
                "all of metric, op and value",
            ),
            ("[[assert]]\nclaim = \"x\"", "unknown field `claim`"),
        ] {
            let e = refusal(extra);
            assert!(e.contains(says), "{extra}: {e}");
        }
        let e = Scenario::parse(
            &MINIMAL.replace("constant\", value", "gamma\", value"),
            false,
        )
        .unwrap_err();
        assert!(
            e.contains("`constant`, `exponential`, `lognormal`, `bimodal`, `pareto`"),
            "{e}"
        );
        let e = Scenario::parse(
            &MINIMAL.replace("queue = 10", "queue = 10\nqueues = 3"),
            false,
        )
        .unwrap_err();
        assert!(
            e.contains("unknown field `queues`") && e.contains("`discipline`"),
            "{e}"
        );
    }

    #[test]
    fn the_quick_overlay_merges_into_the_file() {
        let text = format!("{MINIMAL}\n[quick]\nrun.duration = \"2s\"\nclients.web.rate = 5\n");
        let full = Scenario::parse(&text, false).unwrap();
        let quick = Scenario::parse(&text, true).unwrap();
        assert_eq!(full.run.duration.0, Duration::from_secs(10));
        assert_eq!(quick.run.duration.0, Duration::from_secs(2));
        assert_eq!(quick.clients["web"].rate, Some(5.0));
        assert_eq!(quick.upstream.servers, 2);
        let bad = format!("{MINIMAL}\n[quick]\nrun.speed = 2\n");
        let e = Scenario::parse(&bad, true).unwrap_err();
        assert!(
            e.contains("with [quick] applied") && e.contains("speed"),
            "{e}"
        );
    }

    #[test]
    fn profiles_scale_as_documented() {
        let steps = Profile::Steps {
            steps: vec![
                Step {
                    at: Dur(Duration::from_secs(10)),
                    scale: 3.0,
                },
                Step {
                    at: Dur(Duration::from_secs(20)),
                    scale: 0.5,
                },
            ],
        };
        assert_eq!(steps.scale(5.0), 1.0);
        assert_eq!(steps.scale(10.0), 3.0);
        assert_eq!(steps.scale(25.0), 0.5);
        assert_eq!(steps.max_scale(), 3.0);
        let d = Profile::Diurnal {
            period: Dur(Duration::from_secs(100)),
            min: 0.2,
            peak: Dur(Duration::from_secs(25)),
        };
        assert!((d.scale(25.0) - 1.0).abs() < 1e-12);
        assert!((d.scale(75.0) - 0.2).abs() < 1e-12);
    }
}
