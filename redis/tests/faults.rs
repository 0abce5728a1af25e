//! Redis killed mid-run, restarted, and slowed, against a private redis-server per test: no
//! panic, no call past the backend timeout (plus scheduling slack), the configured failure
//! mode applied and counted, and decisions back on Redis after a restart without rebuilding
//! anything.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::OwnRedis;
use resilix::RejectReason;
use resilix::rate_limit::{AcquireError, Rate, RateLimitConfig};
use resilix_redis::script::{GcraParams, GcraScript, ServerClock};
use resilix_redis::{Admitted, FleetConfig, FleetEvent, FleetRateLimiter, OnBackendError};
use tokio::time::Instant;

const TIMEOUT: Duration = Duration::from_millis(100);
/// What a call may take beyond the backend timeout: the runtime waking the timer on a
/// machine shared with other builds (generous: the property is that calls are bounded at
/// all, not how tightly a loaded host's timers fire).
const SLACK: Duration = Duration::from_millis(900);

fn limiter(
    url: &str,
    test: &str,
    mode: OnBackendError,
    limit: RateLimitConfig,
) -> FleetRateLimiter {
    let config = FleetConfig::new("faults", limit)
        .with_prefix(common::prefix(test))
        .with_backend_timeout(TIMEOUT)
        .on_backend_error(mode);
    FleetRateLimiter::connect(url, config).unwrap()
}

/// Calls `acquire` once and checks it answered within the bound.
async fn timed(l: &FleetRateLimiter) -> Result<Admitted, resilix::Rejection> {
    let t0 = Instant::now();
    let r = l.acquire().await;
    let took = t0.elapsed();
    assert!(took <= TIMEOUT + SLACK, "a call took {took:?}");
    r
}

