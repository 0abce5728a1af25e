//! Issue 13's breaker scenarios, as a new user meets them on a real service's timeline: quiet
//! periods after an opening, and a half-open probe that never comes back. Each failed on the
//! base commit b41b95d (they use only APIs that existed there) and passes now.
#![cfg(not(loom))]

use core::time::Duration;

use resilix::breaker::{Breaker, CircuitState, Config, OpenBackoff};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

/// Opens `breaker` at `at` with `config.minimum_calls` failures.
fn open_at(breaker: &Breaker, config: &Config, at: Instant, rng: &mut SeededRandom) {
    let mut env = Env::new(at, rng);
    for _ in 0..config.minimum_calls {
        breaker
            .admit(&mut env)
            .unwrap()
            .settle(&Verdict::Transient, &mut env);
    }
    assert_eq!(breaker.state(), CircuitState::Open);
}

const OPENED: Instant = Instant::from_secs(1);

fn four_failures() -> Config {
    Config {
        minimum_calls: 4,
        open_jitter_percent: 0,
        ..Config::DEFAULT
    }
}

#[test]
fn a_first_call_18_s_after_opening_is_a_probe_not_refused_for_4_18_s_more() {
    // The default 5 s wait runs on 4 ns ticks whose word repeats every 17.18 s: on the base,
    // 18 s after opening read as 0.82 s after it, refused until 23.18 s.
    let config = four_failures();
    let breaker = Breaker::new(config).unwrap();
    let mut rng = SeededRandom::new(1);
    open_at(&breaker, &config, OPENED, &mut rng);
    let mut env = Env::new(OPENED + Duration::from_secs(18), &mut rng);
    let first = breaker.admit(&mut env);
    assert!(
        matches!(&first, Ok(p) if p.is_probe()),
        "refused: {:?}",
        first.err()
    );
}

#[test]
fn no_first_call_6_to_60_s_after_opening_is_refused() {
    // On the base, 1,154 of these 4,154 first calls were refused.
    let config = four_failures();
    let mut refused = Vec::new();
    let mut points = 0;
    let mut gap = Duration::from_secs(6);
    while gap <= Duration::from_secs(60) {
        let breaker = Breaker::new(config).unwrap();
        let mut rng = SeededRandom::new(points);
        open_at(&breaker, &config, OPENED, &mut rng);
        let mut env = Env::new(OPENED + gap, &mut rng);
        if breaker.admit(&mut env).is_err() {
            refused.push(gap);
        }
        points += 1;
        gap += Duration::from_micros(13_000);
    }
    assert_eq!(points, 4_154);
    assert!(
        refused.is_empty(),
        "{} refused, first at {:?}",
        refused.len(),
        refused.first()
    );
}

#[test]
fn a_first_call_855_s_after_opening_with_a_300_s_cap_is_a_probe() {
    // A 300 s growth cap selects 256 ns ticks, a 1,099.5 s circle: on the base, 855 s after a
    // 5 s opening read as 249.5 s before its end, 60 times the configured wait.
    let config = Config {
        open_backoff: Some(OpenBackoff {
            multiplier_percent: 200,
            max_wait: Duration::from_secs(300),
        }),
        ..four_failures()
    };
    let breaker = Breaker::new(config).unwrap();
    let mut rng = SeededRandom::new(2);
    open_at(&breaker, &config, OPENED, &mut rng);
    let mut env = Env::new(OPENED + Duration::from_secs(855), &mut rng);
    let first = breaker.admit(&mut env);
    assert!(
        matches!(&first, Ok(p) if p.is_probe()),
        "refused: {:?}",
        first.err()
    );
}

/// A breaker opened at 1 s whose probe, taken at 6 s, never settles (returned, to be
/// settled late or never).
fn with_a_hung_probe<'a>(
    breaker: &'a Breaker,
    config: &Config,
    rng: &mut SeededRandom,
) -> impl Permit + 'a {
    open_at(breaker, config, OPENED, rng);
    let mut env = Env::new(Instant::from_secs(6), rng);
    let probe = breaker.admit(&mut env).unwrap();
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    probe
}

/// How long a caller refused with no retry-at (the half-open probe is out) waits before it
/// tries again: its own backoff.
const OWN_STEP: Duration = Duration::from_secs(10);

