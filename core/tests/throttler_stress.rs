//! The throttler's running-total window under many threads: every settle is in the totals
//! exactly once however many moves of the window race it, and the concurrent phase leaves no
//! drift behind (once quiescent, the window reads exactly what a single thread then adds, and
//! empty once that has slid out).
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use core::time::Duration;

use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;

const THREADS: u64 = 8;

/// A throttler of 20 buckets of `bucket` that never sheds (cap zero), so every admit settles.
fn never_sheds(bucket: Duration) -> Throttler {
    Throttler::new(ThrottlerConfig {
        max_rejection_rate: 0.0,
        min_requests: 0,
        window: bucket * 20,
        ..ThrottlerConfig::DEFAULT
    })
    .unwrap()
}

fn settle(t: &Throttler, now: Instant, verdict: &Verdict) {
    let mut rng = SeededRandom::new(0);
    let mut env = Env::new(now, &mut rng);
    t.admit(&mut env)
        .expect("a cap of zero never sheds")
        .settle(verdict, &mut env);
}

/// `THREADS` threads settle `calls` calls each on a shared clock that moves `step_ns` per call
/// (each thread reads it with a `fetch_add`, so clocks race and go stale as real ones do); one
/// call in three fails. Answers (requests, accepts) settled and the clock's end.
fn hammer(t: &Throttler, start: Instant, calls: u64, step_ns: u64) -> (u32, u32, Instant) {
    let clock = AtomicU64::new(start.as_nanos());
    let accepted = AtomicU64::new(0);
    thread::scope(|s| {
        for id in 0..THREADS {
            let (clock, accepted) = (&clock, &accepted);
            s.spawn(move || {
                let mut mine = 0;
                for i in 0..calls {
                    let now = Instant::from_nanos(clock.fetch_add(step_ns, Ordering::Relaxed));
                    let ok = (i + id) % 3 != 0;
                    let verdict = if ok {
                        Verdict::Success
                    } else {
                        Verdict::Transient
                    };
                    settle(t, now, &verdict);
                    mine += u64::from(ok);
                    if i % 1_024 == 0 {
                        let (requests, accepts) = t.counts(now);
                        assert!(u64::from(requests) <= THREADS * calls);
                        assert!(u64::from(accepts) <= THREADS * calls);
                    }
                }
                accepted.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    let requests = (THREADS * calls) as u32;
    let accepts = accepted.into_inner() as u32;
    (requests, accepts, Instant::from_nanos(clock.into_inner()))
}

/// 160,000 settles over about 18 bucket periods of a 20-bucket window, so about 18 moves race
/// the settles: once quiescent the window, which covers every period in play, holds every one
/// of them, no more and no fewer (a move never loses an add, and never counts one twice).
#[test]
fn every_settle_is_counted_once_across_racing_moves() {
    for round in 0..5u64 {
        let bucket = Duration::from_micros(100);
        let t = never_sheds(bucket);
        let start = Instant::from_secs(1_000 + round);
        let (requests, accepts, end) = hammer(&t, start, 20_000, 11);
        assert!(end.saturating_duration_since(start) < bucket * 19);
        assert_eq!(t.counts(end), (requests, accepts), "round {round}");
        // Sliding out period by period: never more accepts than requests, never growing,
        // empty once the last period in play has left.
        let mut last = (requests, accepts);
        let mut now = end;
        for _ in 0..21 {
            now = now + bucket;
            let (r, a) = t.counts(now);
            assert!(
                a <= r,
                "round {round}: {a} accepts > {r} requests at {now:?}"
            );
            assert!(r <= last.0 && a <= last.1);
            last = (r, a);
        }
        assert_eq!(last, (0, 0), "round {round}");
    }
}

/// Two million nanoseconds of 1 µs buckets (about 2,000 moves) under eight threads; then,
/// quiescent, a single thread's burst one window later is read exactly and is gone a window
/// after that: whatever the races did, no offset is left in the totals.
#[test]
fn racing_moves_leave_no_drift_behind() {
    let bucket = Duration::from_micros(1);
    let t = never_sheds(bucket);
    let (_, _, end) = hammer(&t, Instant::from_secs(7), 50_000, 5);
    let later = end + bucket * 21;
    assert_eq!(t.counts(later), (0, 0), "the concurrent phase slid out");
    for _ in 0..37 {
        settle(&t, later, &Verdict::Success);
    }
    for _ in 0..5 {
        settle(&t, later + bucket * 3, &Verdict::Timeout);
    }
    assert_eq!(t.counts(later + bucket * 3), (42, 37));
    assert_eq!(t.counts(later + bucket * 20), (5, 0));
    assert_eq!(t.counts(later + bucket * 23), (0, 0));
}
