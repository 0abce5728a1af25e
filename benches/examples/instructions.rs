//! Runs one operation `n` times, for counting its instructions (and its atomic
//! read-modify-writes) under callgrind, which counts deterministically where the wall clock on
//! a shared two-core machine does not. `benches/instructions.sh` runs every subject and prints
//! the table; by hand:
//!
//! ```text
//! cargo build --release -p resilix-benches --example instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/instructions breaker-closed 1000000
//! ```
//!
//! Per-op instructions are the difference between two runs (say 1,000,000 and 2,000,000 ops)
//! divided by the difference in ops, which cancels the start-up cost. Each subject's loop is
//! a function of its own (`#[inline(never)]`), so one subject's code never changes another's
//! registers. Instructions are not time (a locked read-modify-write costs tens of cycles, a
//! division as much), so report criterion's medians too.
//!
//! Two kinds of time. The `*-clock` subjects, the peers and the pipeline read the shared
//! advancing clock of the criterion benches (`benches/common/clock.rs`: an `AtomicU64` moved
//! by one `fetch_add` every 64 operations, 1 µs per policy operation, 5 µs per pipeline call,
//! and a load per operation), on our side and governor's alike. The older subjects
//! (`breaker-closed`, `rate-limit-allowed`, ...) inject `i × step` with no shared clock, as
//! they did when the base figures were taken, so they stay comparable with them.
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use resilix::breaker::{Breaker, CallRing, Config};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig,
};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::{Verdict, VerdictKind};

#[path = "../benches/common/clock.rs"]
mod clock;
use clock::{CLOCK, GovernorClock, PIPELINE_STEP, POLICY_STEP};

/// The same operation as benches/breaker.rs: a closed breaker admits, the call succeeds.
#[inline(always)]
fn admit_settle<P: Policy>(policy: &P, rng: &mut SeededRandom, now: Instant) {
    let mut env = Env::new(now, rng);
    let permit = black_box(policy).admit(&mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

/// `admit_settle` over `n` operations with time injected as `i × 1 µs`.
#[inline(never)]
fn injected<P: Policy>(policy: &P, n: u64) {
    let mut rng = SeededRandom::new(1);
    for i in 0..n {
        admit_settle(policy, &mut rng, Instant::from_nanos(i * 1_000));
    }
}

/// `admit_settle` over `n` operations on the shared advancing clock.
#[inline(never)]
fn on_clock<P: Policy>(policy: &P, n: u64) {
    let mut rng = SeededRandom::new(1);
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        admit_settle(policy, &mut rng, CLOCK.now());
    }
}

fn default_breaker() -> Breaker {
    Breaker::new(Config::DEFAULT).unwrap()
}

fn count_breaker() -> Breaker<CallRing<7>> {
    let config = Config {
        minimum_calls: 100,
        ..Config::DEFAULT
    };
    Breaker::count_based(config, 100).unwrap()
}

#[inline(never)]
fn recloser_closed(n: u64) {
    // recloser reads no clock while closed (it calls `Instant::now()` itself only when open).
    let r = recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(100)
        .open_wait(Duration::from_secs(3_600))
        .build();
    for _ in 0..n {
        black_box(black_box(&r).call(|| Ok::<(), ()>(())).is_ok());
    }
}

/// As benches/rate_limit.rs: 1,000/s, time moving one emission interval per call.
#[inline(never)]
fn rate_limit_allowed(n: u64) {
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000))).unwrap();
    for i in 0..n {
        let now = Instant::from_nanos(1_000_000_000 + i * 1_000_000);
        let _ = black_box(black_box(&limiter).try_acquire(now));
    }
}

#[inline(never)]
fn rate_limit_refused(n: u64) {
    let limiter =
        RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
    let frozen = Instant::from_nanos(1_000_000_000);
    limiter.try_acquire(frozen).unwrap();
    for _ in 0..n {
        let _ = black_box(black_box(&limiter).try_acquire(black_box(frozen)));
    }
}

/// The advancing clock's allowed case: a million a second with a burst of a million, against
/// 1 µs per call, so the bucket never runs dry within a run (the stored interval is 0.8% long:
/// it loses a cell per 125 calls, from a burst of a million). The same quota on both sides.
const ALLOWED_PER_SECOND: u32 = 1_000_000;

#[inline(never)]
fn rate_limit_allowed_clock(n: u64) {
    let limiter = RateLimiter::new(
        RateLimitConfig::new(Rate::per_second(ALLOWED_PER_SECOND)).with_burst(ALLOWED_PER_SECOND),
    )
    .unwrap();
    let mut refused = 0u64;
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        refused += black_box(black_box(&limiter).try_acquire(CLOCK.now())).is_err() as u64;
    }
    assert!(
        refused * 100 <= n,
        "{refused} of {n} refused: not the allowed path"
    );
}

