//! Cancellation: a call dropped during an attempt, and during a retry sleep.

use core::time::Duration;
use std::sync::atomic::{AtomicBool, Ordering};

use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::execute::{Timer, execute};
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;

use super::{CLASSIFIER, Counting, Counts, DropFlag, FixedRetry, Log, cancel_at, latency};

/// Cancellation during an attempt: dropping the call mid-attempt gives the permit back, records
/// no outcome (no settle, no event), and drops the operation's future.
pub async fn cancel_during_attempt<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let gate = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 10 * unit,
        })
        .bulkhead(&gate);
    let mut rng = SeededRandom::new(3);
    let log = Log::default();
    let dropped = AtomicBool::new(false);
    let call = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || {
            let flag = DropFlag(&dropped);
            async move {
                let _flag = flag;
                latency(timer, 20 * unit).await;
                Err::<(), ()>(())
            }
        },
    );
    let out = cancel_at(timer, call, timer.now() + 5 * unit).await;
    assert!(out.is_none(), "cancelled before the attempt finished");
    assert_eq!(
        gate.counts(),
        Counts {
            admitted: 1,
            settled: 0,
            cancelled: 1,
            held: 0
        }
    );
    assert!(dropped.load(Ordering::SeqCst));
    assert!(
        log.events().is_empty(),
        "a cancelled attempt reports nothing"
    );
}

/// Cancellation during the retry sleep: the failed attempt was settled (once), nothing is held,
/// and no further attempt is made.
pub async fn cancel_during_retry_sleep<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let gate = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 20 * unit,
        })
        .bulkhead(&gate);
    let mut rng = SeededRandom::new(4);
    let log = Log::default();
    let call = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || async {
            latency(timer, 2 * unit).await;
            Err::<(), ()>(())
        },
    );
    let out = cancel_at(timer, call, timer.now() + 10 * unit).await;
    assert!(out.is_none());
    assert_eq!(
        gate.counts(),
        Counts {
            admitted: 1,
            settled: 1,
            cancelled: 0,
            held: 0
        }
    );
    let events = log.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(
        events[0],
        Event::Executed {
            verdict: Verdict::Transient,
            ..
        }
    ));
    assert!(matches!(
        events[1],
        Event::RetryScheduled { attempt: 2, .. }
    ));
}
