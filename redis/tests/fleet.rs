//! Many clients, one quota: 8 connections from separate tasks, the admitted count bounded
//! exactly by burst + elapsed / T on Redis's clock (8 separate processes: `processes.rs`). And
//! the retry instant on the caller's timeline is never early.

mod common;

use std::time::Duration;

use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix::time::Clock;
use resilix_redis::script::GcraParams;
use resilix_redis::{Admitted, FleetConfig, FleetRateLimiter, OnBackendError};
use resilix_tokio::TokioClock;

/// Generous: this test is about the quota, and a loaded machine must not turn into refusals
/// that look like the limiter's. Deny, so a backend failure can only admit less.
fn config(prefix: &str, limit: RateLimitConfig) -> FleetConfig {
    FleetConfig::new("fleet", limit)
        .with_prefix(prefix)
        .with_backend_timeout(Duration::from_secs(2))
        .on_backend_error(OnBackendError::Deny)
}

/// The most GCRA admits between two instants of Redis's clock: burst + ⌊elapsed / T⌋.
fn bound(limit: &RateLimitConfig, elapsed: Duration) -> u64 {
    let p = GcraParams::new(limit).unwrap();
    u64::from(p.burst()) + (elapsed.as_nanos() / u128::from(p.emission_ns())) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_connections_share_one_quota_exactly() {
    let Some(url) = common::redis_url("eight_connections_share_one_quota_exactly") else {
        return;
    };
    let prefix = common::prefix("eight");
    let limit = RateLimitConfig::new(Rate::per_second(200)).with_burst(20);
    let mut probe = common::connect(&url).await;
    let a = common::server_time(&mut probe).await;
    let mut tasks = Vec::new();
    for task in 0..8 {
        // Each task its own limiter, so its own connection manager and TCP connection.
        let l = FleetRateLimiter::connect(url.as_str(), config(&prefix, limit)).unwrap();
        tasks.push(tokio::spawn(async move {
            let t0 = tokio::time::Instant::now();
            let (mut global, mut tenant) = (0u64, 0u64);
            let mut calls = 0u64;
            while t0.elapsed() < Duration::from_millis(800) {
                if let Ok(Admitted::Fleet { .. }) = l.acquire().await {
                    global += 1;
                }
                // A keyed bucket beside the global one, shared by the even tasks only.
                if task % 2 == 0
                    && let Ok(Admitted::Fleet { .. }) = l.acquire_key("tenant-a").await
                {
                    tenant += 1;
                }
                calls += 1;
            }
            (global, tenant, calls, l.stats())
        }));
    }
    let (mut global, mut tenant, mut calls) = (0, 0, 0);
    for t in tasks {
        let (g, k, c, stats) = t.await.unwrap();
        assert_eq!(
            stats.backend_errors + stats.backend_timeouts,
            0,
            "{stats:?}"
        );
        global += g;
        tenant += k;
        calls += c;
    }
    let b = common::server_time(&mut probe).await;
    let max = bound(&limit, b - a);
    eprintln!(
        "{calls} rounds over {:?}: global {global}, tenant {tenant}, bound {max}",
        b - a
    );
    assert!(global <= max, "global: {global} admitted > {max}");
    assert!(tenant <= max, "tenant: {tenant} admitted > {max}");
    assert!(global >= 20 && tenant >= 20, "at least the bursts");
    assert!(
        calls > global,
        "the quota refused some: the bound was tested"
    );
}

/// The refusal's retry instant is on the caller's clock, and a call made then is admitted:
/// never early, over twenty refusals in a row.
#[tokio::test]
async fn retry_at_is_on_the_callers_timeline_and_never_early() {
    let Some(url) = common::redis_url("retry_at_is_on_the_callers_timeline_and_never_early") else {
        return;
    };
    let clock = TokioClock::new();
    let limit = RateLimitConfig::new(Rate::per_second(40)).with_burst(1);
    let t = Duration::from_nanos(GcraParams::new(&limit).unwrap().emission_ns());
    let conn = common::connect(&url).await;
    let l = FleetRateLimiter::with_clock(conn, config(&common::prefix("retry_at"), limit), clock)
        .unwrap();
    assert!(matches!(
        l.acquire().await,
        Ok(Admitted::Fleet { remaining: 0 })
    ));
    for i in 0..20 {
        let before = clock.now();
        let refused = l.acquire().await.unwrap_err();
        let after = clock.now();
        let at = refused
            .retry_at()
            .expect("a rate limiter knows its next cell");
        assert!(at > before, "{i}: {at:?} not after {before:?}");
        assert!(at <= after + t, "{i}: at most one emission interval away");
        // Not before the retry-at (a timer never fires early), which is all the test needs.
        tokio::time::sleep_until(clock.to_tokio(at)).await;
        let got = l.acquire().await;
        assert!(
            matches!(got, Ok(Admitted::Fleet { .. })),
            "{i}: refused at the retry instant: {got:?}"
        );
    }
    assert_eq!(l.stats().fleet_admitted, 21);
}