/// Waits (bounded) until a call is decided by Redis again.
async fn until_fleet(l: &FleetRateLimiter) -> (u32, Duration) {
    let t0 = Instant::now();
    for attempt in 1.. {
        if let Ok(Admitted::Fleet { .. }) = timed(l).await {
            return (attempt, t0.elapsed());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no recovery in 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_fails_open_counted_and_recovers_after_restart() {
    if common::redis_url("killed_fails_open_counted_and_recovers_after_restart").is_none() {
        return;
    }
    let mut server = OwnRedis::start("killed_open");
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = events.clone();
    let l = limiter(
        &server.url(),
        "killed_open",
        OnBackendError::Allow,
        RateLimitConfig::new(Rate::per_second(1_000)),
    )
    .with_observer(move |e| {
        let kind = match e {
            FleetEvent::BackendError(_) => "error",
            FleetEvent::BackendTimeout(_) => "timeout",
            FleetEvent::ScriptLoaded => "loaded",
            FleetEvent::FailedOpen => "open",
            FleetEvent::Decided { .. } => "decided",
            FleetEvent::BreakerOpen => "breaker",
            FleetEvent::InFlightFull => "full",
            FleetEvent::Expired => "expired",
            other => panic!("not expected of a fail-open limiter: {other:?}"),
        };
        seen.lock().unwrap().push(kind.to_owned());
    });
    for _ in 0..20 {
        assert!(matches!(timed(&l).await, Ok(Admitted::Fleet { .. })));
    }
    assert_eq!(l.stats().fleet_admitted, 20);
    assert_eq!(l.stats().script_loads, 1, "a fresh server: EVAL once");

    server.kill();
    for _ in 0..20 {
        assert_eq!(timed(&l).await, Ok(Admitted::FailedOpen));
    }
    let s = l.stats();
    assert_eq!(s.failed_open, 20, "{s:?}");
    assert_eq!(s.not_decided(), 20, "{s:?}");
    assert_eq!(s.fleet_admitted, 20, "nothing reached Redis");
    // A longer outage (at least 1 s: the duration is the point, and a timer never fires
    // early), past the connection manager's reconnection attempts: the next call
    // after the restart must still find its way back.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(timed(&l).await, Ok(Admitted::FailedOpen));

    server.restart();
    let (attempts, took) = until_fleet(&l).await;
    let s = l.stats();
    assert_eq!(
        s.script_loads, 2,
        "the restarted server had no script: EVAL again"
    );
    assert_eq!(s.failed_open, 21 + u64::from(attempts) - 1, "{s:?}");
    eprintln!("recovered after {attempts} calls, {took:?}");
    let events = events.lock().unwrap();
    let count = |k: &str| events.iter().filter(|e| *e == k).count() as u64;
    assert_eq!(count("loaded"), s.script_loads, "one event per count");
    assert_eq!(count("error"), s.backend_errors);
    assert_eq!(count("timeout"), s.backend_timeouts);
    assert_eq!(count("breaker"), s.breaker_open);
    assert_eq!(count("full"), s.in_flight_full);
    assert_eq!(count("expired"), s.expired);
    assert_eq!(count("open"), s.failed_open);
    assert_eq!(count("decided"), s.fleet_admitted + s.fleet_refused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_with_deny_refuses_without_a_retry_instant() {
    if common::redis_url("killed_with_deny_refuses_without_a_retry_instant").is_none() {
        return;
    }
    let mut server = OwnRedis::start("killed_deny");
    let l = limiter(
        &server.url(),
        "killed_deny",
        OnBackendError::Deny,
        RateLimitConfig::new(Rate::per_second(1_000)),
    );
    assert!(matches!(timed(&l).await, Ok(Admitted::Fleet { .. })));
    server.kill();
    for _ in 0..10 {
        let refused = timed(&l).await.unwrap_err();
        assert_eq!(refused.reason(), RejectReason::RateLimited);
        assert_eq!(refused.retry_at(), None, "nobody knows when Redis returns");
    }
    assert_eq!(l.stats().failed_closed, 10);
    assert_eq!(l.stats().failed_open, 0);
    server.restart();
    until_fleet(&l).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_with_local_fallback_decides_at_this_nodes_share() {
    if common::redis_url("killed_with_local_fallback_decides_at_this_nodes_share").is_none() {
        return;
    }
    let mut server = OwnRedis::start("killed_local");
    // 8 a second with a burst of 8, shared by 4 nodes: 2 a second and a burst of 2 here.
    let l = limiter(
        &server.url(),
        "killed_local",
        OnBackendError::Local { nodes: 4 },
        RateLimitConfig::new(Rate::per_second(8)),
    );
    assert!(matches!(timed(&l).await, Ok(Admitted::Fleet { .. })));
    server.kill();
    let t0 = Instant::now();
    let mut local = 0u64;
    for _ in 0..10 {
        match timed(&l).await {
            Ok(Admitted::Local) => local += 1,
            Ok(other) => panic!("decided {other:?} with Redis down"),
            Err(r) => {
                assert_eq!(r.reason(), RejectReason::RateLimited);
                assert!(
                    r.retry_at().is_some(),
                    "the local limiter knows its next cell"
                );
            }
        }
    }
    let elapsed = t0.elapsed();
    let s = l.stats();
    assert_eq!(s.local_admitted, local);
    assert_eq!(s.local_admitted + s.local_refused, 10, "{s:?}");
    // burst 2 + 2 a second over the run (local limiter: exact bound).
    let bound = 2 + (elapsed.as_secs_f64() * 2.0).ceil() as u64;
    assert!(
        (2..=bound).contains(&local),
        "{local} local admissions in {elapsed:?}"
    );
    assert!(s.local_refused > 0, "{s:?}");
    // Acquiring more than the burst is refused as the local limiter refuses it.
    assert!(matches!(
        l.acquire_n(None, 9).await,
        Err(AcquireError::ExceedsBurst {
            requested: 9,
            burst: 8
        })
    ));
    server.restart();
    until_fleet(&l).await;
}

/// A server that stops answering (DEBUG SLEEP blocks it, like a slow script or a fork on a big
/// dataset): calls time out at the backend timeout, fail open, and return to Redis after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowed_calls_are_bounded_by_the_backend_timeout() {
    if common::redis_url("slowed_calls_are_bounded_by_the_backend_timeout").is_none() {
        return;
    }
    let server = OwnRedis::start("slowed");
    let l = limiter(
        &server.url(),
        "slowed",
        OnBackendError::Allow,
        RateLimitConfig::new(Rate::per_second(1_000)),
    );
    assert!(matches!(timed(&l).await, Ok(Admitted::Fleet { .. })));
    let url = server.url();
    // A blocking connection without a response timeout, on its own thread.
    let sleeper = tokio::task::spawn_blocking(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg("1.5")
            .query(&mut c)
            .unwrap();
    });
    // Waits (bounded) until the server is asleep, seen by a call failing open, instead of
    // betting the blocking thread got there within a fixed time. From then on the server
    // sleeps at least 1.3 s more, longer than the 900 ms below.
    let t0 = Instant::now();
    while timed(&l).await != Ok(Admitted::FailedOpen) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the server never slept"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut open = 1;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(900) {
        if timed(&l).await == Ok(Admitted::FailedOpen) {
            open += 1;
        }
    }
    let s = l.stats();
    assert!(open >= 3, "{open} calls failed open; {s:?}");
    assert!(s.backend_timeouts >= 3, "{s:?}");
    sleeper.await.unwrap();
    until_fleet(&l).await;
}

/// After `SCRIPT FLUSH` the next call is answered all the same, through `EVAL`, and EVAL
/// caches it again. On a private server: the script cache is server-wide.
#[tokio::test]
async fn noscript_falls_back_to_eval() {
    if common::redis_url("noscript_falls_back_to_eval").is_none() {
        return;
    }
    let server = OwnRedis::start("noscript");
    let mut conn = common::connect(&server.url()).await;
    let p = GcraParams::new(&RateLimitConfig::new(Rate::per_second(10))).unwrap();
    let script = GcraScript::new();
    for round in 0..2 {
        let () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut loaded = false;
        let r = script
            .eval(
                &mut conn,
                "k{flush}",
                &p,
                1,
                ServerClock::Redis,
                &mut loaded,
            )
            .await
            .unwrap();
        assert!(
            r.admitted && loaded,
            "round {round}: sent by EVAL after NOSCRIPT"
        );
        let mut loaded = false;
        script
            .eval(
                &mut conn,
                "k{flush}",
                &p,
                1,
                ServerClock::Redis,
                &mut loaded,
            )
            .await
            .unwrap();
        assert!(!loaded, "round {round}: EVAL cached it, EVALSHA answers");
    }
}

/// A limiter built while Redis is down (a node starting during an outage) applies its failure
/// mode, then uses Redis once it is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_during_an_outage() {
    if common::redis_url("built_during_an_outage").is_none() {
        return;
    }
    let mut server = OwnRedis::start("outage_start");
    server.kill();
    let l = limiter(
        &server.url(),
        "outage_start",
        OnBackendError::Allow,
        RateLimitConfig::new(Rate::per_second(100)),
    );
    for _ in 0..5 {
        assert_eq!(timed(&l).await, Ok(Admitted::FailedOpen));
    }
    server.restart();
    until_fleet(&l).await;
}

/// Redis killed while eight tasks (two limiters in each failure mode, each its own connection)
/// have calls in flight: no panic, every call answered within the bound, each failure counted
/// once and decided by its limiter's mode, and every limiter back on Redis after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_run_under_concurrent_load() {
    if common::redis_url("killed_mid_run_under_concurrent_load").is_none() {
        return;
    }
    let mut server = OwnRedis::start("killed_load");
    let modes = [
        OnBackendError::Allow,
        OnBackendError::Deny,
        OnBackendError::Local { nodes: 8 },
        OnBackendError::Allow,
    ];
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for task in 0..8 {
        let mode = modes[task % modes.len()];
        let l = limiter(
            &server.url(),
            "killed_load",
            mode,
            RateLimitConfig::new(Rate::per_second(100_000)).with_burst(1_000),
        );
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut calls = 0u64;
            let mut worst = Duration::ZERO;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t0 = Instant::now();
                let got = l.acquire_key("mid-run").await;
                worst = worst.max(t0.elapsed());
                calls += 1;
                match (mode, got) {
                    (_, Ok(Admitted::Fleet { .. })) => {}
                    (OnBackendError::Allow, Ok(Admitted::FailedOpen)) => {}
                    (OnBackendError::Deny, Err(r)) => assert_eq!(r.retry_at(), None),
                    (OnBackendError::Local { .. }, Ok(Admitted::Local)) => {}
                    (OnBackendError::Local { .. }, Err(r)) => assert!(r.retry_at().is_some()),
                    (mode, got) => panic!("{mode:?} decided {got:?}"),
                }
                // Yield: on two cores, eight tight loops failing fast would starve the test.
                tokio::task::yield_now().await;
            }
            (mode, calls, worst, l)
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(400)).await;
    server.restart();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in tasks {
        let (mode, calls, worst, l) = t.await.expect("no task panicked");
        let s = l.stats();
        eprintln!("{mode:?}: {calls} calls, the slowest {worst:?}; {s:?}");
        assert!(worst <= TIMEOUT + SLACK, "{mode:?}: a call took {worst:?}");
        let failed = s.not_decided();
        let applied = s.fallback_decisions();
        assert_eq!(
            failed, applied,
            "{mode:?}: each failure decided once: {s:?}"
        );
        assert_eq!(
            s.fleet_admitted + s.fleet_refused + applied,
            calls,
            "{mode:?}: every call accounted for: {s:?}"
        );
        assert!(failed > 0, "{mode:?}: the kill was seen: {s:?}");
        match mode {
            OnBackendError::Allow => {
                assert_eq!(s.failed_open + s.failed_open_capped, failed, "{s:?}")
            }
            OnBackendError::Deny => assert_eq!(s.failed_closed, failed, "{s:?}"),
            OnBackendError::Local { .. } => {
                assert_eq!(s.local_admitted + s.local_refused, failed, "{s:?}")
            }
        }
        // Decided by Redis before the kill, and again after the restart.
        assert!(s.fleet_admitted > 0, "{s:?}");
        until_fleet(&l).await;
    }
}

