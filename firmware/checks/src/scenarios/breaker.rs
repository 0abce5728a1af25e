//! The circuit breaker through all its states on the device, with a jittered open wait drawn
//! from the seeded generator: closed, open, half-open, re-open with backoff, close, the epoch
//! rule for stale permits, forced open, disabled and reset.

use core::time::Duration;

use resilix::breaker::{Breaker, CircuitState, Config};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

use super::ensure;
use super::pipeline::Counts;
use crate::Trace;
use crate::codes::state_code;

pub(crate) fn states(t: &mut Trace) -> Result<(), &'static str> {
    let config = crate::config::BREAKER;
    ensure(
        Breaker::new(Config {
            half_open_probes: 0,
            ..config
        })
        .is_err(),
        "zero probes accepted",
    )?;
    let breaker = Breaker::new(config).map_err(|_| "valid config refused")?;
    let counts = Counts::default();
    let mut rng = SeededRandom::new(0xB4EA_CE55);
    let mut env = Env::new(Instant::from_secs(100), &mut rng).with_observer(&counts);

    // A call admitted while closed, settled only after the circuit opened: stale.
    let stale = breaker
        .admit(&mut env)
        .map_err(|_| "closed breaker refused")?;
    for _ in 0..4 {
        let p = breaker
            .admit(&mut env)
            .map_err(|_| "closed breaker refused")?;
        p.settle(&Verdict::Transient, &mut env);
    }
    t.push(state_code(breaker.state()));
    let refused = breaker
        .admit(&mut env)
        .err()
        .ok_or("open breaker admitted a call")?;
    ensure(
        refused.reason() == RejectReason::CircuitOpen,
        "refused for the wrong reason",
    )?;
    let first_probe_at = refused
        .retry_at()
        .ok_or("open refusal without a retry-at")?;
    // Jitter shortens the 5 s wait by up to 20 %.
    let wait = first_probe_at - env.now;
    ensure(
        wait <= Duration::from_secs(5) && wait >= Duration::from_secs(4),
        "jittered wait out of range",
    )?;
    t.push(first_probe_at.as_nanos());
    stale.settle(&Verdict::Success, &mut env); // from an earlier epoch: ignored

    // Half-open: exactly two probes; both fail -> open again, with a doubled wait.
    env.now = first_probe_at;
    let p1 = breaker
        .admit(&mut env)
        .map_err(|_| "no probe after the wait")?;
    let p2 = breaker
        .admit(&mut env)
        .map_err(|_| "second probe refused")?;
    ensure(
        p1.is_probe() && p2.is_probe(),
        "half-open permits are not probes",
    )?;
    t.push(state_code(breaker.state()));
    ensure(
        breaker.admit(&mut env).is_err(),
        "a third probe was admitted",
    )?;
    // A dropped probe frees its slot: never stuck half-open.
    drop(p2);
    t.push(u64::from(breaker.probes_in_flight()));
    let p2 = breaker
        .admit(&mut env)
        .map_err(|_| "a dropped probe's slot was not freed")?;
    p1.settle(&Verdict::Timeout, &mut env);
    t.push(state_code(breaker.state()));
    drop(p2);
    let refused = breaker
        .admit(&mut env)
        .err()
        .ok_or("re-opened breaker admitted a call")?;
    let second_probe_at = refused.retry_at().ok_or("no retry-at")?;
    let wait = second_probe_at - env.now;
    ensure(
        wait > Duration::from_secs(5) && wait <= Duration::from_secs(10),
        "backoff did not grow the wait",
    )?;
    t.push(second_probe_at.as_nanos());

    // Two successful probes close it.
    env.now = second_probe_at;
    let p1 = breaker
        .admit(&mut env)
        .map_err(|_| "no probe after the second wait")?;
    let p2 = breaker
        .admit(&mut env)
        .map_err(|_| "second probe refused")?;
    env.now = second_probe_at + Duration::from_millis(30);
    p1.settle(&Verdict::Success, &mut env);
    t.push(state_code(breaker.state()));
    p2.settle(&Verdict::Answered, &mut env);
    t.push(state_code(breaker.state()));
    ensure(
        breaker.state() == CircuitState::Closed,
        "two good probes did not close it",
    )?;

    // Operator states.
    breaker.force_open(&mut env);
    t.push(state_code(breaker.state()));
    ensure(
        breaker.admit(&mut env).is_err(),
        "forced open admitted a call",
    )?;
    breaker.disable(&mut env);
    for _ in 0..10 {
        let p = breaker
            .admit(&mut env)
            .map_err(|_| "a disabled breaker refused")?;
        p.settle(&Verdict::Transient, &mut env);
    }
    t.push(state_code(breaker.state()));
    breaker.reset(&mut env);
    t.push(state_code(breaker.state()));
    // Time far backwards and a year ahead: no panic, and it still admits.
    env.now = Instant::ZERO;
    breaker
        .admit(&mut env)
        .map_err(|_| "refused after time went back")?
        .settle(&Verdict::Success, &mut env);
    env.now = Instant::from_secs(100 + 365 * 24 * 3600);
    breaker
        .admit(&mut env)
        .map_err(|_| "refused a year later")?
        .settle(&Verdict::Success, &mut env);
    t.push(u64::from(counts.transitions.get()));
    t.push(u64::from(counts.rejected.get()));
    Ok(())
}
