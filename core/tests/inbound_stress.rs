//! The inbound admission's exact counters under many threads: the in-flight count never passes
//! any priority's share of the limit at admission, the waiting count never passes the queue,
//! and every permit and place, settled, dropped, turned into a permit or given up, gives back
//! exactly what it held.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::Verdict;
use resilix::inbound::{Decision, Inbound, InboundConfig, Priority};
use resilix::permit::{Env, Permit};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;

#[test]
fn caps_hold_and_nothing_leaks_under_eight_threads() {
    let config = InboundConfig {
        queue: 6,
        ..InboundConfig::fixed(5)
    };
    let inbound = Inbound::new(config).unwrap();
    let peak_flight = AtomicU32::new(0);
    let peak_waiting = AtomicU32::new(0);
    let queued = AtomicU32::new(0);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (inbound, peak_flight, peak_waiting, queued) =
                (&inbound, &peak_flight, &peak_waiting, &queued);
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                let mut held = Vec::new();
                for i in 0..100_000u64 {
                    if held.len() > 3 || (!held.is_empty() && rng.below(4) == 0) {
                        drop(held.swap_remove(0));
                    }
                    let now = Instant::from_micros(i);
                    let p = Priority::ALL[rng.below(4) as usize];
                    match inbound.admit(now, p, None) {
                        Decision::Admit(permit) => {
                            let n = permit.in_flight_at_admission();
                            assert!(n <= p.share_of(5, 200_000), "{p}: {n} in flight");
                            peak_flight.fetch_max(n, Ordering::Relaxed);
                            if rng.below(2) == 0 {
                                permit.settle(&Verdict::Success, &mut Env::new(now, &mut rng));
                            } else {
                                held.push(permit);
                            }
                        }
                        Decision::Queue(place) => {
                            queued.fetch_add(1, Ordering::Relaxed);
                            let w = inbound.waiting();
                            assert!(w <= 6, "{w} waiting");
                            peak_waiting.fetch_max(w, Ordering::Relaxed);
                            match rng.below(3) {
                                0 => drop(place),
                                1 => {
                                    let _ = place.give_up(now + Duration::from_millis(1));
                                }
                                _ => {
                                    if let Ok(permit) = place.try_admit(now) {
                                        assert!(permit.in_flight_at_admission() <= 5);
                                        held.push(permit);
                                    }
                                }
                            }
                        }
                        Decision::Reject(_) => {}
                    }
                }
                drop(held);
            });
        }
    });
    assert_eq!(
        (inbound.in_flight(), inbound.waiting()),
        (0, 0),
        "every slot and place came back"
    );
    assert!(
        peak_flight.load(Ordering::Relaxed) >= 4,
        "contention reached the limit"
    );
    assert!(queued.load(Ordering::Relaxed) > 0, "the queue was used");
    assert!(peak_waiting.load(Ordering::Relaxed) <= 6);
}
