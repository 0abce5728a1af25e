//! Config files for resilix: a whole set of named pipelines and the retry budgets they share,
//! from TOML or JSON, validated by the core's own constructors.
//!
//! ```toml
//! [budgets.process]               # shared retry budgets, referenced by name
//! kind = "token-bucket"           # or "grpc", "ratio", "retry-breaker"
//!
//! [pipelines.payments]
//! attempt_timeout = "250ms"
//! [pipelines.payments.retry]
//! max_attempts = 3
//! backoff = { base = "100ms", cap = "10s", jitter = "full" }
//! budget = "process"
//! [pipelines.payments.breaker]
//! failure_rate_above_percent = 50
//! window = { calls = 100 }
//! [pipelines.payments.bulkhead]
//! max_concurrent = 25
//! ```
//!
//! * **Every field is optional** and means the core's documented default when left out (each
//!   section's `core_config` shows the core config a table means; the tests hold them equal
//!   to the core's `DEFAULT`s). A table left out is a slot left empty. A core `Option` is
//!   turned off with `"off"` (in JSON, `null` is the same as leaving the field out: the
//!   default, which for `failure_rate_above_percent` is on).
//! * **Unknown fields are refused**, never ignored: a typo is an error, with its path.
//! * **Durations** are strings: `"250ms"`, `"5s"`, `"1h30m"`, `"1.5s"` ([`duration`]).
//! * **Validation is the core's**: each policy is built by its own constructor, and an error
//!   is that constructor's error, with the path of the field it is about:
//!   `pipelines.payments.breaker.half_open_probes: half-open probes 0 is out of range 1..=15`.
//!   Parse errors (syntax, types, unknown fields, durations) carry the line and column too.
//! * **Sharing**: a budget named by several retries is one `Arc`; every policy sits in its own
//!   `Arc` so a reload can keep the ones that did not change.
//! * **Reloading** ([`Live`], [`Reloader`]): a config that fails to read or validate is
//!   refused and the last good one stays live (static stability), with a `ConfigRejected`
//!   event; a good one is swapped in, keeping every policy whose table did not change (the
//!   same `Arc`, its state) and building fresh every one whose table did. Readers never lock.
//!   `examples/reload` serves traffic through it while the file changes.
//!
//! ```
//! use resilix::call::CallOptions;
//! use resilix::permit::Env;
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix_config::Config;
//!
//! let pipelines = Config::from_toml_str(r#"
//!     [pipelines.payments]
//!     attempt_timeout = "250ms"
//!     [pipelines.payments.breaker]
//!     minimum_calls = 10
//! "#)?.build()?;
//! let payments = pipelines.get("payments").unwrap();
//! let mut rng = SeededRandom::new(1);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let mut call = payments.call(env.now, CallOptions::default());
//! let attempt = call.admit(&mut env).unwrap();
//! assert_eq!(attempt.deadline().unwrap().instant(), Instant::from_millis(250));
//! # Ok::<(), resilix_config::ConfigError>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod duration;
mod error;
pub mod live;
mod parse;
mod pipeline;
pub mod policy;
pub mod section;
mod value;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::error::{ConfigError, Location, Problem};
pub use crate::live::{Change, ChangeKind, Live, ReloadEvent, Reloader, Status};
pub use crate::pipeline::{ConfiguredPipeline, Pipelines};
pub use crate::policy::{Budget, ConfiguredBreaker, ConfiguredBudget, ConfiguredRetry};
pub use crate::value::{ConfigDuration, Switch, TokenAmount};

use crate::error::join;
use crate::section::{BudgetSection, PipelineConfig};

/// The formats this build reads (each behind the crate feature of its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// TOML (feature `toml`).
    #[cfg(feature = "toml")]
    Toml,
    /// JSON (feature `json`).
    #[cfg(feature = "json")]
    Json,
}

impl Format {
    /// The format a file's extension names (`.toml`, `.json`, any case).
    pub fn of_path(path: &Path) -> Result<Format, ConfigError> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match extension.as_str() {
            #[cfg(feature = "toml")]
            "toml" => Ok(Format::Toml),
            #[cfg(feature = "json")]
            "json" => Ok(Format::Json),
            _ => Err(ConfigError::new("", Problem::UnknownFormat(extension))),
        }
    }
}

/// A whole config file: the shared budgets and the named pipelines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Shared retry budgets, by name (`[budgets.NAME]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub budgets: BTreeMap<String, BudgetSection>,
    /// Pipelines, by name (`[pipelines.NAME]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pipelines: BTreeMap<String, PipelineConfig>,
}

