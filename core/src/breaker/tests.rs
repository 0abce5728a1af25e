//! Every transition and edge of the breaker, on a manual timeline.

extern crate std;

use core::cell::RefCell;
use core::time::Duration;
use std::vec::Vec;

use super::*;
use crate::random::SeededRandom;

#[derive(Default)]
pub(super) struct Log(pub(super) RefCell<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

impl Log {
    pub(super) fn transitions(&self) -> Vec<(CircuitState, CircuitState, TransitionCause)> {
        self.0
            .borrow()
            .iter()
            .filter_map(|e| match *e {
                Event::CircuitTransition {
                    from, to, cause, ..
                } => Some((from, to, cause)),
                _ => None,
            })
            .collect()
    }
}

pub(super) struct Rig {
    rng: SeededRandom,
    pub(super) log: Log,
}

impl Rig {
    pub(super) fn new() -> Self {
        Rig {
            rng: SeededRandom::new(42),
            log: Log::default(),
        }
    }
    pub(super) fn env(&mut self, now: Instant) -> Env<'_, SeededRandom, Log> {
        Env::new(now, &mut self.rng).with_observer(&self.log)
    }
}

pub(super) const FAIL: Verdict = Verdict::Transient;
pub(super) const OK: Verdict = Verdict::Success;
use CircuitState::{Closed, Disabled, ForcedOpen, HalfOpen, Open};

pub(super) fn call<W: OutcomeWindow>(
    b: &Breaker<W>,
    env: &mut Env<'_, SeededRandom, Log>,
    verdict: Verdict,
) -> Result<(), Rejection> {
    let permit = b.admit(env)?;
    permit.settle(&verdict, env);
    Ok(())
}

pub(super) fn exact(config: Config) -> Config {
    Config {
        open_jitter_percent: 0,
        ..config
    }
}

/// A default breaker (min 20, above 50 %, 5 s wait, no jitter) opened at t = 1 s.
pub(super) fn opened(rig: &mut Rig) -> Breaker {
    opened_with(rig, Config::DEFAULT)
}

/// A breaker with `config` (no jitter) opened at t = 1 s by twenty failures.
pub(super) fn opened_with(rig: &mut Rig, config: Config) -> Breaker {
    let b = Breaker::new(exact(config)).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    for _ in 0..20 {
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(b.state(), Open);
    b
}

#[test]
fn closed_trips_only_above_half_with_twenty_calls() {
    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config::DEFAULT)).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    for _ in 0..19 {
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(b.state(), Closed, "19 failures: minimum calls not reached");
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open, "the 20th failure: 100 % of 20");
    assert_eq!(
        rig.log.transitions(),
        [(Closed, Open, TransitionCause::FailureRate)]
    );

    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config::DEFAULT)).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    for i in 0..20 {
        call(&b, &mut env, if i % 2 == 0 { FAIL } else { OK }).unwrap();
    }
    assert_eq!(b.state(), Closed, "exactly half is not above half");
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open, "11 of 21 is above half");
}

#[test]
fn verdict_accounting_answered_succeeds_rejected_and_dropped_count_nothing() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 2,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    call(&b, &mut env, Verdict::Answered).unwrap();
    call(&b, &mut env, Verdict::Answered).unwrap();
    // 2 failures of 4 is not above half; the rejected and dropped calls must not count.
    for _ in 0..10 {
        call(&b, &mut env, Verdict::Rejected(RejectReason::BulkheadFull)).unwrap();
        drop(b.admit(&mut env).unwrap());
    }
    call(&b, &mut env, Verdict::Overload { retry_after: None }).unwrap();
    call(&b, &mut env, Verdict::Timeout).unwrap();
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open, "3 of 5");
}