/// The refused case: one a day, burst one, spent first; the clock moves 1 µs per call.
#[inline(never)]
fn rate_limit_refused_clock(n: u64) {
    let limiter = RateLimiter::new(
        RateLimitConfig::new(Rate::new(1, Duration::from_secs(86_400))).with_burst(1),
    )
    .unwrap();
    limiter.try_acquire(CLOCK.now()).unwrap();
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        let _ = black_box(black_box(&limiter).try_acquire(CLOCK.now()));
    }
}

#[inline(never)]
fn governor_allowed(n: u64) {
    let quota = governor::Quota::per_second(NonZeroU32::new(ALLOWED_PER_SECOND).unwrap())
        .allow_burst(NonZeroU32::new(ALLOWED_PER_SECOND).unwrap());
    let limiter = governor::RateLimiter::direct_with_clock(quota, GovernorClock);
    let mut refused = 0u64;
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        refused += black_box(black_box(&limiter).check()).is_err() as u64;
    }
    assert!(
        refused * 100 <= n,
        "{refused} of {n} refused: not the allowed path"
    );
}

#[inline(never)]
fn governor_refused(n: u64) {
    let quota = governor::Quota::with_period(Duration::from_secs(86_400))
        .unwrap()
        .allow_burst(NonZeroU32::new(1).unwrap());
    let limiter = governor::RateLimiter::direct_with_clock(quota, GovernorClock);
    limiter.check().unwrap();
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        let _ = black_box(black_box(&limiter).check());
    }
}

#[inline(never)]
fn bulkhead(n: u64) {
    on_clock(&Bulkhead::new(BulkheadConfig::DEFAULT), n);
}

#[inline(never)]
fn throttler(n: u64) {
    let t: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    on_clock(&t, n);
}

/// A first attempt deposits, a failed one asks for a retry (as benches/retry.rs).
#[inline(never)]
fn ratio_budget(n: u64) {
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        let now = CLOCK.now();
        black_box(&budget).record_first_attempt(now);
        black_box(black_box(&budget).try_spend(now, black_box(VerdictKind::Transient)));
    }
}

/// A retry spent and refunded by its success (as benches/retry.rs).
#[inline(never)]
fn token_bucket(n: u64) {
    let bucket = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    for i in 0..n {
        CLOCK.advance(i, POLICY_STEP);
        let now = CLOCK.now();
        let granted = black_box(&bucket).try_spend(now, black_box(VerdictKind::Transient));
        bucket.record_success(now, Some(VerdictKind::Transient));
        black_box(granted);
    }
}

/// The full pipeline of benches/pipeline.rs (retry with a ratio budget, throttler, breaker,
/// adaptive limiter, bulkhead, rate limiter of a million a second): admit, then settle a
/// success half a call later. One pipeline call every 5 µs on the shared clock.
#[inline(never)]
fn pipeline(n: u64) {
    let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap();
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let breaker = default_breaker();
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
    let rate_limit = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000_000))).unwrap();
    let p = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .throttler(&throttler)
        .breaker(&breaker)
        .limiter(&limiter)
        .bulkhead(&bulkhead)
        .rate_limit(&rate_limit);
    let mut rng = SeededRandom::new(1);
    let mut refused = 0u64;
    for i in 0..n {
        CLOCK.advance(i, PIPELINE_STEP);
        let mut env = Env::new(CLOCK.now(), &mut rng);
        match black_box(&p).admit(&mut env, None) {
            Ok(attempt) => {
                env.now = CLOCK.now();
                black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
            }
            Err(_) => refused += 1,
        }
    }
    assert!(
        refused * 100 <= n,
        "{refused} of {n} refused: not the admitted path"
    );
}

/// The floor: an uncontended `fetch_add` on a shared word.
#[inline(never)]
fn fetch_add(n: u64) {
    let word = AtomicU64::new(0);
    for _ in 0..n {
        black_box(&word).fetch_add(1, Ordering::Relaxed);
    }
}

/// One increment by a compare-and-swap loop (benches/floor.rs). Under callgrind, which runs
/// one thread at a time, it never retries: contention is a timing effect, measured by
/// criterion's `floor/cas/2t`, not something an instruction count can show.
#[inline(never)]
fn cas_loop(n: u64) {
    let word = AtomicU64::new(0);
    for _ in 0..n {
        let word = black_box(&word);
        let mut seen = word.load(Ordering::Relaxed);
        while let Err(now) =
            word.compare_exchange_weak(seen, seen + 1, Ordering::AcqRel, Ordering::Relaxed)
        {
            seen = now;
        }
    }
}

