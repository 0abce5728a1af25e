//! Every rule of `reconfigure.rs`, on a manual timeline.

extern crate std;

use core::time::Duration;
use std::string::ToString;
use std::vec::Vec;

use super::super::tests::{FAIL, OK, Rig, call, exact, opened, opened_with};
use super::*;
use crate::breaker::{CallRing, CircuitState, OpenBackoff, SlowCalls, TransitionCause};
use crate::observe::Event;
use crate::permit::{Permit, Policy};
use crate::rejection::RejectReason;
use crate::time::Instant;
use CircuitState::{Closed, HalfOpen, Open};

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

fn millis(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn reconfigured(rig: &Rig) -> Vec<PolicyKind> {
    rig.log
        .0
        .borrow()
        .iter()
        .filter_map(|e| match *e {
            Event::PolicyReconfigured { policy, .. } => Some(policy),
            _ => None,
        })
        .collect()
}

#[test]
fn new_thresholds_judge_the_counts_already_in_the_window_at_the_next_failure() {
    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config::DEFAULT)).unwrap();
    let mut env = rig.env(secs(1));
    for _ in 0..10 {
        call(&b, &mut env, FAIL).unwrap();
    }
    let fewer = exact(Config {
        minimum_calls: 10,
        ..Config::DEFAULT
    });
    b.reconfigure(fewer, &mut env).unwrap();
    assert_eq!(b.config(), fewer);
    assert_eq!(b.state(), Closed, "only an outcome opens the circuit");
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open, "11 failures of 11, at least 10 calls");
    assert_eq!(
        rig.log.transitions(),
        [(Closed, Open, TransitionCause::FailureRate)]
    );
    assert_eq!(reconfigured(&rig), [PolicyKind::Breaker]);
}

#[test]
fn a_permit_admitted_before_settles_under_the_new_slow_calls() {
    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config::DEFAULT)).unwrap();
    let mut env = rig.env(secs(1));
    let before = b.admit(&mut env).unwrap();
    let slow = exact(Config {
        minimum_calls: 1,
        slow_calls: Some(SlowCalls {
            slower_than: Duration::from_secs(1),
            above_percent: 0,
        }),
        ..Config::DEFAULT
    });
    b.reconfigure(slow, &mut env).unwrap();
    env.now = secs(3);
    before.settle(&OK, &mut env);
    assert_eq!(
        rig.log.transitions(),
        [(Closed, Open, TransitionCause::SlowCallRate)]
    );
}

#[test]
fn a_streak_already_longer_than_a_new_consecutive_threshold_opens_at_the_next_failure() {
    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config::DEFAULT)).unwrap();
    let mut env = rig.env(secs(1));
    for _ in 0..5 {
        call(&b, &mut env, FAIL).unwrap();
    }
    let streaks = exact(Config {
        failure_rate_above_percent: None,
        consecutive_failures: Some(3),
        ..Config::DEFAULT
    });
    b.reconfigure(streaks, &mut env).unwrap();
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(
        rig.log.transitions(),
        [(Closed, Open, TransitionCause::ConsecutiveFailures)]
    );
}

#[test]
fn an_open_circuit_keeps_its_end_while_it_fits_the_new_longest_wait() {
    // Opened at 1 s for 5 s: the end is 6 s.
    let mut rig = Rig::new();
    let b = opened(&mut rig);
    let mut env = rig.env(secs(2));
    let longer = exact(Config {
        open_wait: Duration::from_secs(8),
        ..Config::DEFAULT
    });
    b.reconfigure(longer, &mut env).unwrap();
    env.now = millis(5_999);
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(
        (r.reason(), r.retry_at()),
        (RejectReason::CircuitOpen, Some(secs(6))),
        "a raised wait does not lengthen the wait in progress"
    );
    env.now = secs(6);
    let probe = b.admit(&mut env).unwrap();
    assert!(probe.is_probe());
    // The probe fails: the next opening waits the new 8 s.
    probe.settle(&FAIL, &mut env);
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(r.retry_at(), Some(secs(14)));
}

#[test]
fn an_open_circuit_keeps_its_end_when_the_wait_is_lowered() {
    let mut rig = Rig::new();
    let b = opened(&mut rig);
    let mut env = rig.env(secs(2));
    let shorter = exact(Config {
        open_wait: Duration::from_secs(1),
        ..Config::DEFAULT
    });
    b.reconfigure(shorter, &mut env).unwrap();
    // 4 s remain of the old wait, more than the new one: still believed, still refused.
    for t in [2_000, 3_500, 5_999] {
        env.now = millis(t);
        assert_eq!(b.admit(&mut env).unwrap_err().retry_at(), Some(secs(6)));
    }
    env.now = secs(6);
    let probe = b.admit(&mut env).unwrap();
    probe.settle(&FAIL, &mut env);
    assert_eq!(
        b.admit(&mut env).unwrap_err().retry_at(),
        Some(secs(7)),
        "the re-open waits the new second"
    );
}

