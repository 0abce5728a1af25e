//! The loop's small parts, judged where they are written: the error's accessors, and the two
//! futures the loop awaits (`noting_wait`, `race`) polled by hand. The whole loop on virtual
//! time is core/tests/execute.rs.

use core::cell::Cell;
use core::future::{Future, poll_fn, ready};

use crate::call::CallOptions;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use super::*;
use crate::rejection::RejectReason;

/// Pending `n` times, then ready with `out`; counts its polls in `polls`.
fn pending_times<'a, T: Copy + 'a>(
    n: u32,
    out: T,
    polls: &'a Cell<u32>,
) -> impl Future<Output = T> + 'a {
    poll_fn(move |_cx| {
        polls.set(polls.get() + 1);
        if polls.get() > n {
            Poll::Ready(out)
        } else {
            Poll::Pending
        }
    })
}

/// Polls `fut` up to `max` times with a waker that does nothing.
fn poll_up_to<F: Future>(fut: F, max: u32) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..max {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
    }
    None
}

#[test]
fn every_error_names_its_attempts_and_a_refusal_its_rejection() {
    let refused = Rejection::new(RejectReason::CircuitOpen);
    let errors: [ExecuteError<()>; 4] = [
        ExecuteError::Refused {
            rejection: refused,
            attempts: 2,
            last: None,
        },
        ExecuteError::GaveUp {
            reason: GiveUpReason::BudgetExceeded,
            attempts: 3,
            last: Attempted::TimedOut,
        },
        ExecuteError::GaveUp {
            reason: GiveUpReason::AttemptsExhausted { attempts: 4 },
            attempts: 4,
            last: Attempted::Output(()),
        },
        ExecuteError::DeadlinePassed {
            attempts: 5,
            last: None,
        },
    ];
    let attempts: [u32; 4] = errors.map(|e| e.attempts());
    assert_eq!(attempts, [2, 3, 4, 5]);
    assert_eq!(errors[0].rejection(), Some(refused));
    assert_eq!(
        errors[1].rejection().map(|r| r.reason()),
        Some(RejectReason::BudgetExceeded),
        "a retry the budget refused is a refusal"
    );
    assert_eq!(errors[2].rejection(), None);
    assert_eq!(errors[3].rejection(), None);
}

/// A timer whose clock stands still, counting its reads and the sleeps it makes; its sleeps
/// are all ready at once (`fires`) or never.
struct Counted {
    reads: Cell<u32>,
    sleeps: Cell<u32>,
    fires: bool,
}

impl Counted {
    fn new(fires: bool) -> Self {
        Counted {
            reads: Cell::new(0),
            sleeps: Cell::new(0),
            fires,
        }
    }
}

struct Stub(bool);

impl Future for Stub {
    type Output = ();
    fn poll(self: core::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Timer for Counted {
    type Sleep<'a> = Stub;
    fn now(&self) -> Instant {
        self.reads.set(self.reads.get() + 1);
        Instant::from_secs(1)
    }
    fn sleep_until(&self, _at: Instant) -> Stub {
        self.sleeps.set(self.sleeps.get() + 1);
        Stub(self.fires)
    }
}

/// A gate whose every wait is pending `n` times before it lets the attempt through.
struct Slow<'a> {
    n: u32,
    polls: &'a Cell<u32>,
}

impl<'a> Gate for Slow<'a> {
    type Wait = Waiting<'a>;
    fn ready(&self, _now: Instant, _deadline: Option<Deadline>) -> Waiting<'a> {
        Waiting {
            left: self.n,
            polls: self.polls,
        }
    }
}

/// [`Slow`]'s wait: pending `left` more times, then ready.
struct Waiting<'a> {
    left: u32,
    polls: &'a Cell<u32>,
}

impl Future for Waiting<'_> {
    type Output = Result<(), Rejection>;
    fn poll(mut self: core::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.polls.set(self.polls.get() + 1);
        if self.left == 0 {
            return Poll::Ready(Ok(()));
        }
        self.left -= 1;
        Poll::Pending
    }
}

#[test]
fn the_clock_is_read_again_only_after_the_gate_waited() {
    let pipeline = crate::pipeline::Pipeline::new();
    let classifier = crate::classify::ResultClassifier::new();
    for (pending, reads) in [(0, 2), (1, 3), (3, 3)] {
        let timer = Counted::new(false);
        let mut rng = crate::random::SeededRandom::new(1);
        let polls = Cell::new(0);
        let gate = Slow {
            n: pending,
            polls: &polls,
        };
        let fut = execute_gated(
            &pipeline,
            &timer,
            &mut rng,
            &(),
            CallOptions::default(),
            &classifier,
            &gate,
            || ready(Ok::<u32, ()>(7)),
        );
        assert_eq!(poll_up_to(fut, 5), Some(Ok(Ok(7))));
        assert_eq!(
            (timer.reads.get(), polls.get()),
            (reads, pending + 1),
            "gate pending {pending} times: the start, the admission after a wait, the settle"
        );
    }
}

/// What the loop answers for a `Result<u32, ()>` operation.
type Looped = Result<Result<u32, ()>, ExecuteError<Result<u32, ()>>>;

