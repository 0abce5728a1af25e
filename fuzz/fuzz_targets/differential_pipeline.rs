//! The full pipeline (throttler → breaker → limiter → bulkhead → rate limit) against the composition of
//! its policies' plain wide-time models (`resilix_reference::pipeline`), steered by the
//! fuzzer: the configuration of every slot (a throttler's K and window of 256 ns to days, breaker waits from 1 µs to hours, a limiter of a
//! few calls with windows of 1 µs to 18 min, a bulkhead of 1 to 8, a rate of a few cells per
//! 1 ms to 1 h) and then every gap (1 ns to ten years), arrival, verdict and cancellation come
//! from the input (then from a generator seeded by it). Panics on the first decision, draw or
//! state on which they differ.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::breaker::{Breaker, CallRing, Config, DEFAULT_WINDOW, OutcomeWindow};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::random::Random;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix_reference::breaker::Model as BreakerModel;
use resilix_reference::pipeline::{Models, PipelineTwin, Policies};
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, drive};

const STORMY: Mix = Mix {
    success: 120,
    transient: 50,
    timeout: 30,
    overload: 25,
    answered: 15,
};

/// 2^lo .. 2^hi ns, log-uniform.
fn duration(rng: &mut Bytes<'_>, lo: u64, hi: u64) -> Duration {
    let bits = lo + rng.below(hi - lo);
    Duration::from_nanos((1u64 << bits) + rng.below(1u64 << bits))
}

#[allow(clippy::too_many_arguments)]
fn run<W: OutcomeWindow>(
    breaker: &Breaker<W>,
    model: BreakerModel,
    limiter_config: LimiterConfig,
    cap: u32,
    rate: RateLimitConfig,
    rng: &mut Bytes<'_>,
    steps: u64,
) {
    let limiter = Limiter::new(limiter_config).expect("valid by construction");
    let bulkhead = Bulkhead::new(BulkheadConfig::new(cap).expect("a cap above zero"));
    let rate_limit = RateLimiter::new(rate).expect("valid by construction");
    let throttler_config = ThrottlerConfig {
        accepts_multiplier: 1.0 + rng.below(100) as f64 / 100.0,
        window: duration(rng, 8, 48),
        min_requests: rng.below(10) as u32,
        ..ThrottlerConfig::DEFAULT
    };
    let throttler = Throttler::new(throttler_config).expect("valid by construction");
    let policies = Policies {
        throttler: &throttler,
        breaker,
        limiter: &limiter,
        bulkhead: &bulkhead,
        rate_limit: &rate_limit,
    };
    let pipeline = policies.pipeline();
    let models = Models::new(&throttler_config, model, &limiter_config, cap, rate);
    let mut twin = PipelineTwin::new(&pipeline, policies, models);
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), Gaps::LONG);
    let max_open = 1 + rng.below(10) as usize;
    if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, STORMY, max_open) {
        panic!("{m}");
    }
}

fuzz_target!(|data: &[u8]| {
    let steps = (data.len() / 3) as u64;
    let mut rng = Bytes::new(data);
    let breaker = Config {
        failure_rate_above_percent: Some(50),
        minimum_calls: 2,
        consecutive_failures: Some(1 + rng.below(3) as u32),
        open_wait: duration(&mut rng, 10, 45),
        open_jitter_percent: rng.below(50) as u8,
        half_open_probes: 2,
        probes_to_close: 1,
        max_half_open_wait: (rng.below(2) == 0).then(|| duration(&mut rng, 10, 46)),
        ..Config::DEFAULT
    };
    let min = 1 + rng.below(2) as u32;
    let initial = min + rng.below(3) as u32;
    let window = duration(&mut rng, 10, 40);
    let limiter = LimiterConfig {
        min_limit: min,
        initial_limit: initial,
        max_limit: initial + rng.below(4) as u32,
        min_window: window / 4,
        max_window: window,
        window_samples: 2,
        min_rtt: Duration::ZERO,
        probe_multiplier: 3,
        ..if rng.below(2) == 0 {
            LimiterConfig::gradient2()
        } else {
            LimiterConfig::vegas()
        }
    };
    let cap = 1 + rng.below(8) as u32;
    let rate = RateLimitConfig::new(Rate::new(
        1 + rng.below(5) as u32,
        duration(&mut rng, 20, 42),
    ))
    .with_burst(1 + rng.below(4) as u32);
    if rng.below(2) == 0 {
        run(
            &Breaker::new(breaker).expect("valid by construction"),
            BreakerModel::time_based(breaker, DEFAULT_WINDOW, 10),
            limiter,
            cap,
            rate,
            &mut rng,
            steps,
        );
    } else {
        let calls = 2 + rng.below(39) as u32;
        run(
            &Breaker::<CallRing<7>>::count_based(breaker, calls).expect("valid by construction"),
            BreakerModel::count_based(breaker, calls),
            limiter,
            cap,
            rate,
            &mut rng,
            steps,
        );
    }
});
