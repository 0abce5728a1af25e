//! The capacity rule, window by window, and its cell on a manual clock.

extern crate std;

use core::time::Duration;

use super::capacity::window_need;
use super::*;
use crate::permit::{Env, Permit};
use crate::random::SeededRandom;
use crate::verdict::Verdict;

/// 3.3 ms in sixteenths of a microsecond.
const S: u32 = 3_300 * 16;

fn rule() -> CapacityRule {
    CapacityRule::new(&CapacityConfig::DEFAULT)
}

/// The latency of a window at `limit` on a handler of `c` slots (each `S`), saturated.
fn at(c: u32, limit: u32) -> (u32, u32) {
    let latency = if limit <= c { S } else { S * limit / c };
    (latency, limit)
}

#[test]
fn the_first_window_sets_the_floor_and_probes_a_quarter() {
    let r = rule().next(5 * S, 20);
    assert_eq!(r.floor(), Some(5 * S));
    assert_eq!((r.limit(), r.probing()), (5, true));
    // The probe window is the floor now, and the limit comes back.
    let r = r.next(2 * S, 5);
    assert_eq!(
        (r.floor(), r.limit(), r.probing()),
        (Some(2 * S), 20, false)
    );
    assert_eq!(
        rule().next(0, 20).floor(),
        Some(1),
        "a zero latency reads as 1"
    );
}

#[test]
fn from_above_it_settles_at_the_capacity_and_spends_most_windows_there() {
    for c in [1u32, 2, 4, 64, 1_000] {
        for start in [20u32, 4_096] {
            let mut r = CapacityRule::new(&CapacityConfig {
                initial: start,
                ..CapacityConfig::DEFAULT
            });
            let mut at_c = 0;
            for w in 0..400 {
                let (latency, m) = at(c, r.limit());
                r = r.next(latency, m);
                if w >= 200 && r.limit() == c {
                    at_c += 1;
                }
            }
            assert!(
                at_c >= 140,
                "C {c} from {start}: {at_c} of 200 windows at C"
            );
        }
    }
}

/// Runs `windows` windows of a saturated handler of `c` slots, answering the limit after each
/// window that was not a probe (probe windows see the handler at a quarter of the limit).
fn limits(mut r: CapacityRule, c: u32, windows: usize) -> std::vec::Vec<u32> {
    let mut seen = std::vec::Vec::new();
    for _ in 0..windows {
        let probe = r.probing();
        let (latency, m) = at(c, r.limit());
        r = r.next(latency, m);
        if !probe && !r.probing() {
            seen.push(r.limit());
        }
    }
    seen
}

#[test]
fn from_below_it_grows_a_quarter_then_doubles_then_steps_back() {
    let r = rule().next(S, 20).next(S, 5);
    assert_eq!((r.limit(), r.floor()), (20, Some(S)));
    let seen = limits(r, 1_000, 10);
    // 1,600 queued: 1,600 × S / (1.6 S) = 1,000 at once.
    assert_eq!(
        seen[..8],
        [25, 50, 100, 200, 400, 800, 1_600, 1_000],
        "{seen:?}"
    );
}

#[test]
fn an_overshoot_holds_three_windows_before_growing_again() {
    // Settled at 4 on a handler of 4: 5 queues (latency 1.25 S), back to 4, hold 3.
    let start = CapacityRule::new(&CapacityConfig {
        initial: 4,
        ..CapacityConfig::DEFAULT
    });
    let r = start.next(S, 4).next(S, 1);
    assert_eq!(r.limit(), 4);
    let seen = limits(r, 4, 12);
    assert_eq!(seen[..6], [5, 4, 4, 4, 4, 5], "{seen:?}");
}

#[test]
fn a_window_below_three_quarters_of_the_limit_does_not_grow_it() {
    let r = rule().next(S, 20).next(S, 5);
    assert_eq!(r.next(S, 14).limit(), 20, "app-limited");
    assert_eq!(r.next(S, 15).limit(), 25, "three quarters filled");
    // Queueing while app-limited still shrinks it: 10 × S / 2 S = 5.
    assert_eq!(r.next(2 * S, 10).limit(), 5);
    // Within 10 % above the floor is no queue.
    assert_eq!(r.next(S + S / 10, 20).limit(), 25);
    assert_eq!(r.next(S + S / 10 + 1, 20).limit(), 18, "20 / 1.1 rounded");
}

