//! Timeouts and deadlines through the pipeline and the call driver: each attempt races the
//! tighter of its attempt timeout and the time left on the call's deadline; a passed deadline
//! stops the call before any policy is asked; and a deadline is passed on, SRE-style, minus
//! the time already spent.
#![cfg(not(loom))]

use core::time::Duration;

use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::{CallOptions, Next, Stop};
use resilix::observe::Observer;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::{AttemptOutcome, GiveUpReason, RetryDecision, RetryPolicy, retryable};
use resilix::time::{
    Clock, Deadline, DeadlinePropagation, Instant, ManualClock, decode_grpc_timeout, decode_millis,
};
use resilix::{Verdict, VerdictKind};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Retries every retryable failure at once, without limit: the deadline alone must end it.
struct RetryAtOnce;
impl RetryPolicy for RetryAtOnce {
    type State = ();
    fn begin(&self, _now: Instant) {}
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _state: &mut (),
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        match retryable(&outcome.verdict, outcome.idempotent) {
            Err(decision) => decision,
            Ok(()) => RetryDecision::RetryAt(env.now),
        }
    }
}

#[test]
fn admit_gives_the_tighter_of_attempt_timeout_and_deadline() {
    let pipeline = Pipeline::new().attempt_timeout(MS(200));
    let mut rng = SeededRandom::new(1);
    let start = Instant::from_secs(100);
    let deadline = Deadline::after(start, Duration::from_secs(1));
    // (now, expected attempt deadline): the timeout while it is tighter, then the deadline.
    let cases = [
        (start, start + MS(200)),
        (start + MS(799), start + MS(999)),
        (start + MS(800), start + MS(1000)), // equal: either is right
        (start + MS(900), start + MS(1000)),
        (start + MS(999), start + MS(1000)),
    ];
    for (now, want) in cases {
        let mut env = Env::new(now, &mut rng);
        let attempt = pipeline.admit(&mut env, Some(deadline)).unwrap();
        let got = attempt.deadline().unwrap();
        assert_eq!(got.instant(), want, "at {now:?}");
        assert_eq!(
            got.remaining(now),
            MS(200).min(deadline.remaining(now)),
            "per-attempt timeout = min(attempt timeout, time left)"
        );
    }
}

#[test]
fn a_deadline_tighter_than_the_attempt_timeout_wins_from_the_first_attempt() {
    let pipeline = Pipeline::new().attempt_timeout(MS(200));
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let mut call = pipeline.call(
        env.now,
        CallOptions::default().deadline(Deadline::after(Instant::ZERO, MS(50))),
    );
    let attempt = call.admit(&mut env).unwrap();
    assert_eq!(
        attempt.deadline().unwrap().instant(),
        Instant::from_millis(50)
    );
    env.now = Instant::from_millis(50);
    // The race fired: the attempt settles as a timeout, not retried (not idempotent).
    assert_eq!(
        call.settle(attempt, &Verdict::Timeout, &mut env),
        Next::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Timeout))
    );
}

#[test]
fn either_alone_or_neither() {
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(5), &mut rng);
    let deadline = Deadline::after(env.now, MS(300));
    let timeout_only = Pipeline::new().attempt_timeout(MS(200));
    let a = timeout_only.admit(&mut env, None).unwrap();
    assert_eq!(a.deadline(), Some(Deadline::after(env.now, MS(200))));
    drop(a);
    let none = Pipeline::new();
    let a = none.admit(&mut env, Some(deadline)).unwrap();
    assert_eq!(a.deadline(), Some(deadline), "the call's deadline alone");
    drop(a);
    assert_eq!(none.admit(&mut env, None).unwrap().deadline(), None);
}

#[test]
fn the_call_driver_shrinks_each_attempt_to_the_time_left() {
    let clock = ManualClock::new(Instant::ZERO);
    let pipeline = Pipeline::new().retry(RetryAtOnce).attempt_timeout(MS(400));
    let deadline = Deadline::after(clock.now(), Duration::from_secs(1));
    let mut rng = SeededRandom::new(4);
    let mut env = Env::new(clock.now(), &mut rng);
    let mut call = pipeline.call(
        env.now,
        CallOptions::default().deadline(deadline).idempotent(true),
    );
    let mut attempt_windows = Vec::new();
    loop {
        env.now = clock.now();
        let attempt = match call.admit(&mut env) {
            Ok(a) => a,
            Err(stop) => {
                assert_eq!(stop, Stop::DeadlinePassed);
                break;
            }
        };
        let window = attempt.deadline().unwrap().remaining(env.now);
        attempt_windows.push(window);
        // Each attempt runs until its own deadline fires.
        clock.advance(window);
        env.now = clock.now();
        match call.settle(attempt, &Verdict::Timeout, &mut env) {
            Next::RetryAt(at) => assert_eq!(at, env.now),
            other => panic!("expected a retry, got {other:?}"),
        }
    }
    assert_eq!(attempt_windows, [MS(400), MS(400), MS(200)]);
    assert_eq!(call.attempts(), 3);
    assert_eq!(
        clock.now(),
        deadline.instant(),
        "no attempt outlived the deadline"
    );
}

