//! The front end's flat error: every shape of the retry loop's nested result lands in one
//! variant, the upstream's own error stays the caller's, and the text names the policy and
//! the wait (issue 14, point 8).

use core::time::Duration;

use resilix::Error;
use resilix::execute::{Attempted, ExecuteError};
use resilix::retry::GiveUpReason;
use resilix::time::Instant;
use resilix::{RejectReason, Rejection, VerdictKind};

type Nested = Result<Result<u16, &'static str>, ExecuteError<Result<u16, &'static str>>>;

const NOW: Instant = Instant::from_secs(100);

fn flat(nested: Nested) -> Result<u16, Error<u16, &'static str>> {
    Error::flatten(nested, NOW)
}

#[test]
fn successes_and_answers() {
    assert_eq!(flat(Ok(Ok(200))), Ok(200));
    let answered = flat(Ok(Err("404 not found"))).unwrap_err();
    assert_eq!(
        answered,
        Error::Upstream {
            error: "404 not found",
            gave_up: None
        }
    );
    assert_eq!(answered.upstream(), Some(&"404 not found"));
    assert_eq!(
        answered.degradation(),
        None,
        "an answer is not a degradation"
    );
}

#[test]
fn gave_up_after_an_error_a_failed_output_or_a_timeout() {
    let reason = GiveUpReason::AttemptsExhausted { attempts: 3 };
    let gave_up = |last| ExecuteError::GaveUp {
        reason,
        attempts: 3,
        last,
    };
    assert_eq!(
        flat(Err(gave_up(Attempted::Output(Err("reset"))))),
        Err(Error::Upstream {
            error: "reset",
            gave_up: Some(reason)
        })
    );
    let failed = flat(Err(gave_up(Attempted::Output(Ok(503))))).unwrap_err();
    assert_eq!(
        failed,
        Error::Failed {
            output: 503,
            reason,
            attempts: 3
        }
    );
    assert_eq!(failed.attempts(), Some(3));
    assert_eq!(
        flat(Err(gave_up(Attempted::TimedOut))),
        Err(Error::TimedOut {
            reason,
            attempts: 3
        })
    );
}

#[test]
fn a_budget_refusal_is_a_rejection_with_the_last_error() {
    let out = flat(Err(ExecuteError::GaveUp {
        reason: GiveUpReason::BudgetExceeded,
        attempts: 1,
        last: Attempted::Output(Err("reset")),
    }))
    .unwrap_err();
    assert_eq!(
        out.rejection().map(|r| r.reason()),
        Some(RejectReason::BudgetExceeded)
    );
    assert_eq!(out.upstream(), Some(&"reset"));
    let text = out.to_string();
    assert!(text.contains("retry budget said no"), "{text}");
}

#[test]
fn a_refusal_says_which_policy_and_how_long_to_wait() {
    let at = NOW + Duration::from_millis(1_500);
    let refused = flat(Err(ExecuteError::Refused {
        rejection: Rejection::until(RejectReason::RateLimited, at),
        attempts: 0,
        last: None,
    }))
    .unwrap_err();
    assert_eq!(refused.retry_in(), Some(Duration::from_millis(1_500)));
    let text = refused.to_string();
    assert!(
        text.starts_with("refused by the rate-limited policy"),
        "{text}"
    );
    assert!(text.contains("admits again in 1.5s"), "{text}");
    // A retry-at already past is a wait of zero, not a panic.
    let late = Error::<u16, &str>::from_stopped(
        ExecuteError::Refused {
            rejection: Rejection::until(RejectReason::CircuitOpen, NOW),
            attempts: 2,
            last: Some(Attempted::Output(Err("reset"))),
        },
        NOW + Duration::from_secs(1),
    );
    assert_eq!(late.retry_in(), Some(Duration::ZERO));
    assert!(matches!(
        late,
        Error::Refused {
            last_error: Some("reset"),
            ..
        }
    ));
}

