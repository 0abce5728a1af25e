//! Static stability on reload: the running service keeps its last good config when a new one
//! fails to read or to validate, and says so.
//!
//! [`Live`] holds the current [`Pipelines`] behind an [`ArcSwap`]: a reader's
//! [`load`](Live::load) is a few atomic operations on per-thread debt slots, never a lock,
//! and never waits for a reload in progress. A reload builds the new pipelines aside, from the
//! config text, then swaps them in with one atomic store; calls already running finish on the
//! pipelines they started with (they hold an `Arc`).
//!
//! **What a reload keeps.** A budget or policy whose table is *equal* to its table in the live
//! config is the live one, the same `Arc`, its state intact (an open breaker stays open, a
//! spent budget stays spent, a bulkhead's held slots stay held). A policy whose table changed
//! only in settings the running policy takes in place is the live one too, reconfigured
//! ([`ChangeKind::Reconfigured`]): today the bulkhead's `max_concurrent`, the rate limiter's
//! rate and burst (its spent cells carried over, capped at the new burst), the limiter's
//! `min_limit` and `max_limit` (the limit clamped into them), a throttler's
//! `accepts_multiplier` and `max_rejection_rate` (its window kept), a ratio budget's ratio and
//! floor (same window), every setting of a token bucket (its balance carried over, clamped
//! to a lowered capacity), and a breaker's thresholds, waits and probe counts (same window,
//! waits its timers hold: `Breaker::check_reconfigure`; its state and counts kept), so a
//! reload that
//! changes a cap keeps the calls in flight, and a lowered cap admits nobody until they drain
//! below it. The reconfigurations are applied only once the whole new config has built, so a
//! refused reload changes no live policy. A policy whose table changed in any other field
//! starts fresh, as at start-up. A table removed drops its policy once the calls holding it
//! finish. A renamed pipeline or budget is a new one. A config with no pipelines at all is
//! refused while some are live ([`Problem::NoPipelines`]): an empty file is valid TOML, and a
//! file caught between truncation and rewrite reads as one. (The seam for more in-place
//! changes is [`PipelineConfig::build_reusing`](crate::section::PipelineConfig::build_reusing).)
//!
//! **What a reload reports.** Every reload returns a [`ReloadEvent`], hands it to the
//! listener if one is set, emits it as a `tracing` event with the `tracing` feature
//! (`ConfigRejected` at WARN, `ConfigApplied` at INFO, target `resilix_config`), and leaves
//! [`Live::status`] saying whether the live config is the last one offered.
//!
//! ```
//! use resilix_config::{Config, Live, ReloadEvent};
//!
//! let live = Live::new(Config::from_toml_str("[pipelines.payments.bulkhead]\nmax_concurrent = 5")?)?;
//! let bad = Config::from_toml_str("[pipelines.payments.bulkhead]\nmax_concurrent = 0");
//! match live.reload(bad) {
//!     ReloadEvent::ConfigRejected { error, kept_generation } => {
//!         assert_eq!(error.path(), "pipelines.payments.bulkhead.max_concurrent");
//!         assert_eq!(kept_generation, 0);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! // Traffic still has its pipeline, from the last good config.
//! let payments = live.pipeline("payments").unwrap();
//! assert_eq!(payments.bulkhead_ref().as_ref().unwrap().max_concurrent(), 5);
//! assert!(live.status().last_rejection.is_some());
//! # Ok::<(), resilix_config::ConfigError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::{ArcSwap, Guard};

use crate::error::{ConfigError, Problem};
use crate::pipeline::{ConfiguredPipeline, Pipelines};
use crate::{Config, Format};

/// What happened to one budget, policy or pipeline in an applied reload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// Its table did not change: the live instance was kept, state and all.
    Kept,
    /// Its table changed: a new instance, fresh state.
    Fresh,
    /// Its table changed only in settings the running policy takes in place (a bulkhead's
    /// `max_concurrent`; a limiter's `min_limit` and `max_limit`; a ratio budget's
    /// `max_retry_permille` and `min_retries_per_window`; a breaker's thresholds, waits and
    /// probe counts, same window):
    /// the live instance was kept and reconfigured, its state (calls in flight, the window's
    /// counts) intact.
    Reconfigured,
    /// New in this config.
    Added,
    /// Gone from this config.
    Removed,
}

/// One entry of an applied reload: a path (`budgets.process`, `pipelines.payments.breaker`,
/// `pipelines.search`) and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The table's path.
    pub path: String,
    /// What happened to it.
    pub kind: ChangeKind,
}