#[test]
fn a_passed_deadline_stops_the_call_before_any_policy_is_asked() {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let pipeline = Pipeline::new().bulkhead(&bulkhead).attempt_timeout(MS(100));
    let mut rng = SeededRandom::new(5);
    let start = Instant::from_secs(1);
    let deadline = Deadline::after(start, MS(10));
    for now in [
        start + MS(10), // exactly at the deadline: passed
        start + Duration::from_secs(365 * 24 * 3600),
        Instant::MAX,
    ] {
        let mut env = Env::new(now, &mut rng);
        let mut call = pipeline.call(start, CallOptions::default().deadline(deadline));
        assert_eq!(call.admit(&mut env).err(), Some(Stop::DeadlinePassed));
        assert_eq!(call.attempts(), 0);
        assert_eq!(
            bulkhead.held(),
            0,
            "no slot was taken for a call nobody waits for"
        );
    }
    // One nanosecond before, the call goes ahead with a 1 ns attempt.
    let mut env = Env::new(start + MS(10) - Duration::from_nanos(1), &mut rng);
    let mut call = pipeline.call(start, CallOptions::default().deadline(deadline));
    let attempt = call.admit(&mut env).unwrap();
    assert_eq!(
        attempt.deadline().unwrap().remaining(env.now),
        Duration::from_nanos(1)
    );
    assert_eq!(bulkhead.held(), 1);
}

#[test]
fn extreme_times_saturate_instead_of_panicking() {
    let pipeline = Pipeline::new().attempt_timeout(Duration::MAX);
    let mut rng = SeededRandom::new(6);
    // A timeout of Duration::MAX saturates at the end of time; the call's deadline wins.
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    let d = Deadline::after(env.now, Duration::from_secs(2));
    assert_eq!(
        pipeline.admit(&mut env, Some(d)).unwrap().deadline(),
        Some(d)
    );
    assert_eq!(
        pipeline.admit(&mut env, None).unwrap().deadline(),
        Some(Deadline::at(Instant::MAX))
    );
    // Time that went backwards past the call's start: the attempt just sees more time left.
    let late = Deadline::after(Instant::from_secs(10), MS(5));
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let short = Pipeline::new().attempt_timeout(MS(100));
    let a = short.admit(&mut env, Some(late)).unwrap();
    assert_eq!(a.deadline().unwrap().instant(), Instant::from_millis(100));
}

/// Google SRE book, ch. 22 ("Addressing Cascading Failures"): a 30 s deadline; A spends 7 s, so
/// its RPC to B carries 23 s; B spends 4 s, so its RPC to C carries 19 s. Each service runs on
/// its own clock and learns the deadline only from the header.
#[test]
fn sre_deadline_propagation_example() {
    let hop = DeadlinePropagation::NO_MARGIN;

    let a_clock = ManualClock::new(Instant::from_secs(1_000));
    let a_deadline = Deadline::after(a_clock.now(), Duration::from_secs(30));
    a_clock.advance(Duration::from_secs(7));
    let to_b = hop.grpc_timeout(a_deadline, a_clock.now());
    assert_eq!(
        decode_grpc_timeout(to_b.as_bytes()),
        Ok(Duration::from_secs(23))
    );
    assert_eq!(&*hop.millis(a_deadline, a_clock.now()), "23000");

    let b_clock = ManualClock::new(Instant::from_secs(77)); // unrelated origin
    let b_deadline = Deadline::after(b_clock.now(), decode_grpc_timeout(to_b.as_bytes()).unwrap());
    b_clock.advance(Duration::from_secs(4));
    let to_c = hop.grpc_timeout(b_deadline, b_clock.now());
    assert_eq!(
        decode_grpc_timeout(to_c.as_bytes()),
        Ok(Duration::from_secs(19))
    );
    let to_c_ms = hop.millis(b_deadline, b_clock.now());
    assert_eq!(
        decode_millis(to_c_ms.as_bytes()),
        Ok(Duration::from_secs(19))
    );

    // The same chain with a 200 ms transit margin at each hop ("a few hundred milliseconds").
    let hop = DeadlinePropagation::with_margin(MS(200));
    let to_b = hop.outgoing(a_deadline, a_clock.now());
    assert_eq!(to_b, MS(22_800));
    let b_deadline = Deadline::after(Instant::ZERO, to_b);
    assert_eq!(hop.outgoing(b_deadline, Instant::from_secs(4)), MS(18_600));

    // The book's counter-example: A gives B 10 s, B starts work 8 s later; it must pass on 2 s,
    // not a hard-coded 20 s.
    let b_deadline = Deadline::after(Instant::ZERO, Duration::from_secs(10));
    assert_eq!(
        DeadlinePropagation::NO_MARGIN.outgoing(b_deadline, Instant::from_secs(8)),
        Duration::from_secs(2)
    );
}
