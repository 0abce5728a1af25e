//! Retry timing, jitter, deadlines and budgets.

use core::time::Duration;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use resilix::call::CallOptions;
use resilix::execute::{Attempted, ExecuteError, Timer, execute};
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig, Strategy};
use resilix::time::Deadline;
use resilix::{Verdict, VerdictKind};

use super::{CLASSIFIER, DropFlag, FixedRetry, Log, Tolerance, latency};

fn retry_delays(events: &[Event]) -> Vec<Duration> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RetryScheduled { delay, .. } => Some(*delay),
            _ => None,
        })
        .collect()
}

/// Retry timing: two failures then a success; each retry waits exactly the policy's delay, and
/// the whole call takes the sum of latencies and delays.
pub async fn retry_timing<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration, tol: Tolerance) {
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 3,
        delay: 10 * unit,
    });
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let calls = AtomicU32::new(0);
    let start = timer.now();
    let out = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                latency(timer, 2 * unit).await;
                if n == 3 { Ok(n) } else { Err("reset") }
            }
        },
    )
    .await;
    assert_eq!(out, Ok(Ok(3)));
    tol.assert_elapsed(timer.now() - start, 26 * unit, "2 + 10 + 2 + 10 + 2 units");
    let delays = retry_delays(&log.events());
    assert_eq!(delays, [10 * unit, 10 * unit], "each retry waits the delay");
    let executed = log
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Executed { .. }))
        .count();
    assert_eq!(executed, 3);
}

/// Deadline respected: an attempt slower than the call's deadline is cut off at the deadline
/// (its future dropped), and no retry starts after it, even for an idempotent call.
pub async fn deadline_respected<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration, tol: Tolerance) {
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 5,
        delay: unit,
    });
    for idempotent in [false, true] {
        let mut rng = SeededRandom::new(2);
        let dropped = AtomicBool::new(false);
        let start = timer.now();
        let options = CallOptions::default()
            .deadline(Deadline::after(start, 10 * unit))
            .idempotent(idempotent);
        let out = execute(
            &pipeline,
            timer,
            &mut rng,
            &(),
            options,
            &CLASSIFIER,
            || {
                let flag = DropFlag(&dropped);
                // Never finishes: however late the call is polled, the attempt cannot win
                // against the deadline.
                async move {
                    let _flag = flag;
                    core::future::pending::<()>().await;
                    Ok::<(), ()>(())
                }
            },
        )
        .await;
        let err = out.unwrap_err();
        let expected_reason = if idempotent {
            GiveUpReason::DeadlineWouldPass
        } else {
            GiveUpReason::NotRetryable(VerdictKind::Timeout)
        };
        assert_eq!(
            err,
            ExecuteError::GaveUp {
                reason: expected_reason,
                attempts: 1,
                last: Attempted::TimedOut
            }
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the slow attempt was dropped"
        );
        // Exact below (a timer never fires early); above, exact on virtual time, and on real
        // time a bound that says the cut-off did not wait for anything else.
        tol.assert_elapsed(timer.now() - start, 10 * unit, "cut off at the deadline");
    }
}

/// Jittered retry timing, with the real retry policy (full jitter): every delay lies under the
/// exponential ceiling of its attempt, the call takes exactly the latencies plus the delays it
/// reported, and the same seed draws the same delays.
pub async fn jittered_retry_timing<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration, tol: Tolerance) {
    let backoff = Backoff::new(Strategy::FullJitter, 5 * unit, 40 * unit).expect("valid backoff");
    let retry = Retry::unbudgeted(RetryConfig::new(4, backoff).expect("valid retry config"));
    let pipeline = Pipeline::new().retry(&retry);
    let mut delays_of_runs = Vec::new();
    for _ in 0..2 {
        let mut rng = SeededRandom::new(77);
        let log = Log::default();
        let start = timer.now();
        let out = execute(
            &pipeline,
            timer,
            &mut rng,
            &log,
            CallOptions::default(),
            &CLASSIFIER,
            || async {
                latency(timer, unit).await;
                Err::<(), _>("reset")
            },
        )
        .await;
        assert_eq!(
            out.unwrap_err(),
            ExecuteError::GaveUp {
                reason: GiveUpReason::AttemptsExhausted { attempts: 4 },
                attempts: 4,
                last: Attempted::Output(Err("reset"))
            }
        );
        let delays = retry_delays(&log.events());
        assert_eq!(delays.len(), 3);
        for (i, d) in delays.iter().enumerate() {
            let ceiling = backoff.ceiling(i as u32 + 1);
            assert!(*d <= ceiling, "retry {} waited {d:?} > {ceiling:?}", i + 1);
        }
        let total: Duration = delays.iter().sum::<Duration>() + 4 * unit;
        tol.assert_elapsed(timer.now() - start, total, "latencies + reported delays");
        delays_of_runs.push(delays);
    }
    assert_eq!(
        delays_of_runs[0], delays_of_runs[1],
        "same seed, same jitter"
    );
    assert!(
        delays_of_runs[0].windows(2).any(|w| w[0] != w[1]),
        "jitter varies the delays: {:?}",
        delays_of_runs[0]
    );
}

/// Budget refusal, with the real retry policy and gRPC A6's token bucket (10 tokens, retries
/// while the balance stays above 5): an upstream that always fails gets exactly 4 retries,
/// then "would have retried, but the budget said no" — a reason of its own, never collapsed
/// into "attempts exhausted" — and the next call's first attempt still goes out.
pub async fn budget_refusal<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let budget = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).expect("valid budget");
    let backoff = Backoff::new(Strategy::Exponential, unit, unit).expect("valid backoff");
    let retry = Retry::new(RetryConfig::new(10, backoff).expect("valid"), &budget);
    let pipeline = Pipeline::new().retry(&retry);
    let mut rng = SeededRandom::new(8);
    let log = Log::default();
    let calls = AtomicU32::new(0);
    let failing = || {
        calls.fetch_add(1, Ordering::SeqCst);
        async {
            latency(timer, unit).await;
            Err::<(), _>("unavailable")
        }
    };
    let first = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        failing,
    )
    .await
    .unwrap_err();
    assert_eq!(
        first,
        ExecuteError::GaveUp {
            reason: GiveUpReason::BudgetExceeded,
            attempts: 5,
            last: Attempted::Output(Err("unavailable"))
        }
    );
    assert!(log.events().contains(&Event::RetryRefused {
        reason: GiveUpReason::BudgetExceeded,
        after: Verdict::Transient
    }));
    // The budget governs retries only: the next call is sent, and not retried.
    let second = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        failing,
    )
    .await
    .unwrap_err();
    assert_eq!(second.attempts(), 1);
    assert!(matches!(
        second,
        ExecuteError::GaveUp {
            reason: GiveUpReason::BudgetExceeded,
            ..
        }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 6);
}
