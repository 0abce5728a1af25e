//! Slow is not down, stale work spends nothing, and the stated bound holds in every mode: open
//! loads far above the quota on a private redis-server that is paused (SIGSTOP) mid-run.
//!
//! Every bound assertion holds by construction: admissions are counted by the instant of their
//! reply, and a decision lies between its call's send and reply, so the count in any window W
//! is compared with `FleetConfig::bound` over W plus the longest call measured. Latencies that
//! depend on the host are asserted against the host's own measured stalls.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{OwnRedis, StallSampler, max_in_window};
use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::script::{Decision, GcraParams, GcraScript};
use resilix_redis::{Admitted, FleetConfig, FleetEvent, FleetRateLimiter, OnBackendError};
use tokio::time::Instant;

const TIMEOUT: Duration = Duration::from_millis(20);

fn config(test: &str, mode: OnBackendError, limit: RateLimitConfig) -> FleetConfig {
    FleetConfig::new("overload", limit)
        .with_prefix(common::prefix(test))
        .with_backend_timeout(TIMEOUT)
        .on_backend_error(mode)
}

/// One node's open loop: a call every `every` (spawned, never waiting for the last), until
/// `stop`; returns the reply instants (ns since `origin`) of its admissions and its longest
/// call.
async fn open_loop(
    l: Arc<FleetRateLimiter>,
    every: Duration,
    origin: Instant,
    stop: Arc<AtomicBool>,
) -> (Vec<u64>, Duration) {
    let seen = Arc::new(Mutex::new((Vec::new(), Duration::ZERO)));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut calls = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let (l, seen) = (l.clone(), seen.clone());
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
}

/// Four nodes per mode, each offering 1,000 calls/s against a fleet quota of 200/s (20×),
/// Redis paused for 700 ms in the middle: in every 1 s and 0.1 s window each mode admits
/// within its stated bound, and every call Redis did not decide was decided by the mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_stays_within_the_stated_bound_through_a_pause() {
    if common::redis_url("every_mode_stays_within_the_stated_bound_through_a_pause").is_none() {
        return;
    }
    let server = OwnRedis::start("bound_pause");
    let limit = RateLimitConfig::new(Rate::per_second(200)).with_burst(20);
    let modes = [
        OnBackendError::Allow,
        OnBackendError::Deny,
        OnBackendError::Local { nodes: 4 },
    ];
    let origin = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut runs = Vec::new();
    for mode in modes {
        let cfg = config("bound_pause", mode, limit);
        let mut nodes = Vec::new();
        for _ in 0..4 {
            let l = Arc::new(FleetRateLimiter::connect(server.url(), cfg.clone()).unwrap());
            nodes.push((
                l.clone(),
                tokio::spawn(open_loop(l, Duration::from_millis(1), origin, stop.clone())),
            ));
        }
        runs.push((cfg, nodes));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.pause();
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.resume();
    tokio::time::sleep(Duration::from_millis(700)).await;
    stop.store(true, Ordering::Relaxed);
    for (cfg, nodes) in runs {
        let (mut times, mut longest) = (Vec::new(), Duration::ZERO);
        let mut not_sent = 0;
        for (l, task) in nodes {
            let (t, worst) = task.await.unwrap();
            times.extend(t);
            longest = longest.max(worst);
            let s = l.stats();
            assert_eq!(s.not_decided(), s.fallback_decisions(), "{s:?}");
            assert!(s.fleet_admitted > 0, "{s:?}");
            not_sent += s.breaker_open + s.in_flight_full;
        }
        times.sort_unstable();
        for w in [Duration::from_secs(1), Duration::from_millis(100)] {
            let got = max_in_window(&times, w);
            let bound = cfg.bound(4, w + longest, 0);
            eprintln!(
                "{:?}: at most {got} admitted in {w:?} (bound {bound} over {:?}); {} in all; \
                 {not_sent} calls not sent; longest call {longest:?}",
                cfg.on_backend_error,
                w + longest,
                times.len()
            );
            assert!(got <= bound, "{:?}: {got} > {bound}", cfg.on_backend_error);
        }
        assert!(
            not_sent > 0,
            "the breaker kept calls local through the pause"
        );
    }
}

