//! Configurations the script cannot run are refused at construction, each with its own error
//! and text; keys are hash-tagged as documented. No Redis needed: connections are lazy.

use std::time::Duration;

use resilix::rate_limit::{Rate, RateLimitConfig, RateLimitConfigError};
use resilix_redis::script::{GcraParams, MAX_SPAN};
use resilix_redis::{
    ConnectError, FleetConfig, FleetConfigError, FleetRateLimiter, OnBackendError,
};

const NOWHERE: &str = "redis://127.0.0.1:1/0";

fn build(config: FleetConfig) -> Result<FleetRateLimiter, FleetConfigError> {
    match FleetRateLimiter::connect(NOWHERE, config) {
        Ok(l) => Ok(l),
        Err(ConnectError::Config(e)) => Err(e),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn params_round_the_interval_up_and_bound_the_span() {
    let p = GcraParams::new(&RateLimitConfig::new(Rate::per_second(7)).with_burst(3)).unwrap();
    assert_eq!(
        p.emission_ns(),
        142_857_143,
        "⌈1e9 / 7⌉: never faster than asked"
    );
    assert_eq!(p.span_ns(), 3 * 142_857_143);
    let longest = RateLimitConfig::new(Rate::one_every(MAX_SPAN)).with_burst(1);
    let p = GcraParams::new(&longest).unwrap();
    assert_eq!(
        p.early_ns(),
        p.span_ns(),
        "the allowance is the span when that is longer"
    );
    let too_long = RateLimitConfig::new(Rate::one_every(MAX_SPAN + Duration::from_nanos(1)));
    assert_eq!(
        GcraParams::new(&too_long.with_burst(1)),
        Err(FleetConfigError::SpanTooLong)
    );
    assert_eq!(
        GcraParams::new(&RateLimitConfig::new(Rate::per_second(0))),
        Err(FleetConfigError::Rate(RateLimitConfigError::ZeroRate))
    );
    assert_eq!(
        GcraParams::new(&RateLimitConfig::new(Rate::new(1, Duration::ZERO))),
        Err(FleetConfigError::Rate(RateLimitConfigError::ZeroPeriod))
    );
    assert_eq!(
        GcraParams::new(&RateLimitConfig::new(Rate::per_second(1)).with_burst(0)),
        Err(FleetConfigError::Rate(RateLimitConfigError::ZeroBurst))
    );
    // A rate the core's 32-bit limiter cannot hold is fine for the script (wide time) ...
    let fast = RateLimitConfig::new(Rate::per_second(2_000_000)).with_burst(1);
    assert!(GcraParams::new(&fast).is_ok());
}

#[tokio::test]
async fn refused_configs_have_their_own_errors() {
    let ok = RateLimitConfig::new(Rate::per_second(10));
    let fast = RateLimitConfig::new(Rate::per_second(2_000_000)).with_burst(1);
    // ... but not with a local fallback, whose limiter is the core's.
    assert_eq!(
        build(FleetConfig::new("a", fast).on_backend_error(OnBackendError::Local { nodes: 1 }))
            .unwrap_err(),
        FleetConfigError::Rate(RateLimitConfigError::RateBeyondResolution)
    );
    // Failing open is capped by the core's limiter too: at the quota unless told otherwise.
    assert_eq!(
        build(FleetConfig::new("a", fast)).unwrap_err(),
        FleetConfigError::Rate(RateLimitConfigError::RateBeyondResolution)
    );
    assert!(build(FleetConfig::new("a", fast).with_fail_open_limit(ok)).is_ok());
    assert!(build(FleetConfig::new("a", fast).on_backend_error(OnBackendError::Deny)).is_ok());
    assert_eq!(
        build(FleetConfig::new("a", ok).with_max_in_flight(0)).unwrap_err(),
        FleetConfigError::Backend
    );
    assert_eq!(
        build(FleetConfig::new("a{b}", ok)).unwrap_err(),
        FleetConfigError::BraceInName
    );
    assert_eq!(
        build(FleetConfig::new("a", ok).with_prefix("p}")).unwrap_err(),
        FleetConfigError::BraceInName
    );
    assert_eq!(
        build(FleetConfig::new("a", ok).with_backend_timeout(Duration::ZERO)).unwrap_err(),
        FleetConfigError::ZeroTimeout
    );
    assert_eq!(
        build(FleetConfig::new("a", ok).on_backend_error(OnBackendError::Local { nodes: 0 }))
            .unwrap_err(),
        FleetConfigError::ZeroNodes
    );
    let texts: std::collections::BTreeSet<String> = [
        FleetConfigError::SpanTooLong,
        FleetConfigError::BraceInName,
        FleetConfigError::ZeroTimeout,
        FleetConfigError::ZeroNodes,
        FleetConfigError::Rate(RateLimitConfigError::ZeroRate),
    ]
    .iter()
    .map(|e| e.to_string())
    .collect();
    assert_eq!(texts.len(), 5, "distinct texts");
}

#[tokio::test]
async fn keys_are_hash_tagged_per_bucket() {
    let l = build(FleetConfig::new(
        "api",
        RateLimitConfig::new(Rate::per_second(10)),
    ))
    .unwrap();
    assert_eq!(l.global_key(), "resilix:{api}");
    assert_eq!(l.key_for("tenant-7"), "resilix:{api:tenant-7}");
    assert_ne!(
        l.key_for(""),
        l.global_key(),
        "the empty key is not the global bucket"
    );
}

#[test]
fn defaults_cite_their_sources() {
    let c = FleetConfig::new("x", RateLimitConfig::new(Rate::per_second(1)));
    assert_eq!(
        c.backend_timeout,
        Duration::from_millis(20),
        "Envoy's rate-limit filter"
    );
    assert_eq!(
        c.on_backend_error,
        OnBackendError::Allow,
        "Envoy, Stripe: fail open"
    );
    assert_eq!(c.prefix, "resilix:");
}

#[tokio::test]
async fn refused_leases() {
    use redis::aio::{ConnectionManager, ConnectionManagerConfig};
    use resilix_redis::{LeaseConfig, LeasedRateLimiter};
    let conn = || {
        ConnectionManager::new_lazy_with_config(
            redis::Client::open(NOWHERE).unwrap(),
            ConnectionManagerConfig::new(),
        )
        .unwrap()
    };
    let config = FleetConfig::new("a", RateLimitConfig::new(Rate::per_second(10)));
    let spawn = |lease| {
        LeasedRateLimiter::spawn(
            conn(),
            config.clone(),
            lease,
            resilix_tokio::TokioClock::new(),
        )
        .err()
    };
    let second = Duration::from_secs(1);
    assert_eq!(
        spawn(LeaseConfig::new(0, second)),
        Some(FleetConfigError::LeaseCells)
    );
    assert_eq!(
        spawn(LeaseConfig::new(11, second)),
        Some(FleetConfigError::LeaseCells),
        "more than the burst of 10"
    );
    assert_eq!(
        spawn(LeaseConfig::new(5, Duration::ZERO)),
        Some(FleetConfigError::ZeroLeasePeriod)
    );
    assert_eq!(spawn(LeaseConfig::new(10, second)), None);
    assert_ne!(
        FleetConfigError::LeaseCells.to_string(),
        FleetConfigError::ZeroLeasePeriod.to_string()
    );
}

#[tokio::test]
async fn refused_budgets() {
    use redis::aio::{ConnectionManager, ConnectionManagerConfig};
    use resilix_redis::{FleetRetryBudget, RetryBudgetConfig};
    let spawn = |c: RetryBudgetConfig| {
        let conn = ConnectionManager::new_lazy_with_config(
            redis::Client::open(NOWHERE).unwrap(),
            ConnectionManagerConfig::new(),
        )
        .unwrap();
        FleetRetryBudget::spawn(conn, c).err()
    };
    let ok = RetryBudgetConfig::new("b");
    assert_eq!(ok.per_mille, 200, "20%: Envoy, failsafe-go, Finagle");
    assert_eq!(ok.ttl, Duration::from_secs(10), "Finagle's budget TTL");
    assert_eq!(spawn(ok.clone()), None);
    for bad in [
        RetryBudgetConfig {
            per_mille: 0,
            ..ok.clone()
        },
        RetryBudgetConfig {
            local: 0,
            ..ok.clone()
        },
        RetryBudgetConfig {
            flush_every: Duration::ZERO,
            ..ok.clone()
        },
    ] {
        assert_eq!(spawn(bad), Some(FleetConfigError::BudgetConfig));
    }
    assert_eq!(
        spawn(RetryBudgetConfig {
            name: "{x".into(),
            ..ok.clone()
        }),
        Some(FleetConfigError::BraceInName)
    );
    assert_eq!(
        spawn(RetryBudgetConfig {
            backend_timeout: Duration::ZERO,
            ..ok
        }),
        Some(FleetConfigError::ZeroTimeout)
    );
}
