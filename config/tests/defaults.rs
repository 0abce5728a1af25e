//! A table left empty means the core's documented defaults, field for field.

use std::time::Duration;

use resilix::breaker::{self, DEFAULT_WINDOW};
use resilix::bulkhead::BulkheadConfig;
use resilix::limiter::LimiterConfig;
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix::retry::RetryConfig;
use resilix::retry::budget::{
    RatioBudgetConfig, RetryBreakerConfig, TokenBucket, TokenBucketConfig, Tokens,
};
use resilix::throttler::ThrottlerConfig;
use resilix_config::section::{
    AlgorithmName, BreakerSection, BreakerWindow, BudgetCore, BudgetKind, BudgetSection,
    LimiterSection, RetrySection, ThrottlerSection,
};
use resilix_config::{Budget, Config};

#[test]
fn empty_tables_are_the_cores_defaults() {
    let (config, window) = BreakerSection::default().core_config("b").unwrap();
    assert_eq!(config, breaker::Config::DEFAULT);
    assert_eq!(window, BreakerWindow::Time(DEFAULT_WINDOW));
    assert_eq!(
        ThrottlerSection::default().core_config(),
        ThrottlerConfig::DEFAULT
    );
    assert_eq!(
        LimiterSection::default().core_config("l").unwrap(),
        LimiterConfig::gradient2()
    );
    for (name, preset) in [
        (AlgorithmName::Gradient2, LimiterConfig::gradient2()),
        (AlgorithmName::Vegas, LimiterConfig::vegas()),
        (AlgorithmName::Aimd, LimiterConfig::aimd()),
    ] {
        let section = LimiterSection {
            algorithm: Some(name),
            ..Default::default()
        };
        assert_eq!(section.core_config("l").unwrap(), preset);
    }
    assert_eq!(
        RetrySection::default().core_config("r").unwrap(),
        RetryConfig::DEFAULT
    );
    let budget = |kind| BudgetSection::of_kind(kind).core_config("b").unwrap();
    assert_eq!(
        budget(BudgetKind::TokenBucket),
        BudgetCore::TokenBucket(TokenBucketConfig::AWS_SDK_STANDARD),
        "the core's TokenBucket::default()"
    );
    assert_eq!(
        TokenBucket::default().config(),
        TokenBucketConfig::AWS_SDK_STANDARD
    );
    assert_eq!(
        budget(BudgetKind::Grpc),
        BudgetCore::TokenBucket(TokenBucketConfig::GRPC_A6_EXAMPLE)
    );
    assert_eq!(
        budget(BudgetKind::Ratio),
        BudgetCore::Ratio(RatioBudgetConfig::DEFAULT)
    );
    assert_eq!(
        budget(BudgetKind::RetryBreaker),
        BudgetCore::RetryBreaker(RetryBreakerConfig::DEFAULT)
    );
}

#[test]
fn empty_tables_in_a_file_build_the_default_policies() {
    let text = r#"
        [budgets.b]
        kind = "token-bucket"
        [pipelines.p]
        [pipelines.p.retry]
        budget = "b"
        [pipelines.p.throttler]
        [pipelines.p.breaker]
        [pipelines.p.limiter]
        [pipelines.p.bulkhead]
        [pipelines.p.rate_limit]
        count = 50
    "#;
    let pipelines = Config::from_toml_str(text).unwrap().build().unwrap();
    let p = pipelines.get("p").unwrap();
    assert_eq!(
        p.retry_policy().get().unwrap().config(),
        &RetryConfig::DEFAULT
    );
    assert_eq!(
        p.breaker_ref().as_ref().unwrap().config(),
        breaker::Config::DEFAULT
    );
    assert_eq!(
        p.bulkhead_ref().as_ref().unwrap().max_concurrent(),
        BulkheadConfig::DEFAULT.max_concurrent()
    );
    let limiter = p.limiter_ref().as_ref().unwrap();
    assert_eq!(limiter.limit(), LimiterConfig::gradient2().initial_limit);
    let rate = p.rate_limit_ref().as_ref().unwrap();
    let core = RateLimitConfig::new(Rate::per_second(50));
    assert_eq!(rate.burst(), core.burst, "one period's worth");
    // The core holds the interval to within 0.1%, never faster than asked.
    let interval = rate.emission_interval();
    assert!(interval >= Duration::from_millis(20) && interval <= Duration::from_micros(20_020));
    match &**pipelines.budget("b").unwrap() {
        Budget::TokenBucket(b) => assert_eq!(b.balance(), Tokens::whole(500)),
        other => panic!("{other:?}"),
    }
    assert_eq!(p.attempt_timeout_value(), None);
}

#[test]
fn probes_to_close_defaults_to_all_the_probes() {
    let section = BreakerSection {
        half_open_probes: Some(4),
        ..Default::default()
    };
    let (config, _) = section.core_config("b").unwrap();
    assert_eq!((config.half_open_probes, config.probes_to_close), (4, 4));
}
