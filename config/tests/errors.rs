//! Each invalid value gives the path of its field and the rule it broke (the core's own error
//! and text), the same in TOML and in JSON; parse errors also say where.

use resilix::breaker::ConfigError as BreakerError;
use resilix::bulkhead::BulkheadConfigError;
use resilix::limiter::LimiterConfigError;
use resilix::rate_limit::RateLimitConfigError;
use resilix::retry::RetryConfigError;
use resilix::retry::budget::BudgetConfigError;
use resilix::throttler::ThrottlerConfigError;
use resilix_config::{Config, ConfigError, Problem};

/// The TOML text as JSON: the same document in the other format.
fn as_json(toml_text: &str) -> String {
    let value: serde_json::Value = toml::from_str(toml_text).expect("the case is valid TOML");
    serde_json::to_string(&value).unwrap()
}

fn load_and_build(read: impl Fn(&str) -> Result<Config, ConfigError>, text: &str) -> ConfigError {
    match read(text) {
        Err(e) => e,
        Ok(config) => match config.build() {
            Err(e) => e,
            Ok(_) => panic!("accepted: {text}"),
        },
    }
}

/// Checks one invalid config in both formats: the same path, the same problem, the same
/// text; a location exactly when the parser (not the core) refused it.
fn refused(toml_text: &str, path: &str, problem: Problem) {
    let from_toml = load_and_build(Config::from_toml_str, toml_text);
    let from_json = load_and_build(Config::from_json_str, &as_json(toml_text));
    for (format, e) in [("TOML", &from_toml), ("JSON", &from_json)] {
        assert_eq!(e.path(), path, "{format} path for {toml_text}");
        assert_eq!(e.problem(), &problem, "{format} problem for {toml_text}");
        let parse = matches!(problem, Problem::Parse(_));
        assert_eq!(e.location().is_some(), parse, "{format} location: {e}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{path}: {problem}")),
            "{format}: {text}"
        );
    }
}

fn breaker(fields: &str, error: BreakerError, field: &str) {
    refused(
        &format!("[pipelines.payments.breaker]\n{fields}\n"),
        &format!("pipelines.payments.breaker.{field}"),
        Problem::Breaker(error),
    );
}

#[test]
fn every_breaker_rule_names_its_field() {
    use BreakerError as E;
    let cases = [
        (
            "failure_rate_above_percent = 100",
            E::FailureRateOutOfRange(100),
            "failure_rate_above_percent",
        ),
        ("minimum_calls = 0", E::MinimumCallsZero, "minimum_calls"),
        (
            "slow_calls = { slower_than = \"1s\", above_percent = 100 }",
            E::SlowCallRateOutOfRange(100),
            "slow_calls.above_percent",
        ),
        (
            "slow_calls = { slower_than = \"0s\", above_percent = 50 }",
            E::SlowCallDurationZero,
            "slow_calls.slower_than",
        ),
        (
            "consecutive_failures = 0",
            E::ConsecutiveFailuresZero,
            "consecutive_failures",
        ),
        (
            "failure_rate_above_percent = \"off\"",
            E::NeverOpens,
            "failure_rate_above_percent",
        ),
        ("open_wait = \"0s\"", E::OpenWaitZero, "open_wait"),
        (
            "open_backoff = { multiplier_percent = 99, max_wait = \"1m\" }",
            E::BackoffShrinks(99),
            "open_backoff.multiplier_percent",
        ),
        (
            "open_backoff = { multiplier_percent = 200, max_wait = \"1s\" }",
            E::BackoffCapBelowWait,
            "open_backoff.max_wait",
        ),
        (
            "open_jitter_percent = 100",
            E::JitterOutOfRange(100),
            "open_jitter_percent",
        ),
        (
            "half_open_probes = 0",
            E::ProbesOutOfRange(0),
            "half_open_probes",
        ),
        (
            "half_open_probes = 16",
            E::ProbesOutOfRange(16),
            "half_open_probes",
        ),
        (
            "probes_to_close = 2",
            E::ProbesToCloseOutOfRange {
                probes_to_close: 2,
                half_open_probes: 1,
            },
            "probes_to_close",
        ),
        (
            "max_half_open_wait = \"0s\"",
            E::HalfOpenWaitZero,
            "max_half_open_wait",
        ),
        (
            "window = { length = \"0s\" }",
            E::WindowEmpty,
            "window.length",
        ),
        (
            "window = { length = \"79ns\" }",
            E::WindowShorterThanBuckets,
            "window.length",
        ),
        ("window = { calls = 0 }", E::WindowEmpty, "window.calls"),
        (
            "window = { calls = 1025 }",
            E::WindowAboveCapacity {
                calls: 1025,
                capacity: 1024,
            },
            "window.calls",
        ),
        (
            "window = { calls = 10 }",
            E::WindowBelowMinimumCalls {
                calls: 10,
                minimum_calls: 20,
            },
            "window.calls",
        ),
    ];
    for (fields, error, field) in cases {
        breaker(fields, error, field);
    }
    refused(
        "[pipelines.p.breaker]\nwindow = { length = \"10s\", calls = 100 }\n",
        "pipelines.p.breaker.window",
        Problem::WindowTwoKinds,
    );
}

