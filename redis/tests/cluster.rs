//! A real Redis Cluster (three masters on loopback, `redis/scripts/with-redis-cluster.sh`):
//! buckets of different tenants spread over the masters, each decision touches the one slot of
//! its hash-tagged key, each tenant keeps its exact quota, a paused master fails only its own
//! tenants' calls, and leases and retry budgets run on a cluster unchanged.
//!
//! `bash redis/scripts/with-redis-cluster.sh cargo test -p resilix-redis --features cluster --test cluster`

use std::collections::BTreeMap;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::script::GcraParams;
use resilix_redis::{
    Admitted, Backend, FleetConfig, FleetRateLimiter, FleetRetryBudget, LeaseConfig,
    LeasedRateLimiter, OnBackendError, RetryBudgetConfig,
};
use resilix_tokio::TokioClock;
use tokio::time::Instant;

mod common;

/// The pause test stops a master for every client: it runs alone, the others side by side.
static PAUSE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

fn seeds(test: &str) -> Option<Vec<String>> {
    match std::env::var("RESILIX_REDIS_CLUSTER_URLS") {
        Ok(urls) if !urls.is_empty() => Some(urls.split(',').map(str::to_owned).collect()),
        _ => {
            eprintln!(
                "SKIPPED {test}: RESILIX_REDIS_CLUSTER_URLS is unset; run it under \
                 redis/scripts/with-redis-cluster.sh, which starts a real three-master cluster"
            );
            None
        }
    }
}

async fn direct(url: &str) -> MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("a cluster node answers")
}

/// The cluster's masters, by the first slot each serves: (first slot, last slot, url).
async fn masters(seed: &str) -> Vec<(u16, u16, String)> {
    let mut c = direct(seed).await;
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut c)
        .await
        .unwrap();
    let mut out = Vec::new();
    for range in slots {
        let redis::Value::Array(items) = range else {
            panic!("CLUSTER SLOTS: {range:?}")
        };
        let int = |v: &redis::Value| match v {
            redis::Value::Int(i) => *i,
            other => panic!("CLUSTER SLOTS: {other:?}"),
        };
        let redis::Value::Array(node) = &items[2] else {
            panic!("CLUSTER SLOTS: {items:?}")
        };
        let host = match &node[0] {
            redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("CLUSTER SLOTS: {other:?}"),
        };
        out.push((
            int(&items[0]) as u16,
            int(&items[1]) as u16,
            format!("redis://{host}:{}", int(&node[1])),
        ));
    }
    out.sort();
    out
}

async fn master_of(
    seed: &mut MultiplexedConnection,
    masters: &[(u16, u16, String)],
    key: &str,
) -> String {
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(seed)
        .await
        .unwrap();
    masters
        .iter()
        .find(|(a, b, _)| (*a..=*b).contains(&slot))
        .map(|(_, _, url)| url.clone())
        .unwrap_or_else(|| panic!("no master serves slot {slot}"))
}

/// Tenant names, `per` of them on each master (chosen by asking the cluster for their keys'
/// slots, so the spread is certain rather than likely).
async fn tenants_on_every_master(
    l: &FleetRateLimiter,
    seed: &str,
    masters: &[(u16, u16, String)],
    per: usize,
) -> BTreeMap<String, Vec<String>> {
    let mut c = direct(seed).await;
    let mut by_master: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in 0.. {
        let tenant = format!("tenant-{i}");
        let m = master_of(&mut c, masters, &l.key_for(&tenant)).await;
        let list = by_master.entry(m).or_default();
        if list.len() < per {
            list.push(tenant);
        }
        if by_master.len() == masters.len() && by_master.values().all(|v| v.len() == per) {
            break;
        }
        assert!(i < 10_000, "no spread over the masters: {by_master:?}");
    }
    by_master
}

