//! Several paused runtimes in one process share the one origin, and paused time stays exact in
//! each, whether it was built before or after the process's first clock read, and however far
//! another runtime's virtual clock ran ahead of real time.
//!
//! One `#[test]` in its own binary, on purpose: the order "build a runtime, then read the
//! clock for the first time in the process" is only under control when nothing else in the
//! process reads it.

use std::time::Duration;

use resilix::time::{Clock, Instant};
use resilix_tokio::TokioClock;

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Reads the clock, advances `by`, reads again: the difference must be exactly `by`. Returns
/// the first read.
fn exact_in(rt: &tokio::runtime::Runtime, by: Duration) -> Instant {
    rt.block_on(async {
        let clock = TokioClock::new();
        let before = clock.now();
        tokio::time::advance(by).await;
        assert_eq!(clock.now() - before, by, "paused time is exact");
        assert_eq!(clock.to_tokio(clock.now()), tokio::time::Instant::now());
        before
    })
}

#[test]
fn paused_runtimes_built_before_and_after_the_first_read_are_all_exact() {
    // Built before anything in the process read the clock.
    let built_first = paused();
    // The process's first read happens in a paused runtime whose virtual clock has run two
    // days ahead of real time: the origin must still come from std's real clock, or every
    // runtime built later would read a time before it (and saturate at zero).
    let ahead = paused();
    let far = ahead.block_on(async {
        tokio::time::advance(Duration::from_secs(2 * 86_400)).await;
        resilix_tokio::now()
    });
    let built_later = paused();

    let first = exact_in(&built_first, Duration::from_millis(30));
    let later = exact_in(&built_later, Duration::from_micros(1_234_567));
    // Both read the real time their runtime was built at (plus what they advanced), far from
    // the runtime that ran ahead, and far from zero.
    assert!(far - first > Duration::from_secs(86_400) && far - later > Duration::from_secs(86_400));
    assert!(first > Instant::from_secs(3_600) && later > Instant::from_secs(3_600));
    assert!(later >= first, "built later, read later");
    // Outside any runtime: std's real clock, the same timeline.
    let outside = resilix_tokio::now();
    assert!(outside >= later && outside < far);
}
