//! The allocation proof: a counting global allocator in this test binary shows that the full
//! pipeline's admit+settle, its refusal, and the `Call` driver allocate nothing per call once
//! warm. The core has no `alloc` at all, so this guards the composition (and anything a future
//! change routes through std by accident), not the crate graph.
//!
//! The counter is per thread, so the test harness's own allocations on other threads do not
//! leak into a measurement.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use resilix::Verdict;
use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::{CallOptions, Next, Stop};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::DurationHistogram;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
use resilix::retry::{Retry, RetryConfig};
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::{Deadline, Instant};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to the system allocator unchanged; the counter is a
// const-initialised thread-local `Cell` with no destructor, so updating it neither allocates
// nor re-enters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made on this thread while `f` runs.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

/// Every admission policy in the core, with its defaults.
struct Policies {
    throttler: Throttler,
    breaker: Breaker,
    limiter: Limiter,
    bulkhead: Bulkhead,
    rate_limit: RateLimiter,
    budget: RatioBudget,
}

impl Policies {
    fn new(bulkhead: BulkheadConfig) -> Self {
        Policies {
            throttler: Throttler::new(ThrottlerConfig::DEFAULT).unwrap(),
            breaker: Breaker::new(BreakerConfig::DEFAULT).unwrap(),
            limiter: Limiter::new(LimiterConfig::gradient2()).unwrap(),
            bulkhead: Bulkhead::new(bulkhead),
            rate_limit: RateLimiter::new(RateLimitConfig::new(Rate::per_second(10_000))).unwrap(),
            budget: RatioBudget::new(RatioBudgetConfig::DEFAULT).unwrap(),
        }
    }
}

/// The full pipeline over `$p`'s policies (a macro: the pipeline's type names every slot).
macro_rules! full_pipeline {
    ($p:expr) => {
        Pipeline::new()
            .retry(Retry::new(RetryConfig::DEFAULT, &$p.budget))
            .throttler(&$p.throttler)
            .breaker(&$p.breaker)
            .limiter(&$p.limiter)
            .bulkhead(&$p.bulkhead)
            .rate_limit(&$p.rate_limit)
    };
}

const WARM_UP: u64 = 1_000;
const CALLS: u64 = 10_000;

#[test]
fn the_counter_sees_an_allocation() {
    // Without this, a counter that never counts would pass every test below.
    let n = allocations_in(|| drop(std::hint::black_box(Box::new(7u64))));
    assert_eq!(n, 1);
    let n = allocations_in(|| drop(std::hint::black_box(vec![0u8; 64])));
    assert_eq!(n, 1);
}

#[test]
fn full_pipeline_admit_settle_allocates_nothing() {
    let policies = Policies::new(BulkheadConfig::DEFAULT);
    let pipeline = full_pipeline!(policies).attempt_timeout(Duration::from_millis(200));
    let histogram = DurationHistogram::new();
    let mut rng = SeededRandom::new(1);
    let verdicts = [
        Verdict::Success,
        Verdict::Transient,
        Verdict::Answered,
        Verdict::Timeout,
        Verdict::Overload { retry_after: None },
    ];
    // 60 % failures at 1 ms per call: the breaker opens, refuses for its wait, lets a probe
    // through, re-opens... so every state's path is on the allocation count.
    let (mut admitted, mut refused) = (0u64, 0u64);
    let mut step = |i: u64| {
        let mut env = Env::new(Instant::from_millis(i), &mut rng);
        let deadline = Deadline::after(env.now, Duration::from_secs(1));
        match pipeline.admit(&mut env, Some(deadline)) {
            Ok(attempt) => {
                env.now = env.now + Duration::from_micros(300);
                let took = attempt.settle(&verdicts[(i % 5) as usize], &mut env);
                histogram.record(took);
                admitted += 1;
            }
            Err(_) => refused += 1,
        }
    };
    for i in 0..WARM_UP {
        step(i);
    }
    let n = allocations_in(|| {
        for i in WARM_UP..WARM_UP + CALLS {
            step(i);
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} calls");
    assert_eq!(admitted + refused, WARM_UP + CALLS);
    assert!(
        admitted > 20 && refused > 1_000,
        "{admitted} admitted, {refused} refused"
    );
    assert_eq!(histogram.count(), admitted);
}

#[test]
fn refusal_allocates_nothing() {
    // Refused by the innermost policy, so every other one admits and is given back.
    let policies = Policies::new(BulkheadConfig::new(1).unwrap());
    let _holder = policies.bulkhead.try_admit().unwrap();
    let pipeline = full_pipeline!(policies);
    let mut rng = SeededRandom::new(2);
    let mut refused = 0;
    let n = allocations_in(|| {
        for i in 0..CALLS {
            let mut env = Env::new(Instant::from_micros(i), &mut rng);
            if pipeline.admit(&mut env, None).is_err() {
                refused += 1;
            }
        }
    });
    assert_eq!(n, 0);
    assert_eq!(refused, CALLS, "every call met the full bulkhead");
}

#[test]
fn call_driver_allocates_nothing() {
    let policies = Policies::new(BulkheadConfig::DEFAULT);
    let pipeline = full_pipeline!(policies).attempt_timeout(Duration::from_millis(200));
    let mut rng = SeededRandom::new(3);
    // A third of the calls fail every attempt: the retry policy backs off (full jitter), the
    // ratio budget grants or refuses, and attempts run out.
    let (mut done, mut retries, mut gave_up) = (0u64, 0u64, 0u64);
    let mut step = |i: u64| {
        let now = Instant::from_micros(i * 100);
        let mut env = Env::new(now, &mut rng);
        let options = CallOptions::default().deadline(Deadline::after(now, Duration::from_secs(2)));
        let mut call = pipeline.call(now, options);
        loop {
            let attempt = match call.admit(&mut env) {
                Ok(a) => a,
                Err(Stop::Refused(_) | Stop::DeadlinePassed) => break,
            };
            env.now = env.now + Duration::from_micros(30);
            let verdict = if i.is_multiple_of(3) {
                Verdict::Transient
            } else {
                Verdict::Success
            };
            match call.settle(attempt, &verdict, &mut env) {
                Next::Done => {
                    done += 1;
                    break;
                }
                Next::RetryAt(at) => {
                    retries += 1;
                    env.now = at;
                }
                Next::GiveUp(_) => {
                    gave_up += 1;
                    break;
                }
            }
        }
    };
    for i in 0..WARM_UP {
        step(i);
    }
    let n = allocations_in(|| {
        for i in WARM_UP..WARM_UP + CALLS {
            step(i);
        }
    });
    assert_eq!(n, 0);
    assert!(done > CALLS / 2, "most calls succeeded: {done}");
    assert!(
        retries > 100 && gave_up > 100,
        "{retries} retries, {gave_up} give-ups"
    );
}
