//! Issue 13, point 1: every clock handle reads the process's one timeline. Each scenario was a
//! misbehaviour when every `TokioClock` took its origin at its creation (policies shared by two
//! handles saw two timelines). Paused tokio time: every instant is exact.
//!
//! The scenario tests use only APIs that existed before the fix (`Resilience::new`,
//! `TokioClock::new`); the last tests cover the helpers added with it (`now`, `deadline_in`,
//! `retry_in`, `Resilience::deadline_in`).

use std::time::Duration;

use resilix::Error;
use resilix::breaker::{Breaker, CircuitState, Config as BreakerConfig};
use resilix::call::CallOptions;
use resilix::execute::Timer;
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::time::{Clock, Deadline, Instant};
use resilix::{RejectReason, Rejection};
use resilix_tokio::{Resilience, TokioClock, TokioTimer};

const SECOND: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3_600);

type Out = Result<(), Error<(), ()>>;

fn rejection(out: &Out) -> Option<Rejection> {
    out.as_ref().err().and_then(|e| e.rejection())
}

/// One request the way the README writes it: a `Resilience` made inline, per request.
macro_rules! request {
    ($pipeline:expr) => {
        Resilience::new(&$pipeline)
            .execute(CallOptions::default(), || async { Ok::<(), ()>(()) })
            .await
    };
    ($pipeline:expr, $result:expr) => {
        Resilience::new(&$pipeline)
            .execute(CallOptions::default(), || async { $result })
            .await
    };
}

/// A 1/s rate limiter used through a `Resilience` made per request admits a request every
/// 2 s, for as long as they come. Before: the first was admitted and every later one refused
/// ("admits again at Instant(1.0003s)"), forever, because each fresh clock read zero.
#[tokio::test(start_paused = true)]
async fn a_rate_limiter_used_through_a_resilience_per_request_admits_one_per_interval() {
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1))).unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    for i in 0..30 {
        let out: Out = request!(pipeline);
        assert_eq!(out, Ok(()), "request {i}, {}s in", 2 * i);
        // Right after, the bucket is empty: refused, and the retry-at is one second away on
        // the timeline any fresh clock reads.
        let out: Out = request!(pipeline);
        let refused = rejection(&out).expect("the second request in the same instant");
        assert_eq!(refused.reason(), RejectReason::RateLimited);
        let wait = refused.retry_at().unwrap() - TokioClock::new().now();
        assert!(
            wait <= SECOND + SECOND / 1000 && wait >= SECOND - SECOND / 1000,
            "request {i}: admits again in {wait:?}"
        );
        tokio::time::advance(2 * SECOND).await;
    }
}

/// A breaker opened by 4 failures, seen through a `Resilience` per request: after its open
/// wait (5 s) a request is a probe, and its success closes the circuit, 60 s or an hour
/// later. Before: still refused at both, since each fresh clock read "just opened".
#[tokio::test(start_paused = true)]
async fn a_breaker_opened_by_four_failures_probes_after_60_s_and_after_an_hour() {
    for gap in [60 * SECOND, HOUR] {
        let breaker = Breaker::new(BreakerConfig {
            minimum_calls: 4,
            ..BreakerConfig::DEFAULT
        })
        .unwrap();
        let pipeline = Pipeline::new().breaker(&breaker);
        for _ in 0..4 {
            let out: Out = request!(pipeline, Err(()));
            assert!(out.is_err());
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        assert_eq!(breaker.state(), CircuitState::Open);
        let opened = TokioClock::new().now();

        // Within the wait: refused, with a retry-at at most the 5 s wait after the opening.
        tokio::time::advance(SECOND).await;
        let out: Out = request!(pipeline);
        let refused = rejection(&out).expect("open");
        assert_eq!(refused.reason(), RejectReason::CircuitOpen);
        let probe_at = refused
            .retry_at()
            .expect("an open breaker says when it probes");
        assert!(
            probe_at > TokioClock::new().now() && probe_at - opened <= 5 * SECOND,
            "probes {:?} after opening",
            probe_at - opened
        );

        tokio::time::advance(gap - SECOND).await;
        let out: Out = request!(pipeline);
        assert_eq!(out, Ok(()), "{gap:?} after opening: a probe, not a refusal");
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "{gap:?} after opening"
        );
    }
}

/// Two long-lived handles made 60 s apart, sharing a burst-1 limiter, admit one call at one
/// instant between them. Before: 10 of 10 alternating calls were admitted, each handle's
/// arrival reading as idle on the other's timeline.
#[tokio::test(start_paused = true)]
async fn two_handles_made_60_s_apart_share_a_burst_one_limiter() {
    let limiter =
        RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let early = Resilience::new(&pipeline);
    tokio::time::advance(60 * SECOND).await;
    let late = Resilience::new(&pipeline);
    let mut admitted = 0;
    for i in 0..10 {
        let handle = if i % 2 == 0 { &late } else { &early };
        let out: Out = handle
            .execute(CallOptions::default(), || async { Ok(()) })
            .await;
        match out {
            Ok(()) => admitted += 1,
            other => assert_eq!(
                rejection(&other).map(|r| r.reason()),
                Some(RejectReason::RateLimited)
            ),
        }
    }
    assert_eq!(admitted, 1, "burst 1 at one instant");
    assert_eq!(
        early.timer().now(),
        late.timer().now(),
        "one instant for one moment"
    );
}