/// What a reload did. Returned by every reload, handed to the listener, and emitted as a
/// `tracing` event with the `tracing` feature.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ReloadEvent {
    /// The new config was valid and is live now, as `generation`.
    ConfigApplied {
        /// The new generation (the first config is 0; each applied reload adds one).
        generation: u64,
        /// Every budget and policy, and what happened to it, in path order.
        changes: Vec<Change>,
    },
    /// The new config could not be read or built: the last good config stays live.
    ConfigRejected {
        /// Why, with the field's path.
        error: ConfigError,
        /// The generation still live.
        kept_generation: u64,
    },
    /// The new config equals the live one: nothing was swapped.
    ConfigUnchanged {
        /// The generation still live.
        generation: u64,
    },
}

/// Whether the live config is the last one offered: for a health check or a gauge, so a
/// service running on an old config after a bad push shows it (visible degradation).
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// The live generation.
    pub generation: u64,
    /// The last refusal since the live config was applied, if any.
    pub last_rejection: Option<ConfigError>,
    /// Refusals since the live config was applied.
    pub rejections_since_applied: u64,
}

type Listener = Box<dyn Fn(&ReloadEvent) + Send + Sync>;

/// The live pipelines of a running service, reloadable without ever losing the last good
/// config. See the [module docs](self).
pub struct Live {
    current: ArcSwap<Pipelines>,
    /// Held by a reload from building to swapping, so two reloads never race to decide what
    /// is kept. Readers never touch it.
    writer: Mutex<Status>,
    listener: Option<Listener>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("generation", &self.load().generation())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Builds `config` as generation 0. At start there is no last good config to keep, so an
    /// invalid one is an error.
    pub fn new(config: Config) -> Result<Live, ConfigError> {
        Ok(Live::from_pipelines(config.build()?))
    }

    /// Reads and builds the file at `path` (TOML or JSON by extension) as generation 0.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Live, ConfigError> {
        Live::new(Config::from_path(path)?)
    }

    /// Serves pipelines already built, as generation 0.
    pub fn from_pipelines(mut pipelines: Pipelines) -> Live {
        pipelines.generation = 0;
        Live {
            current: ArcSwap::from_pointee(pipelines),
            writer: Mutex::new(Status {
                generation: 0,
                last_rejection: None,
                rejections_since_applied: 0,
            }),
            listener: None,
        }
    }

    /// Hands every reload's event to `listener` too (called on the reloading thread, after
    /// the swap).
    pub fn with_listener(
        mut self,
        listener: impl Fn(&ReloadEvent) + Send + Sync + 'static,
    ) -> Live {
        self.listener = Some(Box::new(listener));
        self
    }

    /// The live pipelines: lock-free, for the hot path (`arc_swap`'s per-thread debt slots:
    /// no lock, no wait for a reload in progress). The guard keeps this generation alive while
    /// held; hold a few at a time, for a call, not across a long wait ([`load_full`] or
    /// [`pipeline`] for that).
    ///
    /// [`load_full`]: Self::load_full
    /// [`pipeline`]: Self::pipeline
    pub fn load(&self) -> Guard<Arc<Pipelines>> {
        self.current.load()
    }

    /// The live pipelines as an owned `Arc`.
    pub fn load_full(&self) -> Arc<Pipelines> {
        self.current.load_full()
    }

    /// The live pipeline named `name`, as an `Arc` a task can hold across its call (and
    /// across a reload: it finishes on the pipeline it started with). One reference-count
    /// increment on top of [`load`](Self::load); a loop that only admits can borrow from the
    /// guard instead.
    pub fn pipeline(&self, name: &str) -> Option<Arc<ConfiguredPipeline>> {
        self.current.load().get(name).cloned()
    }

    /// Whether the live config is the last one offered.
    pub fn status(&self) -> Status {
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Offers a new config (or the error of reading it). Valid: built beside the live one,
    /// keeping what did not change, and swapped in. Invalid: refused, the live config stays.
    pub fn reload(&self, offered: Result<Config, ConfigError>) -> ReloadEvent {
        let mut status = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let live = self.current.load_full();
        let event = match offered.and_then(|config| {
            if &config == live.config() {
                return Ok(None);
            }
            let serving = live.config().pipelines.len();
            if config.pipelines.is_empty() && serving > 0 {
                return Err(ConfigError::new(
                    "pipelines",
                    Problem::NoPipelines { live: serving },
                ));
            }
            config.build_reusing(Some(&live)).map(Some)
        }) {
            Ok(None) => ReloadEvent::ConfigUnchanged {
                generation: live.generation(),
            },
            Ok(Some(mut next)) => {
                next.generation = live.generation() + 1;
                let changes = changes(&live, &next);
                let generation = next.generation;
                self.current.store(Arc::new(next));
                *status = Status {
                    generation,
                    last_rejection: None,
                    rejections_since_applied: 0,
                };
                ReloadEvent::ConfigApplied {
                    generation,
                    changes,
                }
            }
            Err(error) => {
                status.last_rejection = Some(error.clone());
                status.rejections_since_applied += 1;
                ReloadEvent::ConfigRejected {
                    error,
                    kept_generation: live.generation(),
                }
            }
        };
        drop(status);
        emit(&event);
        if let Some(listener) = &self.listener {
            listener(&event);
        }
        event
    }

    /// Reads the file at `path` and offers it: a file that cannot be read (gone, half
    /// written, unreadable) is refused like an invalid one.
    pub fn reload_path(&self, path: impl AsRef<Path>) -> ReloadEvent {
        self.reload(Config::from_path(path))
    }
}

