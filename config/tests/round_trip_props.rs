//! Random configs, every field present or absent at random with random values (valid or
//! not: reading does not validate), written as TOML and as JSON and read back equal.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::option::of;
use proptest::prelude::*;
use resilix::retry::budget::Tokens;
use resilix_config::section::{
    AimdSection, AlgorithmName, BackoffSection, BreakerSection, BudgetKind, BudgetSection,
    BulkheadSection, ChargeField, Gradient2Section, Jitter, LimiterSection, LocalRejectionsField,
    OpenBackoffSection, PipelineConfig, RateLimitSection, RetrySection, RetrySuccessField,
    SlowCallsSection, ThrottlerSection, TokenBucketPreset, UncertainRetryField, VegasSection,
    WindowSection,
};
use resilix_config::{Config, ConfigDuration, Switch, TokenAmount};

fn duration() -> impl Strategy<Value = ConfigDuration> {
    prop_oneof![
        any::<u64>().prop_map(|n| ConfigDuration(Duration::from_nanos(n))),
        (0u64..100_000).prop_map(|ms| ConfigDuration(Duration::from_millis(ms))),
    ]
}

fn switch<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Switch<T>> {
    prop_oneof![Just(Switch::Off), s.prop_map(Switch::On)]
}

fn tokens() -> impl Strategy<Value = TokenAmount> {
    any::<u32>().prop_map(|m| TokenAmount(Tokens::milli(m)))
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![-10.0f64..10.0, proptest::num::f64::NORMAL, Just(0.0)]
}

fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![0.0f32..20.0, proptest::num::f32::NORMAL]
}

fn breaker() -> BoxedStrategy<BreakerSection> {
    let slow =
        (duration(), any::<u8>()).prop_map(|(slower_than, above_percent)| SlowCallsSection {
            slower_than,
            above_percent,
        });
    let backoff =
        (any::<u32>(), duration()).prop_map(|(multiplier_percent, max_wait)| OpenBackoffSection {
            multiplier_percent,
            max_wait,
        });
    let window = (of(duration()), of(any::<u32>()))
        .prop_map(|(length, calls)| WindowSection { length, calls });
    (
        (
            of(switch(any::<u8>())),
            of(any::<u32>()),
            of(switch(slow)),
            of(switch(any::<u32>())),
        ),
        (
            of(duration()),
            of(switch(backoff)),
            of(any::<u8>()),
            of(any::<u8>()),
        ),
        (of(any::<u8>()), of(switch(duration())), of(window)),
    )
        .prop_map(|((a, b, c, d), (e, f, g, h), (i, j, k))| BreakerSection {
            failure_rate_above_percent: a,
            minimum_calls: b,
            slow_calls: c,
            consecutive_failures: d,
            open_wait: e,
            open_backoff: f,
            open_jitter_percent: g,
            half_open_probes: h,
            probes_to_close: i,
            max_half_open_wait: j,
            window: k,
        })
        .boxed()
}

fn throttler() -> BoxedStrategy<ThrottlerSection> {
    let local = prop_oneof![
        Just(LocalRejectionsField::CountAsRequests),
        Just(LocalRejectionsField::Ignore)
    ];
    (
        of(finite_f64()),
        of(finite_f64()),
        of(duration()),
        of(any::<u32>()),
        of(local),
    )
        .prop_map(
            |(accepts_multiplier, max_rejection_rate, window, min_requests, local_rejections)| {
                ThrottlerSection {
                    accepts_multiplier,
                    max_rejection_rate,
                    window,
                    min_requests,
                    local_rejections,
                }
            },
        )
        .boxed()
}

fn limiter() -> BoxedStrategy<LimiterSection> {
    let algorithm = prop_oneof![
        Just(AlgorithmName::Gradient2),
        Just(AlgorithmName::Vegas),
        Just(AlgorithmName::Aimd)
    ];
    let gradient2 = (
        of(finite_f32()),
        of(any::<u32>()),
        of(any::<u32>()),
        of(finite_f32()),
        of(finite_f32()),
        of(finite_f32()),
    )
        .prop_map(|(a, b, c, d, e, f)| Gradient2Section {
            smoothing: a,
            queue_size: b,
            long_window: c,
            rtt_tolerance: d,
            drop_backoff: e,
            drop_threshold: f,
        });
    let vegas = of(finite_f32()).prop_map(|smoothing| VegasSection { smoothing });
    let aimd =
        (of(finite_f32()), of(duration())).prop_map(|(backoff_ratio, timeout)| AimdSection {
            backoff_ratio,
            timeout,
        });
    (
        (
            of(algorithm),
            of(any::<u32>()),
            of(any::<u32>()),
            of(any::<u32>()),
        ),
        (
            of(duration()),
            of(duration()),
            of(any::<u32>()),
            of(duration()),
        ),
        (of(any::<u32>()), of(finite_f32()), of(any::<u32>())),
        (of(gradient2), of(vegas), of(aimd)),
    )
        .prop_map(
            |((a, b, c, d), (e, f, g, h), (i, j, k), (l, m, n))| LimiterSection {
                algorithm: a,
                initial_limit: b,
                min_limit: c,
                max_limit: d,
                min_window: e,
                max_window: f,
                window_samples: g,
                min_rtt: h,
                probe_multiplier: i,
                queue_factor: j,
                queue_rungs: k,
                gradient2: l,
                vegas: m,
                aimd: n,
            },
        )
        .boxed()
}

