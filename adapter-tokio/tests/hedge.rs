//! The tokio hedging driver under paused time: which copy wins, what a refusal leaves
//! running, that losers are dropped (their pipeline permits cancelled, nothing recorded), and
//! that a call not declared idempotent is never hedged.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilix::Verdict;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::hedge::{Hedge, HedgeConfig, HedgeRefusal};
use resilix::observe::{DurationHistogram, Event, Observer};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::budget::{TokenBucket, TokenBucketConfig, Tokens, Unlimited};
use resilix::time::Clock;
use resilix_tokio::TokioClock;
use resilix_tokio::hedge::{hedged, hedged_with};
use tokio::time::sleep;

const MS: Duration = Duration::from_millis(1);

fn fixed(delay_ms: u64) -> HedgeConfig {
    HedgeConfig {
        fixed_delay: Some(MS * delay_ms as u32),
        ..HedgeConfig::DEFAULT
    }
}

fn idem() -> CallOptions {
    CallOptions::default().idempotent(true)
}

fn ok(r: &Result<u32, u32>) -> Verdict {
    match r {
        Ok(_) => Verdict::Success,
        Err(_) => Verdict::Transient,
    }
}

/// Counts copies started, finished and dropped before finishing.
#[derive(Default)]
struct Copies {
    started: AtomicU32,
    finished: AtomicU32,
    cancelled: AtomicU32,
}

