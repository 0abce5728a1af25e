//! Issue 13, point 2, "suspected by reading", for the windowed policies: the sliding window's
//! bucket numbers were 32-bit and wrapped after 2^32 bucket periods (49.7 days of 1 ms
//! buckets). Read exactly one wrap later, an old bucket looked current; and at the wrap the
//! ring index `period % B` jumped (2^32 is not a multiple of 10 or 20), so a bucket still in
//! the window was taken over early. Each test below uses only APIs that exist on b41b95d and
//! fails there.

use core::time::Duration;

use resilix::VerdictKind;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, RetryBudget};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;

/// 2^32 milliseconds: 49.7 days, one wrap of a 32-bit count of 1 ms buckets.
const WRAP_MS: u64 = 1 << 32;

/// A throttler of twenty 1 ms buckets.
fn throttler() -> Throttler<20> {
    Throttler::new(ThrottlerConfig {
        window: Duration::from_millis(20),
        ..ThrottlerConfig::DEFAULT
    })
    .unwrap()
}

/// A ratio budget of ten 1 ms buckets, 10% with a floor of 3.
fn budget() -> RatioBudget<10> {
    RatioBudget::new(RatioBudgetConfig {
        window: Duration::from_millis(10),
        ..RatioBudgetConfig::DEFAULT
    })
    .unwrap()
}

fn settle(t: &Throttler<20>, now: Instant, rng: &mut SeededRandom, verdict: Verdict) -> bool {
    let mut env = Env::new(now, rng);
    match t.admit(&mut env) {
        Ok(p) => {
            p.settle(&verdict, &mut env);
            true
        }
        Err(_) => false,
    }
}

/// 30 failures shed at 0.9; after 49.7 days idle (and after one, two and three wraps), the
/// throttler must see an empty window and shed nothing. On b41b95d the old bucket's 30
/// requests reappear exactly one wrap later and the first call is shed with probability 0.9.
#[test]
fn throttler_idle_for_a_whole_wrap_of_its_bucket_numbers_sheds_nothing() {
    for wraps in 1..=3u64 {
        let t = throttler();
        let mut rng = SeededRandom::new(wraps);
        let t0 = Instant::from_micros(500);
        for _ in 0..30 {
            settle(&t, t0, &mut rng, Verdict::Transient);
        }
        assert!(!t.rejection_probability(t0).is_zero(), "it sheds at first");
        let later = Instant::from_micros(500 + wraps * WRAP_MS * 1_000);
        assert_eq!(t.counts(later), (0, 0), "{wraps} wraps later");
        assert!(
            t.rejection_probability(later).is_zero(),
            "{wraps} wraps later"
        );
        let admitted = (0..10)
            .filter(|_| settle(&t, later, &mut rng, Verdict::Success))
            .count();
        assert_eq!(admitted, 10, "{wraps} wraps later, nothing is shed");
    }
}

/// One request a millisecond through the wrap of the bucket numbers: the window of twenty
/// 1 ms buckets holds twenty at every step. On b41b95d the index jump at the wrap takes over
/// buckets still in the window, and it holds fewer (19 at the wrap).
#[test]
fn throttler_counts_steadily_through_the_wrap() {
    let t = throttler();
    let mut rng = SeededRandom::new(1);
    let start = WRAP_MS - 40;
    for ms in start..start + 80 {
        let now = Instant::from_millis(ms) + Duration::from_micros(500);
        assert!(settle(&t, now, &mut rng, Verdict::Success));
        if ms >= start + 19 {
            assert_eq!(
                t.counts(now),
                (20, 20),
                "{} ms from the wrap",
                ms as i64 - WRAP_MS as i64
            );
        }
    }
}

/// The floor of 3 retries spent; 49.7 days later (one to three wraps) the floor is back. On
/// b41b95d the three old retries reappear one wrap later and the retry is refused.
#[test]
fn ratio_budget_idle_for_a_whole_wrap_grants_its_floor_again() {
    for wraps in 1..=3u64 {
        let b = budget();
        let t0 = Instant::from_micros(300);
        let spent = (0..10)
            .filter(|_| b.try_spend(t0, VerdictKind::Transient))
            .count();
        assert_eq!(spent, 3);
        let later = Instant::from_micros(300 + wraps * WRAP_MS * 1_000);
        assert_eq!(b.counts(later), (0, 0), "{wraps} wraps later");
        let granted = (0..10)
            .filter(|_| b.try_spend(later, VerdictKind::Transient))
            .count();
        assert_eq!(granted, 3, "{wraps} wraps later: the floor again");
    }
}

/// One first attempt a millisecond through the wrap: the window of ten 1 ms buckets holds ten
/// at every step. On b41b95d the index jump at the wrap drops buckets still in the window.
#[test]
fn ratio_budget_counts_steadily_through_the_wrap() {
    let b = budget();
    let start = WRAP_MS - 30;
    for ms in start..start + 60 {
        let now = Instant::from_millis(ms) + Duration::from_micros(500);
        b.record_first_attempt(now);
        if ms >= start + 9 {
            assert_eq!(
                b.counts(now),
                (10, 0),
                "{} ms from the wrap",
                ms as i64 - WRAP_MS as i64
            );
        }
    }
}

/// The 31-bit period word of the fix repeats every 2^31 periods (24.9 days of 1 ms buckets):
/// idle for one to six of its circles, both policies read an empty window.
#[test]
fn idle_for_whole_circles_of_the_new_word() {
    for circles in 1..=6u64 {
        let t = throttler();
        let b = budget();
        let mut rng = SeededRandom::new(circles);
        let t0 = Instant::from_micros(700);
        for _ in 0..30 {
            settle(&t, t0, &mut rng, Verdict::Transient);
            b.record_first_attempt(t0);
        }
        while b.try_spend(t0, VerdictKind::Timeout) {}
        let later = Instant::from_micros(700 + circles * (1 << 31) * 1_000);
        assert_eq!(t.counts(later), (0, 0), "{circles} circles");
        assert_eq!(b.counts(later), (0, 0), "{circles} circles");
        assert!(b.try_spend(later, VerdictKind::Timeout));
    }
}
