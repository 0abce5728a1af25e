use super::*;
use crate::breaker::config::{Config, OpenBackoff, SlowCalls};
use crate::random::SeededRandom;
use core::time::Duration;

fn live(c: &Config) -> Live {
    let s = crate::time::ticks::TickScale::covering(c.longest_open_wait());
    Live::encode(c, s, s)
}

fn half_open(epoch: u32, in_flight: u8, successes: u8, failures: u8) -> Word {
    Word {
        state: CircuitState::HalfOpen,
        epoch,
        in_flight,
        successes,
        failures,
    }
}

#[test]
fn closed_and_disabled_admit_forced_open_refuses_without_a_time() {
    let w = Word::INITIAL;
    assert_eq!(admission(w, Clock::Never, 1), Admission::Counted);
    let d = w.next(CircuitState::Disabled);
    assert_eq!(admission(d, Clock::Over, 1), Admission::Bypass);
    let f = w.next(CircuitState::ForcedOpen);
    assert_eq!(
        admission(f, Clock::Over, 1),
        Admission::Refuse { until: None }
    );
}

#[test]
fn open_refuses_until_the_wait_ends_then_takes_the_first_probe() {
    let open = Word::INITIAL.next(CircuitState::Open);
    assert_eq!(clock(100, 150, 60), Clock::Until(150));
    assert_eq!(
        admission(open, clock(149, 150, 60), 1),
        Admission::Refuse { until: Some(150) }
    );
    match admission(open, clock(150, 150, 60), 1) {
        Admission::Probe { next, transition } => {
            assert_eq!(next, half_open(2, 1, 0, 0));
            assert_eq!(transition.unwrap().cause, TransitionCause::WaitElapsed);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn backwards_time_ends_the_wait_early_never_late_and_nothing_aliases() {
    // now before the wait began: the remaining time exceeds the longest wait.
    assert_eq!(clock(10, 150, 60), Clock::Over);
    assert_eq!(clock(151, 150, 60), Clock::Over);
    // Full counts: a whole 32-bit circle later is long over, not "5 ticks left".
    assert_eq!(clock(u32::MAX as u64 + 1, 5, 60), Clock::Over);
    assert_eq!(
        clock((1 << 32) + 10, (1 << 32) + 15, 60),
        Clock::Until((1 << 32) + 15)
    );
    assert_eq!(clock(0, 0, 0), Clock::Over);
}

#[test]
fn half_open_admits_exactly_n_counting_settled_probes() {
    let w = half_open(2, 2, 1, 0);
    assert_eq!(
        admission(w, Clock::Never, 3),
        Admission::Refuse { until: None }
    );
    assert_eq!(
        admission(w, Clock::Until(77), 3),
        Admission::Refuse { until: None },
        "the period's end is no retry-at: the probes may answer at any moment"
    );
    match admission(half_open(2, 1, 1, 0), Clock::Never, 3) {
        Admission::Probe {
            next,
            transition: None,
        } => assert_eq!(next.in_flight, 2),
        other => panic!("{other:?}"),
    }
    // the maximum: 15 probes
    assert!(matches!(
        admission(half_open(0, 14, 0, 0), Clock::Never, 15),
        Admission::Probe { .. }
    ));
    assert_eq!(
        admission(half_open(0, 15, 0, 0), Clock::Never, 15),
        Admission::Refuse { until: None }
    );
}

#[test]
fn half_open_past_its_maximum_wait_reopens_even_with_a_slot_free() {
    for w in [half_open(4, 1, 0, 0), half_open(4, 0, 1, 0)] {
        match admission(w, Clock::Over, 2) {
            Admission::Expire { next, transition } => {
                assert_eq!((next.state, next.epoch), (CircuitState::Open, 5));
                assert_eq!(transition.cause, TransitionCause::ProbesFailed);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn one_probe_closes_on_success_and_reopens_on_failure() {
    let w = half_open(7, 1, 0, 0);
    let (next, t) = probe_settled(w, 7, true, 1, 1).unwrap();
    assert_eq!((next.state, next.epoch), (CircuitState::Closed, 8));
    assert_eq!(t.unwrap().cause, TransitionCause::ProbesSucceeded);
    let (next, t) = probe_settled(w, 7, false, 1, 1).unwrap();
    assert_eq!((next.state, next.epoch), (CircuitState::Open, 8));
    assert_eq!(t.unwrap().cause, TransitionCause::ProbesFailed);
}

#[test]
fn three_probes_two_to_close_decide_as_soon_as_certain() {
    // one failure leaves two possible successes: undecided
    let (w, t) = probe_settled(half_open(1, 3, 0, 0), 1, false, 3, 2).unwrap();
    assert_eq!((w, t), (half_open(1, 2, 0, 1), None));
    // a second failure makes two successes impossible: re-open with one still in flight
    let (w2, t) = probe_settled(w, 1, false, 3, 2).unwrap();
    assert_eq!(w2.state, CircuitState::Open);
    assert!(t.is_some());
    // two successes close even with one in flight
    let (w3, _) = probe_settled(half_open(1, 2, 1, 0), 1, true, 3, 2).unwrap();
    assert_eq!(w3.state, CircuitState::Closed);
}

#[test]
fn a_late_probe_changes_nothing() {
    let w = half_open(5, 1, 0, 0);
    assert_eq!(probe_settled(w, 4, true, 1, 1), None, "earlier epoch");
    assert_eq!(probe_dropped(w, 4), None);
    let closed = Word::INITIAL.next(CircuitState::Closed);
    assert_eq!(probe_settled(closed, closed.epoch, false, 1, 1), None);
    assert_eq!(
        probe_dropped(half_open(5, 0, 1, 0), 5),
        None,
        "no probe to free"
    );
}

#[test]
fn a_dropped_probe_frees_its_slot() {
    let w = probe_dropped(half_open(3, 1, 0, 0), 3).unwrap();
    assert_eq!(w, half_open(3, 0, 0, 0));
    assert!(matches!(
        admission(w, Clock::Never, 1),
        Admission::Probe { .. }
    ));
}

#[test]
fn trips_above_the_rate_with_minimum_calls_only() {
    let c = Config::DEFAULT; // > 50 % of at least 20
    let t = |calls, failures| Totals {
        calls,
        failures,
        slow: 0,
    };
    assert_eq!(
        trip_cause(t(19, 19), 0, &live(&c)),
        None,
        "minimum calls not reached"
    );
    assert_eq!(
        trip_cause(t(20, 10), 0, &live(&c)),
        None,
        "exactly half is not above half"
    );
    assert_eq!(
        trip_cause(t(20, 11), 0, &live(&c)),
        Some(TransitionCause::FailureRate)
    );
    assert_eq!(
        trip_cause(
            t(0, 0),
            0,
            &live(&Config {
                minimum_calls: 1,
                ..c
            })
        ),
        None
    );
    assert_eq!(
        trip_cause(t(u32::MAX, u32::MAX), 0, &live(&c)),
        Some(TransitionCause::FailureRate)
    );
    let zero = Config {
        failure_rate_above_percent: Some(0),
        minimum_calls: 1,
        ..c
    };
    assert_eq!(trip_cause(t(1, 0), 0, &live(&zero)), None);
    assert_eq!(
        trip_cause(t(1, 1), 0, &live(&zero)),
        Some(TransitionCause::FailureRate)
    );
}

#[test]
fn slow_rate_and_consecutive_failures_trip_with_their_own_cause() {
    let c = Config {
        failure_rate_above_percent: None,
        slow_calls: Some(SlowCalls {
            slower_than: Duration::from_secs(1),
            above_percent: 50,
        }),
        consecutive_failures: Some(3),
        ..Config::DEFAULT
    };
    let slow = Totals {
        calls: 20,
        failures: 20,
        slow: 11,
    };
    assert_eq!(
        trip_cause(slow, 0, &live(&c)),
        Some(TransitionCause::SlowCallRate)
    );
    let few = Totals {
        calls: 2,
        failures: 2,
        slow: 2,
    };
    assert_eq!(trip_cause(few, 2, &live(&c)), None);
    assert_eq!(
        trip_cause(few, 3, &live(&c)),
        Some(TransitionCause::ConsecutiveFailures)
    );
}

#[test]
fn open_wait_grows_caps_and_jitters_downwards() {
    let mut rng = SeededRandom::new(9);
    let c = Config {
        open_wait: Duration::from_secs(5),
        open_jitter_percent: 0,
        open_backoff: Some(OpenBackoff {
            multiplier_percent: 200,
            max_wait: Duration::from_secs(30),
        }),
        ..Config::DEFAULT
    };
    let s = 1_000_000_000u64;
    assert_eq!(open_wait_nanos(&live(&c), 0, &mut rng), 5 * s);
    assert_eq!(open_wait_nanos(&live(&c), 1, &mut rng), 10 * s);
    assert_eq!(open_wait_nanos(&live(&c), 2, &mut rng), 20 * s);
    assert_eq!(open_wait_nanos(&live(&c), 3, &mut rng), 30 * s);
    assert_eq!(
        open_wait_nanos(&live(&c), u32::MAX, &mut rng),
        30 * s,
        "a long streak stays capped"
    );
    let j = Config {
        open_jitter_percent: 10,
        ..c
    };
    let mut seen_below = false;
    for _ in 0..200 {
        let w = open_wait_nanos(&live(&j), 3, &mut rng);
        assert!((27 * s..=30 * s).contains(&w), "{w}");
        seen_below |= w < 29 * s;
    }
    assert!(seen_below, "jitter spreads the waits");
    let max = Config {
        open_wait: Duration::MAX,
        open_backoff: None,
        ..j
    };
    assert!(open_wait_nanos(&live(&max), 0, &mut rng) > u64::MAX / 10 * 8);
}

#[test]
fn percent_of_is_the_exact_floor_saturated() {
    let exact = |v: u64, p: u64| (v as u128 * p as u128 / 100).min(u64::MAX as u128) as u64;
    let mut rng = SeededRandom::new(21);
    let edges = [0, 1, 99, 100, 101, u64::MAX / 100, u64::MAX - 1, u64::MAX];
    let percents = [0, 1, 50, 99, 100, 101, 200, 1_000, u32::MAX as u64];
    for &v in &edges {
        for &p in &percents {
            assert_eq!(percent_of(v, p), exact(v, p), "{v} × {p}%");
        }
    }
    for _ in 0..100_000 {
        // Log-uniform values, so small, medium and saturating products all occur.
        let v = rng.next_u64() >> rng.below(64);
        let p = rng.next_u64() >> (32 + rng.below(32));
        assert_eq!(percent_of(v, p), exact(v, p), "{v} × {p}%");
    }
}

#[test]
fn a_multiplier_of_one_never_grows_and_a_long_streak_costs_no_loop() {
    // 100% is valid (no growth); the loop must not run at all, or a streak of four billion
    // re-opens would spin four billion times on the settle path.
    let c = Config {
        open_wait: Duration::from_secs(5),
        open_jitter_percent: 0,
        open_backoff: Some(OpenBackoff {
            multiplier_percent: 100,
            max_wait: Duration::from_secs(30),
        }),
        ..Config::DEFAULT
    };
    let mut rng = SeededRandom::new(1);
    assert_eq!(
        open_wait_nanos(&live(&c), u32::MAX, &mut rng),
        5_000_000_000
    );
}

#[test]
fn a_wait_that_rounds_back_to_itself_ends_the_climb() {
    // 1 ns × 101% is 1 ns (floored): the wait can never grow, and a streak of four billion
    // re-opens must not spin four billion times to find that out. Below 100 ns a wait grows
    // only where the multiplier adds a whole nanosecond: 50 ns × 103% is 51 ns, then 52, ...
    let with = |open_wait: u64, multiplier_percent: u32| Config {
        open_wait: Duration::from_nanos(open_wait),
        open_jitter_percent: 0,
        open_backoff: Some(OpenBackoff {
            multiplier_percent,
            max_wait: Duration::from_secs(1),
        }),
        ..Config::DEFAULT
    };
    let mut rng = SeededRandom::new(3);
    let stuck = live(&with(1, 101));
    assert_eq!(open_wait_nanos(&stuck, 1, &mut rng), 1);
    assert_eq!(open_wait_nanos(&stuck, u32::MAX, &mut rng), 1);
    let creeping = live(&with(50, 103));
    assert_eq!(open_wait_nanos(&creeping, 1, &mut rng), 51);
    assert_eq!(open_wait_nanos(&creeping, 2, &mut rng), 52);
    assert_eq!(
        open_wait_nanos(&creeping, u32::MAX, &mut rng),
        1_000_000_000,
        "it still climbs to the cap"
    );
}
