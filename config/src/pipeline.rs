//! What a built config is: named pipelines of shared policies, and the shared budgets.

use std::collections::BTreeMap;
use std::sync::Arc;

use resilix::bulkhead::Bulkhead;
use resilix::limiter::Limiter;
use resilix::pipeline::Pipeline;
use resilix::rate_limit::RateLimiter;
use resilix::throttler::Throttler;

use crate::Config;
use crate::policy::{Budget, ConfiguredBreaker, ConfiguredRetry};

/// The pipeline a config builds: every slot the core's own policy, each in an `Arc` (so a
/// reload can keep a policy that did not change), `None` where the file has no table.
/// Drive it like any other pipeline: `Call`, `execute`, or an adapter's `Resilience`.
pub type ConfiguredPipeline = Pipeline<
    ConfiguredRetry,
    Option<Arc<Throttler>>,
    Option<Arc<ConfiguredBreaker>>,
    Option<Arc<Limiter>>,
    Option<Arc<Bulkhead>>,
    Option<Arc<RateLimiter>>,
>;

/// A built config: each pipeline by name, and the budgets they share.
///
/// ```
/// use std::sync::Arc;
/// use resilix_config::Config;
///
/// let pipelines = Config::from_toml_str(r#"
///     [budgets.process]
///     kind = "token-bucket"
///     [pipelines.reads.retry]
///     budget = "process"
///     [pipelines.writes.retry]
///     budget = "process"
/// "#)?.build()?;
/// let reads = pipelines.get("reads").unwrap().retry_policy().get().unwrap().budget();
/// let writes = pipelines.get("writes").unwrap().retry_policy().get().unwrap().budget();
/// assert!(Arc::ptr_eq(reads.get().unwrap(), writes.get().unwrap()), "one budget, shared");
/// # Ok::<(), resilix_config::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct Pipelines {
    pub(crate) config: Config,
    pub(crate) budgets: BTreeMap<String, Arc<Budget>>,
    pub(crate) pipelines: BTreeMap<String, Arc<ConfiguredPipeline>>,
    /// 0 when built; a [`Live`](crate::Live) numbers each applied reload.
    pub(crate) generation: u64,
}

impl Pipelines {
    /// The pipeline named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<ConfiguredPipeline>> {
        self.pipelines.get(name)
    }

    /// The shared budget named `name`.
    pub fn budget(&self, name: &str) -> Option<&Arc<Budget>> {
        self.budgets.get(name)
    }

    /// The pipelines' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.pipelines.keys().map(String::as_str)
    }

    /// Which applied config these are: 0 for the first, one more for each applied reload
    /// of a [`Live`](crate::Live) (always 0 outside one).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The config these were built from.
    pub fn config(&self) -> &Config {
        &self.config
    }
}
