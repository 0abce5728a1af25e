//! The scenario's `[pipeline]` table to a real resilix pipeline.
//!
//! Everything the engine needs from a pipeline config passes through [`build`], so the format
//! read here can be replaced by the service's own start-up format in one place. Each slot is
//! optional, so the built type is one [`Pipeline`] whose slots are [`Maybe`] policies, and the
//! retry budget one [`AnyBudget`]: the policies themselves are the core's, unwrapped.

use resilix::breaker::{Breaker, CircuitState, Config as BreakerConfig, OpenBackoff};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::Observer;
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::Random;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBreaker, RetryBreakerConfig, RetryBudget, TokenBucket,
    TokenBucketConfig, Tokens, Unlimited,
};
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::{Rejection, Verdict, VerdictKind};
use serde::Deserialize;

use super::units::Dur;

/// A policy slot that may be empty: an empty slot admits everything, like `()`.
pub struct Maybe<P>(pub Option<P>);

/// The permit of a [`Maybe`] slot; dropping it drops (cancels) the inner permit.
pub enum MaybePermit<T> {
    Off,
    On(T),
}

impl<T: Permit> Permit for MaybePermit<T> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let MaybePermit::On(p) = self {
            p.settle(verdict, env);
        }
    }
}

impl<P: Policy> Policy for Maybe<P> {
    type Permit<'a>
        = MaybePermit<P::Permit<'a>>
    where
        Self: 'a;

    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<Self::Permit<'a>, Rejection> {
        match &self.0 {
            None => Ok(MaybePermit::Off),
            Some(p) => p.admit(env).map(MaybePermit::On),
        }
    }
}

/// One of the core's retry budgets, chosen by the config.
pub enum AnyBudget {
    Unlimited(Unlimited),
    Ratio(RatioBudget),
    TokenBucket(TokenBucket),
    Breaker(RetryBreaker),
}

impl RetryBudget for AnyBudget {
    fn record_first_attempt(&self, now: Instant) {
        match self {
            AnyBudget::Unlimited(b) => b.record_first_attempt(now),
            AnyBudget::Ratio(b) => b.record_first_attempt(now),
            AnyBudget::TokenBucket(b) => b.record_first_attempt(now),
            AnyBudget::Breaker(b) => b.record_first_attempt(now),
        }
    }
    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        match self {
            AnyBudget::Unlimited(b) => b.try_spend(now, after),
            AnyBudget::Ratio(b) => b.try_spend(now, after),
            AnyBudget::TokenBucket(b) => b.try_spend(now, after),
            AnyBudget::Breaker(b) => b.try_spend(now, after),
        }
    }
    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        match self {
            AnyBudget::Unlimited(b) => b.record_unretried_failure(now, after),
            AnyBudget::Ratio(b) => b.record_unretried_failure(now, after),
            AnyBudget::TokenBucket(b) => b.record_unretried_failure(now, after),
            AnyBudget::Breaker(b) => b.record_unretried_failure(now, after),
        }
    }
    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        match self {
            AnyBudget::Unlimited(b) => b.record_success(now, retried_after),
            AnyBudget::Ratio(b) => b.record_success(now, retried_after),
            AnyBudget::TokenBucket(b) => b.record_success(now, retried_after),
            AnyBudget::Breaker(b) => b.record_success(now, retried_after),
        }
    }
}

/// The pipeline a config builds.
pub type Built = Pipeline<
    Retry<AnyBudget>,
    Maybe<Throttler>,
    Maybe<Breaker>,
    Maybe<Limiter>,
    Maybe<Bulkhead>,
    Maybe<RateLimiter>,