#[test]
fn open_refuses_with_the_next_probe_instant_then_one_probe_closes() {
    let mut rig = Rig::new();
    let b = opened(&mut rig);
    let mut env = rig.env(Instant::from_secs(3));
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(r.reason(), RejectReason::CircuitOpen);
    assert_eq!(r.retry_at(), Some(Instant::from_secs(6)));
    env.now = Instant::from_secs(6) - Duration::from_nanos(1);
    assert!(b.admit(&mut env).is_err(), "one nanosecond early");
    env.now = Instant::from_secs(6);
    let probe = b.admit(&mut env).unwrap();
    assert!(probe.is_probe());
    assert_eq!((b.state(), b.probes_in_flight()), (HalfOpen, 1));
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(
        (r.reason(), r.retry_at()),
        (RejectReason::CircuitOpen, None),
        "refused while the probe is out, with no retry-at: the probe may answer at any moment \
         (the 60 s maximum half-open wait is only its worst case)"
    );
    probe.settle(&OK, &mut env);
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Closed, "the window was cleared on closing");
    assert_eq!(
        rig.log.transitions(),
        [
            (Closed, Open, TransitionCause::FailureRate),
            (Open, HalfOpen, TransitionCause::WaitElapsed),
            (HalfOpen, Closed, TransitionCause::ProbesSucceeded),
        ]
    );
}

#[test]
fn a_failed_probe_reopens_for_another_wait() {
    let mut rig = Rig::new();
    let b = opened(&mut rig);
    let mut env = rig.env(Instant::from_secs(6));
    call(&b, &mut env, Verdict::Timeout).unwrap();
    assert_eq!(b.state(), Open);
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(r.retry_at(), Some(Instant::from_secs(11)));
    assert_eq!(
        rig.log.transitions()[2],
        (HalfOpen, Open, TransitionCause::ProbesFailed)
    );
}

#[test]
fn a_slow_successful_probe_counts_as_failed() {
    let mut rig = Rig::new();
    let slow = SlowCalls {
        slower_than: Duration::from_secs(1),
        above_percent: 90,
    };
    let config = exact(Config {
        minimum_calls: 1,
        slow_calls: Some(slow),
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(5);
    let probe = b.admit(&mut env).unwrap();
    env.now = Instant::from_secs(7);
    probe.settle(&OK, &mut env);
    assert_eq!(b.state(), Open);
}

#[test]
fn exactly_n_probes_and_a_dropped_probe_frees_its_slot() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 1,
        half_open_probes: 3,
        probes_to_close: 3,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(5);
    let p1 = b.admit(&mut env).unwrap();
    let p2 = b.admit(&mut env).unwrap();
    let p3 = b.admit(&mut env).unwrap();
    assert!(b.admit(&mut env).is_err(), "a fourth is refused");
    drop(p2);
    assert_eq!(b.probes_in_flight(), 2);
    let p4 = b
        .admit(&mut env)
        .expect("the dropped probe's slot is free again");
    assert!(b.admit(&mut env).is_err());
    p1.settle(&OK, &mut env);
    assert!(
        b.admit(&mut env).is_err(),
        "a settled probe still counts toward N"
    );
    p3.settle(&Verdict::Rejected(RejectReason::RateLimited), &mut env);
    assert_eq!(b.state(), HalfOpen, "a rejected probe is a dropped probe");
    let p5 = b.admit(&mut env).unwrap();
    p4.settle(&OK, &mut env);
    assert_eq!(b.state(), HalfOpen);
    p5.settle(&Verdict::Answered, &mut env);
    assert_eq!(b.state(), Closed, "three successes");
}

#[test]
fn all_probes_dropped_never_leaves_it_stuck_half_open() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 1,
        half_open_probes: 2,
        probes_to_close: 2,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(5);
    for _ in 0..100 {
        let a = b.admit(&mut env).unwrap();
        let c = b.admit(&mut env).unwrap();
        assert!(b.admit(&mut env).is_err());
        drop(a);
        drop(c);
        assert_eq!(b.probes_in_flight(), 0);
    }
    call(&b, &mut env, OK).unwrap();
    call(&b, &mut env, OK).unwrap();
    assert_eq!(b.state(), Closed);
}