#[test]
fn every_throttler_rule_names_its_field() {
    use ThrottlerConfigError as E;
    let cases = [
        (
            "accepts_multiplier = 0.5",
            E::AcceptsMultiplierBelowOne,
            "accepts_multiplier",
        ),
        (
            "max_rejection_rate = 1.0",
            E::MaxRejectionRateAtLeastOne,
            "max_rejection_rate",
        ),
        (
            "max_rejection_rate = -0.1",
            E::MaxRejectionRateNegative,
            "max_rejection_rate",
        ),
        ("window = \"0s\"", E::ZeroWindow, "window"),
        (
            "min_requests = 4294967295",
            E::MinRequestsUnreachable,
            "min_requests",
        ),
        (
            "window = \"100ns\"\nmin_requests = 1",
            E::WindowShorterThanBuckets,
            "window",
        ),
    ];
    for (fields, error, field) in cases {
        refused(
            &format!("[pipelines.p.throttler]\n{fields}\n"),
            &format!("pipelines.p.throttler.{field}"),
            Problem::Throttler(error),
        );
    }
}

#[test]
fn every_limiter_rule_names_its_field() {
    use LimiterConfigError as E;
    let out = |field, expected| E::OutOfRange { field, expected };
    let cases = [
        ("min_limit = 0", E::MinLimitZero, "min_limit"),
        ("initial_limit = 10", E::LimitsOutOfOrder, "initial_limit"),
        ("max_limit = 2000000", E::MaxLimitTooLarge, "max_limit"),
        ("min_window = \"0s\"", E::BadWindow, "min_window"),
        ("min_window = \"2s\"", E::BadWindow, "min_window"),
        ("max_window = \"2h\"", E::BadWindow, "max_window"),
        ("window_samples = 0", E::WindowSamplesZero, "window_samples"),
        (
            "queue_factor = 0.5",
            out("queue_factor", "in [1.0, 16.0]"),
            "queue_factor",
        ),
        (
            "queue_rungs = 0",
            out("queue_rungs", "in [1, 1000]"),
            "queue_rungs",
        ),
        (
            "probe_multiplier = 1001",
            out("probe_multiplier", "in [0, 1000]"),
            "probe_multiplier",
        ),
        (
            "gradient2 = { smoothing = 0.0 }",
            out("gradient2.smoothing", "in (0, 1]"),
            "gradient2.smoothing",
        ),
        (
            "gradient2 = { long_window = 0 }",
            out("gradient2.long_window", "at least 1"),
            "gradient2.long_window",
        ),
        (
            "algorithm = \"vegas\"\nvegas = { smoothing = 1.5 }",
            out("vegas.smoothing", "in (0, 1]"),
            "vegas.smoothing",
        ),
        (
            "algorithm = \"aimd\"\naimd = { backoff_ratio = 0.4 }",
            out("aimd.backoff_ratio", "in [0.5, 1)"),
            "aimd.backoff_ratio",
        ),
        (
            "algorithm = \"aimd\"\naimd = { timeout = \"0s\" }",
            out("aimd.timeout", "above zero"),
            "aimd.timeout",
        ),
    ];
    for (fields, error, field) in cases {
        refused(
            &format!("[pipelines.p.limiter]\n{fields}\n"),
            &format!("pipelines.p.limiter.{field}"),
            Problem::Limiter(error),
        );
    }
    refused(
        "[pipelines.p.limiter]\nvegas = { smoothing = 0.5 }\n",
        "pipelines.p.limiter.vegas",
        Problem::NotForKind {
            kind: "algorithm = \"gradient2\"",
        },
    );
    refused(
        "[pipelines.p.limiter]\nalgorithm = \"aimd\"\ngradient2 = {}\n",
        "pipelines.p.limiter.gradient2",
        Problem::NotForKind {
            kind: "algorithm = \"aimd\"",
        },
    );
}

