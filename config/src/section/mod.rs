//! The shape of a config file, one table per policy, and how each becomes the core's policy.
//!
//! Every struct refuses unknown fields, leaves absent fields at the core's documented default
//! (`core_config` shows exactly what a section means in the core's terms), and builds through
//! the core's own constructor, so each rule is written once, in the core.

mod breaker;
mod budget;
mod bulkhead;
mod limiter;
mod rate_limit;
mod retry;
mod throttler;

use std::sync::Arc;

use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::time::Instant;
use serde::{Deserialize, Serialize};

pub use self::breaker::{
    BreakerSection, BreakerWindow, COUNT_WINDOW_WORDS, OpenBackoffSection, SlowCallsSection,
    TIME_WINDOW_BUCKETS, WindowSection,
};
pub use self::budget::{
    BudgetCore, BudgetKind, BudgetSection, ChargeField, RetrySuccessField, TokenBucketPreset,
};
pub use self::bulkhead::BulkheadSection;
pub use self::limiter::{
    AimdSection, AlgorithmName, Gradient2Section, LimiterSection, VegasSection,
};
pub use self::rate_limit::RateLimitSection;
pub use self::retry::{BackoffSection, Jitter, RetrySection, UncertainRetryField};
pub use self::throttler::{LocalRejectionsField, ThrottlerSection};

use crate::error::{ConfigError, Problem, join};
use crate::pipeline::ConfiguredPipeline;
use crate::policy::{Budget, ConfiguredBreaker, ConfiguredRetry};
use crate::value::ConfigDuration;

/// One named pipeline: `[pipelines.NAME]` and its policy tables. A table left out is a slot
/// left empty (no retry, no breaker, ...): the pipeline has only what the file names.
///
/// ```
/// use resilix_config::section::PipelineConfig;
///
/// let config: PipelineConfig = toml::from_str(r#"
///     attempt_timeout = "250ms"
///     [breaker]
///     open_wait = "10s"
/// "#)?;
/// let pipeline = config.build("pipelines.payments", &|_| None)?;
/// assert!(pipeline.breaker_ref().is_some());
/// assert!(pipeline.limiter_ref().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Each attempt's timeout (the innermost slot). Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_timeout: Option<ConfigDuration>,
    /// Retry (outermost).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetrySection>,
    /// Adaptive throttling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttler: Option<ThrottlerSection>,
    /// The circuit breaker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerSection>,
    /// The adaptive concurrency limiter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limiter: Option<LimiterSection>,
    /// The bulkhead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bulkhead: Option<BulkheadSection>,
    /// The rate limiter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitSection>,
}

impl PipelineConfig {
    /// Builds the pipeline: every policy new, each in its own `Arc`, the retry spending from
    /// the budget `budgets` returns for its name (`None`: an unknown budget, an error). `path`
    /// prefixes every error's field path (`"pipelines.payments"`).
    ///
    /// This is the one function from a pipeline's config to a pipeline; [`Config::build`]
    /// and the simulator's scenarios both call it.
    ///
    /// [`Config::build`]: crate::Config::build
    pub fn build(
        &self,
        path: &str,
        budgets: &dyn Fn(&str) -> Option<Arc<Budget>>,
    ) -> Result<ConfiguredPipeline, ConfigError> {
        self.build_reusing(path, budgets, None)
    }

    /// As [`build`](Self::build), but a policy whose table equals its table in `previous`
    /// (the config and the pipeline built from it) is the previous policy: the same `Arc`,
    /// its state kept. A policy whose table changed only in settings it takes in place (of a
    /// pipeline's, today the bulkhead's `max_concurrent`, the rate limiter's rate and burst,
    /// the limiter's `min_limit` and `max_limit`, the throttler's `accepts_multiplier` and
    /// `max_rejection_rate`, and the
    /// breaker's thresholds, waits and probe counts over the same window, where its timers
    /// hold the new waits: `Breaker::check_reconfigure`) is the previous policy too,
    /// reconfigured: its calls in flight are kept.
    /// Every other policy is new. The retry policy holds no state of its own and is always
    /// rebuilt; its budget is whatever `budgets` returns, which is how a reload
    /// keeps an unchanged shared budget.
    ///
    /// The reconfigurations are applied when this returns `Ok`, and never on an error. A
    /// whole config's reload ([`Config::build_reusing`](crate::Config::build_reusing)) holds
    /// them back until every pipeline has built, so a reload refused anywhere changes nothing.
    pub fn build_reusing(
        &self,
        path: &str,
        budgets: &dyn Fn(&str) -> Option<Arc<Budget>>,
        previous: Option<(&PipelineConfig, &ConfiguredPipeline)>,
    ) -> Result<ConfiguredPipeline, ConfigError> {
        let mut pending = Pending::default();
        let pipeline = self.build_deferring(path, budgets, previous, &mut pending)?;
        pending.apply();
        Ok(pipeline)
    }

