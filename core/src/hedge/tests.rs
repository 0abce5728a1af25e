extern crate std;

use core::cell::RefCell;
use core::time::Duration;
use std::string::ToString;
use std::vec::Vec;

use super::*;
use crate::retry::budget::{TokenBucket, TokenBucketConfig, Tokens, Unlimited};

const MS: Duration = Duration::from_millis(1);

#[derive(Default)]
struct Log(RefCell<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.borrow_mut().push(*event);
    }
}

impl Log {
    fn take(&self) -> Vec<Event> {
        core::mem::take(&mut *self.0.borrow_mut())
    }
}

fn idem() -> CallOptions {
    CallOptions::default().idempotent(true)
}

fn small(window: u32) -> HedgeConfig {
    HedgeConfig {
        window,
        ..HedgeConfig::DEFAULT
    }
}

/// One call at `at` whose original answers `Success` after `latency`, no copy sent.
fn plain_call<B: RetryBudget>(h: &Hedge<B>, at: Instant, latency: Duration) {
    let call = h.begin(at, idem());
    call.finish(h, at + latency, 1, &Verdict::Success, &());
}

#[test]
fn no_copy_before_the_first_window_fills() {
    let h = Hedge::new(small(20), Unlimited).unwrap();
    for i in 0..19 {
        let mut call = h.begin(Instant::from_secs(i), idem());
        assert_eq!(call.poll(&h, Instant::MAX, &()), NextCopy::Never);
        call.finish(&h, Instant::from_secs(i) + MS, 1, &Verdict::Success, &());
        assert_eq!(h.window_filled(), i as u32 + 1);
    }
    assert_eq!(h.delay(), None);
    plain_call(&h, Instant::from_secs(30), MS);
    assert_eq!(h.window_filled(), 0, "the 20th sample closes the window");
    assert!(h.delay().is_some());
}

/// 950 fast and 50 slow: the p95 is the 950th, fast; one fast sample fewer and it is slow.
#[test]
fn the_delay_is_the_nearest_rank_quantile() {
    // 1 ms lies in bucket [983040, 1048575] ns (midpoint 1015807 ns), raised by the error
    // bound to 1083528 ns, so 1084 µs; 100 ms in [92274688, 100663295] (midpoint 96468991 ns),
    // raised past the window's maximum, so the maximum: 100 ms.
    for (fast, expect_us) in [(950u32, 1084u64), (949, 100_000)] {
        let h = Hedge::new(HedgeConfig::DEFAULT, Unlimited).unwrap();
        for i in 0..1000u32 {
            let latency = if i < fast { MS } else { 100 * MS };
            plain_call(&h, Instant::from_secs(u64::from(i)), latency);
        }
        assert_eq!(
            h.delay(),
            Some(Duration::from_micros(expect_us)),
            "fast = {fast}"
        );
    }
}

#[test]
fn the_delay_never_falls_below_the_floor_or_one_tick() {
    let h = Hedge::new(small(20), Unlimited).unwrap();
    for i in 0..20 {
        plain_call(&h, Instant::from_secs(i), Duration::from_micros(10));
    }
    assert_eq!(h.delay(), Some(MS), "min_delay: Finagle's 1 ms");

    let no_floor = HedgeConfig {
        min_delay: Duration::ZERO,
        ..small(20)
    };
    let h = Hedge::new(no_floor, Unlimited).unwrap();
    for i in 0..20 {
        plain_call(&h, Instant::from_secs(i), Duration::ZERO);
    }
    assert_eq!(
        h.delay(),
        Some(Duration::from_micros(1)),
        "one tick, never zero"
    );
}

#[test]
fn each_window_replaces_the_last() {
    let h = Hedge::new(small(20), Unlimited).unwrap();
    for i in 0..20 {
        plain_call(&h, Instant::from_secs(i), 100 * MS);
    }
    assert_eq!(h.delay(), Some(100 * MS));
    for i in 0..19 {
        plain_call(&h, Instant::from_secs(100 + i), 2 * MS);
    }
    assert_eq!(h.delay(), Some(100 * MS), "in force until the window fills");
    plain_call(&h, Instant::from_secs(200), 2 * MS);
    assert_eq!(
        h.delay(),
        Some(2 * MS),
        "the old window's samples are gone (min = max = 2 ms)"
    );
}

