extern crate std;
use super::*;
use std::collections::BTreeSet;
use std::format;
use std::string::String;

#[test]
fn defaults_are_valid_and_are_the_documented_ones() {
    assert_eq!(Config::DEFAULT.validate(), Ok(()));
    assert_eq!(Config::default(), Config::DEFAULT);
    assert_eq!(Config::DEFAULT.minimum_calls, 20);
    assert_eq!(Config::DEFAULT.failure_rate_above_percent, Some(50));
    assert_eq!(Config::DEFAULT.open_wait, Duration::from_secs(5));
    assert_eq!(Config::DEFAULT.half_open_probes, 1);
    assert_eq!(
        Config::DEFAULT.max_half_open_wait,
        Some(Duration::from_secs(60))
    );
}

#[test]
fn every_invalid_field_is_refused_with_its_own_error() {
    let d = Config::DEFAULT;
    let slow = |above_percent, slower_than| {
        Some(SlowCalls {
            slower_than,
            above_percent,
        })
    };
    let backoff = |multiplier_percent, max_wait| {
        Some(OpenBackoff {
            multiplier_percent,
            max_wait,
        })
    };
    let cases = [
        (
            Config {
                failure_rate_above_percent: Some(100),
                ..d
            },
            ConfigError::FailureRateOutOfRange(100),
        ),
        (
            Config {
                minimum_calls: 0,
                ..d
            },
            ConfigError::MinimumCallsZero,
        ),
        (
            Config {
                slow_calls: slow(100, Duration::from_secs(1)),
                ..d
            },
            ConfigError::SlowCallRateOutOfRange(100),
        ),
        (
            Config {
                slow_calls: slow(50, Duration::ZERO),
                ..d
            },
            ConfigError::SlowCallDurationZero,
        ),
        (
            Config {
                consecutive_failures: Some(0),
                ..d
            },
            ConfigError::ConsecutiveFailuresZero,
        ),
        (
            Config {
                failure_rate_above_percent: None,
                ..d
            },
            ConfigError::NeverOpens,
        ),
        (
            Config {
                open_wait: Duration::ZERO,
                ..d
            },
            ConfigError::OpenWaitZero,
        ),
        (
            Config {
                open_backoff: backoff(99, Duration::from_secs(60)),
                ..d
            },
            ConfigError::BackoffShrinks(99),
        ),
        (
            Config {
                open_backoff: backoff(200, Duration::from_secs(4)),
                ..d
            },
            ConfigError::BackoffCapBelowWait,
        ),
        (
            Config {
                open_jitter_percent: 100,
                ..d
            },
            ConfigError::JitterOutOfRange(100),
        ),
        (
            Config {
                half_open_probes: 0,
                ..d
            },
            ConfigError::ProbesOutOfRange(0),
        ),
        (
            Config {
                half_open_probes: 16,
                ..d
            },
            ConfigError::ProbesOutOfRange(16),
        ),
        (
            Config {
                probes_to_close: 0,
                ..d
            },
            ConfigError::ProbesToCloseOutOfRange {
                probes_to_close: 0,
                half_open_probes: 1,
            },
        ),
        (
            Config {
                half_open_probes: 3,
                probes_to_close: 4,
                ..d
            },
            ConfigError::ProbesToCloseOutOfRange {
                probes_to_close: 4,
                half_open_probes: 3,
            },
        ),
        (
            Config {
                max_half_open_wait: Some(Duration::ZERO),
                ..d
            },
            ConfigError::HalfOpenWaitZero,
        ),
    ];
    let mut texts = BTreeSet::new();
    for (config, error) in cases {
        assert_eq!(config.validate(), Err(error), "{config:?}");
        texts.insert(format!("{error}"));
    }
    assert_eq!(texts.len(), cases.len(), "each error has its own text");
}

#[test]
fn edges_that_are_valid() {
    let d = Config::DEFAULT;
    let ok = [
        Config {
            failure_rate_above_percent: Some(0),
            ..d
        },
        Config {
            failure_rate_above_percent: Some(99),
            ..d
        },
        Config {
            minimum_calls: 1,
            ..d
        },
        Config {
            minimum_calls: u32::MAX,
            ..d
        },
        Config {
            failure_rate_above_percent: None,
            consecutive_failures: Some(1),
            ..d
        },
        Config {
            open_wait: Duration::from_nanos(1),
            open_jitter_percent: 99,
            ..d
        },
        Config {
            open_wait: Duration::MAX,
            ..d
        },
        Config {
            open_backoff: Some(OpenBackoff {
                multiplier_percent: 100,
                max_wait: d.open_wait,
            }),
            ..d
        },
        Config {
            half_open_probes: 15,
            probes_to_close: 15,
            ..d
        },
        Config {
            half_open_probes: 15,
            probes_to_close: 1,
            ..d
        },
        Config {
            max_half_open_wait: None,
            ..d
        },
        Config {
            max_half_open_wait: Some(Duration::from_nanos(1)),
            ..d
        },
        Config {
            max_half_open_wait: Some(Duration::MAX),
            ..d
        },
    ];
    for c in ok {
        assert_eq!(c.validate(), Ok(()), "{c:?}");
    }
    let text: String = format!(
        "{}",
        ConfigError::WindowAboveCapacity {
            calls: 200,
            capacity: 128
        }
    );
    assert!(text.contains("16 calls each"));
}