>;

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
    let breaker_open = p.breaker_ref().0.as_ref().map(|b| match b.state() {
        CircuitState::Closed | CircuitState::Disabled => 0.0,
        CircuitState::HalfOpen => 0.5,
        CircuitState::Open | CircuitState::ForcedOpen => 1.0,
    });
    let limiter_limit = p.limiter_ref().0.as_ref().map(|l| f64::from(l.limit()));
    let throttler_rejection = p
        .throttler_ref()
        .0
        .as_ref()
        .map(|t| t.rejection_probability(now).as_f64());
    let budget_balance = match p.retry_policy().budget() {
        AnyBudget::Unlimited(_) => None,
        AnyBudget::TokenBucket(b) => Some(f64::from(b.balance().as_milli()) / 1000.0),
        AnyBudget::Ratio(b) => {
            let (first, retries) = b.counts(now);
            Some(f64::from(b.allowance(first).saturating_sub(retries)))
        }
        AnyBudget::Breaker(b) => Some(if b.is_tripped(now) { 0.0 } else { 1.0 }),
    };
    Gauges {
        breaker_open,
        limiter_limit,
        throttler_rejection,
        budget_balance,
    }
}

// The format of `resilix-config` (one `[pipelines.NAME]` table, budgets named from
// `[budgets.NAME]`), the subset the scenarios use, until that crate reaches this branch.

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PipelineSpec {
    attempt_timeout: Option<Dur>,
    retry: Option<RetrySpec>,
    throttler: Option<ThrottlerSpec>,
    breaker: Option<BreakerSpec>,
    limiter: Option<LimiterSpec>,
    bulkhead: Option<BulkheadSpec>,
    rate_limit: Option<RateLimitSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetrySpec {
    max_attempts: Option<u32>,
    backoff: Option<BackoffSpec>,
    max_retry_after: Option<Dur>,
    budget: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct BackoffSpec {
    base: Option<Dur>,
    cap: Option<Dur>,
    jitter: Option<Jitter>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum Jitter {
    Full,
    Equal,
    Decorrelated,
    None,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum BudgetKind {
    TokenBucket,
    Grpc,
    Ratio,
    RetryBreaker,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum Preset {
    AwsSdkStandard,
    GrpcA6Example,
    Brooker2022,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetSpec {
    kind: BudgetKind,
    preset: Option<Preset>,
    max_tokens: Option<f64>,
    token_ratio: Option<f64>,
    max_retry_permille: Option<u32>,
    min_retries_per_window: Option<u32>,
    max_failure_permille: Option<u32>,
    min_attempts: Option<u32>,
    window: Option<Dur>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThrottlerSpec {
    accepts_multiplier: Option<f64>,
    max_rejection_rate: Option<f64>,
    window: Option<Dur>,
    min_requests: Option<u32>,
    local_rejections: Option<LocalName>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum LocalName {
    CountAsRequests,
    Ignore,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BreakerSpec {
    failure_rate_above_percent: Option<u8>,
    minimum_calls: Option<u32>,
    consecutive_failures: Option<u32>,
    open_wait: Option<Dur>,
    open_backoff: Option<OpenBackoffSpec>,
    open_jitter_percent: Option<u8>,
    half_open_probes: Option<u8>,
    probes_to_close: Option<u8>,
    max_half_open_wait: Option<Dur>,
    window: Option<WindowSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenBackoffSpec {
    multiplier_percent: u32,
    max_wait: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WindowSpec {
    length: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimiterSpec {
    algorithm: Option<AlgorithmName>,
    initial_limit: Option<u32>,
    min_limit: Option<u32>,
    max_limit: Option<u32>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum AlgorithmName {
    Gradient2,
    Vegas,
    Aimd,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkheadSpec {
    max_concurrent: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitSpec {
    count: u32,
    per: Dur,
    burst: Option<u32>,
}

fn read<T: serde::de::DeserializeOwned>(what: &str, t: &toml::Table) -> Result<T, String> {
    toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| format!("{what}: {}", e.message().trim()))
}

/// The pipeline a `[pipeline]` table describes, with the `[budgets]` it may name, built
/// fresh: each call makes new policies, so one instance's state never leaks into another's or
/// into the next run.
pub fn build(budgets: &toml::Table, table: &toml::Table) -> Result<Built, String> {
    let spec: PipelineSpec = read("pipeline", table)?;
    let retry = match spec.retry {
        None => Retry::new(
            RetryConfig::new(1, Backoff::NONE).map_err(|e| format!("pipeline.retry: {e}"))?,
            AnyBudget::Unlimited(Unlimited),
        ),
        Some(r) => {
            let budget = match &r.budget {
                None => AnyBudget::Unlimited(Unlimited),
                Some(name) => {
                    let t = budgets
                        .get(name)
                        .and_then(|v| v.as_table())
                        .ok_or_else(|| {
                            let names: Vec<&str> = budgets.keys().map(String::as_str).collect();
                            format!(
                                "pipeline.retry.budget: no [budgets.{name}] (budgets: {})",
                                if names.is_empty() {
                                    "none".into()
                                } else {
                                    names.join(", ")
                                }
                            )
                        })?;
                    budget(
                        &format!("budgets.{name}"),
                        read(&format!("budgets.{name}"), t)?,
                    )?
                }
            };
            retry(r, budget)?
        }
    };
    let throttler = spec.throttler.map(throttler).transpose()?;
    let breaker = spec.breaker.map(breaker).transpose()?;
    let limiter = spec.limiter.map(limiter).transpose()?;
    let bulkhead = spec
        .bulkhead
        .map(|b| {
            BulkheadConfig::new(
                b.max_concurrent
                    .unwrap_or(BulkheadConfig::DEFAULT_MAX_CONCURRENT),
            )
            .map(Bulkhead::new)
            .map_err(|e| format!("pipeline.bulkhead: {e}"))
        })
        .transpose()?;
    let rate_limit = spec
        .rate_limit
        .map(|r| {
            let mut c = RateLimitConfig::new(Rate::new(r.count, r.per.0));
            if let Some(b) = r.burst {
                c = c.with_burst(b);
            }
            RateLimiter::new(c).map_err(|e| format!("pipeline.rate_limit: {e}"))
        })
        .transpose()?;
    let mut p = Pipeline::new()
        .retry(retry)
        .throttler(Maybe(throttler))
        .breaker(Maybe(breaker))
        .limiter(Maybe(limiter))
        .bulkhead(Maybe(bulkhead))
        .rate_limit(Maybe(rate_limit));
    if let Some(t) = spec.attempt_timeout {
        if t.0.is_zero() {
            return Err("pipeline.attempt_timeout must be above zero".into());
        }
        p = p.attempt_timeout(t.0);
    }
    Ok(p)
}

fn retry(r: RetrySpec, budget: AnyBudget) -> Result<Retry<AnyBudget>, String> {
    let err = |e: &dyn std::fmt::Display| format!("pipeline.retry: {e}");
    let b = r.backoff.unwrap_or_default();
    let d = Backoff::DEFAULT;
    let strategy = match b.jitter {
        None => d.strategy(),
        Some(Jitter::Full) => Strategy::FullJitter,
        Some(Jitter::Equal) => Strategy::EqualJitter,
        Some(Jitter::Decorrelated) => Strategy::Decorrelated,
        Some(Jitter::None) => Strategy::Exponential,
    };
    let backoff = Backoff::new(
        strategy,
        b.base.map_or(d.base(), |x| x.0),
        b.cap.map_or(d.cap(), |x| x.0),
    )
    .map_err(|e| err(&e))?;
    let dc = RetryConfig::DEFAULT;
    let config = RetryConfig::new(r.max_attempts.unwrap_or(dc.max_attempts()), backoff)
        .map_err(|e| err(&e))?
        .with_max_retry_after(r.max_retry_after.map_or(dc.max_retry_after(), |x| x.0));
    Ok(Retry::new(config, budget))
}

fn budget(at: &str, b: BudgetSpec) -> Result<AnyBudget, String> {
    let err = |e: &dyn std::fmt::Display| format!("{at}: {e}");
    let milli = |v: f64, name: &str| {
        if v.is_finite() && v >= 0.0 && (v * 1000.0 - (v * 1000.0).round()).abs() < 1e-6 {
            Ok(Tokens::milli((v * 1000.0).round() as u32))
        } else {
            Err(format!(
                "{at}.{name} = {v}: a non-negative number with at most three decimals"
            ))
        }
    };
    let (kind, fields): (&str, &[&str]) = match b.kind {
        BudgetKind::TokenBucket => ("token-bucket", &["preset"]),
        BudgetKind::Grpc => ("grpc", &["max_tokens", "token_ratio"]),
        BudgetKind::Ratio => (
            "ratio",
            &["max_retry_permille", "min_retries_per_window", "window"],
        ),
        BudgetKind::RetryBreaker => (
            "retry-breaker",
            &["max_failure_permille", "min_attempts", "window"],
        ),
    };
    for (field, given) in [
        ("preset", b.preset.is_some()),
        ("max_tokens", b.max_tokens.is_some()),
        ("token_ratio", b.token_ratio.is_some()),
        ("max_retry_permille", b.max_retry_permille.is_some()),
        ("min_retries_per_window", b.min_retries_per_window.is_some()),
        ("max_failure_permille", b.max_failure_permille.is_some()),
        ("min_attempts", b.min_attempts.is_some()),
        ("window", b.window.is_some()),
    ] {
        if given && !fields.contains(&field) {
            return Err(format!(
                "{at}.{field} does not apply to kind = {kind:?}, which takes {}",
                fields.join(", ")
            ));
        }
    }
    Ok(match b.kind {
        BudgetKind::TokenBucket => {
            let c = match b.preset.unwrap_or(Preset::AwsSdkStandard) {
                Preset::AwsSdkStandard => TokenBucketConfig::AWS_SDK_STANDARD,
                Preset::GrpcA6Example => TokenBucketConfig::GRPC_A6_EXAMPLE,
                Preset::Brooker2022 => TokenBucketConfig::BROOKER_2022,
            };
            AnyBudget::TokenBucket(TokenBucket::new(c).map_err(|e| err(&e))?)
        }
        BudgetKind::Grpc => {
            let c = TokenBucketConfig::grpc(
                milli(b.max_tokens.unwrap_or(10.0), "max_tokens")?,
                milli(b.token_ratio.unwrap_or(0.1), "token_ratio")?,
            )
            .map_err(|e| err(&e))?;
            AnyBudget::TokenBucket(TokenBucket::new(c).map_err(|e| err(&e))?)
        }
        BudgetKind::Ratio => {
            let d = RatioBudgetConfig::DEFAULT;
            AnyBudget::Ratio(
                RatioBudget::new(RatioBudgetConfig {
                    max_retry_permille: b.max_retry_permille.unwrap_or(d.max_retry_permille),
                    min_retries_per_window: b
                        .min_retries_per_window
                        .unwrap_or(d.min_retries_per_window),
                    window: b.window.map_or(d.window, |w| w.0),
                })
                .map_err(|e| err(&e))?,
            )
        }
        BudgetKind::RetryBreaker => {
            let d = RetryBreakerConfig::DEFAULT;
            AnyBudget::Breaker(
                RetryBreaker::new(RetryBreakerConfig {
                    max_failure_permille: b.max_failure_permille.unwrap_or(d.max_failure_permille),
                    min_attempts: b.min_attempts.unwrap_or(d.min_attempts),
                    window: b.window.map_or(d.window, |w| w.0),
                })
                .map_err(|e| err(&e))?,
            )
        }
    })
}

fn throttler(t: ThrottlerSpec) -> Result<Throttler, String> {
    let d = ThrottlerConfig::DEFAULT;
    Throttler::new(ThrottlerConfig {
        accepts_multiplier: t.accepts_multiplier.unwrap_or(d.accepts_multiplier),
        max_rejection_rate: t.max_rejection_rate.unwrap_or(d.max_rejection_rate),
        window: t.window.map_or(d.window, |w| w.0),
        min_requests: t.min_requests.unwrap_or(d.min_requests),
        local_rejections: match t.local_rejections {
            None => d.local_rejections,
            Some(LocalName::CountAsRequests) => LocalRejections::CountAsRequests,
            Some(LocalName::Ignore) => LocalRejections::Ignore,
        },
    })
    .map_err(|e| format!("pipeline.throttler: {e}"))
}

fn breaker(b: BreakerSpec) -> Result<Breaker, String> {
    let d = BreakerConfig::DEFAULT;
    let probes = b.half_open_probes.unwrap_or(d.half_open_probes);
    let config = BreakerConfig {
        failure_rate_above_percent: b
            .failure_rate_above_percent
            .or(d.failure_rate_above_percent),
        minimum_calls: b.minimum_calls.unwrap_or(d.minimum_calls),
        slow_calls: None,
        consecutive_failures: b.consecutive_failures,
        open_wait: b.open_wait.map_or(d.open_wait, |w| w.0),
        open_backoff: b.open_backoff.map(|o| OpenBackoff {
            multiplier_percent: o.multiplier_percent,
            max_wait: o.max_wait.0,
        }),
        open_jitter_percent: b.open_jitter_percent.unwrap_or(d.open_jitter_percent),
        half_open_probes: probes,
        probes_to_close: b.probes_to_close.unwrap_or(probes),
        max_half_open_wait: b.max_half_open_wait.map(|w| w.0).or(d.max_half_open_wait),
    };
    let window = b
        .window
        .map_or(resilix::breaker::DEFAULT_WINDOW, |w| w.length.0);
    Breaker::time_based(config, window).map_err(|e| format!("pipeline.breaker: {e}"))
}

fn limiter(l: LimiterSpec) -> Result<Limiter, String> {
    let mut c = match l.algorithm.unwrap_or(AlgorithmName::Gradient2) {
        AlgorithmName::Gradient2 => LimiterConfig::gradient2(),
        AlgorithmName::Vegas => LimiterConfig::vegas(),
        AlgorithmName::Aimd => LimiterConfig::aimd(),
    };
    if let Some(v) = l.initial_limit {
        c.initial_limit = v;
    }
    if let Some(v) = l.min_limit {
        c.min_limit = v;
    }
    if let Some(v) = l.max_limit {
        c.max_limit = v;
    }
    Limiter::new(c).map_err(|e| format!("pipeline.limiter: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    fn budgets() -> toml::Table {
        table(
            "[sre]\nkind = \"ratio\"\nmax_retry_permille = 200\n[bucket]\nkind = \"token-bucket\"\n",
        )
    }

    #[test]
    fn every_slot_builds_from_its_table() {
        let p = build(
            &budgets(),
            &table(
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
            window = { length = "20s" }
            [limiter]
            algorithm = "aimd"
            [bulkhead]
            max_concurrent = 10
            [rate_limit]
            count = 100
            per = "1s"
            "#,
            ),
        )
        .unwrap();
        let g = gauges(&p, Instant::ZERO);
        assert_eq!(g.breaker_open, Some(0.0));
        assert_eq!(g.limiter_limit, Some(20.0));
        assert_eq!(g.throttler_rejection, Some(0.0));
        // 200 per mille of no first attempts, plus the floor of 3.
        assert_eq!(g.budget_balance, Some(3.0));
        assert_eq!(p.retry_policy().config().max_attempts(), 3);
        let aws = build(&budgets(), &table("[retry]\nbudget = \"bucket\"")).unwrap();
        assert_eq!(gauges(&aws, Instant::ZERO).budget_balance, Some(500.0));
        let empty = build(&toml::Table::new(), &toml::Table::new()).unwrap();
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
    fn unknown_fields_and_values_are_refused_naming_the_valid_ones() {
        for (s, says) in [
            ("[retry]\nmax_attempts = 3\nretries = 2", "expected one of"),
            (
                "[retry]\nbackoff = { jitter = \"fast\" }",
                "`full`, `equal`, `decorrelated`, `none`",
            ),
            (
                "[retry]\nbudget = \"lots\"",
                "no [budgets.lots] (budgets: bucket, sre)",
            ),
            ("[breaker]\nhalf_open_probes = 0", "1..=15"),
            ("[bulkhead]\nmax_concurrent = 0", "bulkhead"),
            ("timeout = \"1s\"", "attempt_timeout"),
        ] {
            let e = build(&budgets(), &table(s))
                .err()
                .unwrap_or_else(|| panic!("{s} accepted"));
            assert!(e.contains(says), "{s}: {e}");
        }
        let bad = table("[b]\nkind = \"ratio\"\nmax_tokens = 3\n");
        let e = build(&bad, &table("[retry]\nbudget = \"b\""))
            .err()
            .unwrap();
        assert!(e.contains("does not apply to kind = \"ratio\""), "{e}");
    }
}
