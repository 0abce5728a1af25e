//! Issue 13, point 1 on async-io: every clock handle reads the process's one timeline.
//! Real timers; each sleep here is the duration being checked, not a way to order events, and
//! only its lower bound is relied on (a timer never fires early). Where the test needs
//! something to happen *within* a time (a deadline, a wait), the time is a second or more,
//! longer than any stall of a loaded machine.

use std::time::Duration;

use resilix::Error;
use resilix::call::CallOptions;
use resilix::execute::Timer;
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::time::{Clock, Deadline};
use resilix_async_std::{AsyncIoClock, AsyncIoTimer, Resilience};

const MS: Duration = Duration::from_millis(1);

type Out = Result<(), Error<(), ()>>;

/// A clock made 20 ms after another reads the same timeline (it sees those 20 ms), and so
/// does every timer.
#[test]
fn clocks_made_apart_read_one_timeline() {
    async_io::block_on(async {
        let early = AsyncIoClock::new();
        let t0 = early.now();
        async_io::Timer::after(20 * MS).await;
        let late = AsyncIoClock::new();
        let (a, b, c, d) = (
            early.now(),
            late.now(),
            AsyncIoTimer::new().now(),
            early.now(),
        );
        assert!(a <= b && b <= c && c <= d, "{a:?} {b:?} {c:?} {d:?}");
        assert!(b - t0 >= 20 * MS, "the late clock sees the time before it");
    });
}

/// A rate limiter (one per 40 ms, burst 1) used through a `Resilience` made per request
/// admits every request that comes 60 ms after the last. Before: only the first, since each
/// fresh clock read zero and the token taken "at 40 ms" never came back.
#[test]
fn a_rate_limiter_used_through_a_resilience_per_request_admits_one_per_interval() {
    let limiter =
        RateLimiter::new(RateLimitConfig::new(Rate::one_every(40 * MS)).with_burst(1)).unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    async_io::block_on(async {
        for i in 0..4 {
            let out: Out = Resilience::new(&pipeline)
                .execute(CallOptions::default(), || async { Ok(()) })
                .await;
            assert_eq!(out, Ok(()), "request {i}");
            // At least 60 ms, never less: the token is back by then, however late we wake.
            async_io::Timer::after(60 * MS).await;
        }
    });
}

/// A deadline built from a fresh clock, a second from now, holds for a `Resilience` made
/// 1.5 s earlier. Before: the long-lived handle's timeline was ahead by its age, so the call
/// ended in `DeadlinePassed` as soon as that age exceeded the timeout. (The deadline is a
/// second so that no stall between building it and the call can pass it.)
#[test]
fn a_deadline_from_a_fresh_clock_holds_for_an_older_handle() {
    let pipeline = Pipeline::new();
    let resilience = Resilience::new(&pipeline);
    async_io::block_on(async {
        async_io::Timer::after(1500 * MS).await;
        let deadline = Deadline::after(AsyncIoClock::new().now(), 1000 * MS);
        let out: Out = resilience
            .execute(CallOptions::default().deadline(deadline), || async {
                Ok(())
            })
            .await;
        assert_eq!(out, Ok(()));
    });
}

/// The helpers: a deadline from a relative timeout and a rejection's retry-at as a wait.
#[test]
fn deadlines_and_retry_at_without_a_private_timer() {
    let limiter = RateLimiter::new(
        RateLimitConfig::new(Rate::one_every(Duration::from_secs(10))).with_burst(1),
    )
    .unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let resilience = Resilience::new(&pipeline);
    async_io::block_on(async {
        let before = resilience.timer().now();
        let deadline = resilix_async_std::deadline_in(Duration::from_secs(5));
        let after = resilience.timer().now();
        assert!(
            deadline.instant() >= before + Duration::from_secs(5)
                && deadline.instant() <= after + Duration::from_secs(5)
        );
        let out: Out = resilience
            .execute(CallOptions::default().deadline(deadline), || async {
                Ok(())
            })
            .await;
        assert_eq!(out, Ok(()));
        let out: Out = resilience
            .execute(CallOptions::default(), || async { Ok(()) })
            .await;
        let refused = out.unwrap_err().rejection().expect("refused");
        let wait = resilix_async_std::retry_in(&refused).expect("a rate limiter knows when");
        // Exact above (the token was taken before `refused`); a second below, for a stall
        // between the two calls.
        assert!(
            wait <= Duration::from_millis(10_010) && wait >= Duration::from_secs(9),
            "{wait:?}"
        );
        assert!(resilience.retry_in(&refused).unwrap() <= wait);
    });
}
