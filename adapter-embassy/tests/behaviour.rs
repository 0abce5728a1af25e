//! The shared behavioural suite on embassy-time's host (`std`) driver with a generic timer
//! queue, run by `embassy_futures::block_on`. Real time: sleeps are a few milliseconds.

use core::time::Duration;

use embassy_futures::block_on;
use resilix::call::CallOptions;
use resilix::observe::Degradation;
use resilix::random::SeededRandom;
use resilix_embassy::{EmbassyTimer, Fallback, LastKnownGood, Resilience};
use resilix_testkit as kit;
use resilix_testkit::{FallbackSubject, GatePipeline, Log, Tolerance};

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

struct Subject(&'static LastKnownGood<Result<u32, &'static str>>);

impl FallbackSubject for Subject {
    async fn serve<'a>(
        &'a self,
        pipeline: &'a GatePipeline<'a>,
        log: &'a Log,
        result: Result<u32, &'static str>,
        default: u32,
    ) -> (u32, Option<Degradation>) {
        {
            let resilience = Resilience::new(pipeline).observer(log);
            let mut rng = SeededRandom::new(5);
            let served = resilience
                .execute_or(
                    &mut rng,
                    CallOptions::default(),
                    Fallback::LastKnownGoodOr(self.0, Ok(default)),
                    || async move { result },
                )
                .await
                .expect("a default is always there");
            let cause = served.degradation();
            (served.into_inner().expect("fallbacks are successes"), cause)
        }
    }
}

#[test]
fn fallback() {
    static LAST: LastKnownGood<Result<u32, &'static str>> = LastKnownGood::new();
    block_on(kit::fallback(&Subject(&LAST)));
}