#[test]
fn the_deadline_keeps_the_last_error() {
    let out = flat(Err(ExecuteError::DeadlinePassed {
        attempts: 2,
        last: Some(Attempted::Output(Err("reset"))),
    }))
    .unwrap_err();
    assert_eq!(
        out,
        Error::DeadlinePassed {
            attempts: 2,
            last_error: Some("reset")
        }
    );
    assert!(
        out.to_string()
            .contains("deadline passed after 2 attempt(s)")
    );
    let timeout = flat(Err(ExecuteError::GaveUp {
        reason: GiveUpReason::NotRetryable(VerdictKind::Timeout),
        attempts: 1,
        last: Attempted::TimedOut,
    }))
    .unwrap_err();
    assert!(
        timeout
            .to_string()
            .contains("declare it so if running it twice is safe")
    );
}

/// Each timeout's advice is true in the case that prints it: "declare the call idempotent"
/// only when that is why the timeout was not retried.
#[test]
fn a_timeouts_advice_fits_why_it_was_not_retried() {
    let text = |reason: GiveUpReason| {
        flat(Err(ExecuteError::GaveUp {
            reason,
            attempts: 3,
            last: Attempted::TimedOut,
        }))
        .unwrap_err()
        .to_string()
    };
    let not_idempotent = text(GiveUpReason::NotRetryable(VerdictKind::Timeout));
    assert!(not_idempotent.contains("idempotent"), "{not_idempotent}");
    for (reason, advice) in [
        (
            GiveUpReason::AttemptsExhausted { attempts: 3 },
            "allow more attempts",
        ),
        (GiveUpReason::DeadlineWouldPass, "a later deadline"),
        (GiveUpReason::BudgetExceeded, "retry budget refused"),
    ] {
        let t = text(reason);
        assert!(t.contains(advice), "{reason:?}: {t}");
        assert!(
            !t.contains("idempotent"),
            "{reason:?}: the call was retried, so idempotence is not the advice: {t}"
        );
    }
}

/// A call refused while the half-open probe is out is told no wait: the probe may answer in
/// milliseconds, and a wait to the end of the half-open period (a minute by default) passed on
/// as `Retry-After` would send the caller's own clients away for that long.
#[test]
fn a_refusal_during_the_half_open_probe_names_no_wait() {
    use resilix::Verdict;
    use resilix::breaker::{Breaker, CircuitState, Config};
    use resilix::permit::{Env, Permit, Policy};
    use resilix::random::SeededRandom;

    let breaker = Breaker::new(Config {
        minimum_calls: 1,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    })
    .unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    breaker
        .admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    assert_eq!(breaker.state(), CircuitState::Open);
    // Open: the refusal knows when the probe goes out, and says so.
    let open = breaker.admit(&mut env).unwrap_err();
    let text = Error::<u16, &str>::flatten(
        Err(ExecuteError::Refused {
            rejection: open,
            attempts: 0,
            last: None,
        }),
        env.now,
    )
    .unwrap_err()
    .to_string();
    assert!(text.contains("admits again in 5s"), "{text}");
    // Half-open with the probe out: refused, with no wait to honour.
    env.now = open.retry_at().unwrap();
    let probe = breaker.admit(&mut env).unwrap();
    let during = breaker.admit(&mut env).unwrap_err();
    assert_eq!(during.reason(), RejectReason::CircuitOpen);
    let flat = Error::<u16, &str>::flatten(
        Err(ExecuteError::Refused {
            rejection: during,
            attempts: 0,
            last: None,
        }),
        env.now,
    )
    .unwrap_err();
    assert_eq!(flat.retry_in(), None);
    assert!(!flat.to_string().contains("admits again"), "{flat}");
    probe.settle(&Verdict::Success, &mut env);
    assert!(
        breaker.admit(&mut env).is_ok(),
        "the probe's answer closed it"
    );
}
