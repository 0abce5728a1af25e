//! Per-decision latency (p50, p99) and throughput on loopback: the fleet limiter's script path
//! beside a bare `EVALSHA` of a script that only returns, on one connection, sequentially and
//! with 8 concurrent tasks.
//!
//! `redis/scripts/with-redis.sh cargo run --release -p resilix-redis --example latency`

use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::{FleetConfig, FleetRateLimiter, OnBackendError};

const CALLS: usize = 20_000;

fn report(name: &str, mut samples: Vec<Duration>, wall: Duration) {
    samples.sort();
    let q = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    println!(
        "{name:<34} p50 {:>7.1} µs  p99 {:>7.1} µs  {:>8.0} calls/s",
        q(0.50).as_secs_f64() * 1e6,
        q(0.99).as_secs_f64() * 1e6,
        samples.len() as f64 / wall.as_secs_f64()
    );
}

async fn bare(conn: &ConnectionManager, sha: &str, n: usize) -> Vec<Duration> {
    let mut c = conn.clone();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let _: i64 = redis::cmd("EVALSHA")
            .arg(sha)
            .arg(0)
            .query_async(&mut c)
            .await
            .unwrap();
        out.push(t0.elapsed());
    }
    out
}

async fn fleet(l: &FleetRateLimiter, n: usize, task: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    let key = format!("tenant-{}", task % 4);
    for _ in 0..n {
        let t0 = Instant::now();
        let _ = l.acquire_key(&key).await;
        out.push(t0.elapsed());
    }
    out
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RESILIX_REDIS_URL")
        .map_err(|_| "set RESILIX_REDIS_URL (redis/scripts/with-redis.sh does)")?;
    let conn = ConnectionManager::new(redis::Client::open(url.as_str())?).await?;
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query_async(&mut conn.clone())
        .await?;
    let config = FleetConfig::new(
        format!("latency-{}", std::process::id()),
        RateLimitConfig::new(Rate::per_second(100_000)).with_burst(1_000),
    )
    .with_backend_timeout(Duration::from_secs(1))
    .on_backend_error(OnBackendError::Deny);
    let limiter = std::sync::Arc::new(FleetRateLimiter::new(conn.clone(), config)?);
    // Warm up: load the script, open the connection.
    fleet(&limiter, 100, 0).await;
    bare(&conn, &sha, 100).await;

    let t0 = Instant::now();
    let s = bare(&conn, &sha, CALLS).await;
    report("bare EVALSHA, sequential", s, t0.elapsed());
    let t0 = Instant::now();
    let s = fleet(&limiter, CALLS, 0).await;
    report("fleet acquire_key, sequential", s, t0.elapsed());

    for (name, is_fleet) in [
        ("bare EVALSHA, 8 tasks", false),
        ("fleet acquire_key, 8 tasks", true),
    ] {
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for task in 0..8 {
            let (l, c, sha) = (limiter.clone(), conn.clone(), sha.clone());
            tasks.push(tokio::spawn(async move {
                if is_fleet {
                    fleet(&l, CALLS / 8, task).await
                } else {
                    bare(&c, &sha, CALLS / 8).await
                }
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await?);
        }
        report(name, all, t0.elapsed());
    }
    println!("{:?}", limiter.stats());
    Ok(())
}
