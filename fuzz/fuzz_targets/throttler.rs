//! Arbitrary admit / settle / drop / time steps against the throttler.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

fn verdict(b: u8) -> Verdict {
    match b % 6 {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Overload {
            retry_after: Some(Duration::from_secs(b as u64)),
        },
        3 => Verdict::Transient,
        4 => Verdict::Timeout,
        _ => Verdict::Rejected(RejectReason::LimiterFull),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let config = ThrottlerConfig {
        accepts_multiplier: 1.0 + data[0] as f64 / 64.0,
        max_rejection_rate: data[1] as f64 / 256.0,
        min_requests: data[2] as u32 % 16,
        local_rejections: if data[3] & 1 == 0 {
            LocalRejections::CountAsRequests
        } else {
            LocalRejections::Ignore
        },
        ..ThrottlerConfig::DEFAULT
    };
    let t = Throttler::<8>::with_buckets(config).unwrap();
    let mut rng = SeededRandom::new(data[3] as u64);
    let mut now = Instant::from_secs(1_000);
    for pair in data[4..].chunks(2) {
        let (op, arg) = (pair[0], *pair.get(1).unwrap_or(&0));
        match op % 8 {
            0..=3 => {
                let mut env = Env::new(now, &mut rng);
                if let Ok(p) = t.admit(&mut env) {
                    p.settle(&verdict(arg), &mut env);
                }
            }
            4 => {
                let mut env = Env::new(now, &mut rng);
                drop(t.admit(&mut env));
            }
            5 => now = now + Duration::from_millis(arg as u64 * 100),
            6 => {
                now = match arg % 4 {
                    0 => Instant::MAX,
                    1 => Instant::ZERO,
                    2 => now + Duration::from_secs(365 * 86_400),
                    _ => now - Duration::from_secs(arg as u64),
                }
            }
            _ => t.reset(&mut Env::new(now, &mut rng)),
        }
        let (requests, accepts) = t.counts(now);
        assert!(accepts <= requests);
        let p = t.rejection_probability(now);
        assert!(p.as_f64() <= config.max_rejection_rate + 1e-6);
        if requests < config.min_requests
            || requests as f64 <= config.accepts_multiplier * accepts as f64 - 1e-3
        {
            assert!(p.is_zero());
        }
    }
});
