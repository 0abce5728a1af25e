//! Bounded waiting for a bulkhead slot on real `async-io` timers, under smol and async-std.
//! Who holds a slot while who arrives is ordered by signals; sleeps remain only as the
//! durations being checked (an operation's 5 ms, a 3 ms max wait).

use std::time::{Duration, Instant};

use resilix::RejectReason;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::limiter::Limiter;
use resilix::pipeline::Pipeline;
use resilix_async_std::{AsyncIoTimer, Resilience, SlotWaiters};
use resilix_testkit::Signal;
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
    // Nobody waits this out: long enough that no stall of a loaded machine makes the waiter
    // give up before the holder's 5 ms are over.
    let b = bulkhead(4, PATIENT, WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&b);
    let r = Resilience::new(&pipeline);
    let start = Instant::now();
    let (x, y) = zip(
        r.call(CallOptions::default())
            .wait_on(&b)
            .run(|| work(5 * MS)),
        r.call(CallOptions::default())
            .wait_on(&b)
            .run(|| work(5 * MS)),
    )
    .await;
    assert_eq!((x, y), (Ok(()), Ok(())));
    // Exact: a timer never fires early.
    assert!(start.elapsed() >= 10 * MS, "one after the other");

    // The holder holds its slot until the waiter gave up: it cannot finish first, however
    // late the waiter's timer is polled.
    let short = bulkhead(4, 3 * MS, WaitOrder::Fifo);
    let pipeline = Pipeline::new().bulkhead(&short);
    let r = Resilience::new(&pipeline);
    let (holding, release) = (Signal::new(), Signal::new());
    let (x, y) = zip(
        r.call(CallOptions::default())
            .wait_on(&short)
            .run(|| async {
                holding.fire();
                release.wait().await;
                Ok::<(), ()>(())
            }),
        async {
            holding.wait().await;
            let t = Instant::now();
            let out = r
                .call(CallOptions::default())
                .wait_on(&short)
                .run(|| work(MS))
                .await;
            let waited = t.elapsed();
            release.fire();
            (out, waited)
        },
    )
    .await;
    assert_eq!(x, Ok(()));
    let (out, waited) = y;
    assert_eq!(
        out.unwrap_err().rejection().map(|r| r.reason()),
        Some(RejectReason::BulkheadFull)
    );
    // The max wait is what is checked: exact below, and above only "it did not hang" (LATE).
    LATE.assert_elapsed(waited, 3 * MS, "gave up after max_wait");
    assert_eq!((short.held(), short.hook().waiting()), (0, 0));
}

async fn lifo_serves_the_newest() {
    let b = bulkhead(8, PATIENT, WaitOrder::Lifo);
    let served = resilix_testkit::served_order(&AsyncIoTimer::new(), &b).await;
    assert_eq!(served, ['h', 'c', 'b', 'a']);
}

/// The limiter's queue zone on real timers (shared with tokio and embassy). Its last step
/// waits the max wait out; the first ones must be woken before it ends, so it is a second.
async fn limiter_queue_zone() {
    let (config, wait) = resilix_testkit::queue_zone_limiter(Duration::from_secs(1));
    let l = Limiter::with_hook(config, SlotWaiters::<8>::new(wait)).unwrap();
    resilix_testkit::limiter_queue_zone(&AsyncIoTimer::new(), &l, LATE).await;
}

/// A woken waiter refused by the breaker passes its wake-up on (shared with tokio and
/// embassy).
async fn wake_up_passed_on() {
    let b = bulkhead(4, PATIENT, WaitOrder::Fifo);
    resilix_testkit::wake_up_passed_on(&AsyncIoTimer::new(), &b, UNIT, LATE).await;
}

const UNIT: Duration = Duration::from_millis(4);
/// A max wait no waiter should reach: the scenarios order their calls by signals, and a
/// waiter that gives up early would be a stall of five seconds.
const PATIENT: Duration = Duration::from_secs(5);
// Real timers on a machine four times oversubscribed can run a thread hundreds of
// milliseconds late; the upper bounds only say nothing hung or waited for the wrong thing
// (lower bounds are exact, and tokio and embassy check the upper ones exactly).
const LATE: resilix_testkit::Tolerance = resilix_testkit::Tolerance::real(Duration::from_secs(1));

#[test]
fn under_smol() {
    smol::block_on(waits_then_gives_up());
    smol::block_on(lifo_serves_the_newest());
    smol::block_on(limiter_queue_zone());
    smol::block_on(wake_up_passed_on());
}

#[test]
fn under_async_std() {
    // Boxed: async-std's `block_on` keeps the future on the test thread's stack, which the
    // scenarios' futures (several calls joined, in a debug build) overflow.
    async_std::task::block_on(Box::pin(waits_then_gives_up()));
    async_std::task::block_on(Box::pin(lifo_serves_the_newest()));
    async_std::task::block_on(Box::pin(limiter_queue_zone()));
    async_std::task::block_on(Box::pin(wake_up_passed_on()));
}
