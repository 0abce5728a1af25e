//! Arbitrary keys, time steps and evictions against a small keyed table: memory stays bounded
//! and each key gets at most its own bucket plus the shared overflow bucket.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig};
use resilix::time::Instant;

const KEYS: usize = 10;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let config = RateLimitConfig::new(Rate::new(
        1 + data[0] as u32 % 20,
        Duration::from_millis(10),
    ))
    .with_burst(1 + data[1] as u32 % 8);
    let table: KeyedRateLimiter<4> = KeyedRateLimiter::new(config).unwrap();
    let t = table.available(u64::MAX, Instant::ZERO); // a full bucket: the burst
    assert_eq!(t, config.burst);
    let (count, per) = (config.rate.count() as u128, config.rate.period().as_nanos());
    let mut now = Instant::from_secs(1);
    let mut start = now;
    let mut cells = [0u64; KEYS];
    for pair in data[2..].chunks(2) {
        let (op, arg) = (pair[0], *pair.get(1).unwrap_or(&0));
        let before = now;
        match op % 6 {
            0..=2 => {
                let key = (arg as usize) % KEYS;
                if table.try_acquire(key as u64 * 0x1_0000_0001, now).is_ok() {
                    cells[key] += 1;
                }
            }
            3 => now = now + Duration::from_micros(arg as u64 * 100),
            4 => {
                table.evict_idle(now);
            }
            _ => {
                now = match arg % 4 {
                    0 => Instant::MAX,
                    1 => Instant::ZERO,
                    2 => now + Duration::from_secs(365 * 86_400),
                    _ => now - Duration::from_millis(arg as u64),
                }
            }
        }
        if now < before {
            start = now;
            cells = [0; KEYS];
        }
        assert!(table.len() <= 4);
        // Exact in real nanoseconds against the configured rate.
        let bound = config.burst as u64 + ((now - start).as_nanos() * count / per) as u64;
        let total: u64 = cells.iter().sum();
        for c in cells {
            assert!(c <= 2 * bound, "{c} > 2 × {bound}");
        }
        assert!(total <= (KEYS as u64 + 1) * bound);
    }
});
