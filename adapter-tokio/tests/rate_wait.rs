//! Waiting for a rate-limit cell on paused tokio time: each caller waits exactly until the
//! limiter's retry-at, and is refused at once when that is at or past its deadline or beyond
//! its max wait; waiters are served one cell each; a dropped waiter leaves nothing behind.

use std::cell::RefCell;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilix::call::CallOptions;
use resilix::observe::Event;
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;
use resilix::{Error, RejectReason};
use resilix_testkit::Log;
use resilix_tokio::{Resilience, deadline_in, now};

const MS: Duration = Duration::from_millis(1);
const FOREVER: Duration = Duration::MAX;

fn limiter(per_second: u32) -> RateLimiter {
    RateLimiter::new(RateLimitConfig::new(Rate::per_second(per_second))).unwrap()
}

/// The cell's retry-at, seen by a caller at `at` on an empty bucket.
fn retry_at(l: &RateLimiter, at: Instant) -> Instant {
    l.peek(at).unwrap_err().retry_at().unwrap()
}

/// tokio's timer has a granularity of 1 ms: a sleep to `at` ends in the millisecond that
/// holds `at`, never before it.
fn within_a_tick(started: Instant, at: Instant) {
    assert!(
        started >= at,
        "started {started:?} before the retry-at {at:?}"
    );
    assert!(
        started - at < MS,
        "started {started:?}, a tick after the retry-at {at:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_waits_exactly_until_the_retry_at_then_goes() {
    let l = limiter(10);
    let pipeline = Pipeline::new().rate_limit(&l);
    let log = Log::default();
    let r = Resilience::new(&pipeline).observer(&log);
    let t0 = now();
    while l.try_acquire(t0).is_ok() {}
    let at = retry_at(&l, t0);
    assert!(at - t0 >= 90 * MS, "an empty bucket of 10/s: {:?}", at - t0);
    let started = RefCell::new(None);
    let out = r
        .call(CallOptions::default())
        .wait_for_rate_limit(FOREVER)
        .run(|| async {
            *started.borrow_mut() = Some(now());
            Ok::<_, ()>(7)
        })
        .await;
    assert_eq!(out, Ok(7));
    within_a_tick(started.borrow().unwrap(), at);
    assert!(
        !log.events()
            .iter()
            .any(|e| matches!(e, Event::Rejected { .. })),
        "a wait that ends in admission is no rejection"
    );
    assert_eq!(l.available(now()), 0, "the admission took the cell, once");
}

#[tokio::test(start_paused = true)]
async fn refused_at_once_when_the_retry_at_is_past_the_deadline() {
    let l = limiter(1);
    let pipeline = Pipeline::new().rate_limit(&l);
    let log = Log::default();
    let r = Resilience::new(&pipeline).observer(&log);
    let t0 = now();
    l.try_acquire(t0).unwrap();
    let at = retry_at(&l, t0);
    let called = RefCell::new(false);
    let options = CallOptions::default().deadline(deadline_in(500 * MS));
    let out = r
        .call(options)
        .wait_for_rate_limit(FOREVER)
        .run(|| async {
            *called.borrow_mut() = true;
            Ok::<_, ()>(())
        })
        .await;
    assert_eq!(
        now(),
        t0,
        "no time passed: refused at once, not at the deadline"
    );
    assert!(!*called.borrow());
    match out {
        Err(Error::Refused {
            rejection,
            retry_in,
            ..
        }) => {
            assert_eq!(rejection.reason(), RejectReason::RateLimited);
            assert_eq!(rejection.retry_at(), Some(at), "the limiter's own retry-at");
            assert_eq!(retry_in, Some(at - t0));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        log.events().as_slice(),
        [Event::Rejected { rejection }] if rejection.reason() == RejectReason::RateLimited
    ));
}

#[tokio::test(start_paused = true)]
async fn a_retry_at_on_the_deadline_is_refused_and_one_before_it_waited_for() {
    let l = limiter(1);
    let pipeline = Pipeline::new().rate_limit(&l);
    let r = Resilience::new(&pipeline);
    let t0 = now();
    l.try_acquire(t0).unwrap();
    let at = retry_at(&l, t0);
    let on = CallOptions::default().deadline(resilix::time::Deadline::at(at));
    let out = r
        .call(on)
        .wait_for_rate_limit(FOREVER)
        .run(|| async { Ok::<_, ()>(()) })
        .await;
    assert!(matches!(out, Err(Error::Refused { .. })), "{out:?}");
    assert_eq!(now(), t0);
    let after = CallOptions::default().deadline(resilix::time::Deadline::at(at + MS));
    let out = r
        .call(after)
        .wait_for_rate_limit(FOREVER)
        .run(|| async { Ok::<_, ()>(()) })
        .await;
    assert_eq!(out, Ok(()));
    within_a_tick(now(), at);
}

#[tokio::test(start_paused = true)]
async fn refused_at_once_beyond_max_wait_and_waited_within_it() {
    let l = limiter(1);
    let pipeline = Pipeline::new().rate_limit(&l);
    let r = Resilience::new(&pipeline);
    let t0 = now();
    l.try_acquire(t0).unwrap();
    let out = r
        .call(CallOptions::default())
        .wait_for_rate_limit(500 * MS)
        .run(|| async { Ok::<_, ()>(()) })
        .await;
    assert!(matches!(out, Err(Error::Refused { .. })), "{out:?}");
    assert_eq!(now(), t0);
    let out = r
        .call(CallOptions::default())
        .wait_for_rate_limit(2_000 * MS)
        .run(|| async { Ok::<_, ()>(()) })
        .await;
    assert_eq!(out, Ok(()));
    within_a_tick(now(), retry_at_after(&l, t0));
}

/// The retry-at an empty bucket of `l` gave at `t0` (one cell spent since, at that instant).
fn retry_at_after(l: &RateLimiter, t0: Instant) -> Instant {
    t0 + l.emission_interval()
}

/// Three callers on an empty bucket of 10/s: each waits for its own cell, 100 ms apart; no
/// one is refused for having lost a cell to another waiter.
#[tokio::test(start_paused = true)]
async fn waiters_are_served_one_cell_each() {
    let l = limiter(10);
    let pipeline = Pipeline::new().rate_limit(&l);
    let r = Resilience::new(&pipeline);
    let t0 = now();
    while l.try_acquire(t0).is_ok() {}
    let first = retry_at(&l, t0);
    let starts = RefCell::new(Vec::new());
    let call = || {
        r.call(CallOptions::default())
            .wait_for_rate_limit(FOREVER)
            .run(|| async {
                starts.borrow_mut().push(now());
                Ok::<_, ()>(())
            })
    };
    let (a, b, c) = tokio::join!(call(), call(), call());
    assert_eq!((a, b, c), (Ok(()), Ok(()), Ok(())));
    let starts = starts.borrow();
    let t = l.emission_interval();
    for (i, started) in starts.iter().enumerate() {
        within_a_tick(*started, first + t * i as u32);
    }
}

/// A waiter dropped mid-wait holds no cell: the bucket refills as if it had never asked.
#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_leaves_nothing_behind() {
    let l = limiter(1);
    let pipeline = Pipeline::new().rate_limit(&l);
    let r = Resilience::new(&pipeline);
    let t0 = now();
    l.try_acquire(t0).unwrap();
    let at = retry_at(&l, t0);
    {
        let mut waiting = pin!(
            r.call(CallOptions::default())
                .wait_for_rate_limit(FOREVER)
                .run(|| async { Ok::<_, ()>(()) })
        );
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(waiting.as_mut().poll(&mut cx), Poll::Pending));
    }
    assert_eq!(retry_at(&l, now()), at, "the wait took no cell");
    tokio::time::sleep(l.emission_interval() + MS).await;
    assert_eq!(
        l.available(now()),
        1,
        "the full bucket of one, nothing spent"
    );
}