    /// [`build_reusing`](Self::build_reusing), adding its in-place reconfigurations to
    /// `pending` instead of applying them.
    pub(crate) fn build_deferring(
        &self,
        path: &str,
        budgets: &dyn Fn(&str) -> Option<Arc<Budget>>,
        previous: Option<(&PipelineConfig, &ConfiguredPipeline)>,
        pending: &mut Pending,
    ) -> Result<ConfiguredPipeline, ConfigError> {
        fn slot<S: PartialEq, P>(
            section: &Option<S>,
            previous: Option<(&Option<S>, &Option<Arc<P>>)>,
            build: impl FnOnce(&S) -> Result<P, ConfigError>,
        ) -> Result<Option<Arc<P>>, ConfigError> {
            let Some(s) = section else { return Ok(None) };
            // Equal table: the same policy, state and all. Any difference: a fresh policy.
            if let Some((Some(old), Some(policy))) = previous
                && old == s
            {
                return Ok(Some(Arc::clone(policy)));
            }
            build(s).map(|p| Some(Arc::new(p)))
        }
        let retry = match &self.retry {
            None => ConfiguredRetry::NONE,
            Some(r) => ConfiguredRetry::new(r.build(&join(path, "retry"), budgets)?),
        };
        let throttler_path = join(path, "throttler");
        let live_throttler =
            previous.and_then(|(c, p)| Some((c.throttler.as_ref()?, p.throttler_ref().as_ref()?)));
        let throttler = match (&self.throttler, live_throttler) {
            // Only K and the cap changed: the live throttler, its window kept.
            (Some(s), Some((old, live))) if old != s && only_k_and_cap_differ(old, s) => {
                // Validated as a fresh throttler would be, so its errors name their fields.
                s.build(&throttler_path)?;
                let (config, target) = (s.core_config(), Arc::clone(live));
                pending.push(move |env| reconfigure_throttler(&target, config, env));
                Some(Arc::clone(live))
            }
            _ => slot(
                &self.throttler,
                previous.map(|(c, p)| (&c.throttler, p.throttler_ref())),
                |s| s.build(&throttler_path),
            )?,
        };
        let breaker_path = join(path, "breaker");
        let live_breaker =
            previous.and_then(|(c, p)| Some((c.breaker.as_ref()?, p.breaker_ref().as_ref()?)));
        let breaker = match (&self.breaker, live_breaker) {
            // Same window, and the live breaker takes the new thresholds, waits and probes in
            // place: the live one, its state, counts and calls in flight kept.
            (Some(s), Some((old, live)))
                if old != s && reconfigurable_breaker(old, live, s, &breaker_path).is_some() =>
            {
                // Validated as a fresh breaker would be, so its errors name their fields.
                s.build(&breaker_path)?;
                let config = reconfigurable_breaker(old, live, s, &breaker_path)
                    .expect("checked just above");
                let target = Arc::clone(live);
                pending.push(move |env| {
                    // Checked: the only refusal left is another writer racing this one.
                    while let Err(resilix::breaker::BreakerReconfigureError::Busy) =
                        target.reconfigure(config, env)
                    {
                        std::hint::spin_loop();
                    }
                });
                Some(Arc::clone(live))
            }
            _ => slot(
                &self.breaker,
                previous.map(|(c, p)| (&c.breaker, p.breaker_ref())),
                |s| s.build(&breaker_path),
            )?,
        };
        let limiter_path = join(path, "limiter");
        let live_limiter =
            previous.and_then(|(c, p)| Some((c.limiter.as_ref()?, p.limiter_ref().as_ref()?)));
        let limiter = match (&self.limiter, live_limiter) {
            // Only the bounds changed: the live limiter, its limit clamped into them.
            (Some(s), Some((old, live)))
                if old != s && only_bounds_differ(old, s, &limiter_path) =>
            {
                // Validated as a fresh limiter would be, so its errors name their fields.
                s.build(&limiter_path)?;
                let config = s.core_config(&limiter_path)?;
                let target = Arc::clone(live);
                pending.push(move |env| {
                    // The config was checked: the only refusal left is a window closing at
                    // that instant (a few stores), so try again until it is through.
                    while let Err(resilix::limiter::LimiterReconfigureError::Busy) =
                        target.reconfigure(config, env)
                    {
                        std::hint::spin_loop();
                    }
                });
                Some(Arc::clone(live))
            }
            _ => slot(
                &self.limiter,
                previous.map(|(c, p)| (&c.limiter, p.limiter_ref())),
                |s| s.build(&limiter_path),
            )?,
        };
        let live_bulkhead =
            previous.and_then(|(c, p)| Some((c.bulkhead.as_ref()?, p.bulkhead_ref().as_ref()?)));
        let bulkhead = match (&self.bulkhead, live_bulkhead) {
            // The cap is the bulkhead's only setting and it changes in place: the live one,
            // reconfigured once the whole config has built, its calls in flight kept.
            (Some(s), Some((old, live))) => {
                if old != s {
                    let config = s.core_config(&join(path, "bulkhead"))?;
                    let live = Arc::clone(live);
                    pending.push(move |env| live.reconfigure(config, env));
                }
                Some(Arc::clone(live))
            }
            _ => slot(&self.bulkhead, None, |s| s.build(&join(path, "bulkhead")))?,
        };
        let rate_limit_path = join(path, "rate_limit");
        let live_rate_limit = previous
            .and_then(|(c, p)| Some((c.rate_limit.as_ref()?, p.rate_limit_ref().as_ref()?)));
        let rate_limit = match (&self.rate_limit, live_rate_limit) {
            // Rate and burst both change in place: the live limiter, its spent cells carried
            // over (capped at the new burst), reconfigured once the whole config has built.
            (Some(s), Some((old, live))) => {
                if old != s {
                    // Validated as a fresh limiter would be, so its errors name their fields.
                    s.build(&rate_limit_path)?;
                    let (config, target) = (s.core_config(), Arc::clone(live));
                    pending.push(move |env| {
                        // The config was checked: the only refusal left is another writer
                        // racing this one, which ends in a few stores.
                        while let Err(resilix::rate_limit::ReconfigureError::Busy) =
                            target.reconfigure(config, env)
                        {
                            std::hint::spin_loop();
                        }
                    });
                }
                Some(Arc::clone(live))
            }
            _ => slot(&self.rate_limit, None, |s| s.build(&rate_limit_path))?,
        };
        let pipeline = Pipeline::new()
            .retry(retry)
            .throttler(throttler)
            .breaker(breaker)
            .limiter(limiter)
            .bulkhead(bulkhead)
            .rate_limit(rate_limit);
        match self.attempt_timeout {
            Some(t) => pipeline.try_attempt_timeout(t.0).map_err(|e| {
                ConfigError::new(join(path, "attempt_timeout"), Problem::AttemptTimeout(e))
            }),
            None => Ok(pipeline),
        }
    }
}

