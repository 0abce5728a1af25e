//! Retry decisions with seeded jitter, the throttler and the rate limiter on the device.

use core::time::Duration;

use resilix::call::{CallOptions, Next};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::rate_limit::RateLimiter;
use resilix::retry::budget::Unlimited;
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

use super::ensure;
use super::pipeline::push_next;
use crate::Trace;

pub(crate) fn jitter(t: &mut Trace) -> Result<(), &'static str> {
    let backoff = Backoff::DEFAULT;
    let pipeline = Pipeline::new().retry(Retry::new(RetryConfig::DEFAULT, Unlimited));
    let mut rng = SeededRandom::new(0x0017_7E12);
    let mut env = Env::new(Instant::from_secs(50), &mut rng);
    for call_no in 0..3u32 {
        let mut call = pipeline.call(env.now, CallOptions::default());
        loop {
            let attempt = call
                .admit(&mut env)
                .map_err(|_| "an empty pipeline refused")?;
            env.now = env.now + Duration::from_millis(7);
            let verdict = if call_no == 2 {
                Verdict::Overload {
                    retry_after: Some(Duration::from_secs(3)),
                }
            } else {
                Verdict::Transient
            };
            let next = call.settle(attempt, &verdict, &mut env);
            push_next(t, &next);
            match next {
                Next::RetryAt(at) => {
                    let delay = at - env.now;
                    if call_no == 2 {
                        ensure(delay >= Duration::from_secs(3), "Retry-After not honoured")?;
                    } else {
                        ensure(
                            delay <= backoff.ceiling(call.attempts()),
                            "jitter above the backoff ceiling",
                        )?;
                    }
                    env.now = at;
                }
                _ => break,
            }
        }
        t.push(u64::from(call.attempts()));
    }
    Ok(())
}

pub(crate) fn throttle_and_rate(t: &mut Trace) -> Result<(), &'static str> {
    let throttler: Throttler =
        Throttler::new(ThrottlerConfig::DEFAULT).map_err(|_| "default throttler refused")?;
    let mut rng = SeededRandom::new(0x7407_7100);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    // A healthy upstream: nothing is shed.
    for _ in 0..50 {
        throttler
            .admit(&mut env)
            .map_err(|_| "healthy upstream throttled")?
            .settle(&Verdict::Success, &mut env);
        env.now = env.now + Duration::from_millis(10);
    }
    // Then it overloads: requests climb past K × accepts and the client sheds locally.
    let (mut sent, mut shed) = (0u64, 0u64);
    for _ in 0..300 {
        match throttler.admit(&mut env) {
            Ok(p) => {
                sent += 1;
                p.settle(&Verdict::Overload { retry_after: None }, &mut env);
            }
            Err(r) => {
                ensure(
                    r.reason() == RejectReason::Throttled,
                    "refused for the wrong reason",
                )?;
                shed += 1;
            }
        }
        env.now = env.now + Duration::from_millis(10);
    }
    ensure(
        shed > 0 && sent > 0,
        "an overloaded upstream was not throttled",
    )?;
    t.push(sent);
    t.push(shed);

    let limiter = RateLimiter::new(crate::config::RATE).map_err(|_| "rate refused")?;
    let mut admitted = 0u64;
    for _ in 0..30 {
        if let Ok(p) = limiter.admit(&mut env) {
            admitted += 1;
            p.settle(&Verdict::Success, &mut env);
        }
    }
    t.push(admitted);
    let refused = limiter
        .admit(&mut env)
        .err()
        .ok_or("rate limiter admitted past its burst")?;
    ensure(
        refused.reason() == RejectReason::RateLimited,
        "refused for the wrong reason",
    )?;
    let at = refused
        .retry_at()
        .ok_or("rate-limited without a retry-at")?;
    t.push((at - env.now).as_nanos() as u64);
    env.now = at;
    ensure(
        limiter.admit(&mut env).is_ok(),
        "not admitted at the instant it gave",
    )?;
    Ok(())
}