fn retry() -> BoxedStrategy<RetrySection> {
    let jitter = prop_oneof![
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated),
        Just(Jitter::None)
    ];
    let backoff = (of(duration()), of(duration()), of(jitter))
        .prop_map(|(base, cap, jitter)| BackoffSection { base, cap, jitter });
    let uncertain = prop_oneof![
        Just(UncertainRetryField::Always),
        Just(UncertainRetryField::IdempotentOnly)
    ];
    (
        of(any::<u32>()),
        of(backoff),
        of(duration()),
        of(uncertain),
        of("[a-z.\" ]{0,8}"),
    )
        .prop_map(
            |(max_attempts, backoff, max_retry_after, uncertain_retry, budget)| RetrySection {
                max_attempts,
                backoff,
                max_retry_after,
                uncertain_retry,
                budget,
            },
        )
        .boxed()
}

fn budget() -> BoxedStrategy<BudgetSection> {
    let kind = prop_oneof![
        Just(BudgetKind::TokenBucket),
        Just(BudgetKind::Grpc),
        Just(BudgetKind::Ratio),
        Just(BudgetKind::RetryBreaker)
    ];
    let preset = prop_oneof![
        Just(TokenBucketPreset::AwsSdkStandard),
        Just(TokenBucketPreset::GrpcA6Example),
        Just(TokenBucketPreset::Brooker2022)
    ];
    let success = prop_oneof![
        Just(RetrySuccessField::RefundCost),
        tokens().prop_map(RetrySuccessField::Deposit)
    ];
    let charge = prop_oneof![
        Just(ChargeField::EveryFailure),
        Just(ChargeField::GrantedRetry)
    ];
    (
        (
            kind,
            of(preset),
            of(tokens()),
            of(tokens()),
            of(tokens()),
            of(tokens()),
        ),
        (
            of(tokens()),
            of(success),
            of(tokens()),
            of(charge),
            of(tokens()),
            of(tokens()),
        ),
        (
            of(any::<u32>()),
            of(any::<u32>()),
            of(any::<u32>()),
            of(any::<u32>()),
            of(duration()),
        ),
    )
        .prop_map(
            |((k, p, c, i, rc, tc), (f1, rs, fl, ch, mt, tr), (mr, mn, mf, ma, w))| BudgetSection {
                kind: k,
                preset: p,
                capacity: c,
                initial: i,
                retry_cost: rc,
                timeout_retry_cost: tc,
                first_try_success: f1,
                retry_success: rs,
                floor: fl,
                charge: ch,
                max_tokens: mt,
                token_ratio: tr,
                max_retry_permille: mr,
                min_retries_per_window: mn,
                max_failure_permille: mf,
                min_attempts: ma,
                window: w,
            },
        )
        .boxed()
}

fn pipeline() -> BoxedStrategy<PipelineConfig> {
    let bulkhead = of(any::<u32>()).prop_map(|max_concurrent| BulkheadSection { max_concurrent });
    let rate = (any::<u32>(), of(duration()), of(any::<u32>()))
        .prop_map(|(count, per, burst)| RateLimitSection { count, per, burst });
    (
        of(duration()),
        of(retry()),
        of(throttler()),
        of(breaker()),
        of(limiter()),
        of(bulkhead),
        of(rate),
    )
        .prop_map(|(a, b, c, d, e, f, g)| PipelineConfig {
            attempt_timeout: a,
            retry: b,
            throttler: c,
            breaker: d,
            limiter: e,
            bulkhead: f,
            rate_limit: g,
        })
        .boxed()
}

fn config() -> BoxedStrategy<Config> {
    let name = "[a-z][a-z0-9_-]{0,6}|[A-Za-z .\"é]{1,6}";
    (
        prop::collection::btree_map(name, budget(), 0..3),
        prop::collection::btree_map(name, pipeline(), 0..3),
    )
        .prop_map(
            |(budgets, pipelines): (BTreeMap<_, _>, BTreeMap<_, _>)| Config { budgets, pipelines },
        )
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_config_reads_back_equal_from_toml_and_from_json(config in config()) {
        let toml = config.to_toml_string();
        prop_assert_eq!(Config::from_toml_str(&toml), Ok(config.clone()), "{}", toml);
        let json = config.to_json_string();
        prop_assert_eq!(Config::from_json_str(&json), Ok(config), "{}", json);
    }

    #[test]
    fn building_any_config_answers_without_a_panic(config in config()) {
        // Valid or not, the core's constructors decide; an error always names a path.
        if let Err(e) = config.build() {
            prop_assert!(!e.path().is_empty(), "{}", e);
        }
    }
}
