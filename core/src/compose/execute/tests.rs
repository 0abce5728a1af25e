//! The loop's small parts, judged where they are written: the error's accessors, and the two
//! futures the loop awaits (`noting_wait`, `race`) polled by hand. The whole loop on virtual
//! time is core/tests/execute.rs.

use core::cell::Cell;
use core::future::{Future, poll_fn, ready};
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

#[test]
fn noting_wait_tells_a_wait_from_a_ready_gate() {
    assert_eq!(poll_up_to(noting_wait(ready(7)), 1), Some((7, false)));
    let polls = Cell::new(0);
    assert_eq!(
        poll_up_to(noting_wait(pending_times(1, 8, &polls)), 3),
        Some((8, true)),
        "pending once is a wait"
    );
    let polls = Cell::new(0);
    assert_eq!(
        poll_up_to(noting_wait(pending_times(3, 9, &polls)), 5),
        Some((9, true)),
        "the ready poll after a wait does not undo it"
    );
}

#[test]
fn race_gives_the_work_when_it_is_ready_and_none_when_the_timeout_fires() {
    let made = Cell::new(0);
    let make = || {
        made.set(made.get() + 1);
        ready(())
    };
    assert_eq!(poll_up_to(race(ready(1), make), 1), Some(Some(1)));
    assert_eq!(made.get(), 0, "no timeout is made for work ready at once");

    // Work still pending when the timeout is ready: the timeout wins on that same poll.
    let polls = Cell::new(0);
    assert_eq!(
        poll_up_to(race(pending_times(5, 2, &polls), make), 1),
        Some(None)
    );
    assert_eq!(made.get(), 1);

    // A timeout that never fires: the work's answer comes through, and it was made once.
    let polls = Cell::new(0);
    let never = Cell::new(0);
    let result = poll_up_to(
        race(pending_times(2, 3, &polls), || {
            never.set(never.get() + 1);
            core::future::pending::<()>()
        }),
        5,
    );
    assert_eq!((result, never.get(), polls.get()), (Some(Some(3)), 1, 3));
}
