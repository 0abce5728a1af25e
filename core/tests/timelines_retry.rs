//! Issue 13 point 5 and issue 23 point 1, as a user meets them: an upstream's Retry-After on a
//! real timeline, far longer than any wait the caller meant to make.
//!
//! The first two tests use only APIs that existed on b41b95d and fail there (a retry scheduled
//! 364 days out; a longer Retry-After answered by a retry 200 ms later). The others pin the
//! reason, its event and the cap's setting.
#![cfg(not(loom))]

use core::cell::RefCell;
use core::time::Duration;

use resilix::Verdict;
use resilix::call::{CallOptions, Next};
use resilix::classify::http::classify_status;
use resilix::classify::retry_after::parse_delay;
use resilix::observe::{Event, Observer};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig, Strategy, UncertainRetry};
use resilix::time::{Deadline, Instant};

const DAY: Duration = Duration::from_secs(86_400);

/// One attempt of a call through `retry`, settled with `verdict` at `now`: what comes next.
fn first_decision(
    retry: Retry,
    now: Instant,
    options: CallOptions,
    verdict: Verdict,
    observer: &dyn Observer,
) -> Next {
    let pipeline = Pipeline::new().retry(retry);
    let mut rng = SeededRandom::new(13);
    let mut env = Env::new(now, &mut rng).with_observer(observer);
    let mut call = pipeline.call(env.now, options);
    let attempt = call
        .admit(&mut env)
        .expect("nothing refuses the first attempt");
    call.settle(attempt, &verdict, &mut env)
}

/// The 100 ms–2 s backoff of issue 23's example: exponential, so the first retry waits
/// exactly 200 ms.
fn issue23_retry() -> Retry {
    let backoff = Backoff::new(
        Strategy::Exponential,
        Duration::from_millis(100),
        Duration::from_secs(2),
    )
    .unwrap();
    Retry::unbudgeted(RetryConfig::new(3, backoff).unwrap())
}

#[test]
fn a_364_day_retry_after_without_a_deadline_is_not_a_retry() {
    // An upstream in trouble sends a 503 with a Retry-After of 364 days; the call has no
    // deadline (the default `CallOptions`). Issue 13 point 5: the call slept 364 days.
    let now = Instant::from_secs(3_600);
    let busy = Verdict::Overload {
        retry_after: Some(364 * DAY),
    };
    let next = first_decision(
        Retry::unbudgeted(RetryConfig::DEFAULT),
        now,
        CallOptions::default(),
        busy,
        &(),
    );
    match next {
        Next::GiveUp(reason) => {
            assert!(reason.to_string().contains("Retry-After"), "{reason}");
        }
        other => panic!("a call without a deadline scheduled {other:?} for a 364-day Retry-After"),
    }
}

#[test]
fn a_longer_retry_after_never_brings_the_client_back_sooner() {
    // Issue 23 point 1: with a 10 s deadline, "31536000" gave up (beyond the deadline) but
    // "31536001" became "no Retry-After", and the call retried after its own 200 ms backoff.
    let now_unix = 1_700_000_000;
    let now = Instant::from_secs(60);
    let options = CallOptions::default().deadline(Deadline::after(now, Duration::from_secs(10)));
    let mut decisions = Vec::new();
    for header in [
        "31536000",
        "31536001",
        "1700000000",
        "99999999999999999999999",
    ] {
        let verdict = classify_status(503, parse_delay(header.as_bytes(), now_unix));
        let next = first_decision(issue23_retry(), now, options, verdict, &());
        assert!(
            matches!(next, Next::GiveUp(_)),
            "Retry-After: {header} gave {next:?}; a shorter one gave up"
        );
        decisions.push(next);
    }
    // And the same answer for each: the longer wait is not a different case.
    assert!(decisions.windows(2).all(|w| w[0] == w[1]), "{decisions:?}");
}