#[test]
fn two_of_three_probes_close_and_two_failures_reopen_early() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 1,
        half_open_probes: 3,
        probes_to_close: 2,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(5);
    let (p1, p2, p3) = (
        b.admit(&mut env).unwrap(),
        b.admit(&mut env).unwrap(),
        b.admit(&mut env).unwrap(),
    );
    p1.settle(&FAIL, &mut env);
    assert_eq!(b.state(), HalfOpen);
    p2.settle(&FAIL, &mut env);
    assert_eq!(
        b.state(),
        Open,
        "two successes out of three are no longer possible"
    );
    p3.settle(&OK, &mut env);
    assert_eq!(b.state(), Open, "the third probe is late");
}

#[test]
fn a_late_outcome_from_an_earlier_epoch_is_ignored() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 1,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    // A closed-state call admitted before the trip, settling as a failure after re-closing.
    let old = b.admit(&mut env).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(5);
    call(&b, &mut env, OK).unwrap(); // the probe closes
    assert_eq!(b.state(), Closed);
    old.settle(&FAIL, &mut env);
    assert_eq!(
        b.state(),
        Closed,
        "a failure from the old closed epoch does not trip the new one"
    );

    // A probe from an earlier half-open settling during a later half-open.
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(10);
    let stale_probe = b.admit(&mut env).unwrap();
    b.force_open(&mut env);
    b.reset(&mut env);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(15);
    let probe = b.admit(&mut env).unwrap();
    stale_probe.settle(&OK, &mut env);
    assert_eq!(
        (b.state(), b.probes_in_flight()),
        (HalfOpen, 1),
        "the stale success neither closes nor frees"
    );
    let stale_again = b.admit(&mut env);
    assert!(stale_again.is_err());
    probe.settle(&FAIL, &mut env);
    assert_eq!(b.state(), Open);
}

#[test]
fn a_late_drop_does_not_free_a_later_probe_slot() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 1,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(5);
    let stale = b.admit(&mut env).unwrap();
    b.reset(&mut env);
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(10);
    let _probe = b.admit(&mut env).unwrap();
    drop(stale);
    assert_eq!(b.probes_in_flight(), 1);
    assert!(b.admit(&mut env).is_err(), "still exactly one probe");
}

#[test]
fn operator_states_and_their_events() {
    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config {
        minimum_calls: 1,
        ..Config::DEFAULT
    }))
    .unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    b.force_open(&mut env);
    b.force_open(&mut env); // already: no event
    let r = b.admit(&mut env).unwrap_err();
    assert_eq!(
        (r.reason(), r.retry_at()),
        (RejectReason::CircuitOpen, None)
    );
    env.now = Instant::MAX;
    assert!(b.admit(&mut env).is_err(), "forced open ignores time");
    b.disable(&mut env);
    b.disable(&mut env);
    for _ in 0..100 {
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(b.state(), Disabled, "disabled counts nothing");
    b.reset(&mut env);
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, OK).unwrap();
    assert_eq!(
        b.state(),
        Closed,
        "nothing from the disabled period was counted"
    );
    b.reset(&mut env);
    let op = TransitionCause::Operator;
    assert_eq!(
        rig.log.transitions(),
        [
            (Closed, ForcedOpen, op),
            (ForcedOpen, Disabled, op),
            (Disabled, Closed, op),
            (Closed, Closed, op)
        ]
    );
}

