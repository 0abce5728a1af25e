//! The tower Layer in a `ServiceBuilder` stack, on paused time.
//!
//! The sleeps are on paused time (exact); the multi-thread tests' services answer at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::RejectReason;
use resilix::execute::{Attempted, ExecuteError};
use resilix::pipeline::Pipeline;
use resilix::retry::GiveUpReason;
use resilix_testkit::{Counting, FixedRetry, Log};
use resilix_tokio::Resilience;
use resilix_tokio::tower::{BoxError, ResilienceLayer, ServiceError};
use tower::{ServiceBuilder, ServiceExt, service_fn};

const MS: Duration = Duration::from_millis(1);

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

#[tokio::test(start_paused = true)]
async fn retries_inside_a_service_builder_stack_and_clones_share_the_policies() {
    let gate: &'static Counting = leak(Counting::default());
    let log: &'static Log = leak(Log::default());
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 100 * MS,
        })
        .bulkhead(gate)
        .attempt_timeout(50 * MS);
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let start = tokio::time::Instant::now();
    let svc = ServiceBuilder::new()
        // Layers around ours see one request, however many attempts it takes.
        .timeout(Duration::from_secs(5))
        .layer(ResilienceLayer::new(
            Resilience::new(Box::new(pipeline)).observer(log),
        ))
        .service(service_fn(move |n: u32| {
            let k = counter.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                tokio::time::sleep(10 * MS).await;
                if k.is_multiple_of(3) {
                    Ok(n * 10)
                } else {
                    Err::<u32, BoxError>("flaky".into())
                }
            }
        }));
    let a = svc.clone().oneshot(4u32).await.unwrap();
    assert_eq!(a, 40);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        start.elapsed(),
        10 * MS + 100 * MS + 10 * MS + 100 * MS + 10 * MS
    );
    // A clone uses the same gate: its counts continue.
    let b = svc.oneshot(2u32).await.unwrap();
    assert_eq!(b, 20);
    let counts = gate.counts();
    assert_eq!((counts.admitted, counts.settled, counts.held), (6, 6, 0));
}

