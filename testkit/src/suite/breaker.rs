//! The breaker: open, half-open, one probe at a time.

use core::time::Duration;
use std::sync::atomic::{AtomicU32, Ordering};

use resilix::RejectReason;
use resilix::breaker::{Breaker, CircuitState, Config as BreakerConfig};
use resilix::call::CallOptions;
use resilix::execute::{Timer, execute};
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;

use super::{CLASSIFIER, Log, Tolerance, latency};
use crate::signal::{Signal, cancel_when, join};

/// What a call's operation does.
#[derive(Clone, Copy)]
enum Op<'s> {
    /// Takes one unit, then fails (`true`) or succeeds.
    Unit(bool),
    /// Fires `started`, then succeeds once `release` is fired: an operation that is still
    /// running for as long as the scenario needs, however slow the machine.
    Held {
        started: &'s Signal,
        release: &'s Signal,
    },
}

fn transitions(events: &[Event]) -> Vec<(CircuitState, CircuitState)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CircuitTransition { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

/// Breaker open and half-open, with the real breaker: failures open it; an open circuit
/// refuses at once (the operation never runs) and says when it probes; at that instant one
/// probe goes through while a concurrent call is refused; a probe cancelled mid-flight frees
/// its slot (never stuck half-open); a successful probe closes it.
///
/// The probes are held open by signals: a cancelled probe is dropped once its operation has
/// started, and the concurrent call is made while the probe's operation waits for a signal
/// fired only after that call was refused.
pub async fn breaker_open_half_open<Tm: Timer + ?Sized>(
    timer: &Tm,
    unit: Duration,
    tol: Tolerance,
) {
    let breaker = Breaker::new(BreakerConfig {
        minimum_calls: 4,
        open_wait: 20 * unit,
        open_jitter_percent: 0,
        ..BreakerConfig::DEFAULT
    })
    .expect("valid breaker config");
    let pipeline = Pipeline::new().breaker(&breaker);
    let mut rng = SeededRandom::new(6);
    let log = Log::default();
    let ran = AtomicU32::new(0);
    // The probes' signals, made before the calls that borrow them.
    let (started, never) = (Signal::new(), Signal::new());
    let (probing, release) = (Signal::new(), Signal::new());
    let call = |op, rng: &mut SeededRandom| {
        let ran = &ran;
        let log = &log;
        let pipeline = &pipeline;
        let mut rng = rng.clone();
        async move {
            execute(
                pipeline,
                timer,
                &mut rng,
                log,
                CallOptions::default(),
                &CLASSIFIER,
                || async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    match op {
                        Op::Unit(fail) => {
                            latency(timer, unit).await;
                            if fail { Err("down") } else { Ok(()) }
                        }
                        Op::Held { started, release } => {
                            started.fire();
                            release.wait().await;
                            Ok(())
                        }
                    }
                },
            )
            .await
        }
    };

    for _ in 0..4 {
        assert!(call(Op::Unit(true), &mut rng).await.is_err());
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    let opened_at = log
        .events()
        .iter()
        .find_map(|e| match e {
            Event::CircuitTransition {
                to: CircuitState::Open,
                at,
                ..
            } => Some(*at),
            _ => None,
        })
        .expect("the opening was reported");

    // Open: refused at once, the operation never runs, and the refusal says when to probe.
    let refused = call(Op::Unit(false), &mut rng).await.unwrap_err();
    let rejection = refused.rejection().expect("refused");
    assert_eq!(rejection.reason(), RejectReason::CircuitOpen);
    assert_eq!(refused.attempts(), 0);
    assert_eq!(ran.load(Ordering::SeqCst), 4);
    let probe_at = rejection
        .retry_at()
        .expect("an open circuit says when it probes");
    // Exact up to the breaker's tick (it stores time as 32-bit ticks on a scale covering the
    // longest wait, 4 ns at the finest): never longer than asked by a tick or more. (The
    // retry-at is the refusal's `now` plus the whole ticks left, so a `now` later within its
    // tick than the opening's reports up to one tick late; real clocks land anywhere in a
    // tick.)
    let tick = Duration::from_nanos(4);
    let wait = probe_at - opened_at;
    assert!(
        wait < 20 * unit + tick && wait + 20 * unit / 1000 >= 20 * unit,
        "the open wait: {wait:?}"
    );

    // Half-open: a probe cancelled mid-flight gives its slot back.
    timer.sleep_until(probe_at).await;
    // A timer may round a wake-up up to its resolution (tokio's wheel: 1 ms), and the retry-at
    // is the start of the breaker's tick, which need not fall on a millisecond.
    let slept = timer.now() - opened_at;
    let resolution = Duration::from_millis(1);
    assert!(
        slept >= wait && slept <= wait + resolution + tol.late,
        "slept until the probe: took {slept:?}, expected {wait:?} (+ at most {:?})",
        resolution + tol.late
    );
    // The probe's operation never finishes on its own: the call is dropped once it started.
    let probe = call(
        Op::Held {
            started: &started,
            release: &never,
        },
        &mut rng,
    );
    let cancelled = cancel_when(probe, || started.is_fired()).await;
    assert!(cancelled.is_none());
    assert_eq!(ran.load(Ordering::SeqCst), 5, "the probe was admitted");
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    assert_eq!(
        breaker.probes_in_flight(),
        0,
        "a dropped probe frees its slot"
    );

    // One probe at a time: a call made while the probe's operation runs is refused (and never
    // runs); the probe, released only then, succeeds and closes the circuit.
    let held = Op::Held {
        started: &probing,
        release: &release,
    };
    let (probe, during) = join(call(held, &mut rng), async {
        probing.wait().await;
        let during = call(Op::Unit(false), &mut SeededRandom::new(9)).await;
        release.fire();
        during
    })
    .await;
    assert_eq!(probe, Ok(Ok(())));
    assert_eq!(
        during.unwrap_err().rejection().map(|r| r.reason()),
        Some(RejectReason::CircuitOpen)
    );
    assert_eq!(ran.load(Ordering::SeqCst), 6, "the refused call never ran");
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(
        transitions(&log.events()),
        [
            (CircuitState::Closed, CircuitState::Open),
            (CircuitState::Open, CircuitState::HalfOpen),
            (CircuitState::HalfOpen, CircuitState::Closed),
        ]
    );
    // Only settled attempts reach the execution hook: 4 failures and the probe.
    let executed = log
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Executed { .. }))
        .count();
    assert_eq!(executed, 5);
}
