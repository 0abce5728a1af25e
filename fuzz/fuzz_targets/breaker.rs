//! Decodes the input into admit / settle(verdict) / drop / time steps (forwards, backwards,
//! huge jumps) / operator actions against one breaker, and asserts after every step:
//! at most N probes in flight and taken, a permit from an earlier epoch changes nothing,
//! transitions chain, and once every permit is gone the breaker is never stuck.
#![no_main]

use core::cell::RefCell;
use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::breaker::{Breaker, CircuitState, Config, OpenBackoff};
use resilix::observe::{Event, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

#[derive(Default)]
struct Log(RefCell<Vec<(CircuitState, CircuitState)>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        if let Event::CircuitTransition { from, to, .. } = *event {
            self.0.borrow_mut().push((from, to));
        }
    }
}

fn verdict(v: u8) -> Verdict {
    match v % 6 {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Overload { retry_after: None },
        3 => Verdict::Transient,
        4 => Verdict::Timeout,
        _ => Verdict::Rejected(RejectReason::Throttled),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let probes = 1 + data[0] % 15;
    let config = Config {
        minimum_calls: 1 + (data[1] % 8) as u32,
        half_open_probes: probes,
        probes_to_close: 1 + data[2] % probes,
        open_jitter_percent: data[3] % 100,
        consecutive_failures: (data[1] & 0x80 != 0).then_some(1 + (data[2] % 4) as u32),
        open_backoff: (data[3] & 0x80 != 0).then_some(OpenBackoff {
            multiplier_percent: 150,
            max_wait: Duration::from_secs(120),
        }),
        // Half-open bounded by 2 s (within reach of the time steps) or never.
        max_half_open_wait: (data[0] & 0x80 == 0).then_some(Duration::from_secs(2)),
        ..Config::DEFAULT
    };
    let breaker = Breaker::new(config).unwrap();
    let n = probes as u32;
    let log = Log::default();
    let mut rng = SeededRandom::new(u64::from(data[0]) << 8 | u64::from(data[1]));
    let mut now = Instant::from_secs(1);
    let mut live = Vec::new();
    let mut taken = 0u32;
    let mut bytes = data[4..].chunks_exact(2);
    for pair in &mut bytes {
        let (op, arg) = (pair[0], pair[1]);
        let mut env = Env::new(now, &mut rng).with_observer(&log);
        let before = log.0.borrow().len();
        let before_state = (breaker.state(), breaker.probes_in_flight());
        let mut stale = false;
        match op % 10 {
            0..=2 => {
                if let Ok(p) = breaker.admit(&mut env) {
                    let epoch = log.0.borrow().len();
                    if p.is_probe() {
                        if epoch != before {
                            taken = 0;
                        }
                        taken += 1;
                    }
                    live.push((p, epoch));
                }
            }
            3 | 4 if !live.is_empty() => {
                let (p, epoch) = live.swap_remove(arg as usize % live.len());
                stale = epoch != before;
                let v = verdict(op / 10);
                if !stale && p.is_probe() && !v.is_counted() {
                    taken -= 1;
                }
                p.settle(&v, &mut env);
            }
            5 if !live.is_empty() => {
                let (p, epoch) = live.swap_remove(arg as usize % live.len());
                stale = epoch != before;
                if !stale && p.is_probe() {
                    taken -= 1;
                }
                drop(p);
            }
            6 => now = now + Duration::from_millis(u64::from(arg) * 100),
            7 => now = now - Duration::from_millis(u64::from(arg) * 100),
            8 => now = Instant::from_nanos(u64::from(arg).wrapping_mul(0x0123_4567_89AB_CDEF)),
            9 => match arg % 3 {
                0 => breaker.force_open(&mut env),
                1 => breaker.disable(&mut env),
                _ => breaker.reset(&mut env),
            },
            _ => {}
        }
        let events = log.0.borrow();
        if stale {
            assert_eq!(events.len(), before, "a late permit caused a transition");
            assert_eq!((breaker.state(), breaker.probes_in_flight()), before_state);
        }
        assert!(breaker.probes_in_flight() <= n);
        if breaker.state() == CircuitState::HalfOpen {
            assert!(taken <= n);
        } else {
            assert_eq!(breaker.probes_in_flight(), 0);
        }
        for w in events.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
        if let Some(last) = events.last() {
            assert_eq!(last.1, breaker.state());
        }
    }
    drop(live);
    if breaker.state() == CircuitState::ForcedOpen {
        return;
    }
    let mut env = Env::new(now, &mut rng).with_observer(&log);
    if breaker.admit(&mut env).is_err() {
        env.now = now + config.longest_open_wait() + Duration::from_millis(1);
        assert!(
            breaker.admit(&mut env).is_ok(),
            "stuck in {:?}",
            breaker.state()
        );
    }
});
