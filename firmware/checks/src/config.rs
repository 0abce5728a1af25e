//! The policy configurations the scenarios run, shared with the wasm module so that its C ABI
//! drives policies configured exactly like the scenarios and can be held to their vectors.

use core::time::Duration;

use resilix::breaker::{Config as BreakerConfig, OpenBackoff};
use resilix::limiter::LimiterConfig;
use resilix::rate_limit::{Rate, RateLimitConfig};

/// The `breaker_states` breaker: opens after 4 calls, waits 5 s shortened by up to 20 %
/// jitter, doubling on each re-open up to 60 s; two probes, both needed to close.
pub const BREAKER: BreakerConfig = BreakerConfig {
    minimum_calls: 4,
    open_wait: Duration::from_secs(5),
    open_jitter_percent: 20,
    open_backoff: Some(OpenBackoff {
        multiplier_percent: 200,
        max_wait: Duration::from_secs(60),
    }),
    half_open_probes: 2,
    probes_to_close: 2,
    ..BreakerConfig::DEFAULT
};

/// The `limiter_adapts` limiters: Gradient2, Vegas and AIMD, each from 8 down to at least 2.
pub const LIMITERS: [LimiterConfig; 3] = [
    limiter(LimiterConfig::gradient2()),
    limiter(LimiterConfig::vegas()),
    limiter(LimiterConfig::aimd()),
];

const fn limiter(config: LimiterConfig) -> LimiterConfig {
    LimiterConfig {
        initial_limit: 8,
        min_limit: 2,
        ..config
    }
}

/// The `throttler_and_rate_limiter` rate limiter: 10 a second.
pub const RATE: RateLimitConfig = RateLimitConfig::new(Rate::per_second(10));