fn config(prefix: &str, limit: RateLimitConfig) -> FleetConfig {
    FleetConfig::new("cluster", limit)
        .with_prefix(prefix)
        .with_backend_timeout(Duration::from_secs(2))
        .on_backend_error(OnBackendError::Deny)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_spread_over_masters_and_each_keeps_its_exact_quota() {
    let Some(seeds) = seeds("tenants_spread_over_masters_and_each_keeps_its_exact_quota") else {
        return;
    };
    let _shared = PAUSE.read().await;
    let ms = masters(&seeds[0]).await;
    assert_eq!(ms.len(), 3, "three masters: {ms:?}");
    let prefix = common::prefix("cluster_spread");
    let limit = RateLimitConfig::new(Rate::per_second(100)).with_burst(10);
    let probe = FleetRateLimiter::connect_cluster(seeds.clone(), config(&prefix, limit)).unwrap();
    let by_master = tenants_on_every_master(&probe, &seeds[0], &ms, 2).await;
    let tenants: Vec<String> = by_master.values().flatten().cloned().collect();
    // Every master of this one host reads the same wall clock, so any node's TIME brackets
    // the run for every bucket.
    let mut clock = direct(&seeds[0]).await;
    let time = |c: &mut MultiplexedConnection| {
        let mut c = c.clone();
        async move {
            let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut c).await.unwrap();
            Duration::from_secs(s) + Duration::from_micros(us)
        }
    };
    let a = time(&mut clock).await;
    let mut tasks = Vec::new();
    for task in 0..8 {
        let l = FleetRateLimiter::connect_cluster(seeds.clone(), config(&prefix, limit)).unwrap();
        let tenants = tenants.clone();
        tasks.push(tokio::spawn(async move {
            let mut admitted = vec![0u64; tenants.len()];
            let t0 = Instant::now();
            let mut i = task;
            while t0.elapsed() < Duration::from_millis(600) {
                if let Ok(Admitted::Fleet { .. }) = l.acquire_key(&tenants[i % tenants.len()]).await
                {
                    admitted[i % tenants.len()] += 1;
                }
                i += 1;
            }
            (admitted, l.stats())
        }));
    }
    let mut admitted = vec![0u64; tenants.len()];
    let mut calls = 0;
    for t in tasks {
        let (a, s) = t.await.unwrap();
        assert_eq!(s.backend_errors + s.backend_timeouts, 0, "{s:?}");
        calls += s.fleet_admitted + s.fleet_refused;
        for (sum, n) in admitted.iter_mut().zip(a) {
            *sum += n;
        }
    }
    let b = time(&mut clock).await;
    let p = GcraParams::new(&limit).unwrap();
    let bound = u64::from(p.burst()) + ((b - a).as_nanos() / u128::from(p.emission_ns())) as u64;
    eprintln!(
        "{calls} calls over {:?}: per tenant {admitted:?}, bound {bound}",
        b - a
    );
    for (tenant, n) in tenants.iter().zip(&admitted) {
        assert!(*n <= bound, "{tenant}: {n} admitted > {bound}");
        assert!(
            *n >= u64::from(p.burst()),
            "{tenant}: at least its burst, got {n}"
        );
    }
    assert!(
        calls > admitted.iter().sum::<u64>(),
        "the quotas refused some"
    );
    // Each bucket is one key on the master of its slot, and on no other.
    for (master, ts) in &by_master {
        for tenant in ts {
            let key = probe.key_for(tenant);
            for (_, _, url) in &ms {
                let mut c = direct(url).await;
                let n: u32 = redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async(&mut c)
                    .await
                    .unwrap_or(0);
                assert_eq!(n, u32::from(url == master), "{key} on {url}");
            }
        }
    }
}