/// Follows retry-ats from `at` until a call is admitted, at most `hops` refusals, trying again
/// after [`OWN_STEP`] when a refusal names no retry-at (only while a probe is out); answers
/// when.
fn admitted_by(breaker: &Breaker, mut at: Instant, hops: u32, rng: &mut SeededRandom) -> Instant {
    for _ in 0..=hops {
        let mut env = Env::new(at, rng);
        match breaker.admit(&mut env) {
            Ok(p) => {
                p.settle(&Verdict::Success, &mut env);
                return at;
            }
            Err(r) => {
                assert_eq!(r.reason(), RejectReason::CircuitOpen);
                let next = r.retry_at().unwrap_or_else(|| {
                    assert_eq!(breaker.state(), CircuitState::HalfOpen, "at {at:?}: {r}");
                    at + OWN_STEP
                });
                assert!(next > at, "retry-at {next:?} not after {at:?}");
                at = next;
            }
        }
    }
    panic!("still refused after {hops} retry-ats");
}

#[test]
fn a_hung_probe_blocks_no_call_for_ever_checked_at_8_s_60_s_1_h_and_7_days() {
    // On the base every one of these was refused as circuit-open with no retry-at.
    let config = four_failures();
    for check in [
        Duration::from_secs(8),
        Duration::from_secs(60),
        Duration::from_secs(3_600),
        Duration::from_secs(7 * 86_400),
    ] {
        let breaker = Breaker::new(config).unwrap();
        let mut rng = SeededRandom::new(check.as_secs());
        let hung = with_a_hung_probe(&breaker, &config, &mut rng);
        let at = Instant::ZERO + check;
        let by = admitted_by(&breaker, at, 10, &mut rng);
        // Within the default minute in half-open (from the probe at 6 s), the caller's own
        // step, then one open wait.
        let bound = at.max(Instant::from_secs(66)) + OWN_STEP + config.open_wait;
        assert!(by <= bound, "checked at {check:?}: admitted only at {by:?}");
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "the new probe closed it"
        );
        // The hung probe's outcome, when it finally comes, is late: it changes nothing.
        let mut env = Env::new(by + Duration::from_secs(1), &mut rng);
        hung.settle(&Verdict::Transient, &mut env);
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "a late probe re-opened it"
        );
    }
}

#[test]
fn while_the_probe_runs_refusals_carry_no_retry_at_then_it_re_opens() {
    let config = four_failures();
    let breaker = Breaker::new(config).unwrap();
    let mut rng = SeededRandom::new(9);
    let hung = with_a_hung_probe(&breaker, &config, &mut rng);
    for at in [8u64, 30, 65] {
        let mut env = Env::new(Instant::from_secs(at), &mut rng);
        let r = breaker.admit(&mut env).map(|_| ()).unwrap_err();
        assert_eq!(
            (r.reason(), r.retry_at()),
            (RejectReason::CircuitOpen, None),
            "at {at} s: the probe may answer at any moment"
        );
    }
    // At the end of half-open the circuit re-opens (the hung probe counts as failed) and the
    // call is refused until the new open wait ends.
    let mut env = Env::new(Instant::from_secs(66), &mut rng);
    let r = breaker.admit(&mut env).map(|_| ()).unwrap_err();
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(r.retry_at(), Some(Instant::from_secs(71)));
    // The old probe settling as a success now is late: it does not close the circuit.
    hung.settle(&Verdict::Success, &mut env);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[test]
fn with_no_half_open_bound_a_hung_probe_waits_forever_as_documented() {
    // `max_half_open_wait: None` is resilience4j's default (0): the opt-in to wait on the
    // probes alone. (Uses the new field: not run on the base.)
    let config = Config {
        max_half_open_wait: None,
        ..four_failures()
    };
    let breaker = Breaker::new(config).unwrap();
    let mut rng = SeededRandom::new(4);
    let hung = with_a_hung_probe(&breaker, &config, &mut rng);
    for at in [8, 3_600, 7 * 86_400] {
        let mut env = Env::new(Instant::from_secs(at), &mut rng);
        let r = breaker.admit(&mut env).map(|_| ()).unwrap_err();
        assert_eq!(r.retry_at(), None, "at {at} s");
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
    }
    // Its outcome, whenever it comes, still decides.
    let mut env = Env::new(Instant::from_secs(8 * 86_400), &mut rng);
    hung.settle(&Verdict::Success, &mut env);
    assert_eq!(breaker.state(), CircuitState::Closed);
}
