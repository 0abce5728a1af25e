//! The pipeline the measured programs drive, as firmware would ship it: retry (jittered
//! backoff, token-bucket budget), throttler, breaker, limiter, bulkhead, rate limiter and
//! attempt timeout, every policy in a `static`; the seeded generator, the synchronous retry
//! driver (`Call`) and the HTTP classifier. Verdicts come through `black_box`, so nothing is
//! folded away.

use core::hint::black_box;
use core::time::Duration;

use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::{CallOptions, Next};
use resilix::classify::http::classify_status;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::Observer;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;

pub static BREAKER: Breaker = match Breaker::new(BreakerConfig::DEFAULT) {
    Ok(b) => b,
    Err(_) => panic!(),
};
pub static LIMITER: Limiter = match Limiter::new(LimiterConfig::gradient2()) {
    Ok(l) => l,
    Err(_) => panic!(),
};
pub static THROTTLER: Throttler = match Throttler::new(ThrottlerConfig::DEFAULT) {
    Ok(t) => t,
    Err(_) => panic!(),
};
pub static RATE: RateLimiter = match RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000)))
{
    Ok(r) => r,
    Err(_) => panic!(),
};
pub static BUDGET: TokenBucket = match TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD) {
    Ok(b) => b,
    Err(_) => panic!(),
};
pub static BULKHEAD: Bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);

/// Drives 100 calls through the pipeline; `true` when some succeeded.
pub fn drive<O: Observer>(observer: &O) -> bool {
    let pipeline = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &BUDGET))
        .throttler(&THROTTLER)
        .breaker(&BREAKER)
        .limiter(&LIMITER)
        .bulkhead(&BULKHEAD)
        .rate_limit(&RATE)
        .attempt_timeout(Duration::from_millis(250));
    let mut rng = SeededRandom::new(black_box(0x5EED));
    let mut now = Instant::ZERO;
    let mut done = 0u32;
    for i in 0..100u64 {
        let mut env = Env::new(now, &mut rng).with_observer(observer);
        let mut call = pipeline.call(now, CallOptions::default());
        loop {
            let Ok(attempt) = call.admit(&mut env) else {
                break;
            };
            env.now = env.now + Duration::from_millis(black_box(5 + i % 7));
            let status = black_box(if i % 9 == 0 { 503 } else { 200 });
            match call.settle(attempt, &classify_status(status, None), &mut env) {
                Next::Done => done += 1,
                Next::RetryAt(at) => {
                    env.now = at;
                    continue;
                }
                Next::GiveUp(_) => {}
            }
            break;
        }
        now = env.now + Duration::from_millis(10);
    }
    done > 0
}
