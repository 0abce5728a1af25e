//! Issue 13, point 2, for the rate limiter: idle gaps must not alias in the 31-bit tick word.
//! Each scenario below failed on b41b95d (the bucket read a stale arrival time one circle
//! later as debt) and must pass now: an idle bucket is full after a gap of any length.
#![cfg(not(loom))]

use std::time::Duration;

use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;

/// 2^46 ns: 2^31 ticks of 32.768 µs, the circle of a 10-a-second bucket (19.55 h).
const CIRCLE_10_PER_S: Duration = Duration::from_nanos(1 << 46);

fn per_second(n: u32) -> RateLimitConfig {
    RateLimitConfig::new(Rate::per_second(n))
}

#[test]
fn a_100k_per_second_limiter_admits_the_first_call_after_7_09_s_idle() {
    let l = RateLimiter::new(per_second(100_000)).unwrap();
    let t0 = Instant::from_secs(1);
    l.try_acquire(t0).unwrap();
    let later = t0 + Duration::from_millis(7_090);
    assert_eq!(l.available(later), 100_000, "the bucket is full again");
    assert!(
        l.try_acquire(later).is_ok(),
        "refused after 7.09 s idle: the stale arrival time read as debt"
    );
}

#[test]
fn no_first_call_after_an_idle_gap_of_10_to_70_s_is_refused() {
    let mut refused = Vec::new();
    let mut tried = 0;
    let mut gap = Duration::from_secs(10);
    while gap <= Duration::from_secs(70) {
        let l = RateLimiter::new(per_second(100_000)).unwrap();
        let t0 = Instant::from_secs(1);
        l.try_acquire_n(t0, 10).unwrap();
        tried += 1;
        if l.try_acquire(t0 + gap).is_err() {
            refused.push(gap);
        }
        gap += Duration::from_millis(7); // a step prime to every circle
    }
    assert!(tried > 8_000);
    assert!(
        refused.is_empty(),
        "{} of {tried} first calls refused, the first after {:?}",
        refused.len(),
        refused.first()
    );
}

#[test]
fn a_keyed_tenant_idle_for_7_09_s_is_admitted_and_seen_idle() {
    let config = per_second(100_000);
    let t0 = Instant::from_secs(1);
    let later = t0 + Duration::from_millis(7_090);

    let table: KeyedRateLimiter<8> = KeyedRateLimiter::new(config).unwrap();
    table.try_acquire(7, t0).unwrap();
    assert!(
        table.try_acquire(7, later).is_ok(),
        "tenant 7 refused after 7.09 s idle"
    );

    let table: KeyedRateLimiter<8> = KeyedRateLimiter::new(config).unwrap();
    table.try_acquire(7, t0).unwrap();
    assert_eq!(table.len(), 1);
    assert_eq!(
        table.evict_idle(later),
        1,
        "evict_idle must see tenant 7 as idle"
    );
    assert!(table.is_empty());
}

#[test]
fn a_drained_10_per_second_bucket_is_full_19_55_h_later() {
    let l = RateLimiter::new(per_second(10)).unwrap();
    let t0 = Instant::from_secs(100);
    l.try_acquire_n(t0, 10).unwrap();
    assert_eq!(l.available(t0), 0, "drained");
    // One circle later, and a little after: on b41b95d the bucket read as empty again.
    for after in [
        Duration::ZERO,
        Duration::from_millis(300),
        Duration::from_millis(900),
    ] {
        let later = t0 + CIRCLE_10_PER_S + after;
        assert_eq!(l.available(later), 10, "{after:?} after one circle");
    }
    l.try_acquire_n(t0 + CIRCLE_10_PER_S, 10).unwrap();
}

#[test]
fn a_drained_keyed_bucket_is_full_whole_circles_later() {
    // Around 1, 2 and 3 circles, within a burst time (1 s) either side, every 10 ms: each
    // idle tenant's first call is admitted and `evict_idle` frees its entry.
    for k in 1..=3u32 {
        let centre = CIRCLE_10_PER_S * k;
        let mut offset = Duration::ZERO;
        while offset <= Duration::from_secs(2) {
            let table: KeyedRateLimiter<4> = KeyedRateLimiter::new(per_second(10)).unwrap();
            let t0 = Instant::from_secs(100);
            table.try_acquire_n(3, t0, 10).unwrap();
            let later = t0 + centre - Duration::from_secs(1) + offset;
            assert_eq!(table.available(3, later), 10, "{k} circles {offset:?}");
            assert_eq!(table.evict_idle(later), 1, "{k} circles {offset:?}");
            offset += Duration::from_millis(10);
        }
    }
}

/// Found by the `rate_limit` fuzz target: after a step from the end of the timeline back to its
/// start, the bucket must hold its burst again, not read as idle at every call (the era left
/// at the end of time made every new arrival time widen into the far future).
#[test]
fn after_time_jumps_back_across_eras_the_burst_still_holds() {
    let config = RateLimitConfig::new(Rate::new(33, Duration::from_micros(3_989))).with_burst(4);
    let l = RateLimiter::new(config).unwrap();
    assert!(l.try_acquire_n(Instant::MAX, 2).is_ok());
    let mut admitted = 0;
    for _ in 0..10 {
        if l.try_acquire_n(Instant::ZERO, 1).is_ok() {
            admitted += 1;
        }
    }
    assert!(
        admitted <= 4,
        "{admitted} cells at one instant with a burst of 4"
    );
}