/// One master stops answering (`CLIENT PAUSE`): its tenants' calls time out at the backend
/// timeout and fail open, counted; tenants on the other masters are decided by Redis all
/// along; when the pause ends, the paused master's tenants are decided by Redis again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_master_fails_only_its_own_tenants() {
    let Some(seeds) = seeds("a_paused_master_fails_only_its_own_tenants") else {
        return;
    };
    let _alone = PAUSE.write().await;
    let ms = masters(&seeds[0]).await;
    let prefix = common::prefix("cluster_pause");
    let timeout = Duration::from_millis(100);
    let slack = Duration::from_millis(150);
    let limiter = FleetRateLimiter::connect_cluster(
        seeds.clone(),
        FleetConfig::new(
            "cluster",
            RateLimitConfig::new(Rate::per_second(10_000)).with_burst(100),
        )
        .with_prefix(&prefix)
        .with_backend_timeout(timeout)
        .on_backend_error(OnBackendError::Allow),
    )
    .unwrap();
    let by_master = tenants_on_every_master(&limiter, &seeds[0], &ms, 1).await;
    let (paused_url, paused) = by_master
        .iter()
        .next()
        .map(|(m, t)| (m.clone(), t[0].clone()))
        .unwrap();
    let others: Vec<String> = by_master
        .iter()
        .skip(1)
        .map(|(_, t)| t[0].clone())
        .collect();
    for t in by_master.values().flatten() {
        assert!(
            matches!(limiter.acquire_key(t).await, Ok(Admitted::Fleet { .. })),
            "{t}"
        );
    }
    let mut c = direct(&paused_url).await;
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(800)
        .arg("ALL")
        .query_async(&mut c)
        .await
        .unwrap();
    let paused_at = Instant::now();
    let mut open = 0;
    while paused_at.elapsed() < Duration::from_millis(500) {
        let t0 = Instant::now();
        let got = limiter.acquire_key(&paused).await;
        assert!(
            t0.elapsed() <= timeout + slack,
            "a call took {:?}",
            t0.elapsed()
        );
        if got == Ok(Admitted::FailedOpen) {
            open += 1;
        }
        for t in &others {
            let t0 = Instant::now();
            let got = limiter.acquire_key(t).await;
            assert!(
                t0.elapsed() <= timeout + slack,
                "a call took {:?}",
                t0.elapsed()
            );
            assert!(
                matches!(got, Ok(Admitted::Fleet { .. })),
                "{t} is on a master that answers: {got:?}"
            );
        }
    }
    let s = limiter.stats();
    assert!(open >= 2, "{open} calls failed open: {s:?}");
    assert_eq!(s.failed_open, open, "{s:?}");
    assert_eq!(
        s.backend_errors + s.backend_timeouts,
        s.failed_open,
        "{s:?}"
    );
    // The pause ends 800 ms after it began: the master's tenant is back on Redis.
    let t0 = Instant::now();
    loop {
        if let Ok(Admitted::Fleet { .. }) = limiter.acquire_key(&paused).await {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{paused} never back on Redis"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_retry_budgets_run_on_a_cluster() {
    let Some(seeds) = seeds("leases_and_retry_budgets_run_on_a_cluster") else {
        return;
    };
    let _shared = PAUSE.read().await;
    let prefix = common::prefix("cluster_lease");
    let limit = RateLimitConfig::new(Rate::per_second(1_000)).with_burst(50);
    let lease = LeasedRateLimiter::spawn(
        Backend::cluster(seeds.clone(), Duration::from_secs(2)).unwrap(),
        FleetConfig::new("cluster", limit)
            .with_prefix(&prefix)
            .with_backend_timeout(Duration::from_secs(2)),
        LeaseConfig::new(20, Duration::from_secs(1)),
        TokioClock::new(),
    )
    .unwrap();
    let mut budget = RetryBudgetConfig::new("cluster");
    budget.prefix = prefix.clone();
    budget.flush_every = Duration::from_millis(10);
    budget.backend_timeout = Duration::from_secs(2);
    let budget = FleetRetryBudget::spawn(
        Backend::cluster(seeds.clone(), Duration::from_secs(2)).unwrap(),
        budget,
    )
    .unwrap();
    let t0 = Instant::now();
    while lease.leased() == 0 || budget.stats().settlements == 0 {
        for _ in 0..100 {
            budget.record_first_attempt();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{:?} {:?}",
            lease.stats(),
            budget.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for _ in 0..10 {
        assert!(lease.try_acquire().is_ok());
    }
    assert_eq!(lease.stats().renewal_failures, 0, "{:?}", lease.stats());
    assert_eq!(
        budget.stats().settlement_failures,
        0,
        "{:?}",
        budget.stats()
    );
}