#[test]
fn beyond_the_cap_the_call_gives_up_with_its_own_reason_and_event() {
    #[derive(Default)]
    struct Events(RefCell<Vec<Event>>);
    impl Observer for Events {
        fn on_event(&self, event: &Event) {
            self.0.borrow_mut().push(*event);
        }
    }
    let busy = Verdict::Overload {
        retry_after: Some(364 * DAY),
    };
    let events = Events::default();
    let next = first_decision(
        Retry::unbudgeted(RetryConfig::DEFAULT),
        Instant::from_secs(1),
        CallOptions::default(),
        busy,
        &events,
    );
    assert_eq!(next, Next::GiveUp(GiveUpReason::RetryAfterTooLong));
    let refused: Vec<_> = events
        .0
        .borrow()
        .iter()
        .filter_map(|e| match e {
            Event::RetryRefused { reason, after } => Some((*reason, *after)),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [(GiveUpReason::RetryAfterTooLong, busy)]);
    // The same answer with a deadline far away, and one close by: the cap decides first.
    for deadline in [Duration::from_secs(10), 1_000 * DAY] {
        let options =
            CallOptions::default().deadline(Deadline::after(Instant::from_secs(1), deadline));
        let next = first_decision(
            Retry::unbudgeted(RetryConfig::DEFAULT),
            Instant::from_secs(1),
            options,
            busy,
            &(),
        );
        assert_eq!(next, Next::GiveUp(GiveUpReason::RetryAfterTooLong));
    }
}

#[test]
fn the_cap_is_one_setting_and_a_patient_caller_can_raise_it() {
    let now = Instant::from_secs(1);
    let wait = 2 * DAY;
    let busy = Verdict::Overload {
        retry_after: Some(wait),
    };
    let default = first_decision(
        Retry::unbudgeted(RetryConfig::DEFAULT),
        now,
        CallOptions::default(),
        busy,
        &(),
    );
    assert_eq!(default, Next::GiveUp(GiveUpReason::RetryAfterTooLong));
    let patient = RetryConfig::DEFAULT.with_max_retry_after(7 * DAY);
    let next = first_decision(
        Retry::unbudgeted(patient),
        now,
        CallOptions::default(),
        busy,
        &(),
    );
    // The Retry-After is the floor: the retry starts no sooner, and the backoff (at most
    // 200 ms here) may add to it only when longer.
    assert_eq!(next, Next::RetryAt(now + wait));
    // Up to the cap, the wait is honoured to the nanosecond, on long timelines too.
    for cap in [
        RetryConfig::DEFAULT_MAX_RETRY_AFTER,
        Duration::from_secs(1),
        365 * DAY,
    ] {
        for now in [Instant::ZERO, Instant::from_secs(86_400 * 365 * 100)] {
            let at_cap = Verdict::Overload {
                retry_after: Some(cap),
            };
            let beyond = Verdict::Overload {
                retry_after: Some(cap + Duration::from_nanos(1)),
            };
            let config = RetryConfig::DEFAULT.with_max_retry_after(cap);
            let next = first_decision(
                Retry::unbudgeted(config),
                now,
                CallOptions::default(),
                at_cap,
                &(),
            );
            assert_eq!(next, Next::RetryAt(now + cap), "{cap:?} at {now:?}");
            let next = first_decision(
                Retry::unbudgeted(config),
                now,
                CallOptions::default(),
                beyond,
                &(),
            );
            assert_eq!(next, Next::GiveUp(GiveUpReason::RetryAfterTooLong));
        }
    }
}

#[test]
fn a_post_answered_500_is_retried_by_default_and_not_when_set_idempotent_only() {
    // Issue 23: spec §3.2 retries a 500 (the server may have acted) for any call, so a POST
    // may run twice; one setting withholds the retry from calls not declared idempotent.
    let now = Instant::from_secs(60);
    let backoff = Backoff::new(
        Strategy::Exponential,
        Duration::from_millis(100),
        Duration::from_secs(2),
    )
    .unwrap();
    let default = RetryConfig::new(3, backoff).unwrap();
    let careful = default.with_uncertain_retry(UncertainRetry::IdempotentOnly);
    let post = CallOptions::default();
    let put = CallOptions::default().idempotent(true);
    let retried = Next::RetryAt(now + Duration::from_millis(200));
    for status in [500, 502, 599] {
        let failed = classify_status(status, None);
        assert_eq!(failed, Verdict::Uncertain, "{status}");
        let decide =
            |config, options| first_decision(Retry::unbudgeted(config), now, options, failed, &());
        assert_eq!(decide(default, post), retried, "POST {status}, default");
        assert_eq!(decide(default, put), retried, "PUT {status}, default");
        assert_eq!(
            decide(careful, post),
            Next::GiveUp(GiveUpReason::NotRetryable(resilix::VerdictKind::Uncertain)),
            "POST {status}, idempotent-only"
        );
        assert_eq!(
            decide(careful, put),
            retried,
            "PUT {status}, idempotent-only"
        );
    }
    // The setting is about 5xx only: a 504 (a timeout) of a POST is never retried, a 408
    // (the server did not act) always is.
    for config in [default, careful] {
        let decide = |status, options| {
            first_decision(
                Retry::unbudgeted(config),
                now,
                options,
                classify_status(status, None),
                &(),
            )
        };
        assert_eq!(
            decide(504, post),
            Next::GiveUp(GiveUpReason::NotRetryable(resilix::VerdictKind::Timeout))
        );
        assert_eq!(decide(408, post), retried);
    }
}
