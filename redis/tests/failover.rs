//! Failover with a real replica: a primary, a replica and Redis Sentinel on loopback
//! (`redis/scripts/with-sentinel.sh`); the primary is killed (SIGKILL) mid-run under a load of
//! 20× the quota, Sentinel promotes the replica, and limiters built on `Backend::sentinel`
//! follow it. Measured: the time without remote decisions, and admissions in every 1 s and
//! 0.1 s window against `FleetConfig::bound` with one promotion (by construction: counted by
//! reply instant over the window plus the longest call).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::max_in_window;
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::{Backend, FleetConfig, FleetEvent, FleetRateLimiter, OnBackendError};
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_stays_within_the_stated_bound() {
    let (Ok(sentinel), Ok(service), Ok(pid)) = (
        std::env::var("RESILIX_SENTINEL_URL"),
        std::env::var("RESILIX_SENTINEL_SERVICE"),
        std::env::var("RESILIX_PRIMARY_PID"),
    ) else {
        eprintln!(
            "SKIPPED a_sentinel_failover_stays_within_the_stated_bound: run it under \
             redis/scripts/with-sentinel.sh (primary, replica and sentinel on loopback)"
        );
        return;
    };
    let limit = RateLimitConfig::new(Rate::per_second(200)).with_burst(20);
    let timeout = Duration::from_millis(20);
    let decided = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let origin = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut runs = Vec::new();
    for mode in [OnBackendError::Allow, OnBackendError::Local { nodes: 4 }] {
        let cfg = FleetConfig::new("failover", limit)
            .with_prefix(common::prefix("failover"))
            .with_backend_timeout(timeout)
            .on_backend_error(mode);
        let mut nodes = Vec::new();
        for _ in 0..4 {
            let backend = Backend::sentinel([sentinel.as_str()], &service, 0, timeout, 1).unwrap();
            let seen = decided.clone();
            let l = Arc::new(
                FleetRateLimiter::new(backend, cfg.clone())
                    .unwrap()
                    .with_observer(move |e| {
                        if let FleetEvent::Decided { .. } = e {
                            seen.lock().unwrap().push(Instant::now());
                        }
                    }),
            );
            let (l2, stop) = (l.clone(), stop.clone());
            nodes.push((
                l,
                tokio::spawn(async move {
                    let seen = Arc::new(Mutex::new((Vec::new(), Duration::ZERO)));
                    let mut tick = tokio::time::interval(Duration::from_millis(1));
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                    let mut calls = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        tick.tick().await;
                        let (l, seen) = (l2.clone(), seen.clone());
                        calls.push(tokio::spawn(async move {
                            let t0 = Instant::now();
                            let r = l.acquire().await;
                            let t1 = Instant::now();
                            let mut s = seen.lock().unwrap();
                            s.1 = s.1.max(t1 - t0);
                            if r.is_ok() {
                                s.0.push((t1 - origin).as_nanos() as u64);
                            }
                        }));
                        calls.retain(|c| !c.is_finished());
                    }
                    for c in calls {
                        c.await.unwrap();
                    }
                    let s = seen.lock().unwrap();
                    (s.0.clone(), s.1)
                }),
            ));
        }
        runs.push((cfg, nodes));
    }
    // A leased node on the same Sentinel-found primary: it must follow the promotion too.
    let leased = resilix_redis::LeasedRateLimiter::spawn(
        Backend::sentinel([sentinel.as_str()], &service, 0, timeout, 1).unwrap(),
        FleetConfig::new("failover-lease", limit)
            .with_prefix(common::prefix("failover"))
            .with_backend_timeout(timeout),
        resilix_redis::LeaseConfig::new(5, Duration::from_millis(200)),
        resilix_tokio::TokioClock::new(),
    )
    .unwrap();
    // Decisions on the primary first.
    let t0 = Instant::now();
    while decided.lock().unwrap().len() < 100 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no decision on the primary"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let primary_port = std::env::var("RESILIX_REDIS_URL")
        .ok()
        .and_then(|u| u.rsplit(':').next()?.split('/').next()?.parse::<u16>().ok());
    let ok = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -KILL {pid}");
    let killed = Instant::now();
    // Until Sentinel names another primary (1 s to call this one down, then the election
    // and the promotion), then until that one decides.
    let mut s = redis::Client::open(sentinel.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let mut ask = redis::cmd("SENTINEL");
    ask.arg("get-master-addr-by-name").arg(&service);
    let promoted = loop {
        let (_, port): (String, u16) = ask.query_async(&mut s).await.unwrap();
        if Some(port) != primary_port {
            break Instant::now();
        }
        assert!(
            killed.elapsed() < Duration::from_secs(60),
            "no promotion in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let back = loop {
        let first = decided
            .lock()
            .unwrap()
            .iter()
            .find(|&&at| at > promoted)
            .copied();
        if let Some(at) = first {
            break at;
        }
        assert!(
            promoted.elapsed() < Duration::from_secs(10),
            "no decision after the promotion"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    // The leased node renews on the promoted replica (its leases last 200 ms, so it has to).
    let renewed = leased.stats().renewals;
    while leased.stats().renewals == renewed {
        assert!(
            promoted.elapsed() < Duration::from_secs(10),
            "the leased node did not follow the promotion: {:?}",
            leased.stats()
        );
        let _ = leased.try_acquire();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    // The longest stretch without a decision by Redis, after the kill.
    let mut times: Vec<Instant> = decided.lock().unwrap().clone();
    times.sort_unstable();
    let gap = times
        .windows(2)
        .filter(|w| w[1] > killed)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap();
    eprintln!(
        "no remote decision for {gap:?}; Sentinel named the replica {:?} after the kill, and \
         the limiters' first decision on it came {:?} after that",
        promoted - killed,
        back - promoted
    );
    for (cfg, nodes) in runs {
        let (mut times, mut longest, mut followed) = (Vec::new(), Duration::ZERO, 0);
        for (l, task) in nodes {
            let (t, worst) = task.await.unwrap();
            times.extend(t);
            longest = longest.max(worst);
            let s = l.stats();
            assert_eq!(s.not_decided(), s.fallback_decisions(), "{s:?}");
            followed += u64::from(s.fleet_admitted > 0);
        }
        assert_eq!(followed, 4);
        times.sort_unstable();
        for w in [Duration::from_secs(1), Duration::from_millis(100)] {
            let got = max_in_window(&times, w);
            let bound = cfg.bound(4, w + longest, 1);
            eprintln!(
                "{:?}: at most {got} admitted in {w:?} through the failover (bound {bound} over \
                 {:?}, one promotion); longest call {longest:?}",
                cfg.on_backend_error,
                w + longest
            );
            assert!(got <= bound, "{:?}: {got} > {bound}", cfg.on_backend_error);
        }
    }
}