#[tokio::test(start_paused = true)]
async fn a_refusal_is_a_typed_box_error() {
    let gate: &'static Counting = leak(Counting::default());
    gate.refuse(true);
    let pipeline = Pipeline::new().bulkhead(gate);
    let svc = ServiceBuilder::new()
        .layer(ResilienceLayer::new(Resilience::new(Box::new(pipeline))))
        .service(service_fn(|n: u32| async move { Ok::<_, BoxError>(n) }));
    let err = svc.oneshot(1u32).await.unwrap_err();
    let typed = err
        .downcast_ref::<ServiceError>()
        .expect("the core's error");
    assert_eq!(
        typed.rejection().map(|r| r.reason()),
        Some(RejectReason::BulkheadFull)
    );
    assert!(err.to_string().contains("bulkhead-full"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn giving_up_keeps_the_last_inner_error_and_the_deadline_bounds_the_request() {
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 10,
        delay: 30 * MS,
    });
    let layer = ResilienceLayer::new(Resilience::new(Box::new(pipeline))).timeout(100 * MS);
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(|_: ()| async {
            tokio::time::sleep(20 * MS).await;
            Err::<(), BoxError>("refused by upstream".into())
        }));
    let start = tokio::time::Instant::now();
    let err = svc.oneshot(()).await.unwrap_err();
    // Attempt 2 fails at 20 + 30 + 20 = 70; a retry at 100 would start at the deadline.
    let typed = err.downcast_ref::<ServiceError>().expect("typed");
    match typed {
        ExecuteError::GaveUp {
            reason: GiveUpReason::DeadlineWouldPass,
            attempts: 2,
            last: Attempted::Output(Some(inner)),
        } => assert_eq!(inner.to_string(), "refused by upstream"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(start.elapsed(), 70 * MS);
}

#[tokio::test(start_paused = true)]
async fn an_answered_error_passes_through_untouched() {
    let pipeline = Pipeline::new().retry(FixedRetry { max: 5, delay: MS });
    let classifier = resilix::classify::ResultClassifier::with_errors(|_: &std::io::Error| {
        resilix::Verdict::Answered
    });
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let svc = ServiceBuilder::new()
        .layer(ResilienceLayer::new(
            Resilience::new(Box::new(pipeline)).classifier(classifier),
        ))
        .service(service_fn(move |_: ()| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(std::io::Error::other("not found")) }
        }));
    let err = svc.oneshot(()).await.unwrap_err();
    assert!(err.downcast_ref::<std::io::Error>().is_some());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "answers are never retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_runs_on_a_multi_thread_runtime() {
    let gate: &'static Counting = leak(Counting::default());
    let pipeline = Pipeline::new().bulkhead(gate);
    let svc = ServiceBuilder::new()
        .layer(ResilienceLayer::new(Resilience::new(Arc::new(pipeline))))
        .service(service_fn(|n: u64| async move { Ok::<_, BoxError>(n + 1) }));
    let mut tasks = Vec::new();
    for i in 0..64u64 {
        let svc = svc.clone();
        tasks.push(tokio::spawn(async move { svc.oneshot(i).await.unwrap() }));
    }
    let mut sum = 0;
    for t in tasks {
        sum += t.await.unwrap();
    }
    assert_eq!(sum, (1..=64).sum::<u64>());
    assert_eq!(gate.counts().settled, 64);
    assert_eq!(gate.counts().held, 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_future_at_each_await_point_gives_the_permits_back() {
    let gate: &'static Counting = leak(Counting::default());
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 100 * MS,
        })
        .bulkhead(gate);
    let svc = ServiceBuilder::new()
        .layer(ResilienceLayer::new(Resilience::new(Arc::new(pipeline))))
        .service(service_fn(|slow: bool| async move {
            if slow {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            Err::<(), BoxError>("flaky".into())
        }));

    // In flight: the attempt's permit is held, then dropped with the future.
    let cut = tokio::time::timeout(5 * MS, svc.clone().oneshot(true)).await;
    assert!(cut.is_err());
    let c = gate.counts();
    assert_eq!((c.admitted, c.settled, c.cancelled, c.held), (1, 0, 1, 0));

    // Backing off: the failed attempt settled; nothing is held while the future sleeps.
    let cut = tokio::time::timeout(50 * MS, svc.clone().oneshot(false)).await;
    assert!(cut.is_err());
    let c = gate.counts();
    assert_eq!((c.admitted, c.settled, c.cancelled, c.held), (2, 1, 1, 0));

    // Not yet polled: nothing was admitted.
    drop(svc.oneshot(false));
    assert_eq!(gate.counts().admitted, 2);
}

/// A request that is not `Clone` (as `reqwest::Request` is not).
#[derive(Debug)]
struct Charge(u32);

/// Without retry the Layer moves the request into its one attempt: no `Req: Clone`. Spawned on
/// a multi-thread runtime, over an owned pipeline with an owned bulkhead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_is_not_clone_goes_through_a_pipeline_without_retry() {
    use resilix::bulkhead::Bulkhead;

    let pipeline = Pipeline::new()
        .bulkhead(Bulkhead::default())
        .attempt_timeout(Duration::from_secs(5));
    // The pipeline itself, owned by the `Resilience` the Layer shares: no `Box`, no `Arc`.
    let resilience = Arc::new(Resilience::new(pipeline));
    let layer = ResilienceLayer::shared(resilience.clone());
    let svc = ServiceBuilder::new().layer(layer).service(service_fn(
        |Charge(cents): Charge| async move { Ok::<_, BoxError>(cents * 2) },
    ));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let svc = svc.clone();
            tokio::spawn(async move { svc.oneshot(Charge(i)).await.unwrap() })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap(), 2 * i as u32);
    }
    assert_eq!(resilience.bulkhead().held(), 0);
    assert_eq!(resilience.bulkhead().releases(), 8);
}