struct Running<'a>(&'a Copies, bool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let c = if self.1 {
            &self.0.finished
        } else {
            &self.0.cancelled
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

impl Copies {
    /// A copy that answers `answer` after `took`.
    async fn run(&self, took: Duration, answer: Result<u32, u32>) -> Result<u32, u32> {
        self.started.fetch_add(1, Ordering::Relaxed);
        let mut running = Running(self, false);
        sleep(took).await;
        running.1 = true;
        answer
    }

    fn counts(&self) -> (u32, u32, u32) {
        (
            self.started.load(Ordering::Relaxed),
            self.finished.load(Ordering::Relaxed),
            self.cancelled.load(Ordering::Relaxed),
        )
    }
}

#[derive(Default)]
struct Log(std::sync::Mutex<Vec<Event>>);

impl Observer for Log {
    fn on_event(&self, e: &Event) {
        self.0.lock().unwrap().push(*e);
    }
}

impl Log {
    fn hedge_events(&self) -> Vec<Event> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::HedgeSent { .. } | Event::HedgeRefused { .. } | Event::HedgeWon { .. }
                )
            })
            .copied()
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn the_copy_wins_and_the_original_is_cancelled() {
    let hedge = Hedge::new(fixed(10), Unlimited).unwrap();
    let copies = Copies::default();
    let log = Log::default();
    let t0 = tokio::time::Instant::now();
    let out = hedged_with(&hedge, idem(), &ok, &log, |copy| {
        let took = if copy == 1 { 1000 * MS } else { 3 * MS };
        copies.run(took, Ok(copy))
    })
    .await;
    assert_eq!(out.output, Ok(2));
    assert_eq!((out.copy, out.sent, out.verdict), (2, 2, Verdict::Success));
    assert_eq!(t0.elapsed(), 13 * MS, "answered 3 ms after the 10 ms hedge");
    assert_eq!(copies.counts(), (2, 1, 1), "the original was dropped");
    assert_eq!(
        log.hedge_events(),
        [
            Event::HedgeSent {
                copy: 2,
                after: 10 * MS
            },
            Event::HedgeWon { copy: 2, copies: 2 }
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_original_wins_and_the_copy_is_cancelled() {
    let hedge = Hedge::new(fixed(5), Unlimited).unwrap();
    let copies = Copies::default();
    let log = Log::default();
    let out = hedged_with(&hedge, idem(), &ok, &log, |copy| {
        let took = if copy == 1 { 8 * MS } else { 100 * MS };
        copies.run(took, Ok(copy))
    })
    .await;
    assert_eq!((out.output, out.copy, out.sent), (Ok(1), 1, 2));
    assert_eq!(copies.counts(), (2, 1, 1), "the hedge was dropped");
    assert_eq!(
        log.hedge_events().last(),
        Some(&Event::HedgeWon { copy: 1, copies: 2 })
    );
}

#[tokio::test(start_paused = true)]
async fn a_fast_original_sends_no_copy() {
    let hedge = Hedge::new(fixed(5), Unlimited).unwrap();
    let copies = Copies::default();
    let log = Log::default();
    let out = hedged_with(&hedge, idem(), &ok, &log, |copy| {
        copies.run(2 * MS, Ok(copy))
    })
    .await;
    assert_eq!((out.copy, out.sent), (1, 1));
    assert_eq!(copies.counts(), (1, 1, 0));
    assert!(log.hedge_events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_budget_refuses_the_hedge_and_the_original_completes() {
    let budget = TokenBucket::new(TokenBucketConfig {
        initial: Tokens::ZERO,
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let hedge = Hedge::new(fixed(10), &budget).unwrap();
    let copies = Copies::default();
    let log = Log::default();
    let t0 = tokio::time::Instant::now();
    let out = hedged_with(&hedge, idem(), &ok, &log, |copy| {
        copies.run(700 * MS, Ok(copy))
    })
    .await;
    assert_eq!((out.output, out.copy, out.sent), (Ok(1), 1, 1));
    assert_eq!(t0.elapsed(), 700 * MS, "the original ran to its answer");
    assert_eq!(copies.counts(), (1, 1, 0), "nothing was cancelled");
    assert_eq!(
        log.hedge_events(),
        [Event::HedgeRefused {
            copy: 2,
            reason: HedgeRefusal::Budget
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_not_declared_idempotent_is_never_hedged() {
    let hedge = Hedge::new(fixed(1), Unlimited).unwrap();
    let copies = Copies::default();
    let out = hedged(&hedge, CallOptions::default(), &ok, |copy| {
        copies.run(5_000 * MS, Ok(copy))
    })
    .await;
    assert_eq!((out.copy, out.sent), (1, 1));
    assert_eq!(copies.counts(), (1, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_failure_waits_for_the_copies_in_flight() {
    let hedge = Hedge::new(fixed(10), Unlimited).unwrap();
    let copies = Copies::default();
    // The original fails at 12 ms, after the hedge left at 10; the hedge answers at 15.
    let out = hedged(&hedge, idem(), &ok, |copy| {
        let (took, answer) = if copy == 1 {
            (12 * MS, Err(1))
        } else {
            (5 * MS, Ok(2))
        };
        copies.run(took, answer)
    })
    .await;
    assert_eq!((out.output, out.copy), (Ok(2), 2));
    assert_eq!(copies.counts(), (2, 2, 0));
    // Every copy fails: the last failure is the answer.
    let out = hedged(&hedge, idem(), &ok, |copy| {
        copies.run(if copy == 1 { 12 * MS } else { 20 * MS }, Err(copy))
    })
    .await;
    assert_eq!(
        (out.output, out.copy, out.verdict),
        (Err(2), 2, Verdict::Transient)
    );
    // A failure with nothing in flight ends the call at once (retry is not hedging's job).
    let t0 = tokio::time::Instant::now();
    let out = hedged(&hedge, idem(), &ok, |copy| copies.run(2 * MS, Err(copy))).await;
    assert_eq!((out.output, out.sent), (Err(1), 1));
    assert_eq!(t0.elapsed(), 2 * MS);
}

#[tokio::test(start_paused = true)]
async fn several_hedges_leave_one_delay_apart() {
    let config = HedgeConfig {
        max_hedges: 3,
        ..fixed(10)
    };
    let hedge = Hedge::new(config, Unlimited).unwrap();
    let copies = Copies::default();
    let log = Log::default();
    let out = hedged_with(&hedge, idem(), &ok, &log, |copy| {
        let took = if copy == 4 { MS } else { 1000 * MS };
        copies.run(took, Ok(copy))
    })
    .await;
    assert_eq!((out.copy, out.sent), (4, 4));
    assert_eq!(copies.counts(), (4, 1, 3));
    let afters: Vec<_> = log
        .hedge_events()
        .iter()
        .filter_map(|e| match e {
            Event::HedgeSent { after, .. } => Some(*after),
            _ => None,
        })
        .collect();
    assert_eq!(afters, [10 * MS, 20 * MS, 30 * MS]);
}

/// Each copy runs through a pipeline (a bulkhead, the duration histogram as observer): the
/// cancelled loser gives its slot back and records no duration.
#[tokio::test(start_paused = true)]
async fn losers_permits_cancel_and_record_nothing() {
    let bulkhead = Bulkhead::new(BulkheadConfig::new(4).unwrap());
    let pipeline = Pipeline::new().bulkhead(&bulkhead);
    let durations = DurationHistogram::new();
    let hedge = Hedge::new(fixed(10), Unlimited).unwrap();
    let clock = TokioClock::new();
    let held = Arc::new(AtomicU32::new(0));
    let out = hedged(&hedge, idem(), &ok, |copy| {
        let (pipeline, durations, held) = (&pipeline, &durations, held.clone());
        async move {
            let mut rng = SeededRandom::new(u64::from(copy));
            let mut env = Env::new(clock.now(), &mut rng).with_observer(durations);
            let mut call = pipeline.call(env.now, idem());
            let attempt = call.admit(&mut env).expect("room in the bulkhead");
            held.fetch_add(1, Ordering::Relaxed);
            sleep(if copy == 1 { 1000 * MS } else { 2 * MS }).await;
            env.now = clock.now();
            call.settle(attempt, &Verdict::Success, &mut env);
            Ok::<u32, u32>(copy)
        }
    })
    .await;
    assert_eq!(out.output, Ok(2));
    assert_eq!(held.load(Ordering::Relaxed), 2, "both copies held a slot");
    assert_eq!(bulkhead.available(), 4, "the loser's slot came back");
    assert_eq!(
        durations.count(),
        1,
        "only the winner's attempt was recorded"
    );
    assert_eq!(durations.max(), Some(2 * MS));
}

/// With a quantile delay, hedging starts once a window of latencies has been seen, at about
/// the p95 of those latencies.
#[tokio::test(start_paused = true)]
async fn the_quantile_delay_warms_up_from_real_calls() {
    let config = HedgeConfig {
        window: 20,
        ..HedgeConfig::DEFAULT
    };
    let hedge = Hedge::new(config, Unlimited).unwrap();
    let copies = Copies::default();
    for i in 0..20u32 {
        let out = hedged(&hedge, idem(), &ok, |c| copies.run(MS * (10 + i), Ok(c))).await;
        assert_eq!(out.sent, 1, "no delay known yet");
    }
    let delay = hedge.delay().expect("one window seen");
    assert!(delay >= 26 * MS && delay <= 30 * MS, "{delay:?}");
    let out = hedged(&hedge, idem(), &ok, |c| {
        copies.run(if c == 1 { 500 * MS } else { MS }, Ok(c))
    })
    .await;
    assert_eq!((out.copy, out.sent), (2, 2));
}
