//! Whole files: every field read, meant as the core means it, written back and read again
//! equal, in TOML and JSON alike.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use resilix::breaker::{self, OpenBackoff, SlowCalls};
use resilix::limiter::{Aimd, Algorithm, Gradient2, LimiterConfig, Vegas};
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix::retry::budget::{
    Charge, RatioBudgetConfig, RetryBreakerConfig, RetrySuccess, TokenBucketConfig, Tokens,
};
use resilix::retry::{Backoff, RetryConfig, Strategy, UncertainRetry};
use resilix::throttler::{LocalRejections, ThrottlerConfig};
use resilix_config::section::{BreakerWindow, BudgetCore};
use resilix_config::{Budget, Config, ConfiguredBreaker};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn full() -> Config {
    Config::from_path(data("full.toml")).expect("full.toml reads")
}

#[test]
fn toml_and_json_files_of_the_same_content_read_equal() {
    let json = Config::from_path(data("full.json")).expect("full.json reads");
    assert_eq!(full(), json);
    assert_eq!(full().pipelines.len(), 5);
    assert_eq!(full().budgets.len(), 5);
}

#[test]
fn every_field_round_trips_through_toml_and_json() {
    let config = full();
    let toml = config.to_toml_string();
    assert_eq!(
        Config::from_toml_str(&toml).unwrap(),
        config,
        "TOML:\n{toml}"
    );
    let json = config.to_json_string();
    assert_eq!(
        Config::from_json_str(&json).unwrap(),
        config,
        "JSON:\n{json}"
    );
    // Crossing over: TOML written, read, written as JSON, read.
    let crossed = Config::from_json_str(&Config::from_toml_str(&toml).unwrap().to_json_string());
    assert_eq!(crossed.unwrap(), config);
}

#[test]
fn every_field_means_what_the_core_means() {
    let config = full();
    let payments = &config.pipelines["payments"];
    let ms = Duration::from_millis;
    let s = Duration::from_secs;

    let retry = payments.retry.as_ref().unwrap().core_config("r").unwrap();
    let expected = RetryConfig::new(
        4,
        Backoff::new(Strategy::Decorrelated, ms(50), s(10)).unwrap(),
    )
    .unwrap()
    .with_max_retry_after(s(60))
    .with_uncertain_retry(UncertainRetry::IdempotentOnly);
    assert_eq!(retry, expected);

    let throttler = payments.throttler.as_ref().unwrap().core_config();
    assert_eq!(
        throttler,
        ThrottlerConfig {
            accepts_multiplier: 1.5,
            max_rejection_rate: 0.5,
            window: s(60),
            min_requests: 20,
            local_rejections: LocalRejections::Ignore,
        }
    );

    let (breaker, window) = payments.breaker.as_ref().unwrap().core_config("b").unwrap();
    assert_eq!(
        breaker,
        breaker::Config {
            failure_rate_above_percent: Some(40),
            minimum_calls: 50,
            slow_calls: Some(SlowCalls {
                slower_than: s(2),
                above_percent: 80
            }),
            consecutive_failures: Some(5),
            open_wait: s(10),
            open_backoff: Some(OpenBackoff {
                multiplier_percent: 200,
                max_wait: s(300)
            }),
            open_jitter_percent: 20,
            half_open_probes: 3,
            probes_to_close: 2,
            max_half_open_wait: Some(s(30)),
        }
    );
    assert_eq!(window, BreakerWindow::Time(s(20)));

    let limiter = payments.limiter.as_ref().unwrap().core_config("l").unwrap();
    assert_eq!(
        limiter,
        LimiterConfig {
            algorithm: Algorithm::Gradient2(Gradient2 {
                smoothing: 0.5,
                queue_size: 8,
                long_window: 300,
                rtt_tolerance: 2.0,
                drop_backoff: 0.8,
                drop_threshold: 0.05,
            }),
            initial_limit: 30,
            min_limit: 10,
            max_limit: 300,
            min_window: ms(500),
            max_window: s(2),
            window_samples: 20,
            min_rtt: Duration::from_micros(50),
            probe_multiplier: 40,
            queue_factor: 2.0,
            queue_rungs: 8,
        }
    );
    assert_eq!(payments.bulkhead.unwrap().max_concurrent, Some(10));
    assert_eq!(
        payments.rate_limit.unwrap().core_config(),
        RateLimitConfig::new(Rate::per_second(100)).with_burst(20)
    );
    assert_eq!(payments.attempt_timeout.unwrap().0, ms(250));

    let search = &config.pipelines["search"];
    let (breaker, window) = search.breaker.as_ref().unwrap().core_config("b").unwrap();
    assert_eq!(breaker.failure_rate_above_percent, None, "\"off\"");
    assert_eq!(breaker.consecutive_failures, None);
    assert_eq!(breaker.open_backoff, None);
    assert_eq!(breaker.max_half_open_wait, None);
    assert_eq!(window, BreakerWindow::Count(100));
    assert_eq!(
        search.limiter.as_ref().unwrap().core_config("l").unwrap(),
        LimiterConfig {
            algorithm: Algorithm::Vegas(Vegas { smoothing: 0.5 }),
            ..LimiterConfig::vegas()
        }
    );
    assert_eq!(
        search
            .retry
            .as_ref()
            .unwrap()
            .core_config("r")
            .unwrap()
            .backoff()
            .strategy(),
        Strategy::EqualJitter
    );
    assert_eq!(
        config.pipelines["inventory"]
            .limiter
            .as_ref()
            .unwrap()
            .core_config("l")
            .unwrap(),
        LimiterConfig {
            algorithm: Algorithm::Aimd(Aimd {
                backoff_ratio: 0.75,
                timeout: s(2)
            }),
            ..LimiterConfig::aimd()
        }
    );
    assert_eq!(
        config.pipelines["inventory"]
            .retry
            .as_ref()
            .unwrap()
            .core_config("r")
            .unwrap()
            .backoff()
            .strategy(),
        Strategy::Exponential
    );

    let budget = |name: &str| config.budgets[name].core_config(name).unwrap();
    assert_eq!(
        budget("bucket"),
        BudgetCore::TokenBucket(TokenBucketConfig {
            capacity: Tokens::whole(50),
            initial: Tokens::milli(40_500),
            retry_cost: Tokens::whole(2),
            timeout_retry_cost: Tokens::whole(3),
            first_try_success: Tokens::milli(250),
            retry_success: RetrySuccess::Deposit(Tokens::milli(500)),
            floor: Tokens::whole(1),
            charge: Charge::EveryFailure,
        })
    );
    assert_eq!(
        budget("refund"),
        BudgetCore::TokenBucket(TokenBucketConfig {
            retry_success: RetrySuccess::RefundCost,
            ..TokenBucketConfig::AWS_SDK_STANDARD
        })
    );
    assert_eq!(
        budget("grpc"),
        BudgetCore::TokenBucket(
            TokenBucketConfig::grpc(Tokens::whole(20), Tokens::milli(200)).unwrap()
        )
    );
    assert_eq!(
        budget("sre"),
        BudgetCore::Ratio(RatioBudgetConfig {
            max_retry_permille: 200,
            min_retries_per_window: 5,
            window: s(20),
        })
    );
    assert_eq!(
        budget("brooker"),
        BudgetCore::RetryBreaker(RetryBreakerConfig {
            max_failure_permille: 150,
            min_attempts: 20,
            window: s(30),
        })
    );
}

