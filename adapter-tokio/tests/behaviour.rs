//! The shared behavioural suite on tokio with paused time: every instant is exact.

use std::time::Duration;

use resilix_testkit as kit;
use resilix_testkit::Tolerance;
use resilix_tokio::{LastKnownGood, TokioTimer};

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

#[tokio::test(start_paused = true)]
async fn fallback() {
    kit::fallback(&TokioTimer::new(), &LastKnownGood::new()).await;
}

#[tokio::test(start_paused = true)]
async fn handles_share_one_timeline() {
    kit::handles_share_one_timeline(TokioTimer::new, UNIT, Tolerance::EXACT).await;
}
