//! Bounded waiting for a bulkhead slot on embassy's mock driver, on simulated time (a `static`
//! bulkhead).

mod common;

use core::time::Duration;

use common::run;
use embassy_futures::join::join;
use resilix::RejectReason;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix_embassy::{Resilience, SlotWaiters};

static RADIO: Bulkhead<SlotWaiters<4>> = Bulkhead::with_hook(
    match BulkheadConfig::new(1) {
        Ok(c) => c,
        Err(_) => panic!("invalid"),
    },
    SlotWaiters::new(
        match WaitConfig::new(1, Duration::from_millis(20), WaitOrder::Fifo) {
            Ok(c) => c,
            Err(_) => panic!("invalid"),
        },
    ),
);

async fn work(ms: u64) -> Result<(), ()> {
    embassy_time::Timer::after_millis(ms).await;
    Ok(())
}

#[test]
fn a_waiter_gets_the_slot_and_a_long_wait_is_refused() {
    let pipeline = Pipeline::new().bulkhead(&RADIO);
    let r = Resilience::new(&pipeline);
    let (mut r1, mut r2, mut r3) = (
        SeededRandom::new(1),
        SeededRandom::new(2),
        SeededRandom::new(3),
    );
    run(async {
        let start = embassy_time::Instant::now();
        let (a, b) = join(
            r.call(CallOptions::default())
                .wait_on(&RADIO)
                .rng(&mut r1)
                .run(|| work(5)),
            r.call(CallOptions::default())
                .wait_on(&RADIO)
                .rng(&mut r2)
                .run(|| work(5)),
        )
        .await;
        assert_eq!((a, b), (Ok(()), Ok(())));
        // One at a time, the second right when the first hands the slot over.
        assert_eq!(start.elapsed(), embassy_time::Duration::from_millis(10));

        // The holder takes 60 ms; the waiter gives up after 20; a third finds the one place
        // taken.
        let start = embassy_time::Instant::now();
        let (holder, (waiter, third)) = join(
            async {
                let held = r
                    .call(CallOptions::default())
                    .wait_on(&RADIO)
                    .rng(&mut r1)
                    .run(|| work(60))
                    .await;
                (held, start.elapsed())
            },
            join(
                async {
                    let waited = r
                        .call(CallOptions::default())
                        .wait_on(&RADIO)
                        .rng(&mut r2)
                        .run(|| work(1))
                        .await;
                    (waited, start.elapsed())
                },
                async {
                    embassy_time::Timer::after_millis(2).await;
                    let refused = r
                        .call(CallOptions::default())
                        .wait_on(&RADIO)
                        .rng(&mut r3)
                        .run(|| work(1))
                        .await;
                    (refused, start.elapsed())
                },
            ),
        )
        .await;
        let ms = embassy_time::Duration::from_millis;
        assert_eq!(holder, (Ok(()), ms(60)));
        // The waiter is refused when its 20 ms are up; the third at once, 2 ms in.
        for ((refused, at), when) in [(waiter, ms(20)), (third, ms(2))] {
            assert_eq!(
                refused.unwrap_err().rejection().map(|r| r.reason()),
                Some(RejectReason::BulkheadFull)
            );
            assert_eq!(at, when);
        }
    });
    assert_eq!((RADIO.held(), RADIO.hook().waiting()), (0, 0));
}

/// The limiter's queue zone on simulated time (shared with tokio and async-std).
#[test]
fn the_shared_queue_zone_scenario() {
    const UNIT: Duration = Duration::from_millis(4);
    let (config, wait) = resilix_testkit::queue_zone_limiter(15 * UNIT);
    let limiter =
        resilix::limiter::Limiter::with_hook(config, SlotWaiters::<8>::new(wait)).unwrap();
    run(resilix_testkit::limiter_queue_zone(
        &resilix_embassy::EmbassyTimer,
        &limiter,
        resilix_testkit::Tolerance::EXACT,
    ));
}

/// A woken waiter refused by the breaker passes its wake-up on (shared with tokio and
/// async-std).
#[test]
fn a_wake_up_refused_elsewhere_is_passed_on() {
    const UNIT: Duration = Duration::from_millis(4);
    let wait = WaitConfig::new(4, 100 * UNIT, WaitOrder::Fifo).unwrap();
    let bulkhead: Bulkhead<SlotWaiters<4>> =
        Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::new(wait));
    run(resilix_testkit::wake_up_passed_on(
        &resilix_embassy::EmbassyTimer,
        &bulkhead,
        UNIT,
        resilix_testkit::Tolerance::EXACT,
    ));
}
