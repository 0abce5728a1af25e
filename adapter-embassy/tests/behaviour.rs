//! The shared behavioural suite on embassy-time's mock driver, run on simulated time by
//! `common::run`: timers fire exactly at their (whole-tick) deadlines, so the timings are
//! checked exactly.

mod common;

use core::time::Duration;

use common::run;
use resilix_embassy::{EmbassyTimer, LastKnownGood};
use resilix_testkit as kit;
use resilix_testkit::Tolerance;

const UNIT: Duration = Duration::from_millis(2);

#[test]
fn retry_timing() {
    run(kit::retry_timing(&EmbassyTimer, UNIT, Tolerance::EXACT));
}

#[test]
fn jittered_retry_timing() {
    // Jittered delays have sub-microsecond parts and a timer rounds up to the next 1 µs tick
    // (never early): each of the three sleeps may end up to one tick after the instant asked.
    let ticks = Tolerance::real(Duration::from_micros(3));
    run(kit::jittered_retry_timing(&EmbassyTimer, UNIT, ticks));
}

#[test]
fn budget_refusal() {
    run(kit::budget_refusal(&EmbassyTimer, UNIT));
}

#[test]
fn deadline_respected() {
    run(kit::deadline_respected(
        &EmbassyTimer,
        UNIT,
        Tolerance::EXACT,
    ));
}

#[test]
fn breaker_open_half_open() {
    run(kit::breaker_open_half_open(
        &EmbassyTimer,
        UNIT,
        Tolerance::EXACT,
    ));
}

#[test]
fn cancel_during_attempt() {
    run(kit::cancel_during_attempt(&EmbassyTimer, UNIT));
}

#[test]
fn cancel_during_retry_sleep() {
    run(kit::cancel_during_retry_sleep(&EmbassyTimer, UNIT));
}

#[test]
fn fallback() {
    static LAST: LastKnownGood<Result<u32, &'static str>> = LastKnownGood::new();
    run(kit::fallback(&EmbassyTimer, &LAST));
}

/// embassy-time's clock is global already (ticks since boot, one driver per program): any two
/// `EmbassyTimer`s read one timeline.
#[test]
fn handles_share_one_timeline() {
    run(kit::handles_share_one_timeline(
        || EmbassyTimer,
        UNIT,
        Tolerance::EXACT,
    ));
}

/// The executor's cap: a future nothing will ever wake fails the test instead of hanging it
/// (a short cap here; `run`'s is the same code with 10 s).
#[test]
#[should_panic(expected = "still pending after 50 ms of simulated time")]
fn a_future_never_woken_fails_fast() {
    common::run_within(
        embassy_time::Duration::from_millis(50),
        core::future::pending::<()>(),
    );
}

/// The executor wakes a timer at its deadline, not a tick later, and sees no time pass while
/// nothing sleeps.
#[test]
fn a_timer_fires_on_its_tick() {
    let (start, woke) = run(async {
        let start = embassy_time::Instant::now();
        embassy_time::Timer::after_micros(1_234).await;
        (start, embassy_time::Instant::now())
    });
    assert_eq!((start.as_ticks(), woke.as_ticks()), (0, 1_234));
}