/// Runs `work` through a pipeline whose every attempt has a deadline (so each is raced against
/// a timeout whose sleeps all fire at once, or never), polling up to `polls` times; with the
/// timeouts the loop made.
fn timed<F: Future<Output = Result<u32, ()>>>(
    fires: bool,
    polls: u32,
    work: impl FnMut() -> F,
) -> (Option<Looped>, u32) {
    let pipeline =
        crate::pipeline::Pipeline::new().attempt_timeout(core::time::Duration::from_secs(1));
    let timer = Counted::new(fires);
    let mut rng = crate::random::SeededRandom::new(2);
    let classifier = crate::classify::ResultClassifier::new();
    let fut = execute(
        &pipeline,
        &timer,
        &mut rng,
        &(),
        CallOptions::default(),
        &classifier,
        work,
    );
    (poll_up_to(fut, polls), timer.sleeps.get())
}

#[test]
fn no_timeout_is_made_for_work_ready_at_once() {
    let (out, sleeps) = timed(true, 1, || ready(Ok::<u32, ()>(1)));
    assert_eq!(out, Some(Ok(Ok(1))));
    assert_eq!(sleeps, 0);
}

#[test]
fn pending_work_loses_to_a_ready_timeout_on_the_same_poll() {
    let polls = Cell::new(0);
    let (out, sleeps) = timed(true, 1, || pending_times(5, Ok::<u32, ()>(2), &polls));
    let out = out.expect("the timeout answers on the first poll");
    assert!(
        matches!(
            out,
            Err(ExecuteError::GaveUp {
                last: Attempted::TimedOut,
                attempts: 1,
                ..
            })
        ),
        "{out:?}"
    );
    assert_eq!((sleeps, polls.get()), (1, 1));
}

#[test]
fn an_answer_comes_through_a_timeout_that_never_fires_made_once() {
    let polls = Cell::new(0);
    let (out, sleeps) = timed(false, 5, || pending_times(2, Ok::<u32, ()>(3), &polls));
    assert_eq!(out, Some(Ok(Ok(3))));
    assert_eq!((sleeps, polls.get()), (1, 3));
}

/// An attempt's future that checks, as it drops, that its bulkhead slot is still held.
struct Watch<'a> {
    bulkhead: &'a crate::bulkhead::Bulkhead,
    held_at_drop: &'a Cell<Option<u32>>,
}

impl Future for Watch<'_> {
    type Output = Result<u32, ()>;
    fn poll(self: core::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Pending
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        self.held_at_drop.set(Some(self.bulkhead.held()));
    }
}

#[test]
fn a_dropped_loop_drops_the_attempt_before_giving_back_its_permits() {
    let bulkhead = crate::bulkhead::Bulkhead::new(crate::bulkhead::BulkheadConfig::new(1).unwrap());
    let pipeline = crate::pipeline::Pipeline::new().bulkhead(&bulkhead);
    let timer = Counted::new(false);
    let mut rng = crate::random::SeededRandom::new(5);
    let classifier = crate::classify::ResultClassifier::new();
    let held_at_drop = Cell::new(None);
    {
        let fut = execute(
            &pipeline,
            &timer,
            &mut rng,
            &(),
            CallOptions::default(),
            &classifier,
            || Watch {
                bulkhead: &bulkhead,
                held_at_drop: &held_at_drop,
            },
        );
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(bulkhead.held(), 1, "the attempt runs, holding its slot");
    }
    assert_eq!(
        held_at_drop.get(),
        Some(1),
        "the attempt's future went first"
    );
    assert_eq!(bulkhead.held(), 0, "then its slot came back");
}

#[test]
fn map_keeps_the_variant_and_the_counts_and_maps_every_output() {
    let reason = GiveUpReason::AttemptsExhausted { attempts: 3 };
    let gave_up = ExecuteError::GaveUp {
        reason,
        attempts: 3,
        last: Attempted::Output(503u16),
    };
    assert_eq!(
        gave_up.map(|s| s / 100),
        ExecuteError::GaveUp {
            reason,
            attempts: 3,
            last: Attempted::Output(5)
        }
    );
    let timed_out: ExecuteError<u16> = ExecuteError::GaveUp {
        reason,
        attempts: 2,
        last: Attempted::TimedOut,
    };
    assert_eq!(
        timed_out.map(|s| s + 1),
        ExecuteError::GaveUp {
            reason,
            attempts: 2,
            last: Attempted::TimedOut
        }
    );
    let rejection = Rejection::new(RejectReason::BulkheadFull);
    let refused = ExecuteError::Refused {
        rejection,
        attempts: 1,
        last: Some(Attempted::Output(7u16)),
    };
    assert_eq!(
        refused.map(|s| s * 2),
        ExecuteError::Refused {
            rejection,
            attempts: 1,
            last: Some(Attempted::Output(14))
        }
    );
    let passed = ExecuteError::DeadlinePassed {
        attempts: 4,
        last: Some(Attempted::Output(1u16)),
    };
    assert_eq!(
        passed.map(|s| s + 1),
        ExecuteError::DeadlinePassed {
            attempts: 4,
            last: Some(Attempted::Output(2))
        }
    );
}
