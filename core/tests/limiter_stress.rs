//! Many threads admit, settle and cancel while windows close and the limit moves: no admission
//! ever passes the limit in force when it was admitted, and every slot comes back.
#![cfg(not(loom))]

use core::time::Duration;
use std::sync::atomic::{AtomicU32, Ordering};

use resilix::Verdict;
use resilix::limiter::{Admission, Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::{Clock, Instant, ManualClock};

#[test]
fn in_flight_never_exceeds_the_limit_at_admission() {
    let config = LimiterConfig {
        min_limit: 1,
        initial_limit: 8,
        max_limit: 16,
        min_window: Duration::from_micros(200),
        max_window: Duration::from_millis(1),
        window_samples: 3,
        min_rtt: Duration::ZERO,
        queue_factor: 2.0,
        probe_multiplier: 1,
        ..LimiterConfig::vegas()
    };
    let limiter = Limiter::new(config).unwrap();
    let clock = ManualClock::new(Instant::ZERO);
    let changes = AtomicU32::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (limiter, clock, changes) = (&limiter, &clock, &changes);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                let mut held = Vec::new();
                for i in 0..30_000u64 {
                    let now = clock.advance(Duration::from_micros(7 + t));
                    let mut env = Env::new(now, &mut rng);
                    let before = limiter.limit();
                    match i % 5 {
                        0 => match limiter.admit_or_queue(&mut env) {
                            Admission::Admitted(p) => held.push(p),
                            Admission::Wait(place) => {
                                if let Ok(p) = place.try_admit(&mut env) {
                                    held.push(p)
                                }
                            }
                            Admission::Refused(_) => {}
                        },
                        _ => {
                            if let Ok(p) = limiter.admit(&mut env) {
                                held.push(p)
                            }
                        }
                    }
                    for p in &held {
                        assert!(p.in_flight_at_admission() <= p.limit_at_admission());
                        assert!(p.limit_at_admission() <= 16);
                    }
                    assert!(limiter.in_flight() <= 16, "never beyond the max limit");
                    assert!(limiter.waiting() <= 16, "the waiting room is bounded");
                    if held.len() > (i % 4) as usize {
                        let p = held.swap_remove(0);
                        env.now = clock.now();
                        match i % 101 {
                            0..=9 => drop(p),
                            10 => p.settle(&Verdict::Timeout, &mut env),
                            11..=19 => p.settle(&Verdict::Transient, &mut env),
                            _ => p.settle(&Verdict::Success, &mut env),
                        }
                    }
                    if limiter.limit() != before {
                        changes.fetch_add(1, Ordering::Relaxed);
                    }
                }
                drop(held);
            });
        }
    });
    assert_eq!(limiter.in_flight(), 0, "every slot came back");
    assert_eq!(limiter.waiting(), 0, "every waiting place came back");
    assert!(
        changes.load(Ordering::Relaxed) > 10,
        "the limit moved during the run: {} {}",
        changes.load(Ordering::Relaxed),
        limiter.limit()
    );
}
