//! Many threads on one hedge policy: the local cap never lets more hedges through than the
//! calls earned plus the burst, the shared budget's grants are exact, and the window counter
//! counts every original latency exactly once.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use core::time::Duration;

use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::hedge::{BudgetAccounting, Hedge, HedgeConfig, NextCopy};
use resilix::retry::budget::{RetryBudget, TokenBucket, TokenBucketConfig, Unlimited};
use resilix::time::Instant;

const THREADS: u64 = 8;
const CALLS: u64 = 5_000;
const MS: Duration = Duration::from_millis(1);

fn fixed(burst: u32, accounting: BudgetAccounting) -> HedgeConfig {
    HedgeConfig {
        fixed_delay: Some(MS),
        burst,
        accounting,
        ..HedgeConfig::DEFAULT
    }
}

/// Every call outlives its delay (a degraded upstream) and asks for its hedge at once.
fn storm<B: RetryBudget + Sync>(h: &Hedge<B>) -> u64 {
    let sent = AtomicU64::new(0);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (h, sent) = (&h, &sent);
            s.spawn(move || {
                for i in 0..CALLS {
                    let at = Instant::from_secs(t * CALLS + i);
                    let mut call = h.begin(at, CallOptions::default().idempotent(true));
                    let taken = match call.poll(h, at + MS, &()) {
                        NextCopy::Send { copy } => {
                            sent.fetch_add(1, Ordering::Relaxed);
                            copy
                        }
                        _ => 1,
                    };
                    call.finish(h, at + 2 * MS, taken, &Verdict::Success, &());
                }
            });
        }
    });
    sent.into_inner()
}

#[test]
fn the_local_cap_holds_under_contention() {
    for round in 0..10 {
        let h = Hedge::new(fixed(10, BudgetAccounting::Calls), Unlimited).unwrap();
        let sent = storm(&h);
        let calls = THREADS * CALLS;
        // Each call earns 50 thousandths; the cap starts with 10 hedges.
        let bound = 10 + calls * 50 / 1000;
        assert!(sent <= bound, "round {round}: {sent} > {bound}");
        // Earnings are lost only while the cap is full (the first calls of each thread), and
        // what is left at the end is less than a hedge.
        assert!(
            sent + 2 >= bound,
            "round {round}: {sent} hedges, bound {bound}"
        );
        assert!(
            h.local_balance_milli() < 1000 + 8 * 50,
            "round {round}: nothing left unused"
        );
    }
}

#[test]
fn the_shared_budget_grants_exactly_under_contention() {
    for round in 0..10 {
        // 500 tokens, 10 per hedge: exactly 50 hedges, however the threads race.
        let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
        let h = Hedge::new(fixed(1_000_000, BudgetAccounting::SpendOnly), &budget).unwrap();
        assert_eq!(storm(&h), 50, "round {round}");
        // Every refused hedge went back to the local cap, and the calls' earnings (2,000
        // hedges' worth) refilled the 50 sent: the cap ends full, not above.
        assert_eq!(h.local_balance_milli(), 1_000_000_000, "round {round}");
    }
}

#[test]
fn the_window_counts_every_latency_once() {
    let config = HedgeConfig {
        window: 77,
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(config, Unlimited).unwrap();
    thread::scope(|s| {
        for t in 0..THREADS {
            let h = &h;
            s.spawn(move || {
                for i in 0..1_000u64 {
                    let at = Instant::from_secs(t * 1_000 + i);
                    let call = h.begin(at, CallOptions::default().idempotent(true));
                    call.finish(h, at + MS * (1 + (i % 5) as u32), 1, &Verdict::Success, &());
                }
            });
        }
    });
    assert_eq!(h.window_filled(), (THREADS * 1_000 % 77) as u32);
    let d = h.delay().expect("windows filled");
    assert!(d >= MS && d <= 6 * MS, "{d:?}");
}