/// Three probes out of three; the circuit opened at 1 s.
fn probing(rig: &mut Rig, probes: u8, to_close: u8) -> Breaker {
    opened_with(
        rig,
        Config {
            half_open_probes: probes,
            probes_to_close: to_close,
            ..Config::DEFAULT
        },
    )
}

#[test]
fn probes_out_keep_their_places_when_the_probe_count_is_lowered() {
    let mut rig = Rig::new();
    let b = probing(&mut rig, 3, 3);
    let mut env = rig.env(secs(6));
    let probes: Vec<_> = (0..3).map(|_| b.admit(&mut env).unwrap()).collect();
    let one = exact(Config {
        half_open_probes: 1,
        probes_to_close: 1,
        ..Config::DEFAULT
    });
    b.reconfigure(one, &mut env).unwrap();
    assert_eq!(b.probes_in_flight(), 3);
    assert!(b.admit(&mut env).is_err(), "three taken, one allowed");
    let mut probes = probes.into_iter();
    probes.next().unwrap().settle(&OK, &mut env);
    assert_eq!(b.state(), Closed, "one success is enough now");
    // The other two are late.
    for p in probes {
        p.settle(&FAIL, &mut env);
    }
    assert_eq!(b.state(), Closed);
    assert_eq!(
        rig.log.transitions()[1..],
        [
            (Open, HalfOpen, TransitionCause::WaitElapsed),
            (HalfOpen, Closed, TransitionCause::ProbesSucceeded)
        ]
    );
}