/// A server that accepts connections but answers nothing for 700 ms (`CLIENT PAUSE ... ALL`,
/// as during a failover's pause or a long script), in each failure mode: every call is
/// answered within the bound and decided by the mode, each timeout counted, and decisions
/// return to Redis when the pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_server_bounds_latency_in_every_mode() {
    if common::redis_url("paused_server_bounds_latency_in_every_mode").is_none() {
        return;
    }
    let server = OwnRedis::start("paused");
    let limit = RateLimitConfig::new(Rate::per_second(1_000)).with_burst(100);
    let ls = [
        OnBackendError::Allow,
        OnBackendError::Deny,
        OnBackendError::Local { nodes: 2 },
    ]
    .map(|mode| (mode, limiter(&server.url(), "paused", mode, limit)));
    for (_, l) in &ls {
        assert!(matches!(timed(l).await, Ok(Admitted::Fleet { .. })));
    }
    let mut c = common::connect(&server.url()).await;
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(700)
        .arg("ALL")
        .query_async(&mut c)
        .await
        .unwrap();
    let paused = Instant::now();
    // `timed` asserts the bound on every call.
    while paused.elapsed() < Duration::from_millis(450) {
        for (mode, l) in &ls {
            let got = timed(l).await;
            match (mode, &got) {
                (OnBackendError::Allow, Ok(Admitted::FailedOpen))
                | (OnBackendError::Local { .. }, Ok(Admitted::Local)) => {}
                (OnBackendError::Deny | OnBackendError::Local { .. }, Err(r)) => {
                    assert_eq!(r.reason(), RejectReason::RateLimited)
                }
                _ => panic!("{mode:?} decided {got:?} with the server paused"),
            }
        }
    }
    for (mode, l) in &ls {
        let s = l.stats();
        assert!(s.backend_timeouts >= 2, "{mode:?}: {s:?}");
        assert_eq!(s.not_decided(), s.fallback_decisions(), "{mode:?}: {s:?}");
    }
    assert!(
        ls[2].1.stats().local_admitted > 0,
        "the local share admitted some"
    );
    for (_, l) in &ls {
        until_fleet(l).await;
    }
}