#[test]
fn a_fixed_delay_keeps_no_window() {
    let c = HedgeConfig {
        fixed_delay: Some(10 * MS),
        ..small(20)
    };
    let h = Hedge::new(c, Unlimited).unwrap();
    assert_eq!(h.delay(), Some(10 * MS));
    for i in 0..100 {
        plain_call(&h, Instant::from_secs(i), 500 * MS);
    }
    assert_eq!(h.delay(), Some(10 * MS));
    assert_eq!(h.window_filled(), 0);
    let c = HedgeConfig {
        fixed_delay: Some(Duration::from_micros(3)),
        ..small(20)
    };
    assert_eq!(
        Hedge::new(c, Unlimited).unwrap().delay(),
        Some(MS),
        "the floor applies to a fixed delay too"
    );
}

#[test]
fn wait_then_send_then_never_with_events() {
    let log = Log::default();
    let c = HedgeConfig {
        fixed_delay: Some(10 * MS),
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, Unlimited).unwrap();
    let t0 = Instant::from_secs(7);
    let mut call = h.begin(t0, idem());
    assert_eq!(
        call.poll(&h, t0, &log),
        NextCopy::Wait {
            until: t0 + 10 * MS
        }
    );
    assert_eq!(
        call.poll(&h, t0 + 9 * MS, &log),
        NextCopy::Wait {
            until: t0 + 10 * MS
        }
    );
    assert!(log.take().is_empty(), "waiting is silent");
    // A late timer: the copy leaves when polled.
    assert_eq!(
        call.poll(&h, t0 + 12 * MS, &log),
        NextCopy::Send { copy: 2 }
    );
    assert_eq!(
        log.take(),
        [Event::HedgeSent {
            copy: 2,
            after: 12 * MS
        }]
    );
    assert_eq!(call.poll(&h, t0 + 30 * MS, &log), NextCopy::Never);
    assert_eq!(call.sent(), 2);
    call.finish(&h, t0 + 13 * MS, 2, &Verdict::Success, &log);
    assert_eq!(log.take(), [Event::HedgeWon { copy: 2, copies: 2 }]);
}

#[test]
fn no_won_event_without_a_hedge() {
    let log = Log::default();
    let h = Hedge::new(HedgeConfig::DEFAULT, Unlimited).unwrap();
    let call = h.begin(Instant::ZERO, idem());
    call.finish(&h, Instant::from_millis(3), 1, &Verdict::Success, &log);
    assert!(log.take().is_empty());
}

#[test]
fn several_hedges_are_one_delay_apart() {
    let c = HedgeConfig {
        fixed_delay: Some(5 * MS),
        max_hedges: 3,
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, Unlimited).unwrap();
    let t0 = Instant::from_secs(1);
    let mut call = h.begin(t0, idem());
    for (k, copy) in [(1u32, 2u32), (2, 3), (3, 4)] {
        let due = t0 + 5 * MS * k;
        assert_eq!(
            call.poll(&h, due - Duration::from_nanos(1), &()),
            NextCopy::Wait { until: due }
        );
        assert_eq!(call.poll(&h, due, &()), NextCopy::Send { copy });
    }
    assert_eq!(call.poll(&h, Instant::MAX, &()), NextCopy::Never);
    call.finish(&h, t0 + 16 * MS, 1, &Verdict::Success, &());
}