#[test]
fn reset_forgets_the_window_and_the_open_wait_growth() {
    let mut rig = Rig::new();
    let backoff = OpenBackoff {
        multiplier_percent: 200,
        max_wait: Duration::from_secs(60),
    };
    let config = exact(Config {
        minimum_calls: 1,
        open_backoff: Some(backoff),
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    let mut t = 0;
    for expected in [5, 10, 20, 40, 60, 60] {
        let r = b.admit(&mut env).unwrap_err();
        assert_eq!(r.retry_at(), Some(Instant::from_secs(t + expected)));
        t += expected;
        env.now = Instant::from_secs(t);
        call(&b, &mut env, FAIL).unwrap(); // the probe fails: re-open, longer
    }
    // A successful probe resets the growth.
    t += 60;
    env.now = Instant::from_secs(t);
    call(&b, &mut env, OK).unwrap();
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(
        b.admit(&mut env).unwrap_err().retry_at(),
        Some(Instant::from_secs(t + 5))
    );
    // And so does the operator.
    env.now = Instant::from_secs(t + 5);
    call(&b, &mut env, FAIL).unwrap();
    b.reset(&mut env);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(
        b.admit(&mut env).unwrap_err().retry_at(),
        Some(Instant::from_secs(t + 10)),
        "after reset the first open waits the base 5 s"
    );
}

#[test]
fn jitter_spreads_a_fleet_and_a_seed_reproduces_it() {
    let config = Config {
        minimum_calls: 1,
        open_jitter_percent: 50,
        ..Config::DEFAULT
    };
    let probe_at = |seed| {
        let b = Breaker::new(config).unwrap();
        let mut rng = SeededRandom::new(seed);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        b.admit(&mut env).unwrap().settle(&FAIL, &mut env);
        b.admit(&mut env).unwrap_err().retry_at().unwrap()
    };
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let at = probe_at(seed);
        assert!(
            at >= Instant::from_millis(2_500) && at <= Instant::from_secs(5),
            "{at:?}"
        );
        assert_eq!(at, probe_at(seed));
        distinct.insert(at);
    }
    assert!(distinct.len() > 10, "a fleet of 20 does not probe in step");
}

#[test]
fn time_edges_zero_backwards_a_year_and_the_end_of_time() {
    // Opened at zero: the window and wait work from the origin.
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 1,
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(
        b.admit(&mut env).unwrap_err().retry_at(),
        Some(Instant::from_secs(5))
    );

    // Backwards: before the open began. The probe is let through early, never held forever.
    let mut rig = Rig::new();
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::from_secs(100));
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::from_secs(99);
    assert!(
        b.admit(&mut env).unwrap().is_probe(),
        "backwards time probes early"
    );
    // Further back than the tick word's circle (2^32 ticks of 4 ns = 17 s here): the ends are
    // compared as full counts, so nothing aliases and every backwards reading probes early.
    for back in [50u64, 10, 0] {
        let mut rig = Rig::new();
        let b = Breaker::new(config).unwrap();
        let mut env = rig.env(Instant::from_secs(100));
        call(&b, &mut env, FAIL).unwrap();
        env.now = Instant::from_secs(back);
        assert!(b.admit(&mut env).unwrap().is_probe(), "back to {back} s");
    }

    // A year later, and a whole number of circles later: the wait is long over.
    for later in [365 * 86_400, 3 * 17_179_869_184 / 1_000_000_000, 17] {
        let mut rig = Rig::new();
        let b = Breaker::new(config).unwrap();
        let mut env = rig.env(Instant::from_secs(100));
        call(&b, &mut env, FAIL).unwrap();
        env.now = Instant::from_secs(100 + later);
        let p = b.admit(&mut env).unwrap();
        p.settle(&OK, &mut env);
        assert_eq!(b.state(), Closed, "{later} s later");
    }

    // Opened just before the end of time: the wait ends at the end, not past it.
    let mut rig = Rig::new();
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::MAX - Duration::from_nanos(240));
    call(&b, &mut env, FAIL).unwrap();
    let r = b.admit(&mut env).unwrap_err();
    // The start of the timeline's last 4 ns tick, where the saturated end lies.
    let last_tick = Instant::MAX - Duration::from_nanos(3);
    assert_eq!(r.retry_at(), Some(last_tick));
    env.now = last_tick - Duration::from_nanos(1);
    assert!(b.admit(&mut env).is_err(), "still open a tick before");
    env.now = Instant::MAX;
    assert!(
        b.admit(&mut env).unwrap().is_probe(),
        "time cannot pass the end: probe there"
    );

    // Opened long ago, then the clock jumps to the end: the wait is long over.
    let mut rig = Rig::new();
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::MAX;
    assert!(b.admit(&mut env).is_ok());

    // At the end of time, then back to zero: no panic.
    let mut rig = Rig::new();
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::MAX);
    call(&b, &mut env, FAIL).unwrap();
    assert!(
        b.admit(&mut env).is_ok(),
        "opened at the end of time, probes at once"
    );
    env.now = Instant::ZERO;
    b.reset(&mut env);
    env.now = Instant::MAX;
    call(&b, &mut env, FAIL).unwrap();
    env.now = Instant::ZERO;
    // From the end of time back to zero, further back than the eras can follow: every timer
    // reads as over (time went backwards), so the breaker probes at once, a half-open period
    // expires at the next call, and a probe that succeeds closes it. Never stuck, no panic.
    if let Err(r) = b.admit(&mut env) {
        assert!(r.retry_at().unwrap() <= Instant::from_secs(5), "{r:?}");
    }
    let mut closed_after = None;
    for i in 0..3 {
        match call(&b, &mut env, OK) {
            Ok(()) if b.state() == Closed => {
                closed_after = Some(i);
                break;
            }
            Ok(()) => {}
            Err(r) => assert!(r.retry_at().unwrap() <= Instant::from_secs(5), "{r:?}"),
        }
    }
    assert!(closed_after.is_some(), "stuck in {:?}", b.state());
}

