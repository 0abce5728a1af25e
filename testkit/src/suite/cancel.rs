//! Cancellation: a call dropped during an attempt, and during a retry sleep. Each call is
//! dropped once an observed state says where it is (its operation started; the log shows the
//! retry scheduled), never by a timer racing the call's own.

use core::time::Duration;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::execute::{Timer, execute};
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;

use super::{CLASSIFIER, Counting, Counts, DropFlag, FixedRetry, Log, latency};
use crate::signal::{Signal, cancel_when};

/// Cancellation during an attempt: dropping the call mid-attempt gives the permit back, records
/// no outcome (no settle, no event), and drops the operation's future. The operation never
/// finishes on its own; the call is dropped once it started.
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
    let started = Signal::new();
    let call = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || {
            let flag = DropFlag(&dropped);
            let started = &started;
            async move {
                let _flag = flag;
                started.fire();
                core::future::pending::<()>().await;
                Err::<(), ()>(())
            }
        },
    );
    let out = cancel_when(call, || started.is_fired()).await;
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
/// and no further attempt is made. The call is dropped once the retry was scheduled, and the
/// delay is long: a late look at the log cannot find the second attempt already made.
pub async fn cancel_during_retry_sleep<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let gate = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 1000 * unit,
        })
        .bulkhead(&gate);
    let mut rng = SeededRandom::new(4);
    let log = Log::default();
    let attempts = AtomicU32::new(0);
    let call = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || {
            attempts.fetch_add(1, Ordering::SeqCst);
            async {
                latency(timer, 2 * unit).await;
                Err::<(), ()>(())
            }
        },
    );
    let scheduled = || {
        log.events()
            .iter()
            .any(|e| matches!(e, Event::RetryScheduled { .. }))
    };
    let out = cancel_when(call, scheduled).await;
    assert!(out.is_none());
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "no second attempt");
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
