//! Bounded waiting through the tower Layer, on paused tokio time: `wait_for_bulkhead` and
//! `wait_for_limiter` hold each attempt at the same gate as
//! `Resilience::call(..).wait_for_*()` (one loop), bounded by `max_waiters`, `max_wait`, the
//! request's deadline and the limiter's zone; a dropped request leaves the queue.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilix::RejectReason;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix_testkit::FixedRetry;
use resilix_tokio::tower::{BoxError, ResilienceLayer, ServiceError};
use resilix_tokio::{Resilience, SlotWaiters};
use tokio::time::Instant;
use tower::{ServiceBuilder, ServiceExt, service_fn};

const MS: Duration = Duration::from_millis(1);

fn bulkhead(cap: u32, waiters: u32, max_wait: Duration) -> Bulkhead<SlotWaiters<8>> {
    let wait = WaitConfig::new(waiters, max_wait, WaitOrder::Fifo).unwrap();
    Bulkhead::with_hook(BulkheadConfig::new(cap).unwrap(), SlotWaiters::new(wait))
}

/// Sleeps `ms` milliseconds (the request), then answers it.
async fn work(ms: u64) -> Result<u64, BoxError> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(ms)
}

fn reason(err: &BoxError) -> Option<RejectReason> {
    let typed = err
        .downcast_ref::<ServiceError>()
        .expect("the core's error");
    typed.rejection().map(|r| r.reason())
}

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_slots_wait_in_arrival_order() {
    let layer = ResilienceLayer::new(Resilience::new(Pipeline::new().bulkhead(bulkhead(
        1,
        8,
        100 * MS,
    ))))
    .wait_for_bulkhead();
    let done = Arc::new(Mutex::new(Vec::new()));
    let log = done.clone();
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |n: u64| {
            let log = log.clone();
            async move {
                let out = work(30).await;
                log.lock().unwrap().push((n, Instant::now()));
                out
            }
        }));
    let start = Instant::now();
    let (a, b, c) = tokio::join!(
        svc.clone().oneshot(1),
        svc.clone().oneshot(2),
        svc.clone().oneshot(3),
    );
    assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (30, 30, 30));
    let done = done.lock().unwrap().clone();
    let order: Vec<_> = done.iter().map(|(n, at)| (*n, *at - start)).collect();
    assert_eq!(
        order,
        [(1, 30 * MS), (2, 60 * MS), (3, 90 * MS)],
        "FIFO, one at a time"
    );
    let b = svc.resilience().bulkhead();
    assert_eq!((b.held(), b.hook().waiting(), b.hook().claims()), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn without_the_option_the_same_request_is_refused_at_once() {
    let layer = ResilienceLayer::new(Resilience::new(Pipeline::new().bulkhead(bulkhead(
        1,
        8,
        100 * MS,
    ))));
    let svc = ServiceBuilder::new().layer(layer).service(service_fn(work));
    let start = Instant::now();
    let (a, b) = tokio::join!(svc.clone().oneshot(30), async {
        tokio::task::yield_now().await;
        svc.clone().oneshot(30).await
    });
    assert_eq!(a.unwrap(), 30);
    assert_eq!(reason(&b.unwrap_err()), Some(RejectReason::BulkheadFull));
    assert_eq!(start.elapsed(), 30 * MS);
}

#[tokio::test(start_paused = true)]
async fn max_wait_max_waiters_and_the_deadline_bound_the_wait() {
    // One slot held for 200 ms; one place in the queue, for at most 50 ms.
    let layer = ResilienceLayer::new(Resilience::new(Pipeline::new().bulkhead(bulkhead(
        1,
        1,
        50 * MS,
    ))))
    .wait_for_bulkhead();
    let svc = ServiceBuilder::new().layer(layer).service(service_fn(work));
    let start = Instant::now();
    let timed = |n: u64| {
        let svc = svc.clone();
        async move {
            // Each request starts after the previous one has queued.
            for _ in 0..n {
                tokio::task::yield_now().await;
            }
            let out = svc.oneshot(200).await;
            (out, start.elapsed())
        }
    };
    let ((holder, _), (waiter, waited), (third, refused)) =
        tokio::join!(timed(0), timed(1), timed(2));
    assert_eq!(holder.unwrap(), 200);
    // The queue was full: refused at once, with the bulkhead's own reason.
    assert_eq!(
        reason(&third.unwrap_err()),
        Some(RejectReason::BulkheadFull)
    );
    assert_eq!(refused, Duration::ZERO);
    // `max_wait` passed before the slot freed.
    assert_eq!(
        reason(&waiter.unwrap_err()),
        Some(RejectReason::BulkheadFull)
    );
    assert_eq!(waited, 50 * MS);

    // A request deadline tighter than `max_wait` ends the wait at the deadline: the holder
    // goes through a layer without a timeout, the waiter through one with 20 ms, both over
    // the same policies.
    let resilience = Arc::new(Resilience::new(Pipeline::new().bulkhead(bulkhead(
        1,
        8,
        100 * MS,
    ))));
    let layer = ResilienceLayer::shared(resilience.clone()).wait_for_bulkhead();
    let patient = ServiceBuilder::new()
        .layer(layer.clone())
        .service(service_fn(work));
    let svc = ServiceBuilder::new()
        .layer(layer.timeout(20 * MS))
        .service(service_fn(work));
    let start = Instant::now();
    let (_, (late, at)) = tokio::join!(patient.oneshot(60), async {
        tokio::task::yield_now().await;
        let out = svc.clone().oneshot(5).await;
        (out, start.elapsed())
    });
    // Refused by the gate with the bulkhead's reason, as `max_wait` is (the rules of
    // `resilix::waiters`).
    assert_eq!(reason(&late.unwrap_err()), Some(RejectReason::BulkheadFull));
    assert_eq!(at, 20 * MS, "the wait stopped at the request's deadline");
    let b = svc.resilience().bulkhead();
    assert_eq!((b.held(), b.hook().waiting()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_dropped_waiting_request_leaves_the_queue_and_the_next_gets_the_slot() {
    let layer = ResilienceLayer::new(Resilience::new(Pipeline::new().bulkhead(bulkhead(
        1,
        8,
        Duration::from_secs(1),
    ))))
    .wait_for_bulkhead();
    let svc = ServiceBuilder::new().layer(layer).service(service_fn(work));
    let holder = tokio::spawn(svc.clone().oneshot(100));
    tokio::task::yield_now().await;
    // Cut while waiting for the slot.
    let cut = tokio::time::timeout(10 * MS, svc.clone().oneshot(1)).await;
    assert!(cut.is_err());
    let b = svc.resilience().bulkhead();
    assert_eq!((b.held(), b.hook().waiting()), (1, 0), "left the queue");
    let start = Instant::now();
    let next = svc.clone().oneshot(5).await.unwrap();
    assert_eq!(next, 5);
    assert_eq!(
        start.elapsed(),
        90 * MS + 5 * MS,
        "woken when the holder finished"
    );
    assert_eq!(holder.await.unwrap().unwrap(), 100);
    assert_eq!((b.held(), b.hook().waiting(), b.hook().claims()), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn every_retry_waits_at_the_gate_again() {
    // `(ms, flaky)`: work for `ms`; a flaky request fails its first attempt.
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 10 * MS,
        })
        .bulkhead(bulkhead(1, 8, Duration::from_secs(1)));
    let layer = ResilienceLayer::new(Resilience::new(pipeline)).wait_for_bulkhead();
    let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let svc =
        ServiceBuilder::new()
            .layer(layer)
            .service(service_fn(move |(ms, flaky): (u64, bool)| {
                let fail = flaky && !failed.swap(true, std::sync::atomic::Ordering::SeqCst);
                async move {
                    let out = work(ms).await;
                    if fail { Err("flaky".into()) } else { out }
                }
            }));
    let start = Instant::now();
    let later = |after: Duration, request: (u64, bool)| {
        let svc = svc.clone();
        async move {
            tokio::time::sleep(after).await;
            let out = svc.oneshot(request).await.unwrap();
            (out, start.elapsed())
        }
    };
    // The first holder has the slot for 0..100 ms; the flaky request waits, fails at 120 and
    // retries at 130, while a second holder has the slot for 125..175: the retry waits again.
    let (first, flaky, second) = tokio::join!(
        later(Duration::ZERO, (100, false)),
        later(MS / 2, (20, true)),
        later(125 * MS, (50, false)),
    );
    assert_eq!(first, (100, 100 * MS));
    assert_eq!(second, (50, 175 * MS));
    assert_eq!(
        flaky,
        (20, 195 * MS),
        "the retry ran when the second holder finished"
    );
    let b = svc.resilience().bulkhead();
    assert_eq!((b.held(), b.releases(), b.hook().waiting()), (0, 4, 0));
}

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_limit_wait_in_the_limiters_queue_zone() {
    // Limit 1, queue factor 3: one in flight, two may wait, a fourth is refused.
    let config = LimiterConfig {
        initial_limit: 1,
        min_limit: 1,
        queue_factor: 3.0,
        queue_rungs: 1,
        ..LimiterConfig::gradient2()
    };
    let wait = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
    let limiter = Limiter::with_hook(config, SlotWaiters::<8>::new(wait)).unwrap();
    let layer =
        ResilienceLayer::new(Resilience::new(Pipeline::new().limiter(limiter))).wait_for_limiter();
    let svc = ServiceBuilder::new().layer(layer).service(service_fn(work));
    let start = Instant::now();
    let at = |n: u64| {
        let svc = svc.clone();
        async move {
            for _ in 0..n {
                tokio::task::yield_now().await;
            }
            let out = svc.oneshot(30).await;
            (out.map_err(|e| reason(&e)), start.elapsed())
        }
    };
    let (a, b, c, d) = tokio::join!(at(0), at(1), at(2), at(3));
    assert_eq!(a, (Ok(30), 30 * MS));
    assert_eq!(b, (Ok(30), 60 * MS));
    assert_eq!(c, (Ok(30), 90 * MS));
    assert_eq!(d, (Err(Some(RejectReason::LimiterFull)), Duration::ZERO));
    let l = svc.resilience().limiter();
    assert_eq!((l.in_flight(), l.waiting(), l.hook().waiting()), (0, 0, 0));
}

/// 64 requests spawned at once over 4 slots on two worker threads: all are served (without
/// waiting most would be refused, and `unwrap` would fail), the cap holds, nothing is left
/// queued. The inner service yields instead of sleeping (no wall clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_spawned_requests_on_two_threads_all_get_a_slot() {
    let wait = WaitConfig::new(64, Duration::from_secs(60), WaitOrder::Fifo).unwrap();
    let bulkhead = Bulkhead::with_hook(
        BulkheadConfig::new(4).unwrap(),
        SlotWaiters::<64>::new(wait),
    );
    let resilience = Arc::new(Resilience::new(Pipeline::new().bulkhead(bulkhead)));
    let layer = ResilienceLayer::shared(resilience.clone()).wait_for_bulkhead();
    let busiest = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let seen = busiest.clone();
    let r = resilience.clone();
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |n: u32| {
            let seen = seen.clone();
            let r = r.clone();
            async move {
                seen.fetch_max(r.bulkhead().held(), std::sync::atomic::Ordering::SeqCst);
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
                Ok::<_, BoxError>(n)
            }
        }));
    let tasks: Vec<_> = (0..64)
        .map(|i| tokio::spawn(svc.clone().oneshot(i)))
        .collect();
    let mut sum = 0;
    for t in tasks {
        sum += t.await.unwrap().unwrap();
    }
    assert_eq!(sum, (0..64).sum::<u32>());
    assert!(busiest.load(std::sync::atomic::Ordering::SeqCst) <= 4);
    let b = resilience.bulkhead();
    assert_eq!((b.held(), b.hook().waiting(), b.releases()), (0, 0, 64));
}