/// Redis paused for 2 s under a load above the quota, in deny mode: calls sent before the
/// breaker opened sit in the server's queue past their deadline; when it answers again they
/// spend nothing (the first decision after it finds the bucket full, as the pause refilled
/// it), and remote decisions resume within 50 ms (plus the host's own longest stall) of the
/// server's first answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_pause_decisions_resume_at_once_and_stale_work_spends_nothing() {
    if common::redis_url("after_a_pause_decisions_resume_at_once_and_stale_work_spends_nothing")
        .is_none()
    {
        return;
    }
    let server = OwnRedis::start("resume");
    let limit = RateLimitConfig::new(Rate::per_second(1_000)).with_burst(100);
    let decided = Arc::new(Mutex::new(Vec::<(Instant, u32)>::new()));
    let seen = decided.clone();
    let l = Arc::new(
        FleetRateLimiter::connect(server.url(), config("resume", OnBackendError::Deny, limit))
            .unwrap()
            .with_observer(move |e| {
                if let FleetEvent::Decided { remaining, .. } = e {
                    seen.lock().unwrap().push((Instant::now(), *remaining));
                }
            }),
    );
    let origin = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..2)
        .map(|_| {
            tokio::spawn(open_loop(
                l.clone(),
                Duration::from_millis(1),
                origin,
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.pause();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let sampler = StallSampler::start();
    server.resume();
    // The server's first answer, on a connection of its own.
    let url = server.url();
    let answered = tokio::task::spawn_blocking(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let _: String = redis::cmd("PING").query(&mut c).unwrap();
        Instant::now()
    })
    .await
    .unwrap();
    let t0 = Instant::now();
    let first = loop {
        let found = decided
            .lock()
            .unwrap()
            .iter()
            .find(|(at, _)| *at >= answered - TIMEOUT)
            .copied();
        if let Some(first) = found {
            break first;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no decision after the pause"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let stall = sampler.finish();
    let after = first.0.saturating_duration_since(answered);
    let at_resume = l.stats();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = l.stats();
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.await.unwrap();
    }
    eprintln!(
        "remote decisions {after:?} after the server's first answer (host stall {stall:?}); \
         the first found {} cells left; {} admitted by Redis in the second after; {second:?}",
        first.1,
        second.fleet_admitted - at_resume.fleet_admitted
    );
    assert!(
        after <= Duration::from_millis(50) + stall,
        "decisions resumed {after:?} after the server answered (stall {stall:?})"
    );
    // The bucket refilled during the pause; only a probe still within its deadline may have
    // spent a cell before this decision.
    assert!(
        first.1 >= 100 - 2,
        "stale work spent the bucket: {} left",
        first.1
    );
}

/// The script itself: past the caller's deadline it answers `Expired` and leaves the bucket
/// untouched; before it, it decides as ever.
#[tokio::test]
async fn a_decision_past_its_deadline_spends_nothing() {
    let Some(url) = common::redis_url("a_decision_past_its_deadline_spends_nothing") else {
        return;
    };
    let mut conn = common::connect(&url).await;
    let key = format!("{}{{deadline}}", common::prefix("deadline"));
    let p = GcraParams::new(&RateLimitConfig::new(Rate::per_second(10)).with_burst(2)).unwrap();
    let script = GcraScript::new();
    let mut loaded = false;
    let now = common::server_time(&mut conn).await;
    let past = now - Duration::from_millis(1);
    let d = script
        .eval_before(&mut conn, &key, &p, 1, past, &mut loaded)
        .await
        .unwrap();
    assert!(matches!(d, Decision::Expired { .. }), "{d:?}");
    let exists: bool = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!exists, "an expired decision wrote nothing");
    let future = now + Duration::from_secs(5);
    for _ in 0..2 {
        let d = script
            .eval_before(&mut conn, &key, &p, 1, future, &mut loaded)
            .await
            .unwrap();
        assert!(matches!(d, Decision::Decided(r) if r.admitted), "{d:?}");
    }
    let d = script
        .eval_before(&mut conn, &key, &p, 1, future, &mut loaded)
        .await
        .unwrap();
    assert!(
        matches!(d, Decision::Decided(r) if !r.admitted),
        "the burst is spent: {d:?}"
    );
}

/// A refund right after an admission gives the cell back; once the bucket has refilled past
/// the admission nothing is given back; a locally decided admission is not given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refunds_give_back_only_what_keeps_the_bound() {
    let Some(url) = common::redis_url("refunds_give_back_only_what_keeps_the_bound") else {
        return;
    };
    // 10 a second, burst 3: T = 100 ms.
    let limit = RateLimitConfig::new(Rate::per_second(10)).with_burst(3);
    let l = FleetRateLimiter::connect(
        url.as_str(),
        config("refund", OnBackendError::Deny, limit).with_backend_timeout(Duration::from_secs(2)),
    )
    .unwrap();
    let mut grants = Vec::new();
    for _ in 0..3 {
        grants.push(l.acquire_refundable(None, 1).await.unwrap());
    }
    assert!(l.acquire().await.is_err(), "the burst is spent");
    let last = grants.pop().unwrap();
    assert!(matches!(last.admitted(), Admitted::Fleet { .. }));
    assert_eq!(l.refund(last).await.unwrap(), 1, "given back at once");
    assert!(
        l.acquire().await.is_ok(),
        "the cell given back is admitted again"
    );
    assert!(l.acquire().await.is_err(), "and only that one");
    // The first grant's admission lies in the past once the bucket has refilled past it.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let first = grants.remove(0);
    assert_eq!(l.refund(first).await.unwrap(), 0, "too late to give back");
}

/// Redis killed: after the breaker's consecutive failures, calls are not sent at all (counted,
/// decided by the mode at once) until the open wait ends; a minute's wait here, so the test
/// does not depend on how fast the host runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_keeps_calls_local_without_sending() {
    if common::redis_url("an_open_breaker_keeps_calls_local_without_sending").is_none() {
        return;
    }
    let mut server = OwnRedis::start("breaker_open");
    let cfg = config(
        "breaker_open",
        OnBackendError::Allow,
        RateLimitConfig::new(Rate::per_second(1_000)),
    );
    let breaker = resilix::breaker::Config {
        open_wait: Duration::from_secs(60),
        ..cfg.breaker
    };
    let l = FleetRateLimiter::connect(server.url(), cfg.with_breaker(breaker)).unwrap();
    assert!(matches!(l.acquire().await, Ok(Admitted::Fleet { .. })));
    server.kill();
    for _ in 0..20 {
        assert_eq!(l.acquire().await, Ok(Admitted::FailedOpen));
    }
    let s = l.stats();
    assert_eq!(s.backend_errors + s.backend_timeouts, 5, "{s:?}");
    assert_eq!(s.breaker_open, 15, "{s:?}");
    assert_eq!(s.failed_open, 20, "{s:?}");
}

