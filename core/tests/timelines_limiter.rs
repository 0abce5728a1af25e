//! Issue 13 on the adaptive limiter's real timelines: an idle gap of whole circles of the
//! window's tick word (point 2), and a rare timeout at a high call rate (point 4). Every test
//! here uses only APIs that exist on the base commit, and fails there.

use std::collections::VecDeque;
use std::time::Duration;

use resilix::Verdict;
use resilix::limiter::{Algorithm, Gradient2, Limiter, LimiterConfig, LimiterPermit};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

/// Gradient2, 1 s windows, one outcome closes a window, no baseline refresh, a floor of 1 so
/// every change shows.
fn windowed() -> Limiter {
    Limiter::new(LimiterConfig {
        min_limit: 1,
        window_samples: 1,
        min_rtt: Duration::ZERO,
        probe_multiplier: 0,
        ..LimiterConfig::gradient2()
    })
    .unwrap()
}

/// Admits 20 calls at `at − 10 ms` and settles them at `at`, the busiest first (20 in flight:
/// not app-limited, so a closing window grows the limit). Answers whether the first settle
/// closed the window (the limit moved).
fn burst(limiter: &Limiter, at: Instant) -> bool {
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(at - Duration::from_millis(10), &mut rng);
    let mut permits: Vec<_> = (0..20).map(|_| limiter.admit(&mut env).unwrap()).collect();
    env.now = at;
    let before = limiter.limit_fixed();
    permits.pop().unwrap().settle(&Verdict::Success, &mut env);
    let closed = limiter.limit_fixed() != before;
    for p in permits {
        p.settle(&Verdict::Success, &mut env);
    }
    closed
}

/// Point 2: the window's opening tick was a 1 ns tick word (4.29 s circle; 17.18 s once ticks
/// are 4 ns). A window opened at 1.5 s and next settled whole circles plus 1 ms later read as
/// 1 ms old, so it did not close, and the limit ignored everything since. It is 4.3 s to
/// 52 s old, and must close at that first settle.
#[test]
fn a_window_idle_for_whole_circles_closes_at_its_first_settle() {
    const CIRCLE_1NS: u64 = 1 << 32;
    for circles in 1..=12u64 {
        let limiter = windowed();
        let opened = Instant::from_millis(1_500);
        assert!(
            burst(&limiter, opened),
            "the first window (opened at 0) closes at 1.5 s"
        );
        let later = opened + Duration::from_nanos(circles * CIRCLE_1NS + 1_000_000);
        assert!(
            burst(&limiter, later),
            "a window opened at 1.5 s is {:.2} s old at its next settle, so it closes",
            (later - opened).as_secs_f64()
        );
        // And the reopened window is young again: a settle 1 ms later does not close it.
        assert!(!burst(&limiter, later + Duration::from_millis(1)));
    }
}

/// 5,000 calls a second, evenly spaced, each answered after exactly 10 ms (50 in flight),
/// for 120 s; every `drop_every`-th call times out instead. Answers the final limit and the
/// fraction of calls refused.
fn rare_timeouts(config: LimiterConfig, drop_every: Option<u64>) -> (u32, f64) {
    let limiter = Limiter::new(config).unwrap();
    let mut rng = SeededRandom::new(1);
    let step = Duration::from_micros(200);
    let latency = Duration::from_millis(10);
    let mut open: VecDeque<(Instant, u64, LimiterPermit<'_>)> = VecDeque::new();
    let (mut calls, mut refused) = (0u64, 0u64);
    let mut now = Instant::ZERO;
    let end = Instant::from_secs(120);
    while now < end {
        let mut env = Env::new(now, &mut rng);
        while open.front().is_some_and(|(due, _, _)| *due <= now) {
            let (_, n, p) = open.pop_front().unwrap();
            let timed_out = drop_every.is_some_and(|k| n % k == k - 1);
            let verdict = if timed_out {
                Verdict::Timeout
            } else {
                Verdict::Success
            };
            p.settle(&verdict, &mut env);
        }
        match limiter.admit(&mut env) {
            Ok(p) => open.push_back((now + latency, calls, p)),
            Err(_) => refused += 1,
        }
        calls += 1;
        now = now + step;
    }
    (limiter.limit(), refused as f64 / calls as f64)
}

/// Point 4: on the base, one timeout in 10,000 calls cut half the windows by 10% and the
/// limit collapsed (to 25, with 53% refused; the floor of 20 at 1 in 5,000). Now a window is
/// congested only when more than 2% of its outcomes drop: the limit stays within 10% of its
/// value without drops, and refusals rise by at most one point.
#[test]
fn gradient2_keeps_its_limit_under_one_timeout_in_ten_thousand() {
    let config = LimiterConfig::gradient2();
    let (healthy, healthy_refused) = rare_timeouts(config, None);
    assert!(
        healthy >= 90,
        "without drops the limit grows to ~2× the 50 in flight: {healthy}"
    );
    for every in [100_000, 10_000, 5_000] {
        let (limit, refused) = rare_timeouts(config, Some(every));
        assert!(
            limit.abs_diff(healthy) * 10 <= healthy,
            "1 in {every}: limit {limit}, {healthy} without drops"
        );
        assert!(
            refused <= healthy_refused + 0.01,
            "1 in {every}: {:.1}% refused, {:.1}% without drops",
            refused * 100.0,
            healthy_refused * 100.0
        );
    }
}

/// Frequent drops still cut the limit: one call in 20 timing out (5% of every window) holds
/// it at the floor.
#[test]
fn gradient2_still_backs_off_from_frequent_drops() {
    let (limit, refused) = rare_timeouts(LimiterConfig::gradient2(), Some(20));
    assert_eq!(limit, 20, "the floor");
    assert!(refused > 0.5, "{refused}");
}

/// Netflix's own Gradient2 ignores drops: `drop_backoff = 1.0` is accepted and means that
/// (the base refused it).
#[test]
fn netflix_behaviour_is_selectable() {
    let netflix = LimiterConfig {
        algorithm: Algorithm::Gradient2(Gradient2 {
            drop_backoff: 1.0,
            ..Gradient2::default()
        }),
        ..LimiterConfig::gradient2()
    };
    let (healthy, _) = rare_timeouts(LimiterConfig::gradient2(), None);
    let (limit, _) = rare_timeouts(netflix, Some(20));
    assert_eq!(
        limit, healthy,
        "drops ignored: the limit is the no-drop one"
    );
}