/// `attempt_timeout = "0s"` is refused with the core's own error and text, as
/// `Pipeline::attempt_timeout(Duration::ZERO)` is: it would time out every attempt.
#[test]
fn a_zero_attempt_timeout_is_refused_with_the_cores_rule() {
    use core::time::Duration;
    use resilix::pipeline::{AttemptTimeoutError, Pipeline};

    refused(
        "[pipelines.p]\nattempt_timeout = \"0s\"\n",
        "pipelines.p.attempt_timeout",
        Problem::AttemptTimeout(AttemptTimeoutError::Zero),
    );
    let core = Pipeline::new()
        .try_attempt_timeout(Duration::ZERO)
        .unwrap_err();
    assert_eq!(
        Problem::AttemptTimeout(core).to_string(),
        core.to_string(),
        "one rule, one text"
    );
    let panicked = std::panic::catch_unwind(|| Pipeline::new().attempt_timeout(Duration::ZERO))
        .expect_err("a zero timeout is refused at construction");
    let message = panicked
        .downcast_ref::<String>()
        .expect("a formatted panic");
    assert_eq!(message, &core.to_string());
    assert!(
        Config::from_toml_str("[pipelines.p]\nattempt_timeout = \"1ns\"\n")
            .unwrap()
            .build()
            .is_ok(),
        "the shortest timeout that is not zero is a timeout"
    );
}

#[test]
fn bulkhead_rate_limit_and_retry_rules_name_their_fields() {
    refused(
        "[pipelines.p.bulkhead]\nmax_concurrent = 0\n",
        "pipelines.p.bulkhead.max_concurrent",
        Problem::Bulkhead(BulkheadConfigError::ZeroConcurrency),
    );
    use RateLimitConfigError as R;
    let cases = [
        ("count = 0", R::ZeroRate, "pipelines.p.rate_limit.count"),
        (
            "count = 10\nper = \"0s\"",
            R::ZeroPeriod,
            "pipelines.p.rate_limit.per",
        ),
        (
            "count = 10\nburst = 0",
            R::ZeroBurst,
            "pipelines.p.rate_limit.burst",
        ),
        (
            "count = 10\nper = \"1h\"\nburst = 1073741824",
            R::BurstTooLarge,
            "pipelines.p.rate_limit.burst",
        ),
        (
            "count = 4000000",
            R::RateBeyondResolution,
            "pipelines.p.rate_limit",
        ),
    ];
    for (fields, error, path) in cases {
        refused(
            &format!("[pipelines.p.rate_limit]\n{fields}\n"),
            path,
            Problem::RateLimit(error),
        );
    }
    use RetryConfigError as E;
    let cases = [
        ("max_attempts = 0", E::ZeroAttempts, "max_attempts"),
        ("backoff = { base = \"0s\" }", E::ZeroBase, "backoff.base"),
        (
            "backoff = { cap = \"1ms\" }",
            E::CapBelowBase,
            "backoff.cap",
        ),
    ];
    for (fields, error, field) in cases {
        refused(
            &format!("[pipelines.p.retry]\n{fields}\n"),
            &format!("pipelines.p.retry.{field}"),
            Problem::Retry(error),
        );
    }
    refused(
        "[pipelines.p.retry]\nbudget = \"nope\"\n",
        "pipelines.p.retry.budget",
        Problem::UnknownBudget("nope".into()),
    );
}

