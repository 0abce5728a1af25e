//! Per-decision latency (p50, p99) and throughput on loopback: a bare `EVALSHA` round trip (a
//! script that only returns), the fleet limiter's script path (one `EVALSHA` of the GCRA per
//! call), and the lease path (a leased cell spent locally, renewals in the background); each
//! sequential and from 8 concurrent tasks.
//!
//! Needs a real Redis: `bash redis/scripts/with-redis.sh cargo bench -p resilix-benches --bench redis_fleet`.
//! Without `RESILIX_REDIS_URL`, or with no server answering there, it says so and exits.
//!
//! Criterion measures throughput (time per call, `Throughput::Elements(1)`); every call is
//! also timed on its own inside the same measured iterations, and the table printed at the
//! end gives their p50 and p99. With 8 tasks a call's latency includes waiting for the one
//! connection it shares with the others (redis-rs pipelines them), as it would in a server.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use redis::aio::ConnectionManager;
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::{FleetConfig, FleetRateLimiter, LeaseConfig, LeasedRateLimiter};
use resilix_tokio::TokioClock;

const TASKS: u64 = 8;

/// One call of a path under test.
#[derive(Clone)]
enum Path {
    Bare(ConnectionManager, String),
    Script(Arc<FleetRateLimiter>),
    Lease(Arc<LeasedRateLimiter<TokioClock>>),
}

impl Path {
    async fn call(&self, tenant: &str) -> bool {
        match self {
            Path::Bare(conn, sha) => {
                let mut c = conn.clone();
                let one: i64 = redis::cmd("EVALSHA")
                    .arg(sha)
                    .arg(0)
                    .query_async(&mut c)
                    .await
                    .expect("the bench server answers");
                one == 1
            }
            Path::Script(l) => l.acquire_key(tenant).await.is_ok(),
            Path::Lease(l) => l.try_acquire().is_ok(),
        }
    }
}

/// Each call's latency, kept from the measured iterations for the percentiles.
#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    calls: u64,
    admitted: u64,
    wall: Duration,
}

/// Runs `iters` calls (split over `tasks` tasks) and returns their wall time.
async fn run(path: &Path, iters: u64, tasks: u64, samples: &Mutex<Samples>) -> Duration {
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for task in 0..tasks {
        let path = path.clone();
        let n = iters / tasks + u64::from(task < iters % tasks);
        handles.push(tokio::spawn(async move {
            let tenant = format!("tenant-{}", task % 4);
            let mut lat = Vec::with_capacity(n as usize);
            let mut admitted = 0u64;
            for _ in 0..n {
                let t = Instant::now();
                admitted += u64::from(black_box(path.call(&tenant).await));
                lat.push(t.elapsed());
            }
            (lat, admitted)
        }));
    }
    let mut all = Vec::new();
    let mut admitted = 0;
    for h in handles {
        let (lat, a) = h.await.expect("a bench task");
        all.extend(lat);
        admitted += a;
    }
    let wall = t0.elapsed();
    let mut s = samples.lock().unwrap();
    s.calls += all.len() as u64;
    s.latencies.extend(all);
    s.admitted += admitted;
    s.wall += wall;
    wall
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// Whether a server answers at `url` within a second.
fn answers(rt: &tokio::runtime::Runtime, url: &str) -> Result<ConnectionManager, String> {
    rt.block_on(async {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let conn = tokio::time::timeout(Duration::from_secs(1), ConnectionManager::new(client))
            .await
            .map_err(|_| "no answer within 1 s".to_owned())?
            .map_err(|e| e.to_string())?;
        let mut c = conn.clone();
        let _: String = redis::cmd("PING")
            .query_async(&mut c)
            .await
            .map_err(|e| e.to_string())?;
        Ok(conn)
    })
}

fn main() {
    let url = match std::env::var("RESILIX_REDIS_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            eprintln!(
                "resilix-redis bench SKIPPED: RESILIX_REDIS_URL is unset. It needs a real Redis: \
                 bash redis/scripts/with-redis.sh cargo bench -p resilix-benches --bench redis_fleet"
            );
            return;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let conn = match answers(&rt, &url) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "resilix-redis bench SKIPPED: no Redis answers at {url} ({e}). Run it under \
                 bash redis/scripts/with-redis.sh cargo bench -p resilix-benches --bench redis_fleet"
            );
            return;
        }
    };
    let sha: String = rt
        .block_on(
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg("return 1")
                .query_async(&mut conn.clone()),
        )
        .unwrap();
    let name = format!("bench-{}", std::process::id());
    // A quota far above what loopback can ask for: every script call is a full decision that
    // admits (and writes), never a cheap refusal.
    let roomy = RateLimitConfig::new(Rate::per_second(100_000_000)).with_burst(1_000_000);
    let config = |suffix: &str| {
        FleetConfig::new(format!("{name}-{suffix}"), roomy)
            .with_backend_timeout(Duration::from_secs(1))
    };
    let script = Arc::new(FleetRateLimiter::new(conn.clone(), config("script")).unwrap());
    // Leases of 100,000 cells, renewed below half: one round trip per 50,000 calls. The
    // renewing task gets a runtime (and a connection) of its own: the bench's tasks spend
    // in tight loops that never yield, and a task they wake would wait in their worker's
    // LIFO slot, unstealable, until they did (a server's tasks yield at every await).
    let renewer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let lease = renewer.block_on(async {
        let own = ConnectionManager::new(redis::Client::open(url.as_str()).unwrap())
            .await
            .unwrap();
        let l = LeasedRateLimiter::spawn(
            own,
            config("lease"),
            LeaseConfig::new(100_000, Duration::from_secs(10)),
            TokioClock::new(),
        )
        .unwrap();
        let t0 = Instant::now();
        while l.leased() == 0 && t0.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Arc::new(l)
    });

    let paths = [
        ("bare EVALSHA", Path::Bare(conn.clone(), sha)),
        ("script acquire_key", Path::Script(script.clone())),
        ("lease try_acquire", Path::Lease(lease.clone())),
    ];
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut table = Vec::new();
    for tasks in [1, TASKS] {
        let mut group = criterion.benchmark_group(format!("redis_loopback_{tasks}_tasks"));
        group.throughput(Throughput::Elements(1));
        for (label, path) in &paths {
            let samples = Mutex::new(Samples::default());
            group.bench_function(BenchmarkId::from_parameter(label), |b| {
                b.iter_custom(|iters| rt.block_on(run(path, iters, tasks, &samples)))
            });
            table.push((
                format!("{label}, {tasks} task(s)"),
                samples.into_inner().unwrap(),
            ));
        }
        group.finish();
    }
    criterion.final_summary();

    println!();
    println!(
        "{:<34} {:>10} {:>10} {:>12} {:>10}",
        "per decision (loopback)", "p50", "p99", "calls/s", "admitted"
    );
    for (label, mut s) in table {
        if s.latencies.is_empty() {
            continue; // filtered out on the command line
        }
        s.latencies.sort();
        println!(
            "{label:<34} {:>7.1} µs {:>7.1} µs {:>12.0} {:>9.1}%",
            percentile(&s.latencies, 0.50).as_secs_f64() * 1e6,
            percentile(&s.latencies, 0.99).as_secs_f64() * 1e6,
            s.calls as f64 / s.wall.as_secs_f64(),
            100.0 * s.admitted as f64 / s.calls as f64,
        );
    }
    println!("script path: {:?}", script.stats());
    println!("lease path: {:?}", lease.stats());
}