#[test]
fn failures_spread_beyond_the_window_never_trip() {
    let mut rig = Rig::new();
    let b = Breaker::new(exact(Config::DEFAULT)).unwrap(); // 10 s window
    let mut env = rig.env(Instant::ZERO);
    for i in 0..200u64 {
        env.now = Instant::from_secs(i);
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(
        b.state(),
        Closed,
        "one failure a second never puts 20 in a 10 s window"
    );
    // A window that has fully expired holds nothing: 19 more fail at once, still below 20.
    env.now = Instant::from_secs(1_000);
    for _ in 0..19 {
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open);
}

#[test]
fn count_window_trips_on_the_last_n_calls() {
    let mut rig = Rig::new();
    let config = exact(Config {
        minimum_calls: 10,
        ..Config::DEFAULT
    });
    let b: Breaker<CallRing<1>> = Breaker::count_based(config, 10).unwrap();
    let mut env = rig.env(Instant::ZERO);
    for _ in 0..5 {
        call(&b, &mut env, FAIL).unwrap();
    }
    for _ in 0..100 {
        call(&b, &mut env, OK).unwrap();
    }
    for _ in 0..5 {
        call(&b, &mut env, FAIL).unwrap();
    }
    assert_eq!(b.state(), Closed, "5 of the last 10");
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open, "6 of the last 10");
    env.now = Instant::from_secs(5);
    call(&b, &mut env, OK).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Closed, "the ring was cleared on closing");
}