#[cfg(feature = "tracing")]
fn emit(event: &ReloadEvent) {
    match event {
        ReloadEvent::ConfigApplied {
            generation,
            changes,
        } => {
            let fresh = changes
                .iter()
                .filter(|c| c.kind != ChangeKind::Kept)
                .count();
            tracing::info!(
                target: "resilix_config",
                event = "ConfigApplied",
                generation,
                changed = fresh,
                kept = changes.len() - fresh,
                "config applied"
            );
        }
        ReloadEvent::ConfigRejected {
            error,
            kept_generation,
        } => tracing::warn!(
            target: "resilix_config",
            event = "ConfigRejected",
            path = error.path(),
            error = %error,
            kept_generation,
            "config rejected; keeping the last good config"
        ),
        ReloadEvent::ConfigUnchanged { generation } => tracing::debug!(
            target: "resilix_config",
            event = "ConfigUnchanged",
            generation,
            "config unchanged"
        ),
    }
}

#[cfg(not(feature = "tracing"))]
fn emit(_event: &ReloadEvent) {}

/// What an applied reload did to each budget, policy and pipeline. A table equal to its old
/// one is `Kept` (and is the same `Arc`: `build_reusing` guarantees it); a changed table whose
/// policy is still the same `Arc` was reconfigured in place; the retry slot and the attempt
/// timeout hold no state, and are reported by their tables alike.
fn changes(old: &Pipelines, new: &Pipelines) -> Vec<Change> {
    let mut out = Vec::new();
    let (old_c, new_c) = (old.config(), new.config());
    let budget_names = old_c.budgets.keys().chain(new_c.budgets.keys());
    for name in sorted_unique(budget_names) {
        let (a, b) = (old_c.budgets.get(name), new_c.budgets.get(name));
        let path = format!("budgets.{name}");
        let same = match (old.budget(name), new.budget(name)) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            _ => false,
        };
        push_kind(&mut out, path, a.is_some(), b.is_some(), a == b, same);
    }
    let pipeline_names = old_c.pipelines.keys().chain(new_c.pipelines.keys());
    for name in sorted_unique(pipeline_names) {
        let base = format!("pipelines.{name}");
        let (a, b) = match (old_c.pipelines.get(name), new_c.pipelines.get(name)) {
            (Some(a), Some(b)) => (a, b),
            (a, b) => {
                push_kind(&mut out, base, a.is_some(), b.is_some(), false, false);
                continue;
            }
        };
        // A changed table whose policy is the same `Arc` was reconfigured in place.
        let (p, q) = (old.pipelines.get(name), new.pipelines.get(name));
        let same = |f: fn(&ConfiguredPipeline) -> Option<*const ()>| matches!((p.and_then(|p| f(p)), q.and_then(|q| f(q))), (Some(x), Some(y)) if x == y);
        let slots = [
            (
                "attempt_timeout",
                slot(&a.attempt_timeout, &b.attempt_timeout),
                false,
            ),
            ("retry", slot(&a.retry, &b.retry), false),
            (
                "throttler",
                slot(&a.throttler, &b.throttler),
                same(|p| p.throttler_ref().as_ref().map(|x| Arc::as_ptr(x).cast())),
            ),
            (
                "breaker",
                slot(&a.breaker, &b.breaker),
                same(|p| p.breaker_ref().as_ref().map(|x| Arc::as_ptr(x).cast())),
            ),
            (
                "limiter",
                slot(&a.limiter, &b.limiter),
                same(|p| p.limiter_ref().as_ref().map(|x| Arc::as_ptr(x).cast())),
            ),
            (
                "bulkhead",
                slot(&a.bulkhead, &b.bulkhead),
                same(|p| p.bulkhead_ref().as_ref().map(|x| Arc::as_ptr(x).cast())),
            ),
            (
                "rate_limit",
                slot(&a.rate_limit, &b.rate_limit),
                same(|p| p.rate_limit_ref().as_ref().map(|x| Arc::as_ptr(x).cast())),
            ),
        ];
        for (name, (before, after, equal), same_policy) in slots {
            push_kind(
                &mut out,
                format!("{base}.{name}"),
                before,
                after,
                equal,
                same_policy,
            );
        }
    }
    out
}