impl Config {
    /// Reads a TOML config. Errors name the field's path, the rule, and the line and column.
    ///
    /// ```
    /// use resilix_config::Config;
    ///
    /// let err = Config::from_toml_str("[pipelines.a.breaker]\nopen_wiat = \"5s\"\n").unwrap_err();
    /// assert_eq!(err.path(), "pipelines.a.breaker.open_wiat");
    /// assert_eq!(err.location().unwrap().line, 2);
    /// ```
    #[cfg(feature = "toml")]
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        parse::toml(text)
    }

    /// Reads a JSON config, with the same shape and the same errors as TOML.
    ///
    /// ```
    /// use resilix_config::Config;
    ///
    /// let config = Config::from_json_str(r#"{"pipelines": {"a": {"attempt_timeout": "1.5s"}}}"#)?;
    /// assert_eq!(config, Config::from_toml_str("[pipelines.a]\nattempt_timeout = \"1.5s\"")?);
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    #[cfg(feature = "json")]
    pub fn from_json_str(text: &str) -> Result<Config, ConfigError> {
        parse::json(text)
    }

    /// Reads a file, TOML or JSON by its extension (`.toml`, `.json`, any case).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        parse::path(path.as_ref())
    }

    /// Reads `text` in `format`.
    ///
    /// ```
    /// use resilix_config::{Config, Format};
    ///
    /// let config = Config::from_text("{}", Format::of_path("app.JSON".as_ref())?)?;
    /// assert_eq!(config, Config::default());
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    #[cfg_attr(not(any(feature = "toml", feature = "json")), allow(unused_variables))]
    pub fn from_text(text: &str, format: Format) -> Result<Config, ConfigError> {
        match format {
            #[cfg(feature = "toml")]
            Format::Toml => parse::toml(text),
            #[cfg(feature = "json")]
            Format::Json => parse::json(text),
        }
    }

    /// Writes the config as TOML (absent fields stay absent), which reads back equal.
    #[cfg(feature = "toml")]
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self)
            .expect("a Config has string keys and plain values, which TOML can always write")
    }

    /// Writes the config as pretty JSON, which reads back equal.
    #[cfg(feature = "json")]
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self)
            .expect("a Config has string keys and plain values, which JSON can always write")
    }

    /// Builds every budget and pipeline, each policy by the core's constructor; the first
    /// invalid value is the error, with its path.
    pub fn build(&self) -> Result<Pipelines, ConfigError> {
        self.build_reusing(None)
    }

    /// As [`build`](Self::build), keeping from `previous` every budget and policy whose table
    /// did not change (the same `Arc`, its state intact), and every policy whose table changed
    /// only in settings it takes in place (the same `Arc`, reconfigured); see
    /// [`PipelineConfig::build_reusing`]. A pipeline renamed is a new pipeline. The
    /// reconfigurations are applied only after every pipeline has built: an error leaves
    /// every live policy as it was.
    pub fn build_reusing(&self, previous: Option<&Pipelines>) -> Result<Pipelines, ConfigError> {
        let mut budgets = BTreeMap::new();
        let mut pending = section::Pending::default();
        for (name, section) in &self.budgets {
            let path = join("budgets", name);
            let kept = previous.and_then(|p| {
                (p.config.budgets.get(name) == Some(section))
                    .then(|| p.budgets.get(name).cloned())
                    .flatten()
            });
            let budget = match kept {
                Some(b) => b,
                None => {
                    // Validated as a fresh budget would be, so its errors name their fields.
                    let fresh = section.build(&path)?;
                    let old = previous
                        .and_then(|p| Some((p.config.budgets.get(name)?, p.budgets.get(name)?)));
                    let ratio =
                        old.and_then(|(s, b)| section::reconfigurable_ratio(s, b, section, &path));
                    let bucket =
                        old.and_then(|(s, b)| section::reconfigurable_bucket(s, b, section, &path));
                    let breaker = old.and_then(|(s, b)| {
                        section::reconfigurable_retry_breaker(s, b, section, &path)
                    });
                    match (ratio, bucket, breaker) {
                        (Some((live, config)), _, _) => {
                            let target = Arc::clone(&live);
                            pending
                                .push(move |env| section::reconfigure_ratio(&target, config, env));
                            live
                        }
                        (None, Some((live, config)), _) => {
                            let target = Arc::clone(&live);
                            pending
                                .push(move |env| section::reconfigure_bucket(&target, config, env));
                            live
                        }
                        (None, None, Some((live, config))) => {
                            let target = Arc::clone(&live);
                            pending.push(move |env| {
                                section::reconfigure_retry_breaker(&target, config, env)
                            });
                            live
                        }
                        (None, None, None) => fresh,
                    }
                }
            };
            budgets.insert(name.clone(), budget);
        }
        let lookup = |name: &str| budgets.get(name).cloned();
        let mut pipelines = BTreeMap::new();
        for (name, section) in &self.pipelines {
            let before = previous.and_then(|p| {
                Some((
                    p.config.pipelines.get(name)?,
                    p.pipelines.get(name)?.as_ref(),
                ))
            });
            let path = join("pipelines", name);
            let pipeline = section.build_deferring(&path, &lookup, before, &mut pending)?;
            pipelines.insert(name.clone(), Arc::new(pipeline));
        }
        // Every pipeline built: only now may a live policy change.
        pending.apply();
        Ok(Pipelines {
            config: self.clone(),
            budgets,
            pipelines,
            generation: 0,
        })
    }
}