#[test]
fn the_full_file_builds_real_policies_sharing_their_budgets() {
    let pipelines = full().build().expect("full.toml is valid");
    assert_eq!(
        pipelines.names().collect::<Vec<_>>(),
        ["bare", "inventory", "ledger", "payments", "search"]
    );
    let payments = pipelines.get("payments").unwrap();
    let breaker = payments.breaker_ref().as_deref().unwrap();
    assert!(matches!(breaker, ConfiguredBreaker::Time(_)));
    assert_eq!(breaker.config().half_open_probes, 3);
    assert_eq!(
        payments.bulkhead_ref().as_ref().unwrap().max_concurrent(),
        10
    );
    assert_eq!(payments.rate_limit_ref().as_ref().unwrap().burst(), 20);
    assert_eq!(payments.limiter_ref().as_ref().unwrap().limit(), 30);
    assert_eq!(
        payments.attempt_timeout_value(),
        Some(Duration::from_millis(250))
    );
    let spends_from = |pipeline: &str| {
        pipelines
            .get(pipeline)
            .unwrap()
            .retry_policy()
            .get()
            .unwrap()
            .budget()
            .get()
            .cloned()
            .unwrap()
    };
    assert!(Arc::ptr_eq(
        &spends_from("payments"),
        pipelines.budget("bucket").unwrap()
    ));
    assert!(matches!(*spends_from("search"), Budget::Ratio(_)));
    assert!(matches!(*spends_from("inventory"), Budget::RetryBreaker(_)));
    match &*spends_from("ledger") {
        Budget::TokenBucket(b) => assert_eq!(b.balance(), Tokens::whole(20)),
        other => panic!("grpc builds a token bucket, not {other:?}"),
    }
    let search = pipelines.get("search").unwrap();
    assert!(matches!(
        search.breaker_ref().as_deref().unwrap(),
        ConfiguredBreaker::Count(_)
    ));
    let bare = pipelines.get("bare").unwrap();
    assert!(bare.retry_policy().get().is_none());
    assert!(bare.breaker_ref().is_none() && bare.throttler_ref().is_none());
    assert!(bare.attempt_timeout_value().is_none());
}

#[test]
fn an_empty_file_is_an_empty_config() {
    assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
    assert_eq!(Config::from_json_str("{}").unwrap(), Config::default());
    assert_eq!(Config::default().build().unwrap().names().count(), 0);
}

#[test]
fn from_path_reads_by_extension_and_names_the_file_it_cannot_read() {
    let dir = std::env::temp_dir().join(format!("resilix-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = dir.join("c.yaml");
    std::fs::write(&yaml, "pipelines: {}").unwrap();
    let e = Config::from_path(&yaml).unwrap_err();
    assert!(e.to_string().contains("\"yaml\""), "{e}");
    let upper = dir.join("c.TOML");
    std::fs::write(&upper, "[pipelines.a]").unwrap();
    assert_eq!(Config::from_path(&upper).unwrap().pipelines.len(), 1);
    let missing = dir.join("absent.toml");
    let e = Config::from_path(&missing).unwrap_err();
    assert!(e.to_string().contains("absent.toml"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