type Reconfiguration = Box<dyn FnOnce(&mut Env<'_, SeededRandom>) + Send>;

/// In-place reconfigurations a build decided on, applied only once the whole config has
/// built (static stability: a refused reload must leave every live policy as it was).
#[derive(Default)]
pub(crate) struct Pending(Vec<Reconfiguration>);

impl Pending {
    pub(crate) fn push(&mut self, f: impl FnOnce(&mut Env<'_, SeededRandom>) + Send + 'static) {
        self.0.push(Box::new(f));
    }

    /// Applies them all. The reload reports them (`ChangeKind::Reconfigured`); the policies'
    /// own `PolicyReconfigured` events go to no observer here (a reload has none), and no
    /// decision of a reconfiguration applied here reads the time or the randomness.
    pub(crate) fn apply(self) {
        let mut rng = SeededRandom::new(0);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        for f in self.0 {
            f(&mut env);
        }
    }
}

/// The config a live breaker (built from `old`) takes in place for `section`: the same
/// window, and nothing its timers cannot hold (`Breaker::check_reconfigure`). `None`: build
/// a fresh breaker.
fn reconfigurable_breaker(
    old: &BreakerSection,
    live: &ConfiguredBreaker,
    section: &BreakerSection,
    path: &str,
) -> Option<resilix::breaker::Config> {
    let ((_, before), (after, window)) =
        (old.core_config(path).ok()?, section.core_config(path).ok()?);
    (before == window && live.check_reconfigure(&after).is_ok()).then_some(after)
}

/// Whether two limiter tables mean configs that differ in `min_limit` and `max_limit` only:
/// what a running limiter takes in place (`Limiter::reconfigure`).
fn only_bounds_differ(old: &LimiterSection, new: &LimiterSection, path: &str) -> bool {
    let (Ok(a), Ok(b)) = (old.core_config(path), new.core_config(path)) else {
        return false;
    };
    let unbounded = |c: resilix::limiter::LimiterConfig| resilix::limiter::LimiterConfig {
        min_limit: 0,
        max_limit: 0,
        ..c
    };
    unbounded(a) == unbounded(b)
}

/// A live ratio budget that can take `section` in place (its table was `old`): both ratio
/// budgets over the same window, so only the ratio and the floor differ. `None`: build fresh.
pub(crate) fn reconfigurable_ratio(
    old: &BudgetSection,
    live: &Arc<Budget>,
    section: &BudgetSection,
    path: &str,
) -> Option<(Arc<Budget>, resilix::retry::budget::RatioBudgetConfig)> {
    let (Ok(BudgetCore::Ratio(before)), Ok(BudgetCore::Ratio(after))) =
        (old.core_config(path), section.core_config(path))
    else {
        return None;
    };
    (matches!(**live, Budget::Ratio(_)) && before.window == after.window)
        .then(|| (Arc::clone(live), after))
}

/// Applies a ratio budget's new ratio and floor. The config was validated and its window
/// checked equal when the reload decided, so the only refusal left is another writer racing
/// this one (`Busy`, held for a few stores): tried again until it is through.
pub(crate) fn reconfigure_ratio(
    live: &Budget,
    config: resilix::retry::budget::RatioBudgetConfig,
    env: &mut Env<'_, SeededRandom>,
) {
    use resilix::retry::budget::ratio::RatioReconfigureError;
    let Budget::Ratio(budget) = live else { return };
    while let Err(RatioReconfigureError::Busy) = budget.reconfigure(config, env) {
        std::hint::spin_loop();
    }
}

/// A live retry breaker that can take `section` in place (its table was `old`): both retry
/// breakers over the same window, so only the threshold and the minimum differ. `None`: build
/// fresh.
pub(crate) fn reconfigurable_retry_breaker(
    old: &BudgetSection,
    live: &Arc<Budget>,
    section: &BudgetSection,
    path: &str,
) -> Option<(Arc<Budget>, resilix::retry::budget::RetryBreakerConfig)> {
    let (Ok(BudgetCore::RetryBreaker(before)), Ok(BudgetCore::RetryBreaker(after))) =
        (old.core_config(path), section.core_config(path))
    else {
        return None;
    };
    (matches!(**live, Budget::RetryBreaker(_)) && before.window == after.window)
        .then(|| (Arc::clone(live), after))
}

/// Applies a retry breaker's new threshold and minimum (checked as for the ratio budget:
/// only a racing writer can refuse it, for a few stores).
pub(crate) fn reconfigure_retry_breaker(
    live: &Budget,
    config: resilix::retry::budget::RetryBreakerConfig,
    env: &mut Env<'_, SeededRandom>,
) {
    use resilix::retry::budget::ratio::RatioReconfigureError;
    let Budget::RetryBreaker(breaker) = live else {
        return;
    };
    while let Err(RatioReconfigureError::Busy) = breaker.reconfigure(config, env) {
        std::hint::spin_loop();
    }
}

/// Whether two throttler tables mean configs that differ in K and the cap only: what a
/// running throttler takes in place (`Throttler::reconfigure`).
fn only_k_and_cap_differ(old: &ThrottlerSection, new: &ThrottlerSection) -> bool {
    let plain = |c: resilix::throttler::ThrottlerConfig| resilix::throttler::ThrottlerConfig {
        accepts_multiplier: 1.0,
        max_rejection_rate: 0.0,
        ..c
    };
    plain(old.core_config()) == plain(new.core_config())
}

/// Applies a throttler's new K and cap. The config was validated and the rest checked equal
/// when the reload decided, so the only refusal left is another writer racing this one
/// (`Busy`, held for a few stores): tried again until it is through.
fn reconfigure_throttler(
    live: &resilix::throttler::Throttler,
    config: resilix::throttler::ThrottlerConfig,
    env: &mut Env<'_, SeededRandom>,
) {
    use resilix::throttler::ThrottlerReconfigureError;
    while let Err(ThrottlerReconfigureError::Busy) = live.reconfigure(config, env) {
        std::hint::spin_loop();
    }
}

/// A live token bucket that can take `section` in place (its table was `old`): any two token
/// buckets (every setting of one changes in place, the balance carried over). `None`: build
/// fresh.
pub(crate) fn reconfigurable_bucket(
    old: &BudgetSection,
    live: &Arc<Budget>,
    section: &BudgetSection,
    path: &str,
) -> Option<(Arc<Budget>, resilix::retry::budget::TokenBucketConfig)> {
    let (Ok(BudgetCore::TokenBucket(_)), Ok(BudgetCore::TokenBucket(after))) =
        (old.core_config(path), section.core_config(path))
    else {
        return None;
    };
    matches!(**live, Budget::TokenBucket(_)).then(|| (Arc::clone(live), after))
}

/// Applies a token bucket's new settings, retried while another writer holds it (`Busy`).
pub(crate) fn reconfigure_bucket(
    live: &Budget,
    config: resilix::retry::budget::TokenBucketConfig,
    env: &mut Env<'_, SeededRandom>,
) {
    use resilix::retry::budget::TokenBucketReconfigureError;
    let Budget::TokenBucket(bucket) = live else {
        return;
    };
    while let Err(TokenBucketReconfigureError::Busy) = bucket.reconfigure(config, env) {
        std::hint::spin_loop();
    }
}