#[test]
fn outcomes_already_past_the_new_lines_decide_at_the_next_call() {
    // Two probes of three succeeded, none is out; three were needed, now two are.
    let mut rig = Rig::new();
    let b = probing(&mut rig, 3, 3);
    let mut env = rig.env(secs(6));
    for _ in 0..2 {
        call(&b, &mut env, OK).unwrap();
    }
    assert_eq!((b.state(), b.probes_in_flight()), (HalfOpen, 0));
    let two = exact(Config {
        half_open_probes: 2,
        probes_to_close: 2,
        ..Config::DEFAULT
    });
    b.reconfigure(two, &mut env).unwrap();
    let permit = b.admit(&mut env).unwrap();
    assert!(!permit.is_probe(), "closed by the counts: a counted call");
    assert_eq!(b.state(), Closed);
    permit.settle(&OK, &mut env);

    // Two failures of three probes tolerated two; now one is tolerated.
    let mut rig = Rig::new();
    let b = probing(&mut rig, 3, 1);
    let mut env = rig.env(secs(6));
    for _ in 0..2 {
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(b.state(), HalfOpen);
    let strict = exact(Config {
        half_open_probes: 2,
        probes_to_close: 1,
        ..Config::DEFAULT
    });
    b.reconfigure(strict, &mut env).unwrap();
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(r.retry_at(), Some(secs(11)), "re-opened for the 5 s wait");
    assert_eq!(
        *rig.log.transitions().last().unwrap(),
        (HalfOpen, Open, TransitionCause::ProbesFailed)
    );
}

#[test]
fn a_half_open_period_keeps_its_end_and_the_next_one_has_the_new_bound() {
    let mut rig = Rig::new();
    let b = opened(&mut rig);
    let mut env = rig.env(secs(6));
    let hung = b.admit(&mut env).unwrap();
    let short = exact(Config {
        max_half_open_wait: Some(Duration::from_secs(10)),
        ..Config::DEFAULT
    });
    b.reconfigure(short, &mut env).unwrap();
    // The period began at 6 s for a minute: it still ends at 66 s.
    env.now = secs(66) - Duration::from_nanos(1);
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(
        (b.state(), r.retry_at()),
        (HalfOpen, None),
        "a probe is out"
    );
    env.now = secs(66);
    assert!(b.admit(&mut env).is_err(), "the period is over: re-opened");
    assert_eq!(b.state(), Open);
    hung.settle(&OK, &mut env);
    assert_eq!(b.state(), Open, "the hung probe's outcome is late");
    // The next period is bounded by 10 s. (The re-open waits 5 s from 66 s.)
    env.now = secs(71);
    let _hung_again = b.admit(&mut env).unwrap();
    env.now = secs(81) - Duration::from_nanos(1);
    assert!(b.admit(&mut env).is_err());
    assert_eq!(b.state(), HalfOpen, "the new bound is 10 s: not over yet");
    env.now = secs(81);
    assert!(b.admit(&mut env).is_err());
    assert_eq!(b.state(), Open, "the 10 s bound ran out at 81 s");
    assert_eq!(
        rig.log.transitions()[1..],
        [
            (Open, HalfOpen, TransitionCause::WaitElapsed),
            (HalfOpen, Open, TransitionCause::ProbesFailed),
            (Open, HalfOpen, TransitionCause::WaitElapsed),
            (HalfOpen, Open, TransitionCause::ProbesFailed)
        ]
    );
}

#[test]
fn what_the_timers_or_the_window_cannot_hold_is_refused_and_changes_nothing() {
    let mut rig = Rig::new();
    let b = Breaker::new(Config::DEFAULT).unwrap();
    let mut env = rig.env(secs(1));
    let refuse = |c: Config, e: BreakerReconfigureError, env: &mut Env<'_, _, _>| {
        assert_eq!(b.reconfigure(c, env), Err(e), "{c:?}");
        assert_eq!(b.config(), Config::DEFAULT);
    };
    let fixed = |field| BreakerReconfigureError::Fixed { field };
    // 5 s at 4 ns a tick: the open timer covers just under 2^31 × 4 ns = 8.59 s.
    let at = |ns| Config {
        open_wait: Duration::from_nanos(ns),
        ..Config::DEFAULT
    };
    refuse(at((1 << 33) + 1), fixed("open_wait"), &mut env);
    b.reconfigure(at((1 << 33) - 1), &mut env).unwrap();
    b.reconfigure(Config::DEFAULT, &mut env).unwrap();
    let backoff = Config {
        open_backoff: Some(OpenBackoff {
            multiplier_percent: 200,
            max_wait: Duration::from_secs(300),
        }),
        ..Config::DEFAULT
    };
    refuse(backoff, fixed("open_backoff.max_wait"), &mut env);
    let forever = Config {
        max_half_open_wait: None,
        ..Config::DEFAULT
    };
    refuse(forever, fixed("max_half_open_wait"), &mut env);
    let hour = Config {
        max_half_open_wait: Some(Duration::from_secs(3600)),
        ..Config::DEFAULT
    };
    refuse(hour, fixed("max_half_open_wait"), &mut env);
    let bad = Config {
        minimum_calls: 0,
        ..Config::DEFAULT
    };
    refuse(
        bad,
        BreakerReconfigureError::Config(ConfigError::MinimumCallsZero),
        &mut env,
    );
    // A breaker built without a maximum half-open wait cannot gain one.
    let b = Breaker::new(forever).unwrap();
    assert_eq!(
        b.reconfigure(Config::DEFAULT, &mut env),
        Err(fixed("max_half_open_wait"))
    );
    // A count window must still hold the minimum number of calls.
    let ring: Breaker<CallRing<2>> = Breaker::count_based(Config::DEFAULT, 30).unwrap();
    let more = Config {
        minimum_calls: 31,
        ..Config::DEFAULT
    };
    assert_eq!(
        ring.reconfigure(more, &mut env),
        Err(BreakerReconfigureError::Config(
            ConfigError::WindowBelowMinimumCalls {
                calls: 30,
                minimum_calls: 31
            }
        ))
    );
    // A window of exactly the minimum is enough (as at construction).
    let exactly = Config {
        minimum_calls: 30,
        ..Config::DEFAULT
    };
    assert_eq!(ring.check_reconfigure(&exactly), Ok(()));
    assert_eq!(reconfigured(&rig).len(), 2, "only the two accepted changes");
}

#[test]
fn a_second_writer_is_busy() {
    let mut rig = Rig::new();
    let b = Breaker::new(Config::DEFAULT).unwrap();
    let mut env = rig.env(secs(1));
    let held = b.settings.write().unwrap();
    let other = Config {
        minimum_calls: 5,
        ..Config::DEFAULT
    };
    assert_eq!(
        b.reconfigure(other, &mut env),
        Err(BreakerReconfigureError::Busy)
    );
    drop(held);
    b.reconfigure(other, &mut env).unwrap();
    assert_eq!(b.config().minimum_calls, 5);
}

#[test]
fn every_error_says_what_to_do() {
    let fixed = BreakerReconfigureError::Fixed { field: "open_wait" };
    assert!(fixed.to_string().contains("open_wait"));
    assert!(fixed.to_string().ends_with("build a new one with it"));
    assert!(
        BreakerReconfigureError::Busy
            .to_string()
            .ends_with("try again")
    );
    let e = BreakerReconfigureError::Config(ConfigError::OpenWaitZero);
    assert!(e.to_string().contains("open wait is 0"));
}
