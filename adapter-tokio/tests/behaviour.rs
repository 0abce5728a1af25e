//! The shared behavioural suite on tokio with paused time: every instant is exact.

use std::time::Duration;

use resilix::call::CallOptions;
use resilix::observe::Degradation;
use resilix_testkit as kit;
use resilix_testkit::{FallbackSubject, GatePipeline, Log, Tolerance};
use resilix_tokio::{Fallback, LastKnownGood, Resilience, TokioTimer};

const UNIT: Duration = Duration::from_millis(10);

#[tokio::test(start_paused = true)]
async fn retry_timing() {
    kit::retry_timing(&TokioTimer::new(), UNIT, Tolerance::EXACT).await;
}

#[tokio::test(start_paused = true)]
async fn jittered_retry_timing() {
    // Jittered delays have sub-millisecond parts, and tokio's timer wheel fires on whole
    // milliseconds: each of the three sleeps may end up to 1 ms after the instant asked for.
    let wheel = Tolerance::real(Duration::from_millis(3));
    kit::jittered_retry_timing(&TokioTimer::new(), UNIT, wheel).await;
}

#[tokio::test(start_paused = true)]
async fn budget_refusal() {
    kit::budget_refusal(&TokioTimer::new(), UNIT).await;
}

#[tokio::test(start_paused = true)]
async fn deadline_respected() {
    kit::deadline_respected(&TokioTimer::new(), UNIT, Tolerance::EXACT).await;
}

#[tokio::test(start_paused = true)]
async fn breaker_open_half_open() {
    kit::breaker_open_half_open(&TokioTimer::new(), UNIT, Tolerance::EXACT).await;
}

#[tokio::test(start_paused = true)]
async fn cancel_during_attempt() {
    kit::cancel_during_attempt(&TokioTimer::new(), UNIT).await;
}

#[tokio::test(start_paused = true)]
async fn cancel_during_retry_sleep() {
    kit::cancel_during_retry_sleep(&TokioTimer::new(), UNIT).await;
}

struct Subject(LastKnownGood<Result<u32, &'static str>>);

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
            let served = resilience
                .execute_or(
                    CallOptions::default(),
                    Fallback::LastKnownGoodOr(&self.0, Ok(default)),
                    || async move { result },
                )
                .await
                .expect("a default is always there");
            let cause = served.degradation();
            (served.into_inner().expect("fallbacks are successes"), cause)
        }
    }
}

#[tokio::test(start_paused = true)]
async fn fallback() {
    kit::fallback(&Subject(LastKnownGood::new())).await;
}
