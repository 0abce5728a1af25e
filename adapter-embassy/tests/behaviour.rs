//! The shared behavioural suite on embassy-time's host (`std`) driver with a generic timer
//! queue, run by `embassy_futures::block_on`. Real time: sleeps are a few milliseconds.

use core::time::Duration;

use embassy_futures::block_on;
use resilix_embassy::{EmbassyTimer, LastKnownGood};
use resilix_testkit as kit;
use resilix_testkit::Tolerance;

const UNIT: Duration = Duration::from_millis(2);
const LATE: Tolerance = Tolerance::real(Duration::from_millis(150));

#[test]
fn retry_timing() {
    block_on(kit::retry_timing(&EmbassyTimer, UNIT, LATE));
}

#[test]
fn jittered_retry_timing() {
    block_on(kit::jittered_retry_timing(&EmbassyTimer, UNIT, LATE));
}

#[test]
fn budget_refusal() {
    block_on(kit::budget_refusal(&EmbassyTimer, UNIT));
}

#[test]
fn deadline_respected() {
    block_on(kit::deadline_respected(&EmbassyTimer, UNIT, LATE));
}

#[test]
fn breaker_open_half_open() {
    block_on(kit::breaker_open_half_open(&EmbassyTimer, UNIT, LATE));
}

#[test]
fn cancel_during_attempt() {
    block_on(kit::cancel_during_attempt(&EmbassyTimer, UNIT));
}

#[test]
fn cancel_during_retry_sleep() {
    block_on(kit::cancel_during_retry_sleep(&EmbassyTimer, UNIT));
}

#[test]
fn fallback() {
    static LAST: LastKnownGood<Result<u32, &'static str>> = LastKnownGood::new();
    block_on(kit::fallback(&EmbassyTimer, &LAST));
}

/// embassy-time's clock is global already (ticks since boot, one driver per program): any two
/// `EmbassyTimer`s read one timeline.
#[test]
fn handles_share_one_timeline() {
    block_on(kit::handles_share_one_timeline(|| EmbassyTimer, UNIT, LATE));
}