/// One call in flight at most: 40 calls started together find the slot taken and are batched
/// into one script call per batch, every call still decided by Redis, and the batch admits as
/// many cells as fit, first come first served: the burst, then refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_beyond_the_in_flight_bound_are_batched_and_decided_by_redis() {
    let Some(url) =
        common::redis_url("calls_beyond_the_in_flight_bound_are_batched_and_decided_by_redis")
    else {
        return;
    };
    // One a second, burst 10: over the test's few hundred ms at most 10 + 1 are admitted.
    let limit = RateLimitConfig::new(Rate::per_second(1)).with_burst(10);
    let l = Arc::new(
        FleetRateLimiter::connect(
            url.as_str(),
            config("batched", OnBackendError::Deny, limit)
                .with_backend_timeout(Duration::from_secs(2))
                .with_max_in_flight(1),
        )
        .unwrap(),
    );
    let start = Arc::new(tokio::sync::Barrier::new(40));
    let calls: Vec<_> = (0..40)
        .map(|_| {
            let (l, start) = (l.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                l.acquire().await
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut admitted = 0u64;
    for c in calls {
        match c.await.unwrap() {
            Ok(Admitted::Fleet { .. }) => admitted += 1,
            Ok(other) => panic!("not decided by Redis: {other:?}"),
            Err(r) => assert!(r.retry_at().is_some(), "a fleet refusal knows its wait"),
        }
    }
    let elapsed = t0.elapsed();
    let s = l.stats();
    eprintln!("{admitted} admitted of 40 in {elapsed:?}; {s:?}");
    assert_eq!(s.fleet_admitted + s.fleet_refused, 40, "{s:?}");
    assert!(s.batched > 0, "{s:?}");
    let bound = 10 + elapsed.as_secs() + 1;
    assert!(
        (10..=bound).contains(&admitted),
        "{admitted} admitted, bound {bound}"
    );
}