#[test]
fn every_budget_rule_names_its_field() {
    use BudgetConfigError as E;
    let cases = [
        ("token-bucket", "capacity = 0", E::ZeroCapacity, "capacity"),
        (
            "token-bucket",
            "capacity = 3000000",
            E::CapacityAboveMax,
            "capacity",
        ),
        (
            "token-bucket",
            "initial = 600",
            E::InitialAboveCapacity,
            "initial",
        ),
        ("token-bucket", "retry_cost = 0", E::ZeroCost, "retry_cost"),
        (
            "token-bucket",
            "timeout_retry_cost = 0",
            E::ZeroCost,
            "timeout_retry_cost",
        ),
        ("token-bucket", "floor = 496", E::FloorUnreachable, "floor"),
        (
            "grpc",
            "max_tokens = 1001",
            E::GrpcMaxTokensOutOfRange,
            "max_tokens",
        ),
        (
            "grpc",
            "max_tokens = 0",
            E::GrpcMaxTokensOutOfRange,
            "max_tokens",
        ),
        (
            "grpc",
            "token_ratio = 0",
            E::GrpcZeroTokenRatio,
            "token_ratio",
        ),
        (
            "ratio",
            "max_retry_permille = 1001",
            E::RatioAboveOne,
            "max_retry_permille",
        ),
        (
            "ratio",
            "max_retry_permille = 0\nmin_retries_per_window = 0",
            E::NeverRetries,
            "max_retry_permille",
        ),
        ("ratio", "window = \"0s\"", E::EmptyWindow, "window"),
        (
            "ratio",
            "window = \"79ns\"",
            E::WindowShorterThanBuckets,
            "window",
        ),
        (
            "retry-breaker",
            "max_failure_permille = 0",
            E::FailureThresholdZero,
            "max_failure_permille",
        ),
        (
            "retry-breaker",
            "max_failure_permille = 1000",
            E::FailureThresholdNotBelowOne,
            "max_failure_permille",
        ),
        (
            "retry-breaker",
            "min_attempts = 4294967295",
            E::MinAttemptsUnreachable,
            "min_attempts",
        ),
    ];
    for (kind, fields, error, field) in cases {
        refused(
            &format!("[budgets.b]\nkind = \"{kind}\"\n{fields}\n"),
            &format!("budgets.b.{field}"),
            Problem::Budget(error),
        );
    }
    let foreign = [
        ("token-bucket", "window = \"1s\"", "window"),
        ("grpc", "capacity = 1", "capacity"),
        ("ratio", "preset = \"brooker-2022\"", "preset"),
        (
            "retry-breaker",
            "max_retry_permille = 1",
            "max_retry_permille",
        ),
    ];
    for (kind, fields, field) in foreign {
        let kind_text: &'static str = match kind {
            "token-bucket" => "kind = \"token-bucket\"",
            "grpc" => "kind = \"grpc\"",
            "ratio" => "kind = \"ratio\"",
            _ => "kind = \"retry-breaker\"",
        };
        refused(
            &format!("[budgets.b]\nkind = \"{kind}\"\n{fields}\n"),
            &format!("budgets.b.{field}"),
            Problem::NotForKind { kind: kind_text },
        );
    }
}

/// A parse error: its path, and its message containing `needle`.
fn unreadable(toml_text: &str, path: &str, needle: &str) {
    for (format, result) in [
        ("TOML", Config::from_toml_str(toml_text)),
        ("JSON", Config::from_json_str(&as_json(toml_text))),
    ] {
        let e = result.expect_err(toml_text);
        assert_eq!(e.path(), path, "{format}: {e}");
        let Problem::Parse(message) = e.problem() else {
            panic!("{format}: not a parse error: {e}")
        };
        assert!(
            message.contains(needle),
            "{format}: {message:?} lacks {needle:?}"
        );
        assert!(e.location().is_some(), "{format}: {e}");
    }
}