#[test]
fn count_window_edges_are_validated() {
    let c = Config {
        minimum_calls: 1,
        ..Config::DEFAULT
    };
    assert_eq!(
        Breaker::<CallRing<1>>::count_based(c, 0).err(),
        Some(ConfigError::WindowEmpty)
    );
    assert!(Breaker::<CallRing<1>>::count_based(c, 1).is_ok());
    assert!(Breaker::<CallRing<1>>::count_based(c, 16).is_ok());
    assert_eq!(
        Breaker::<CallRing<1>>::count_based(c, 17).err(),
        Some(ConfigError::WindowAboveCapacity {
            calls: 17,
            capacity: 16
        })
    );
    assert_eq!(
        Breaker::<CallRing<1>>::count_based(Config::DEFAULT, 16).err(),
        Some(ConfigError::WindowBelowMinimumCalls {
            calls: 16,
            minimum_calls: 20
        })
    );
    let consecutive_only = Config {
        failure_rate_above_percent: None,
        consecutive_failures: Some(3),
        ..Config::DEFAULT
    };
    assert!(Breaker::<CallRing<1>>::count_based(consecutive_only, 1).is_ok());
    assert_eq!(
        Breaker::<CallRing<0>>::count_based(c, 1).err(),
        Some(ConfigError::WindowAboveCapacity {
            calls: 1,
            capacity: 0
        })
    );
    assert_eq!(
        Breaker::<TimeBuckets<0>>::time_based(c, DEFAULT_WINDOW).err(),
        Some(ConfigError::WindowEmpty)
    );
    assert_eq!(
        Breaker::<TimeBuckets<4>>::time_based(c, Duration::ZERO).err(),
        Some(ConfigError::WindowEmpty)
    );
    // 8 ns per bucket at the least: 31 ns in 4 buckets is refused, 32 ns is not.
    assert_eq!(
        Breaker::<TimeBuckets<4>>::time_based(c, Duration::from_nanos(31)).err(),
        Some(ConfigError::WindowShorterThanBuckets)
    );
    assert!(Breaker::<TimeBuckets<4>>::time_based(c, Duration::from_nanos(32)).is_ok());

    assert_eq!(
        Breaker::new(Config {
            half_open_probes: 0,
            ..c
        })
        .err(),
        Some(ConfigError::ProbesOutOfRange(0))
    );
}

#[test]
fn consecutive_failures_trip_with_few_calls_and_a_success_breaks_the_run() {
    let mut rig = Rig::new();
    let config = exact(Config {
        consecutive_failures: Some(3),
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::ZERO);
    call(&b, &mut env, FAIL).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    call(&b, &mut env, OK).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Closed);
    call(&b, &mut env, Verdict::Rejected(RejectReason::Throttled)).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open, "a rejection does not break the run");
    assert_eq!(
        rig.log.transitions()[0].2,
        TransitionCause::ConsecutiveFailures
    );
}

