//! Bounded waiting for a bulkhead slot on paused tokio time: max waiters, max wait, FIFO and
//! LIFO, and cancellation of a waiter (queued, and woken but not yet admitted).

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilix::Error;
use resilix::RejectReason;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix_testkit::Log;
use resilix_tokio::{Resilience, SlotWaiters};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

fn bulkhead(cap: u32, waiters: u32, wait: Duration, order: WaitOrder) -> Bulkhead<SlotWaiters<8>> {
    let config = WaitConfig::new(waiters, wait, order).unwrap();
    Bulkhead::with_hook(BulkheadConfig::new(cap).unwrap(), SlotWaiters::new(config))
}

async fn work(took: Duration) -> Result<(), ()> {
    tokio::time::sleep(took).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_second_call_waits_for_the_slot_instead_of_being_refused() {
    let b = bulkhead(1, 4, 100 * MS, WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&b);
    let log = Log::default();
    let r = Resilience::new(&pipeline).observer(&log);
    let start = Instant::now();
    let (x, y) = tokio::join!(
        r.call(CallOptions::default())
            .wait_on(&b)
            .run(|| work(30 * MS)),
        r.call(CallOptions::default())
            .wait_on(&b)
            .run(|| work(30 * MS)),
    );
    assert_eq!((x, y), (Ok(()), Ok(())));
    assert_eq!(start.elapsed(), 60 * MS, "one after the other");
    assert!(
        !log.events()
            .iter()
            .any(|e| matches!(e, Event::Rejected { .. })),
        "a wait that ends in admission is no rejection"
    );
    assert_eq!((b.held(), b.hook().waiting()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn refused_when_max_waiters_are_waiting_or_max_wait_passes() {
    let b = bulkhead(1, 1, 10 * MS, WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&b);
    let log = Log::default();
    let r = Resilience::new(&pipeline).observer(&log);
    let start = Instant::now();
    let third_started = Mutex::new(false);
    let (holder, waiter, third) = tokio::join!(
        r.call(CallOptions::default())
            .wait_on(&b)
            .run(|| work(30 * MS)),
        async {
            let out = r
                .call(CallOptions::default())
                .wait_on(&b)
                .run(|| work(MS))
                .await;
            (out, start.elapsed())
        },
        async {
            tokio::task::yield_now().await;
            r.call(CallOptions::default())
                .wait_on(&b)
                .run(|| {
                    *third_started.lock().unwrap() = true;
                    work(MS)
                })
                .await
        },
    );
    assert_eq!(holder, Ok(()));
    // The waiter gave up after max_wait (10 ms), before the holder finished (30 ms).
    let (waited, at) = waiter;
    assert_eq!(
        waited.unwrap_err().rejection().map(|r| r.reason()),
        Some(RejectReason::BulkheadFull)
    );
    assert_eq!(at, 10 * MS);
    // The third found the one waiter place taken: refused at once, never ran.
    assert!(matches!(third, Err(Error::Refused { attempts: 0, .. })));
    assert!(!*third_started.lock().unwrap());
    let rejected = log
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Rejected { .. }))
        .count();
    assert_eq!(rejected, 2);
    assert_eq!((b.held(), b.hook().waiting()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn fifo_by_default_lifo_as_an_option() {
    let timer = resilix_tokio::TokioTimer::new();
    let fifo = bulkhead(1, 8, Duration::from_secs(1), WaitOrder::Fifo);
    let lifo = bulkhead(1, 8, Duration::from_secs(1), WaitOrder::Lifo);
    let served = resilix_testkit::served_order(&timer, &fifo).await;
    assert_eq!(served, ['h', 'a', 'b', 'c']);
    let served = resilix_testkit::served_order(&timer, &lifo).await;
    assert_eq!(served, ['h', 'c', 'b', 'a']);
}

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_waiter_leaves_the_queue_and_passes_its_wake_up_on() {
    let b = bulkhead(1, 8, Duration::from_secs(1), WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&b);
    let r = Resilience::new(&pipeline);
    let holder = b.try_admit().unwrap();

    // Queued, then dropped: it leaves the queue.
    {
        let mut a = pin!(r.call(CallOptions::default()).wait_on(&b).run(|| work(MS)));
        assert!(poll_once(a.as_mut()).is_pending());
        assert_eq!(b.hook().waiting(), 1);
    }
    assert_eq!(b.hook().waiting(), 0);

    // Woken by a release, then dropped before it took the slot: the next waiter is woken.
    let mut a = Box::pin(r.call(CallOptions::default()).wait_on(&b).run(|| work(MS)));
    let mut c = pin!(r.call(CallOptions::default()).wait_on(&b).run(|| work(MS)));
    assert!(poll_once(a.as_mut()).is_pending());
    assert!(poll_once(c.as_mut()).is_pending());
    assert_eq!(b.hook().waiting(), 2);
    drop(holder); // wakes `a` (FIFO)
    assert_eq!(b.hook().waiting(), 1);
    drop(a); // `a` leaves without taking the slot: `c` must not sleep on
    assert_eq!(b.hook().waiting(), 0, "c was woken in a's place");
    let out = std::future::poll_fn(|cx| c.as_mut().poll(cx)).await;
    assert_eq!(out, Ok(()));
    assert_eq!(b.held(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_on_two_threads_all_get_a_slot_and_the_cap_holds() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    static B: std::sync::LazyLock<Bulkhead<SlotWaiters<64>>> = std::sync::LazyLock::new(|| {
        let wait = WaitConfig::new(64, Duration::from_secs(5), WaitOrder::Fifo).unwrap();
        Bulkhead::with_hook(BulkheadConfig::new(2).unwrap(), SlotWaiters::new(wait))
    });
    let pipeline = Pipeline::new().bulkhead(resilix_tokio::Static(&*B));
    let r = Arc::new(Resilience::new(Box::new(pipeline)));
    let in_flight = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..48 {
        let (r, in_flight, peak) = (r.clone(), in_flight.clone(), peak.clone());
        tasks.push(tokio::spawn(async move {
            r.call(CallOptions::default())
                .wait_on(&*B)
                .run(move || {
                    let (in_flight, peak) = (in_flight.clone(), peak.clone());
                    async move {
                        let n = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(n, Ordering::SeqCst);
                        // Real time, but only the work's length: the cap and "nobody refused" hold
                        // for any interleaving, and max_wait (5 s) is far above 48 × 300 µs / 2.
                        tokio::time::sleep(Duration::from_micros(300)).await;
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        Ok::<(), ()>(())
                    }
                })
                .await
        }));
    }
    let started = std::time::Instant::now();
    for t in tasks {
        assert_eq!(t.await.unwrap(), Ok(()), "no waiter was lost or refused");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "nobody waited out max_wait"
    );
    assert!(peak.load(Ordering::SeqCst) <= 2);
    assert_eq!((B.held(), B.hook().waiting()), (0, 0));
}

/// A woken waiter refused by the breaker passes its wake-up on (shared with async-std and
/// embassy).
#[tokio::test(start_paused = true)]
async fn a_wake_up_refused_elsewhere_is_passed_on() {
    let b = bulkhead(1, 4, Duration::from_secs(1), WaitOrder::Fifo);
    let timer = resilix_tokio::TokioTimer::new();
    resilix_testkit::wake_up_passed_on(&timer, &b, MS, resilix_testkit::Tolerance::EXACT).await;
}