/// A deadline built from a fresh `TokioClock` (5 s from now), used by a `Resilience` made at
/// start-up, holds after an hour of uptime. Before: the fresh clock read zero, the
/// long-lived one an hour, and the call ended in `DeadlinePassed` before its first attempt.
#[tokio::test(start_paused = true)]
async fn a_deadline_from_a_fresh_clock_holds_after_an_hour_of_uptime() {
    let pipeline = Pipeline::new();
    let resilience = Resilience::new(&pipeline);
    tokio::time::advance(HOUR).await;
    let deadline = Deadline::after(TokioClock::new().now(), 5 * SECOND);
    let out: Out = resilience
        .execute(CallOptions::default().deadline(deadline), || async {
            tokio::time::sleep(SECOND).await;
            Ok(())
        })
        .await;
    assert_eq!(out, Ok(()));
    assert_eq!(deadline.remaining(TokioClock::new().now()), 4 * SECOND);
}

/// A deadline anchored at `Instant::ZERO` (as the `CallOptions` docs once showed) is on no
/// driver's timeline: it fails on the very first call, however young the process, instead of
/// working for the first seconds of uptime and then silently refusing every call.
#[tokio::test(start_paused = true)]
async fn a_deadline_anchored_at_instant_zero_fails_at_once_not_after_uptime() {
    let pipeline = Pipeline::new();
    let deadline = Deadline::after(Instant::ZERO, 2 * SECOND);
    let out: Out = Resilience::new(&pipeline)
        .execute(CallOptions::default().deadline(deadline), || async {
            Ok(())
        })
        .await;
    assert_eq!(
        out,
        Err(Error::DeadlinePassed {
            attempts: 0,
            last_error: None
        })
    );
}

/// Every handle, made at any time, reads one timeline: clocks, timers and `Resilience`s.
#[tokio::test(start_paused = true)]
async fn every_handle_reads_one_timeline() {
    let clock = TokioClock::new();
    let timer = TokioTimer::new();
    let pipeline = Pipeline::new();
    let resilience = Resilience::new(&pipeline);
    for step in [
        Duration::from_nanos(1),
        Duration::from_millis(7),
        HOUR,
        400 * HOUR,
    ] {
        tokio::time::advance(step).await;
        let now = clock.now();
        assert_eq!(timer.now(), now);
        assert_eq!(resilience.timer().now(), now);
        assert_eq!(TokioClock::new().now(), now);
        assert_eq!(TokioTimer::default().now(), now);
        assert_eq!(resilix_tokio::now(), now);
        assert_eq!(clock.to_tokio(now), tokio::time::Instant::now());
    }
}

/// The helpers: a deadline from a relative timeout, and a rejection's retry-at as a wait from
/// now, with no clock of the caller's own.
#[tokio::test(start_paused = true)]
async fn deadlines_and_retry_at_without_a_private_timer() {
    let limiter =
        RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let resilience = Resilience::new(&pipeline);
    tokio::time::advance(HOUR).await;

    let deadline = resilix_tokio::deadline_in(3 * SECOND);
    assert_eq!(deadline, resilience.deadline_in(3 * SECOND));
    assert_eq!(deadline.remaining(resilix_tokio::now()), 3 * SECOND);
    let out: Out = Resilience::new(&pipeline)
        .execute(CallOptions::default().deadline(deadline), || async {
            Ok(())
        })
        .await;
    assert_eq!(out, Ok(()));

    tokio::time::advance(Duration::from_millis(250)).await;
    let out: Out = resilience
        .execute(CallOptions::default(), || async { Ok(()) })
        .await;
    let refused = rejection(&out).expect("the bucket is empty");
    let wait = resilix_tokio::retry_in(&refused).expect("a rate limiter knows when");
    assert_eq!(Some(wait), resilience.retry_in(&refused));
    assert!(
        wait > Duration::from_millis(749) && wait <= Duration::from_millis(751),
        "{wait:?}"
    );
    // Sleeping that long is enough, and not a nanosecond more than the limiter's tick.
    tokio::time::sleep(wait).await;
    let out: Out = request!(pipeline);
    assert_eq!(out, Ok(()), "admitted after the wait it gave");
    // A passed retry-at is a zero wait; an unknown one is none.
    tokio::time::advance(HOUR).await;
    assert_eq!(resilix_tokio::retry_in(&refused), Some(Duration::ZERO));
    assert_eq!(
        resilix_tokio::retry_in(&Rejection::new(RejectReason::Throttled)),
        None
    );
}
