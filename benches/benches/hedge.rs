//! Hedging: the per-call decision beside tower's `Hedge`.
//!
//! Ours, core: one call's whole hedging decision when no copy is needed (the common case:
//! 95% of calls at the default load): `begin` (the call's share into the local cap, the delay
//! in force), `poll` (the copy is due later) and `finish` (the original's latency into the
//! window; one call in 1,000 closes a window and reads the quantile). Time is injected. Also
//! under two threads on one shared policy, and on the path where the copy is sent and charged
//! to the shared budget (a `TokenBucket` kept full).
//!
//! Beside tower: tower's `Hedge` is a `Service` wrapper, so both sides run a whole call to an
//! immediately ready inner service inside one `block_on` on a current-thread runtime: tower's
//! `Hedge` (policy clones every request; p95 of a rotating histogram behind a `Mutex`, as its
//! docs show) and our `resilix_tokio::hedge::hedged` with the same ready future. Both arm a
//! timer per call (tower's `Delay`, our `Sleep`), so the figures include that.
use std::future::{Ready, ready};
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::call::CallOptions;
use resilix::hedge::{Hedge, HedgeConfig, NextCopy};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig, Unlimited};
use resilix::time::Instant;
use tower::{Service, ServiceExt};

mod common;
use common::{Stamp, one_thread, two_threads};

const US: u64 = 1_000;

/// A warm policy: one window of latencies seen, so a delay is in force.
fn warm<B: resilix::retry::budget::RetryBudget>(h: &Hedge<B>) {
    for i in 0..1_000u64 {
        let t = Instant::from_secs(i);
        h.begin(t, CallOptions::default().idempotent(true)).finish(
            h,
            t + Duration::from_micros(100 + i % 400),
            1,
            &Verdict::Success,
            &(),
        );
    }
}

/// One call that answers before its copy is due. `i` is the injected time, in µs.
fn unhedged_call<B: resilix::retry::budget::RetryBudget>(h: &Hedge<B>, i: u64) {
    let t = Instant::from_nanos(i * US);
    let mut call = h.begin(t, CallOptions::default().idempotent(true));
    black_box(call.poll(h, t, &()));
    call.finish(h, t + Duration::from_micros(150), 1, &Verdict::Success, &());
}

fn decision(c: &mut Criterion) {
    let hedge = Hedge::new(HedgeConfig::DEFAULT, Unlimited).unwrap();
    warm(&hedge);
    c.bench_function("hedge/resilix/decision/1t", |b| {
        one_thread(b, |i| unhedged_call(black_box(&hedge), i))
    });
    c.bench_function("hedge/resilix/decision/2t", |b| {
        two_threads(b, &hedge, |_| (), |h, _, i| unhedged_call(black_box(h), i))
    });

    // The copy is due and sent: the local cap and the shared budget both pay.
    let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    let config = HedgeConfig {
        fixed_delay: Some(Duration::from_millis(1)),
        max_extra_load_permille: 999,
        burst: 1_000_000,
        ..HedgeConfig::DEFAULT
    };
    let hedge = Hedge::new(config, &budget).unwrap();
    let mut sent = 0u64;
    c.bench_function("hedge/resilix/decision-with-copy/1t", |b| {
        one_thread(b, |i| {
            let t = Instant::from_nanos(i * US);
            let mut call = hedge.begin(t, CallOptions::default().idempotent(true));
            let due = t + Duration::from_millis(1);
            let taken = match call.poll(&hedge, due, &()) {
                NextCopy::Send { copy } => {
                    sent += 1;
                    copy
                }
                _ => 1,
            };
            // The copy wins: the bucket refunds the hedge (AWS: a successful retry), so the
            // budget stays full and every iteration takes the same path.
            call.finish(
                &hedge,
                due + Duration::from_micros(50),
                taken,
                &Verdict::Success,
                &(),
            );
        })
    });
    assert!(sent > 0, "the copies were sent");
}

/// tower's policy: every request may be hedged.
#[derive(Clone)]
struct Always;

impl tower::hedge::Policy<u32> for Always {
    fn clone_request(&self, req: &u32) -> Option<u32> {
        Some(*req)
    }
    fn can_retry(&self, _req: &u32) -> bool {
        true
    }
}

fn inner() -> impl Service<
    u32,
    Response = u32,
    Error = tower::BoxError,
    Future = Ready<Result<u32, tower::BoxError>>,
> + Clone {
    tower::service_fn(|x: u32| ready(Ok::<u32, tower::BoxError>(x)))
}

fn beside_tower(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut tower_hedge = rt.block_on(async {
        tower::hedge::Hedge::new(inner(), Always, 10, 0.95, Duration::from_secs(10))
    });
    c.bench_function("hedge/tower/call-ready/1t", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Stamp::now();
                for i in 0..iters {
                    let svc = tower_hedge.ready().await.unwrap();
                    black_box(svc.call(black_box(i as u32)).await.unwrap());
                }
                start.elapsed()
            })
        })
    });

    let hedge = Hedge::new(HedgeConfig::DEFAULT, Unlimited).unwrap();
    warm(&hedge);
    let classify = |_: &u32| Verdict::Success;
    let idem = CallOptions::default().idempotent(true);
    c.bench_function("hedge/resilix-tokio/call-ready/1t", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Stamp::now();
                for i in 0..iters {
                    let out = resilix_tokio::hedge::hedged(&hedge, idem, &classify, |_| {
                        ready(black_box(i as u32))
                    })
                    .await;
                    black_box(out.output);
                }
                start.elapsed()
            })
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = decision, beside_tower
}
criterion_main!(benches);
