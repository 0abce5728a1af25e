//! Any sequence of admit / queue / settle(verdict) / drop / time steps (including huge jumps,
//! backwards steps and the end of time): no panic, in-flight equals the permits held, the
//! waiting room equals the places held, the limit stays within [min, max].
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::limiter::{Admission, Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

fuzz_target!(|data: &[u8]| {
    let Some((&algo, ops)) = data.split_first() else { return };
    let base = match algo % 3 {
        0 => LimiterConfig::gradient2(),
        1 => LimiterConfig::vegas(),
        _ => LimiterConfig::aimd(),
    };
    let config = LimiterConfig {
        min_limit: 1,
        initial_limit: 4,
        max_limit: 10,
        min_window: Duration::from_micros(1 + (algo as u64 >> 2)),
        max_window: Duration::from_millis(5),
        window_samples: 1 + (algo as u32 & 3),
        probe_multiplier: 1,
        queue_factor: 2.0,
        ..base
    };
    let limiter = Limiter::new(config).unwrap();
    let mut rng = SeededRandom::new(algo as u64);
    let mut now = Instant::ZERO;
    let mut held = Vec::new();
    let mut places = Vec::new();
    for chunk in ops.chunks(2) {
        let (code, arg) = (chunk[0], *chunk.get(1).unwrap_or(&0));
        let mut env = Env::new(now, &mut rng);
        match code % 8 {
            0 => {
                let limit = limiter.limit();
                if let Ok(p) = limiter.admit(&mut env) {
                    assert!(p.in_flight_at_admission() <= limit);
                    held.push(p);
                }
            }
            1 => match limiter.admit_or_queue(&mut env) {
                Admission::Admitted(p) => held.push(p),
                Admission::Wait(place) => places.push(place),
                Admission::Refused(r) => assert_eq!(r.reason(), RejectReason::LimiterFull),
            },
            2 if !held.is_empty() => {
                let p = held.swap_remove(arg as usize % held.len());
                let v = match arg % 6 {
                    0 => Verdict::Success,
                    1 => Verdict::Answered,
                    2 => Verdict::Overload { retry_after: None },
                    3 => Verdict::Timeout,
                    4 => Verdict::Transient,
                    _ => Verdict::Rejected(RejectReason::CircuitOpen),
                };
                p.settle(&v, &mut env);
            }
            3 if !held.is_empty() => drop(held.swap_remove(arg as usize % held.len())),
            4 if !places.is_empty() => {
                let place = places.swap_remove(arg as usize % places.len());
                if arg & 1 == 0 {
                    if let Ok(p) = place.try_admit(&mut env) {
                        held.push(p);
                    } else {
                        // still waiting: dropped here, as a cancelled waiter
                    }
                }
            }
            5 => now = now + Duration::from_micros(arg as u64 * 37),
            6 => now = now - Duration::from_millis(arg as u64),
            7 => now = if arg == 255 { Instant::MAX } else { now + Duration::from_secs(arg as u64 * 86_400) },
            _ => {}
        }
        assert_eq!(limiter.in_flight() as usize, held.len());
        assert_eq!(limiter.waiting() as usize, places.len());
        assert!((1..=10).contains(&limiter.limit()));
    }
    drop(held);
    drop(places);
    assert_eq!(limiter.in_flight(), 0);
    assert_eq!(limiter.waiting(), 0);
});
