//! Rate limiter admit, allowed and refused, with time injected (no clock read in the loop).
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;

fn direct(c: &mut Criterion) {
    // Allowed: time advances one emission interval per call, so every call is admitted.
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000))).unwrap();
    let step = limiter.emission_interval();
    let mut now = Instant::from_secs(1);
    c.bench_function("rate_limit/direct/allowed", |b| {
        b.iter(|| {
            now = now + step;
            black_box(limiter.try_acquire(black_box(now))).unwrap();
        })
    });
    // Refused: time stands still on an empty bucket.
    let empty = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
    let frozen = Instant::from_secs(1);
    empty.try_acquire(frozen).unwrap();
    c.bench_function("rate_limit/direct/refused", |b| {
        b.iter(|| black_box(empty.try_acquire(black_box(frozen))).unwrap_err())
    });
}

fn keyed(c: &mut Criterion) {
    let table: KeyedRateLimiter<256> =
        KeyedRateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000))).unwrap();
    let mut now = Instant::from_secs(1);
    let mut key = 0u64;
    c.bench_function("rate_limit/keyed/allowed", |b| {
        b.iter(|| {
            now = now + Duration::from_micros(20);
            key = (key + 1) % 64;
            black_box(table.try_acquire(black_box(key), now)).unwrap();
        })
    });
}

criterion_group!(benches, direct, keyed);
criterion_main!(benches);