#[test]
fn the_limit_stays_within_its_bounds() {
    let k = CapacityConfig {
        initial: 8,
        min: 2,
        max: 9,
        ..CapacityConfig::DEFAULT
    };
    let r = CapacityRule::new(&k).next(S, 8);
    assert_eq!(r.limit(), 2, "a quarter of 8, at the floor of 2");
    let r = r.next(S, 2);
    assert_eq!(r.next(S, 8).limit(), 9, "8 + 2 capped at 9");
    assert_eq!(r.next(100 * S, 8).limit(), 2, "8 / 100 floored at 2");
    // At its minimum it still probes, at the same limit.
    let low = CapacityRule::new(&CapacityConfig {
        initial: 1,
        ..CapacityConfig::DEFAULT
    })
    .next(S, 1);
    assert_eq!((low.limit(), low.probing()), (1, true));
}

#[test]
fn probes_come_every_four_windows_while_they_teach_and_less_often_while_not() {
    let mut r = rule().next(S, 1).next(S, 1); // settled at 20 with the right floor
    let mut gaps = std::vec::Vec::new();
    let mut since = 0;
    for _ in 0..200 {
        r = r.next(S, r.limit().min(20));
        since += 1;
        if r.probing() {
            gaps.push(since);
            since = 0;
            r = r.next(S, r.limit()); // the probe window: the same floor, nothing learned
        }
        if r.limit() > 20 {
            r = CapacityRule { limit: 20, ..r };
        }
    }
    // The first probe (at the first window) found the same floor: every 8, then 16, 32.
    assert_eq!(gaps[..4], [8, 16, 32, 32], "{gaps:?}");
    assert!(gaps[3..].iter().all(|g| *g == 32));
    // A probe that finds the floor 20 % lower brings the period back to four.
    let mut r = CapacityRule { probe_in: 1, ..r };
    r = r.next(S, 20);
    assert!(r.probing());
    let r = r.next(S * 8 / 10, 5);
    assert_eq!((r.probe_every, r.floor()), (4, Some(S * 8 / 10)));
}

#[test]
fn a_window_needs_its_samples_or_twice_the_limit() {
    assert_eq!(window_need(64, 1_000), 64);
    assert_eq!(window_need(64, 10), 20);
    assert_eq!(window_need(64, 5), 16, "at least 16");
    assert_eq!(window_need(64, 32), 64);
    assert_eq!(window_need(64, 0), 16);
    assert_eq!(window_need(3, u32::MAX), 3);
    assert_eq!(window_need(3, 1), 3, "fewer than 16 asked for: all of them");
    assert_eq!(window_need(20, 1), 16);
}

#[test]
fn the_cell_windows_requests_admitted_under_the_limit_in_force() {
    let config = InboundConfig {
        capacity: Some(CapacityConfig {
            initial: 4,
            window_samples: 3,
            min_window: Duration::from_millis(10),
            ..CapacityConfig::DEFAULT
        }),
        ..InboundConfig::adaptive()
    };
    let inbound = Inbound::new(config).unwrap();
    assert_eq!(inbound.limit(), 4);
    let mut rng = SeededRandom::new(2);
    let t0 = Instant::from_secs(5);
    let ms = Duration::from_millis;
    let admit = |at: Instant| match inbound.admit(at, Priority::Critical, None) {
        Decision::Admit(p) => p,
        other => panic!("{other:?}"),
    };
    let mut permits: std::vec::Vec<_> = (0..4).map(|_| admit(t0)).collect();
    let old = permits.pop().unwrap();
    // Three of 20 ms: the first window closes (3 samples, older than 10 ms).
    for p in permits {
        p.settle(&Verdict::Success, &mut Env::new(t0 + ms(20), &mut rng));
    }
    let r = inbound.capacity().unwrap();
    assert_eq!(r.floor(), Some(20_000 * 16));
    assert_eq!((r.limit(), r.probing(), inbound.limit()), (1, true, 1));
    // Admitted under 4, it says nothing about 1.
    old.settle(&Verdict::Success, &mut Env::new(t0 + ms(25), &mut rng));
    // A refused verdict carries no latency.
    let p = admit(t0 + ms(25));
    p.settle(
        &Verdict::Overload { retry_after: None },
        &mut Env::new(t0 + ms(26), &mut rng),
    );
    // Three under the probe's limit of 1 (all three samples asked for), 10, 20 and 30 ms: the
    // window is 40 ms long (twice the last average) and closes with an average of 20 ms.
    let mut at = t0 + ms(26);
    for took in [10, 20, 30] {
        assert!(inbound.capacity().unwrap().probing());
        let p = admit(at);
        at = at + ms(took);
        p.settle(&Verdict::Success, &mut Env::new(at, &mut rng));
    }
    let r = inbound.capacity().unwrap();
    assert_eq!(
        (r.floor(), r.limit(), r.probing()),
        (Some(20_000 * 16), 4, false)
    );
    assert_eq!(inbound.limit(), 4);
}
