//! resilix on embassy, under QEMU (Cortex-M4F, mps2-an386), with real timers.
//!
//! A simulated I2C sensor fails, answers slowly or hangs on a script; `resilix::execute`
//! retries it through a pipeline (breaker, bulkhead, attempt timeout) and sleeps on
//! embassy-time timers driven by SysTick. The program asserts the outcomes, the attempts and
//! the elapsed time on the embassy clock. Meanwhile the SysTick interrupt itself admits and
//! settles calls through the same bulkhead and breaker, preempting the task mid-call: the
//! policies are callable from interrupt context and take no lock an interrupt could spin on.
#![no_std]
#![no_main]

mod driver;
mod retry;

use core::future::Future;
use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;

use cortex_m_semihosting::{debug, hprintln};
use embassy_executor::Spawner;
use resilix::Verdict;
use resilix::breaker::{Breaker, CircuitState, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::classify::ResultClassifier;
use resilix::execute::{Attempted, ExecuteError, Timer, execute};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::GiveUpReason;
use resilix::time::{Clock, Instant};
use resilix_embassy::{EmbassyClock, to_embassy};

use crate::retry::FixedBackoff;

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("PANIC: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}

pub(crate) static BULKHEAD: Bulkhead = Bulkhead::new(match BulkheadConfig::new(2) {
    Ok(c) => c,
    Err(_) => panic!(),
});
pub(crate) static BREAKER: Breaker = match Breaker::new(BreakerConfig {
    minimum_calls: 10,
    open_jitter_percent: 0,
    ..BreakerConfig::DEFAULT
}) {
    Ok(b) => b,
    Err(_) => panic!(),
};
/// Calls the SysTick handler made through the bulkhead, those the breaker also admitted, and
/// the most slots it ever saw held at once.
pub(crate) static ISR_CALLS: AtomicU32 = AtomicU32::new(0);
pub(crate) static ISR_BREAKER_CALLS: AtomicU32 = AtomicU32::new(0);
pub(crate) static ISR_MAX_HELD: AtomicU32 = AtomicU32::new(0);

/// resilix's `Timer` on embassy-time. (`resilix-embassy` provides the clock and the
/// conversions; its own `Timer` was not in main when this was written.)
struct EmbassyTimer;

impl Timer for EmbassyTimer {
    type Sleep<'a> = embassy_time::Timer;
    fn now(&self) -> Instant {
        EmbassyClock.now()
    }
    fn sleep_until(&self, at: Instant) -> embassy_time::Timer {
        embassy_time::Timer::at(to_embassy(at))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum I2cError {
    Nack,
}

/// A sensor read that takes `took` and then answers `result`, or never answers.
async fn read_sensor(
    took: Duration,
    result: Option<Result<u16, I2cError>>,
) -> Result<u16, I2cError> {
    embassy_time::Timer::after(embassy_time::Duration::from_micros(took.as_micros() as u64)).await;
    match result {
        Some(r) => r,
        None => core::future::pending().await,
    }
}

struct Outcome<T> {
    result: T,
    elapsed_ms: u64,
}

async fn timed<F: Future>(f: F) -> Outcome<F::Output> {
    let start = embassy_time::Instant::now();
    let result = f.await;
    Outcome {
        result,
        elapsed_ms: start.elapsed().as_millis(),
    }
}

fn check(ok: bool, what: &str, failures: &mut u32) {
    if ok {
        hprintln!("check {} ... ok", what);
    } else {
        *failures += 1;
        hprintln!("check {} ... FAILED", what);
    }
}

#[embassy_executor::main]
async fn main(_spawner: Spawner) {
    driver::start(cortex_m::Peripherals::take().unwrap());
    let mut failures = 0;
    let timer = EmbassyTimer;
    let classifier = ResultClassifier::new();
    let mut rng = SeededRandom::new(0xE3BA_5500);
    let pipeline = Pipeline::new()
        .retry(FixedBackoff {
            attempts: 4,
            delay: Duration::from_millis(20),
        })
        .breaker(&BREAKER)
        .bulkhead(&BULKHEAD)
        .attempt_timeout(Duration::from_millis(10));

    // 1. Two NACKs, then a reading: 3 ms + 20 + 3 ms + 20 + 3 ms = 49 ms.
    let mut script = [Err(I2cError::Nack), Err(I2cError::Nack), Ok(0x2A5)].into_iter();
    let mut reads = 0;
    let out = timed(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || {
            reads += 1;
            read_sensor(Duration::from_millis(3), script.next())
        },
    ))
    .await;
    hprintln!(
        "flaky read: {:?} after {} reads in {} ms",
        out.result,
        reads,
        out.elapsed_ms
    );
    check(
        out.result == Ok(Ok(0x2A5)) && reads == 3,
        "flaky_read_succeeds_on_third_attempt",
        &mut failures,
    );
    check(
        (49..=51).contains(&out.elapsed_ms),
        "flaky_read_takes_49ms",
        &mut failures,
    );

    // 2. The sensor hangs: each attempt is cut at its 10 ms deadline and the hung future is
    // dropped; idempotent, so timeouts are retried: 4 × 10 ms + 3 × 20 ms = 100 ms.
    let mut reads = 0;
    let out = timed(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default().idempotent(true),
        &classifier,
        || {
            reads += 1;
            read_sensor(Duration::from_millis(1), None)
        },
    ))
    .await;
    hprintln!("hung read: {} reads in {} ms", reads, out.elapsed_ms);
    check(
        matches!(
            out.result,
            Err(ExecuteError::GaveUp {
                reason: GiveUpReason::AttemptsExhausted { attempts: 4 },
                attempts: 4,
                last: Attempted::TimedOut
            })
        ),
        "hung_read_times_out_four_times",
        &mut failures,
    );
    check(
        (100..=103).contains(&out.elapsed_ms),
        "hung_read_takes_100ms",
        &mut failures,
    );
    check(
        BULKHEAD.held() == 0,
        "timed_out_attempts_gave_their_slots_back",
        &mut failures,
    );

    // 3. Not idempotent: a timeout is final after one attempt.
    let mut reads = 0;
    let out = timed(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || {
            reads += 1;
            read_sensor(Duration::from_millis(1), None)
        },
    ))
    .await;
    check(
        matches!(
            out.result,
            Err(ExecuteError::GaveUp {
                reason: GiveUpReason::NotRetryable(_),
                attempts: 1,
                ..
            })
        ) && (10..=11).contains(&out.elapsed_ms),
        "non_idempotent_timeout_not_retried",
        &mut failures,
    );

    // 4. The outcomes so far (2 NACKs, 5 timeouts, 1 success) are in the breaker's window;
    // a dead sensor's 2nd NACK is the 10th call (the minimum) and opens it: the retry that
    // follows is refused at once with circuit-open and the instant of the first probe.
    let mut reads = 0;
    let out = timed(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || {
            reads += 1;
            read_sensor(Duration::from_millis(2), Some(Err(I2cError::Nack)))
        },
    ))
    .await;
    hprintln!(
        "dead sensor: {} reads, breaker {:?}, {} ms",
        reads,
        BREAKER.state(),
        out.elapsed_ms
    );
    let refused = out.result.as_ref().err().and_then(|e| e.rejection());
    check(
        reads == 2
            && BREAKER.state() == CircuitState::Open
            && refused.is_some_and(|r| r.reason() == resilix::RejectReason::CircuitOpen),
        "dead_sensor_opens_the_breaker",
        &mut failures,
    );

    // 5. After the open wait (5 s, no jitter here), a probe succeeds and closes it.
    let retry_at = refused.and_then(|r| r.retry_at()).unwrap_or(Instant::MAX);
    EmbassyTimer.sleep_until(retry_at).await;
    let out = timed(execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        || read_sensor(Duration::from_millis(2), Some(Ok(7))),
    ))
    .await;
    check(
        out.result == Ok(Ok(7)) && BREAKER.state() == CircuitState::Closed,
        "probe_after_open_wait_closes",
        &mut failures,
    );

    let (isr, isr_breaker) = (
        ISR_CALLS.load(Ordering::Relaxed),
        ISR_BREAKER_CALLS.load(Ordering::Relaxed),
    );
    hprintln!(
        "interrupt-context calls: {} through the bulkhead, {} also through the breaker (max held seen {})",
        isr,
        isr_breaker,
        ISR_MAX_HELD.load(Ordering::Relaxed)
    );
    // ~5.3 s at one call per 10 ms; the breaker refuses the interrupt too while open.
    check(
        isr > 400 && isr_breaker > 10,
        "systick_isr_admits_and_settles",
        &mut failures,
    );
    check(
        ISR_MAX_HELD.load(Ordering::Relaxed) <= 2,
        "bulkhead_cap_holds_across_interrupts",
        &mut failures,
    );

    hprintln!("{} failed", failures);
    debug::exit(if failures == 0 {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
}

/// Called from the SysTick handler every 10 ms: one call through the shared policies, from
/// interrupt context, while the task may be inside `admit` or `settle` of the same bulkhead
/// and breaker. Its breaker permit is cancelled or settled as `Rejected` (neither is
/// counted), so the task's outcomes alone decide the breaker's state, which the checks
/// assert; the admit, settle and drop paths still run in the interrupt.
pub(crate) fn interrupt_call(now: Instant) {
    let n = ISR_CALLS.fetch_add(1, Ordering::Relaxed);
    let mut rng = SeededRandom::new(u64::from(n));
    let mut env = Env::new(now, &mut rng);
    let Ok(bulkhead) = BULKHEAD.admit(&mut env) else {
        return;
    };
    ISR_MAX_HELD.fetch_max(BULKHEAD.held(), Ordering::Relaxed);
    if let Ok(breaker) = BREAKER.admit(&mut env) {
        if n % 2 == 0 {
            breaker.settle(
                &Verdict::Rejected(resilix::RejectReason::BulkheadFull),
                &mut env,
            );
        } else {
            drop(breaker);
        }
        ISR_BREAKER_CALLS.fetch_add(1, Ordering::Relaxed);
    }
    bulkhead.settle(&Verdict::Success, &mut env);
}
