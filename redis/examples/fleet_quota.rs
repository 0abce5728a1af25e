//! Four "processes" (tasks, each with its own connection) share one quota of 20 a second with a
//! burst of 5, for one second; the fleet admits at most 5 + 20 of the 200 calls.
//!
//! Run it against a real Redis: `redis/scripts/with-redis.sh cargo run -p resilix-redis
//! --example fleet_quota` (the script sets `RESILIX_REDIS_URL`).

use std::time::Duration;

use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::{Admitted, FleetConfig, FleetRateLimiter, OnBackendError};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RESILIX_REDIS_URL")
        .map_err(|_| "set RESILIX_REDIS_URL (redis/scripts/with-redis.sh does)")?;
    let name = format!("example-{}", std::process::id());
    let limit = RateLimitConfig::new(Rate::per_second(20)).with_burst(5);
    let mut tasks = Vec::new();
    for node in 0..4 {
        let config = FleetConfig::new(name.clone(), limit)
            .with_backend_timeout(Duration::from_millis(500))
            .on_backend_error(OnBackendError::Local { nodes: 4 });
        let limiter = FleetRateLimiter::connect(url.as_str(), config)?;
        tasks.push(tokio::spawn(async move {
            let mut admitted = 0u32;
            for _ in 0..50 {
                if let Ok(Admitted::Fleet { .. }) = limiter.acquire().await {
                    admitted += 1;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (node, admitted, limiter.stats())
        }));
    }
    let mut total = 0;
    for t in tasks {
        let (node, admitted, stats) = t.await?;
        println!("node {node}: {admitted} admitted by the fleet bucket; {stats:?}");
        total += admitted;
    }
    println!("fleet: {total} of 200 admitted (quota: 5 + 20/s over about one second)");
    if total > 5 + 20 * 2 {
        return Err(format!("{total} admitted: the shared quota was exceeded").into());
    }
    Ok(())
}