#[test]
fn unknown_fields_wrong_types_and_bad_values_are_parse_errors_with_paths() {
    let cases = [
        (
            "[pipelines.p]\nretries = 3\n",
            "pipelines.p.retries",
            "unknown field `retries`",
        ),
        (
            "[pipelines.p.breaker]\nopen_wiat = \"5s\"\n",
            "pipelines.p.breaker.open_wiat",
            "unknown field",
        ),
        (
            "[pipelines.p.breaker]\nwindow = { size = 3 }\n",
            "pipelines.p.breaker.window.size",
            "unknown field",
        ),
        (
            "[pipelines.p.retry]\nbackoff = { jittr = \"full\" }\n",
            "pipelines.p.retry.backoff.jittr",
            "unknown field",
        ),
        (
            "[budgets.b]\nkind = \"ratio\"\nratio = 1\n",
            "budgets.b.ratio",
            "unknown field",
        ),
        ("[extra]\n", "extra", "unknown field `extra`"),
        (
            "[pipelines.p.breaker]\nminimum_calls = \"20\"\n",
            "pipelines.p.breaker.minimum_calls",
            "invalid type",
        ),
        (
            "[pipelines.p.breaker]\nminimum_calls = -1\n",
            "pipelines.p.breaker.minimum_calls",
            "invalid value",
        ),
        (
            "[pipelines.p.breaker]\nhalf_open_probes = 300\n",
            "pipelines.p.breaker.half_open_probes",
            "invalid value",
        ),
        (
            "[pipelines.p.breaker]\nopen_wait = \"5sec\"\n",
            "pipelines.p.breaker.open_wait",
            "unknown duration unit",
        ),
        (
            "[pipelines.p.breaker]\nopen_wait = 5\n",
            "pipelines.p.breaker.open_wait",
            "needs a unit",
        ),
        (
            "[pipelines.p.breaker]\nopen_wait = \"1.5ns\"\n",
            "pipelines.p.breaker.open_wait",
            "whole number of nanoseconds",
        ),
        (
            "[pipelines.p.breaker]\nfailure_rate_above_percent = \"on\"\n",
            "pipelines.p.breaker.failure_rate_above_percent",
            "invalid type",
        ),
        (
            "[pipelines.p.breaker]\nslow_calls = { slower_than = \"1s\" }\n",
            "pipelines.p.breaker.slow_calls",
            "missing field `above_percent`",
        ),
        (
            "[pipelines.p]\nattempt_timeout = \"\"\n",
            "pipelines.p.attempt_timeout",
            "empty",
        ),
        (
            "[pipelines.p.rate_limit]\nper = \"1s\"\n",
            "pipelines.p.rate_limit",
            "missing field `count`",
        ),
        (
            "[pipelines.p.retry]\nbackoff = { jitter = \"fully\" }\n",
            "pipelines.p.retry.backoff.jitter",
            "unknown variant `fully`",
        ),
        (
            "[pipelines.p.limiter]\nalgorithm = \"bbr\"\n",
            "pipelines.p.limiter.algorithm",
            "unknown variant `bbr`",
        ),
        (
            "[budgets.b]\ncapacity = 5\n",
            "budgets.b",
            "missing field `kind`",
        ),
        (
            "[budgets.b]\nkind = \"leaky\"\n",
            "budgets.b.kind",
            "unknown variant `leaky`",
        ),
        (
            "[budgets.b]\nkind = \"token-bucket\"\ncapacity = 0.0001\n",
            "budgets.b.capacity",
            "three decimals",
        ),
        (
            "[budgets.b]\nkind = \"token-bucket\"\nretry_success = \"refund\"\n",
            "budgets.b.retry_success",
            "refund-cost",
        ),
    ];
    for (text, path, needle) in cases {
        unreadable(text, path, needle);
    }
}

#[test]
fn positions_point_at_the_offending_value() {
    let text =
        "[pipelines.p]\nattempt_timeout = \"1s\"\n\n[pipelines.p.breaker]\nopen_wait = \"5sec\"\n";
    let e = Config::from_toml_str(text).unwrap_err();
    let at = e.location().unwrap();
    assert_eq!((at.line, at.column), (5, 13), "{e}");
    assert!(e.to_string().ends_with("(line 5, column 13)"), "{e}");

    let json =
        "{\n  \"pipelines\": {\n    \"p\": { \"breaker\": { \"open_wait\": \"5sec\" } }\n  }\n}";
    let e = Config::from_json_str(json).unwrap_err();
    assert_eq!(e.path(), "pipelines.p.breaker.open_wait");
    assert_eq!(e.location().unwrap().line, 3, "{e}");

    let e = Config::from_toml_str("[pipelines.p\n").unwrap_err();
    assert_eq!(e.path(), "", "a syntax error has no field");
    assert_eq!(e.location().unwrap().line, 1);
    let e = Config::from_json_str("{\"pipelines\": {}} trailing").unwrap_err();
    assert_eq!(e.location().unwrap().line, 1);
    let e = Config::from_json_str("{\"pipelines\": {").unwrap_err();
    assert!(matches!(e.problem(), Problem::Parse(_)), "{e}");
}