// ---- async: what a stack adds to one ready call (as benches/async_overhead.rs) ------------

/// The async bench's full pipeline (no rate limiter: see benches/async_overhead.rs) with a
/// deadline on every attempt, each policy with its defaults, owned. A macro, so each use has
/// the concrete type (the Layer's bounds name every slot's permit).
macro_rules! async_pipeline {
    () => {
        Pipeline::new()
            .retry(Retry::new(
                RetryConfig::DEFAULT,
                RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap(),
            ))
            .throttler(Throttler::new(ThrottlerConfig::DEFAULT).unwrap())
            .breaker(default_breaker())
            .limiter(Limiter::new(LimiterConfig::gradient2()).unwrap())
            .bulkhead(Bulkhead::new(BulkheadConfig::DEFAULT))
            .attempt_timeout(ASYNC_DEADLINE)
    };
}

const ASYNC_DEADLINE: Duration = Duration::from_secs(1);

async fn ready_call(x: u32) -> Result<u32, tower::BoxError> {
    Ok(black_box(x))
}

/// Runs `n` calls of `call` inside one `block_on` on a current-thread runtime with time.
fn on_runtime<F: std::future::Future<Output = u32>>(n: u64, mut call: impl FnMut(u32) -> F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..n {
            black_box(call(black_box(i as u32)).await);
        }
    });
}

#[inline(never)]
fn async_bare(n: u64) {
    on_runtime(n, |x| async move { ready_call(x).await.unwrap() });
}

#[inline(never)]
fn async_tokio_timeout(n: u64) {
    on_runtime(n, |x| async move {
        tokio::time::timeout(ASYNC_DEADLINE, ready_call(x))
            .await
            .unwrap()
            .unwrap()
    });
}

#[inline(never)]
fn async_execute(n: u64) {
    let pipeline = async_pipeline!();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let resilience = rt.block_on(async { resilix_tokio::Resilience::new(&pipeline).seed(1) });
    rt.block_on(async {
        for i in 0..n {
            let x = black_box(i as u32);
            let r = resilience
                .execute(resilix::call::CallOptions::default(), || ready_call(x))
                .await;
            black_box(r.unwrap());
        }
    });
}

#[inline(never)]
fn async_layer(n: u64) {
    use tower::{Service, ServiceBuilder, ServiceExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let layer = resilix_tokio::tower::ResilienceLayer::new(
            resilix_tokio::Resilience::new(Box::new(async_pipeline!())).seed(1),
        )
        .timeout(ASYNC_DEADLINE);
        let mut svc = ServiceBuilder::new().layer(layer).service_fn(ready_call);
        for i in 0..n {
            let ready = svc.ready().await.unwrap();
            black_box(ready.call(black_box(i as u32)).await.unwrap());
        }
    });
}

/// A subject's loop over `n` operations.
type Run = fn(u64);

/// Every subject: its name and its loop.
const SUBJECTS: &[(&str, Run)] = &[
    ("breaker-closed", |n| injected(&default_breaker(), n)),
    ("breaker-closed-count", |n| injected(&count_breaker(), n)),
    ("recloser-closed", recloser_closed),
    ("rate-limit-allowed", rate_limit_allowed),
    ("rate-limit-refused", rate_limit_refused),
    ("breaker-closed-clock", |n| on_clock(&default_breaker(), n)),
    ("breaker-closed-count-clock", |n| {
        on_clock(&count_breaker(), n)
    }),
    ("rate-limit-allowed-clock", rate_limit_allowed_clock),
    ("rate-limit-refused-clock", rate_limit_refused_clock),
    ("governor-allowed-clock", governor_allowed),
    ("governor-refused-clock", governor_refused),
    ("bulkhead-clock", bulkhead),
    ("throttler-clock", throttler),
    ("ratio-budget-clock", ratio_budget),
    ("token-bucket-clock", token_bucket),
    ("pipeline-clock", pipeline),
    ("async-bare", async_bare),
    ("async-tokio-timeout", async_tokio_timeout),
    ("async-execute", async_execute),
    ("async-layer", async_layer),
    ("fetch-add", fetch_add),
    ("cas-loop", cas_loop),
];

fn main() {
    let mut args = std::env::args().skip(1);
    let subject = args.next().unwrap_or_default();
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    if subject == "--list" {
        for (name, _) in SUBJECTS {
            println!("{name}");
        }
        return;
    }
    match SUBJECTS.iter().find(|(name, _)| *name == subject) {
        Some((_, run)) => run(n),
        None => {
            let names: Vec<_> = SUBJECTS.iter().map(|(name, _)| *name).collect();
            eprintln!("unknown subject {subject:?}: {}", names.join(", "));
            std::process::exit(2);
        }
    }
}
