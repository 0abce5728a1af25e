//! A woken waiter that does not use its wake-up passes it on (issue 13, point 6).
//!
//! Bounded waiting has no hand-off: a release wakes one waiter, which then goes through the
//! whole pipeline. When a policy ahead of the bulkhead (the breaker here) refuses it, the slot
//! stays free, and the wake-up must go to the next waiter; otherwise the next waiter sits
//! behind a free slot until its `max_wait` refuses it with `bulkhead-full`, and every caller
//! arriving meanwhile queues behind it.

use std::time::Duration;

use resilix::RejectReason;
use resilix::breaker::{Breaker, Config};
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::execute::ExecuteError;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix_tokio::{Resilience, SlotWaiters};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

/// What a call ended with, and when (from the start of the test).
#[derive(Debug, PartialEq, Eq)]
enum End {
    Done(Duration),
    Refused(RejectReason, Duration),
}

fn end(out: Result<Result<(), ()>, ExecuteError<Result<(), ()>>>, start: Instant) -> End {
    let at = start.elapsed();
    match out {
        Ok(Ok(())) => End::Done(at),
        Err(ExecuteError::Refused { rejection, .. }) => End::Refused(rejection.reason(), at),
        other => panic!("unexpected end {other:?} at {at:?}"),
    }
}

async fn work(took: Duration) -> Result<(), ()> {
    sleep(took).await;
    Ok(())
}

/// The reproduction, on paused time. Bulkhead of 1, waiting up to 1 s. A holds the
/// slot 0–100 ms; B (1 ms) and C (2 ms) queue; the breaker is forced open at 50 ms; A's
/// release at 100 ms wakes B, which the breaker refuses; the breaker is reset at 101 ms; D
/// arrives at 150 ms. Before the fix C stayed queued behind the free slot until 1.002 s
/// (`bulkhead-full`), and D queued behind C until 1.15 s (`bulkhead-full`). Now B's unused
/// wake-up goes to C at once (refused by the still-open breaker, as it should be), and D,
/// finding the slot free and nobody queued, is admitted on arrival.
#[tokio::test(start_paused = true)]
async fn a_waiter_refused_by_the_breaker_passes_its_wake_up_to_the_next() {
    let wait = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
    let bulkhead: Bulkhead<SlotWaiters<8>> =
        Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::new(wait));
    let breaker = Breaker::new(Config::DEFAULT).unwrap();
    let pipeline = Pipeline::new().breaker(&breaker).bulkhead(&bulkhead);
    let r = Resilience::new(&pipeline).seed(1);
    let call = |took| r.execute_waiting(&bulkhead, CallOptions::default(), move || work(took));
    let start = Instant::now();
    let (a, b, c, d, ()) = tokio::join!(
        async { end(call(100 * MS).await, start) },
        async {
            sleep(MS).await;
            end(call(10 * MS).await, start)
        },
        async {
            sleep(2 * MS).await;
            end(call(10 * MS).await, start)
        },
        async {
            sleep(150 * MS).await;
            end(call(10 * MS).await, start)
        },
        async {
            let mut rng = SeededRandom::new(2);
            sleep(50 * MS).await;
            assert_eq!(bulkhead.hook().waiting(), 2, "B and C queued behind A");
            // The breaker's decision does not depend on the instant here.
            breaker.force_open(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
            sleep(51 * MS).await;
            breaker.reset(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
            assert_eq!(
                (bulkhead.available(), bulkhead.hook().waiting()),
                (1, 0),
                "at 101 ms the slot is free and nobody waits behind it"
            );
        },
    );
    assert_eq!(a, End::Done(100 * MS));
    assert_eq!(b, End::Refused(RejectReason::CircuitOpen, 100 * MS));
    assert_eq!(
        c,
        End::Refused(RejectReason::CircuitOpen, 100 * MS),
        "C got B's wake-up at once (base: bulkhead-full at 1.002 s)"
    );
    assert_eq!(
        d,
        End::Done(160 * MS),
        "D found the slot free and went at once (base: bulkhead-full at 1.15 s)"
    );
    assert_eq!(
        (bulkhead.held(), bulkhead.hook().waiting()),
        (0, 0),
        "nothing left behind"
    );
}

/// Two slots, two unused wake-ups: two holders release at 100 ms and wake B and C; the
/// breaker, opened at 50 ms, refuses both, and each passes its wake-up on, to D and to E
/// (refused too, the breaker is still open); F, arriving at 150 ms after the reset, goes at
/// once. Each wake-up claims one slot: nobody is left behind a free one, and no waiter is
/// woken for a slot another woken waiter is about to take.
#[tokio::test(start_paused = true)]
async fn two_slots_two_unused_wake_ups_both_passed_on() {
    let wait = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
    let bulkhead: Bulkhead<SlotWaiters<8>> =
        Bulkhead::with_hook(BulkheadConfig::new(2).unwrap(), SlotWaiters::new(wait));
    let breaker = Breaker::new(Config::DEFAULT).unwrap();
    let pipeline = Pipeline::new().breaker(&breaker).bulkhead(&bulkhead);
    let r = Resilience::new(&pipeline).seed(1);
    let call = |took| r.execute_waiting(&bulkhead, CallOptions::default(), move || work(took));
    let start = Instant::now();
    let at = |ms: u32| async move {
        sleep(ms * MS).await;
    };
    let (h1, h2, b, c, d, e, f, ()) = tokio::join!(
        async { end(call(100 * MS).await, start) },
        async { end(call(100 * MS).await, start) },
        async {
            at(1).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(2).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(3).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(4).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(150).await;
            end(call(10 * MS).await, start)
        },
        async {
            let mut rng = SeededRandom::new(2);
            at(50).await;
            assert_eq!(bulkhead.hook().waiting(), 4);
            breaker.force_open(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
            at(51).await;
            breaker.reset(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
        },
    );
    assert_eq!((h1, h2), (End::Done(100 * MS), End::Done(100 * MS)));
    for (name, waiter) in [("B", b), ("C", c), ("D", d), ("E", e)] {
        assert_eq!(
            waiter,
            End::Refused(RejectReason::CircuitOpen, 100 * MS),
            "{name}: woken at 100 ms, by a release or a passed-on wake-up"
        );
    }
    assert_eq!(f, End::Done(160 * MS));
    assert_eq!((bulkhead.held(), bulkhead.hook().waiting()), (0, 0));
}