fn push_kind(
    out: &mut Vec<Change>,
    path: String,
    before: bool,
    after: bool,
    equal: bool,
    same_policy: bool,
) {
    let kind = match (before, after) {
        (false, false) => return,
        (false, true) => ChangeKind::Added,
        (true, false) => ChangeKind::Removed,
        (true, true) if equal => ChangeKind::Kept,
        (true, true) if same_policy => ChangeKind::Reconfigured,
        (true, true) => ChangeKind::Fresh,
    };
    out.push(Change { path, kind });
}

/// Whether a table was there before, is there now, and is equal.
fn slot<T: PartialEq>(before: &Option<T>, after: &Option<T>) -> (bool, bool, bool) {
    (before.is_some(), after.is_some(), before == after)
}

fn sorted_unique<'a>(names: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut v: Vec<_> = names.collect();
    v.sort();
    v.dedup();
    v
}

/// Watches one config file: each [`poll`](Reloader::poll) reads it and offers it to the
/// [`Live`] config if its text changed since the last poll, so an unchanged file costs one
/// read and a bad file is reported once, not at every poll. Runtime-agnostic: call `poll`
/// from a tokio interval, a thread, or a signal handler's task.
///
/// Replace the file atomically (write a temporary file beside it, then rename it over; a
/// Kubernetes ConfigMap volume swaps a symlink the same way): a poll that reads a file half
/// written is refused as invalid at best, and at worst reads as a smaller valid config.
///
/// ```
/// use std::sync::Arc;
/// use resilix_config::{Live, ReloadEvent, Reloader};
///
/// let dir = std::env::temp_dir().join(format!("resilix-reloader-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let file = dir.join("resilience.toml");
/// std::fs::write(&file, "[pipelines.api.bulkhead]\nmax_concurrent = 8\n").unwrap();
/// let live = Arc::new(Live::from_path(&file)?);
/// let mut reloader = Reloader::new(live.clone(), &file);
/// assert!(matches!(reloader.poll(), Some(ReloadEvent::ConfigUnchanged { .. })));
/// assert_eq!(reloader.poll(), None, "same text: nothing to do");
/// std::fs::write(&file, "[pipelines.api.bulkhead]\nmax_concurrent = 16\n").unwrap();
/// assert!(matches!(reloader.poll(), Some(ReloadEvent::ConfigApplied { generation: 1, .. })));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), resilix_config::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct Reloader {
    live: Arc<Live>,
    path: PathBuf,
    last_text: Option<Result<String, String>>,
}

impl Reloader {
    /// Watches `path` for `live`. The first poll offers the file whatever its text.
    pub fn new(live: Arc<Live>, path: impl Into<PathBuf>) -> Reloader {
        Reloader {
            live,
            path: path.into(),
            last_text: None,
        }
    }

    /// The live config this reloader feeds.
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// Reads the file; if its text (or the error reading it) differs from the last poll's,
    /// offers it and returns what the reload did.
    pub fn poll(&mut self) -> Option<ReloadEvent> {
        let read = std::fs::read_to_string(&self.path).map_err(|e| e.to_string());
        if self.last_text.as_ref() == Some(&read) {
            return None;
        }
        self.last_text = Some(read.clone());
        let offered = match read {
            Ok(text) => Format::of_path(&self.path).and_then(|f| Config::from_text(&text, f)),
            Err(_) => Config::from_path(&self.path),
        };
        Some(self.live.reload(offered))
    }
}
