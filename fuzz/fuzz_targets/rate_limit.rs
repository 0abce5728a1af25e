//! Arbitrary acquisitions, time steps (huge, backwards, the ends of time) and
//! reconfigurations against one bucket. On every monotone stretch of time since the last step
//! backwards or reconfiguration, cells admitted never exceed burst + elapsed / T.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::rate_limit::{AcquireError, Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;

fn config(a: u8, b: u8, c: u8) -> RateLimitConfig {
    let per = Duration::from_micros(1 + a as u64 * 997);
    RateLimitConfig::new(Rate::new(1 + b as u32 % 50, per)).with_burst(1 + c as u32 % 32)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let mut cfg = config(data[0], data[1], data[2]);
    let Ok(l) = RateLimiter::new(cfg) else { return };
    let mut now = Instant::from_secs(5);
    let mut start = now;
    let mut cells = 0u64;
    for chunk in data[3..].chunks(3) {
        let op = chunk[0];
        let a = *chunk.get(1).unwrap_or(&0);
        let b = *chunk.get(2).unwrap_or(&0);
        let before = now;
        match op % 8 {
            0..=3 => match l.try_acquire_n(now, 1 + a as u32 % 4) {
                Ok(()) => cells += 1 + a as u64 % 4,
                Err(AcquireError::Limited(r)) => assert!(r.retry_at().unwrap() >= now),
                Err(AcquireError::ExceedsBurst { requested, burst }) => {
                    assert!(requested > burst)
                }
                Err(e) => panic!("an acquire error this target does not know: {e:?}"),
            },
            4 => now = now + Duration::from_micros(a as u64 * 256 + b as u64),
            5 => {
                now = match a % 4 {
                    0 => Instant::MAX,
                    1 => Instant::ZERO,
                    2 => now + Duration::from_secs(365 * 86_400),
                    _ => now - Duration::from_millis(b as u64 * 10),
                }
            }
            _ => {
                let next = config(a, b, op);
                if l.reconfigure(next, &mut Env::new(now, &mut SeededRandom::new(0)))
                    .is_ok()
                {
                    cfg = next;
                    start = now;
                    cells = 0;
                    assert!(l.available(now) <= cfg.burst);
                }
            }
        }
        if now < before {
            start = now;
            cells = 0;
        }
        assert!(l.available(now) <= cfg.burst);
        // Exact in real nanoseconds against the configured rate.
        let (count, per) = (cfg.rate.count() as u128, cfg.rate.period().as_nanos());
        let bound = cfg.burst as u64 + ((now - start).as_nanos() * count / per) as u64;
        assert!(cells <= bound, "{cells} > {bound}");
    }
});
