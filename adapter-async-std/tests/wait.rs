//! Bounded waiting for a bulkhead slot on real `async-io` timers, under smol and async-std.

use std::time::{Duration, Instant};

use resilix::RejectReason;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::limiter::Limiter;
use resilix::pipeline::Pipeline;
use resilix_async_std::{AsyncIoTimer, Resilience, SlotWaiters};
use smol::future::zip;

const MS: Duration = Duration::from_millis(1);

fn bulkhead(waiters: u32, wait: Duration, order: WaitOrder) -> Bulkhead<SlotWaiters<8>> {
    let config = WaitConfig::new(waiters, wait, order).unwrap();
    Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::new(config))
}

async fn work(took: Duration) -> Result<(), ()> {
    async_io::Timer::after(took).await;
    Ok(())
}

async fn waits_then_gives_up() {
    let b = bulkhead(4, 200 * MS, WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&b);
    let r = Resilience::new(&pipeline);
    let start = Instant::now();
    let (x, y) = zip(
        r.execute_waiting(&b, CallOptions::default(), || work(5 * MS)),
        r.execute_waiting(&b, CallOptions::default(), || work(5 * MS)),
    )
    .await;
    assert_eq!((x, y), (Ok(()), Ok(())));
    assert!(start.elapsed() >= 10 * MS, "one after the other");

    let short = bulkhead(4, 3 * MS, WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&short);
    let r = Resilience::new(&pipeline);
    let (x, y) = zip(
        r.execute_waiting(&short, CallOptions::default(), || work(30 * MS)),
        async {
            let t = Instant::now();
            let out = r
                .execute_waiting(&short, CallOptions::default(), || work(MS))
                .await;
            (out, t.elapsed())
        },
    )
    .await;
    assert_eq!(x, Ok(()));
    let (out, waited) = y;
    assert_eq!(
        out.unwrap_err().rejection().map(|r| r.reason()),
        Some(RejectReason::BulkheadFull)
    );
    assert!(
        waited >= 3 * MS && waited < 30 * MS,
        "gave up after max_wait: {waited:?}"
    );
    assert_eq!((short.held(), short.hook().waiting()), (0, 0));
}

async fn lifo_serves_the_newest() {
    let b = bulkhead(8, Duration::from_secs(1), WaitOrder::Lifo);
    let served = resilix_testkit::served_order(&AsyncIoTimer::new(), &b, 3 * MS).await;
    assert_eq!(served, ['h', 'c', 'b', 'a']);
}

/// The limiter's queue zone on real timers (shared with tokio and embassy).
async fn limiter_queue_zone() {
    let (config, wait) = resilix_testkit::queue_zone_limiter(15 * UNIT);
    let l = Limiter::with_hook(config, SlotWaiters::<8>::new(wait)).unwrap();
    resilix_testkit::limiter_queue_zone(&AsyncIoTimer::new(), &l, UNIT, LATE).await;
}

/// A woken waiter refused by the breaker passes its wake-up on (shared with tokio and
/// embassy).
async fn wake_up_passed_on() {
    let b = bulkhead(4, 100 * UNIT, WaitOrder::Fifo);
    resilix_testkit::wake_up_passed_on(&AsyncIoTimer::new(), &b, UNIT, LATE).await;
}

const UNIT: Duration = Duration::from_millis(4);
// Real timers on a shared 2-core machine: generous, but smaller than the waits it bounds
// would make a lost wake-up (a waiter that sleeps out max_wait) fail the first step.
const LATE: resilix_testkit::Tolerance =
    resilix_testkit::Tolerance::real(Duration::from_millis(35));

#[test]
fn under_smol() {
    smol::block_on(waits_then_gives_up());
    smol::block_on(lifo_serves_the_newest());
    smol::block_on(limiter_queue_zone());
    smol::block_on(wake_up_passed_on());
}

#[test]
fn under_async_std() {
    async_std::task::block_on(waits_then_gives_up());
    async_std::task::block_on(lifo_serves_the_newest());
    async_std::task::block_on(limiter_queue_zone());
    async_std::task::block_on(wake_up_passed_on());
}