#[test]
fn slow_call_rate_trips_even_when_calls_succeed() {
    let mut rig = Rig::new();
    let slow = SlowCalls {
        slower_than: Duration::from_millis(500),
        above_percent: 50,
    };
    let config = exact(Config {
        failure_rate_above_percent: None,
        minimum_calls: 4,
        slow_calls: Some(slow),
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    let slow_call = |env: &mut Env<'_, SeededRandom, Log>, millis| {
        let p = b.admit(env).unwrap();
        env.now = env.now + Duration::from_millis(millis);
        p.settle(&OK, env);
    };
    slow_call(&mut env, 500);
    slow_call(&mut env, 10);
    slow_call(&mut env, 499);
    slow_call(&mut env, 600);
    assert_eq!(b.state(), Closed, "2 of 4 slow is not above half");
    slow_call(&mut env, 700);
    assert_eq!(b.state(), Open);
    assert_eq!(rig.log.transitions()[0].2, TransitionCause::SlowCallRate);
}

#[test]
fn backwards_time_never_makes_a_call_slow() {
    let mut rig = Rig::new();
    let slow = SlowCalls {
        slower_than: Duration::from_millis(1),
        above_percent: 0,
    };
    let config = exact(Config {
        failure_rate_above_percent: None,
        minimum_calls: 1,
        slow_calls: Some(slow),
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::from_secs(10));
    let p = b.admit(&mut env).unwrap();
    env.now = Instant::from_secs(1);
    p.settle(&OK, &mut env);
    assert_eq!(b.state(), Closed);
}

#[test]
fn every_transition_emits_exactly_one_event() {
    let mut rig = Rig::new();
    let b = opened(&mut rig);
    let mut env = rig.env(Instant::from_secs(6));
    let p = b.admit(&mut env).unwrap();
    assert!(b.admit(&mut env).is_err());
    p.settle(&OK, &mut env);
    for _ in 0..5 {
        call(&b, &mut env, OK).unwrap();
    }
    assert_eq!(rig.log.transitions().len(), 3);
    assert!(
        rig.log.0.borrow().iter().all(|e| match e {
            Event::CircuitTransition { at, .. } => *at <= Instant::from_secs(6),
            _ => false,
        }),
        "the breaker emits only transitions, stamped with the caller's time"
    );
}

#[test]
fn it_is_send_sync_and_static() {
    fn shared<T: Sync + Send>() {}
    shared::<Breaker>();
    shared::<Breaker<CallRing<4>>>();
    static B: Breaker = match Breaker::new(Config::DEFAULT) {
        Ok(b) => b,
        Err(_) => panic!(),
    };
    assert_eq!(B.state(), Closed);
    assert_eq!(B.config().minimum_calls, 20);
}

#[test]
fn a_slow_success_ends_a_failure_streak_as_a_fast_one_does() {
    let mut rig = Rig::new();
    let slow = SlowCalls {
        slower_than: Duration::from_millis(500),
        above_percent: 99,
    };
    let config = exact(Config {
        consecutive_failures: Some(3),
        slow_calls: Some(slow),
        ..Config::DEFAULT
    });
    let b = Breaker::new(config).unwrap();
    let mut env = rig.env(Instant::from_secs(1));
    call(&b, &mut env, FAIL).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    let p = b.admit(&mut env).unwrap();
    env.now = env.now + Duration::from_millis(600);
    p.settle(&OK, &mut env);
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(
        b.state(),
        Closed,
        "the slow success broke the run: one failure since"
    );
    call(&b, &mut env, FAIL).unwrap();
    call(&b, &mut env, FAIL).unwrap();
    assert_eq!(b.state(), Open);
    assert_eq!(
        rig.log.transitions()[0].2,
        TransitionCause::ConsecutiveFailures
    );
}

#[test]
fn without_a_half_open_bound_a_hung_probe_holds_half_open_however_long() {
    let mut rig = Rig::new();
    let b = opened_with(
        &mut rig,
        Config {
            max_half_open_wait: None,
            half_open_probes: 1,
            probes_to_close: 1,
            ..Config::DEFAULT
        },
    );
    let mut env = rig.env(Instant::from_secs(6));
    let hung = b.admit(&mut env).unwrap();
    assert_eq!(b.state(), HalfOpen);
    for later in [
        Duration::from_secs(61),
        Duration::from_secs(3_600 * 24 * 365),
    ] {
        env.now = Instant::from_secs(6) + later;
        let refused = b.admit(&mut env).unwrap_err();
        assert_eq!(
            (refused.reason(), refused.retry_at(), b.state()),
            (RejectReason::CircuitOpen, None, HalfOpen),
            "{later:?} on, the one probe is still out and nothing bounds it"
        );
    }
    drop(hung);
}

#[test]
fn the_half_open_bound_counts_from_entering_half_open_not_from_each_probe() {
    let mut rig = Rig::new();
    let b = opened_with(
        &mut rig,
        Config {
            max_half_open_wait: Some(Duration::from_secs(60)),
            half_open_probes: 2,
            probes_to_close: 2,
            ..Config::DEFAULT
        },
    );
    let mut env = rig.env(Instant::from_secs(6));
    let first = b.admit(&mut env).unwrap();
    env.now = Instant::from_secs(36);
    let second = b.admit(&mut env).unwrap();
    assert_eq!(b.state(), HalfOpen);
    // 60 s after half-open began (not after the second probe): the hung probes count as
    // failed and the circuit opens again.
    env.now = Instant::from_secs(67);
    let refused = b.admit(&mut env).unwrap_err();
    assert_eq!(b.state(), Open, "{refused:?}");
    assert!(refused.retry_at().is_some());
    drop((first, second));
}