#[test]
fn the_local_cap_bounds_hedges_to_the_load_plus_burst() {
    let c = HedgeConfig {
        fixed_delay: Some(MS),
        burst: 2,
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, Unlimited).unwrap();
    let log = Log::default();
    let mut sent = 0;
    let mut refused = 0;
    // Every call outlives the delay: a degraded upstream.
    for i in 0..200u64 {
        let t = Instant::from_secs(i);
        let mut call = h.begin(t, idem());
        match call.poll(&h, t + MS, &log) {
            NextCopy::Send { .. } => sent += 1,
            NextCopy::Refused(HedgeRefusal::LocalCap) => refused += 1,
            other => panic!("{other:?}"),
        }
        call.finish(&h, t + 50 * MS, 1, &Verdict::Success, &());
    }
    // At most burst + 200 × 5% = 12; the first call's earning fell on a full cap, so 11.
    assert_eq!((sent, refused), (11, 189));
    assert!(log.take().iter().any(|e| matches!(
        e,
        Event::HedgeRefused {
            copy: 2,
            reason: HedgeRefusal::LocalCap
        }
    )));
}

#[test]
fn the_shared_budget_refuses_and_the_original_completes() {
    // Room for exactly one hedge (a hedge is charged as a retry after a timeout: 10 tokens).
    let budget = TokenBucket::new(TokenBucketConfig {
        initial: Tokens::whole(15),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let c = HedgeConfig {
        fixed_delay: Some(MS),
        accounting: BudgetAccounting::SpendOnly,
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, &budget).unwrap();
    let log = Log::default();
    let t = Instant::from_secs(1);
    let mut first = h.begin(t, idem());
    assert_eq!(first.poll(&h, t + MS, &log), NextCopy::Send { copy: 2 });
    assert_eq!(
        budget.balance(),
        Tokens::whole(5),
        "charged to the shared budget"
    );
    let local = h.local_balance_milli();
    let mut second = h.begin(t, idem());
    assert_eq!(
        second.poll(&h, t + MS, &log),
        NextCopy::Refused(HedgeRefusal::Budget)
    );
    assert_eq!(
        h.local_balance_milli(),
        local + 50,
        "the local hedge was given back (plus the call's earning)"
    );
    assert_eq!(second.poll(&h, t + 2 * MS, &log), NextCopy::Never);
    // The original of the refused call runs on and completes; its latency is recorded as
    // any original's.
    second.finish(&h, t + 40 * MS, 1, &Verdict::Success, &log);
    first.finish(&h, t + 2 * MS, 2, &Verdict::Success, &log);
    assert_eq!(
        log.take(),
        [
            Event::HedgeSent { copy: 2, after: MS },
            Event::HedgeRefused {
                copy: 2,
                reason: HedgeRefusal::Budget
            },
            Event::HedgeWon { copy: 2, copies: 2 },
        ]
    );
    assert_eq!(
        budget.balance(),
        Tokens::whole(5),
        "spend-only records no calls"
    );
}

#[test]
fn calls_accounting_records_like_a_retry_policy() {
    let budget = TokenBucket::new(TokenBucketConfig {
        initial: Tokens::whole(100),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let c = HedgeConfig {
        fixed_delay: Some(MS),
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, &budget).unwrap();
    let t = Instant::from_secs(1);
    // The hedge wins: charged 10, refunded 10 as a successful retry.
    let mut call = h.begin(t, idem());
    assert_eq!(call.poll(&h, t + MS, &()), NextCopy::Send { copy: 2 });
    assert_eq!(budget.balance(), Tokens::whole(90));
    call.finish(&h, t + 2 * MS, 2, &Verdict::Success, &());
    assert_eq!(budget.balance(), Tokens::whole(100));
    // The original wins: the hedge's 10 stay spent, the first-try success deposits 1.
    let mut call = h.begin(t, idem());
    assert_eq!(call.poll(&h, t + MS, &()), NextCopy::Send { copy: 2 });
    call.finish(&h, t + 2 * MS, 1, &Verdict::Success, &());
    assert_eq!(budget.balance(), Tokens::whole(91));
    // Answered and Rejected deposit nothing.
    for v in [
        Verdict::Answered,
        Verdict::Rejected(RejectReason::BulkheadFull),
    ] {
        let call = h.begin(t, idem());
        call.finish(&h, t + MS, 1, &v, &());
    }
    assert_eq!(budget.balance(), Tokens::whole(91));
}

#[test]
fn calls_accounting_grpc_failures_drain_the_bucket() {
    let budget = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
    let h = Hedge::new(HedgeConfig::DEFAULT, &budget).unwrap();
    let before = budget.balance();
    let call = h.begin(Instant::ZERO, idem());
    call.finish(&h, Instant::from_millis(1), 1, &Verdict::Transient, &());
    assert!(
        budget.balance() < before,
        "an unretried failure is charged (gRPC)"
    );
}

use crate::rejection::RejectReason;

#[test]
fn a_non_idempotent_call_is_never_hedged_and_records_nothing() {
    let h = Hedge::new(
        HedgeConfig {
            fixed_delay: Some(MS),
            burst: 1,
            window: 20,
            ..HedgeConfig::DEFAULT
        },
        Unlimited,
    )
    .unwrap();
    let log = Log::default();
    let before = h.local_balance_milli();
    let mut call = h.begin(Instant::ZERO, CallOptions::default());
    assert_eq!(call.poll(&h, Instant::from_secs(9), &log), NextCopy::Never);
    call.finish(&h, Instant::from_secs(9), 1, &Verdict::Success, &log);
    assert_eq!(h.local_balance_milli(), before);
    assert!(log.take().is_empty());
    let q = Hedge::new(small(20), Unlimited).unwrap();
    q.begin(Instant::ZERO, CallOptions::default()).finish(
        &q,
        Instant::from_secs(1),
        1,
        &Verdict::Success,
        &(),
    );
    assert_eq!(q.window_filled(), 0, "no latency sample");
}

#[test]
fn no_copy_due_at_or_after_the_deadline() {
    use crate::time::Deadline;
    let c = HedgeConfig {
        fixed_delay: Some(10 * MS),
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, Unlimited).unwrap();
    let t = Instant::from_secs(1);
    let at = |d| idem().deadline(Deadline::at(t + d));
    assert_eq!(
        h.begin(t, at(10 * MS)).poll(&h, t, &()),
        NextCopy::Never,
        "due exactly at the deadline"
    );
    assert_eq!(
        h.begin(t, at(10 * MS + Duration::from_nanos(1)))
            .poll(&h, t, &()),
        NextCopy::Wait { until: t + 10 * MS }
    );
}

#[test]
fn which_answers_are_latencies() {
    let fresh = || Hedge::new(small(20), Unlimited).unwrap();
    let t = Instant::from_secs(1);
    // Fast failures are not answer latencies.
    for v in [
        Verdict::Transient,
        Verdict::Uncertain,
        Verdict::Overload { retry_after: None },
        Verdict::Rejected(RejectReason::CircuitOpen),
    ] {
        let h = fresh();
        h.begin(t, idem()).finish(&h, t + MS, 1, &v, &());
        assert_eq!(h.window_filled(), 0, "{v:?}");
    }
    // Answers and timeouts (lower bounds) are.
    for v in [Verdict::Success, Verdict::Answered, Verdict::Timeout] {
        let h = fresh();
        h.begin(t, idem()).finish(&h, t + MS, 1, &v, &());
        assert_eq!(h.window_filled(), 1, "{v:?}");
    }
    // An original that failed early while a copy was in flight keeps its own (non-)latency.
    let h = fresh();
    let mut call = h.begin(t, idem());
    call.answered(1, t + MS, &Verdict::Transient);
    call.finish(&h, t + 5 * MS, 2, &Verdict::Success, &());
    assert_eq!(h.window_filled(), 0);
    // A cancelled loser is recorded as running until the winner answered.
    let h = Hedge::new(small(20), Unlimited).unwrap();
    for i in 0..20 {
        let s = Instant::from_secs(i);
        h.begin(s, idem())
            .finish(&h, s + 7 * MS, 2, &Verdict::Success, &());
    }
    assert_eq!(h.delay(), Some(7 * MS));
}

#[test]
fn a_dropped_call_records_nothing() {
    let h = Hedge::new(small(20), Unlimited).unwrap();
    let unfinished = h.begin(Instant::ZERO, idem());
    let _ = unfinished; // the caller gave up
    assert_eq!(h.window_filled(), 0);
}

#[test]
fn extreme_instants_saturate() {
    let c = HedgeConfig {
        fixed_delay: Some(MS),
        ..HedgeConfig::DEFAULT
    };
    let h = Hedge::new(c, Unlimited).unwrap();
    let mut call = h.begin(Instant::MAX, idem());
    assert_eq!(call.poll(&h, Instant::MAX, &()), NextCopy::Send { copy: 2 });
    call.finish(&h, Instant::MAX, 2, &Verdict::Success, &());
    // Time going backwards: the copy is simply not due yet.
    let mut call = h.begin(Instant::from_secs(5), idem());
    assert_eq!(
        call.poll(&h, Instant::ZERO, &()),
        NextCopy::Wait {
            until: Instant::from_secs(5) + MS
        }
    );
    call.finish(&h, Instant::ZERO, 1, &Verdict::Success, &());
}

#[test]
fn invalid_configs_are_refused_with_their_own_text() {
    let d = HedgeConfig::DEFAULT;
    let cases = [
        (
            HedgeConfig {
                max_extra_load_permille: 0,
                ..d
            },
            HedgeConfigError::LoadOutOfRange,
        ),
        (
            HedgeConfig {
                max_extra_load_permille: 1000,
                ..d
            },
            HedgeConfigError::LoadOutOfRange,
        ),
        (
            HedgeConfig { window: 0, ..d },
            HedgeConfigError::WindowTooShort,
        ),
        (
            HedgeConfig { window: 19, ..d },
            HedgeConfigError::WindowTooShort,
        ),
        (
            HedgeConfig { max_hedges: 0, ..d },
            HedgeConfigError::HedgesOutOfRange,
        ),
        (
            HedgeConfig {
                max_hedges: 16,
                ..d
            },
            HedgeConfigError::HedgesOutOfRange,
        ),
        (
            HedgeConfig { burst: 0, ..d },
            HedgeConfigError::BurstOutOfRange,
        ),
        (
            HedgeConfig {
                burst: 1_000_001,
                ..d
            },
            HedgeConfigError::BurstOutOfRange,
        ),
        (
            HedgeConfig {
                min_delay: Duration::from_secs(5000),
                ..d
            },
            HedgeConfigError::DelayTooLong,
        ),
        (
            HedgeConfig {
                fixed_delay: Some(Duration::MAX),
                ..d
            },
            HedgeConfigError::DelayTooLong,
        ),
    ];
    for (c, e) in cases {
        assert_eq!(Hedge::new(c, Unlimited).err(), Some(e), "{c:?}");
    }
    // The edges that are accepted.
    for c in [
        HedgeConfig { window: 20, ..d },
        HedgeConfig {
            max_extra_load_permille: 999,
            window: 2,
            ..d
        },
        HedgeConfig {
            max_hedges: 15,
            burst: 1_000_000,
            ..d
        },
        HedgeConfig {
            min_delay: Duration::from_micros(u64::from(u32::MAX)),
            ..d
        },
    ] {
        assert!(Hedge::new(c, Unlimited).is_ok(), "{c:?}");
    }
    let all = [
        HedgeConfigError::LoadOutOfRange,
        HedgeConfigError::WindowTooShort,
        HedgeConfigError::HedgesOutOfRange,
        HedgeConfigError::BurstOutOfRange,
        HedgeConfigError::DelayTooLong,
    ];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a.to_string(), b.to_string());
        }
    }
    assert_ne!(
        HedgeRefusal::LocalCap.to_string(),
        HedgeRefusal::Budget.to_string()
    );
}

#[test]
fn the_defaults_are_the_documented_ones() {
    let d = HedgeConfig::default();
    assert_eq!(d, HedgeConfig::DEFAULT);
    assert_eq!(d.quantile_permille(), 950, "the paper's p95");
    assert_eq!(d.min_delay, MS, "Finagle's floor");
    assert_eq!((d.max_hedges, d.burst, d.window), (1, 100, 1000));
    assert_eq!(d.accounting, BudgetAccounting::Calls);
}
