//! The module's policies: two sets, each a retry over a shared budget, a breaker and a rate
//! limit, in statics that live as long as the isolate.
//!
//! Set 0, `UPSTREAM`, guards the Worker's upstream. Set 1, `SELFTEST`, has the same shape with
//! short waits, for the frozen-clock check (`/selftest/frozen` in the Worker), so that check
//! never disturbs set 0's statistics.
//!
//! Every number here is per isolate: Cloudflare runs as many isolates of a Worker as its
//! traffic needs, each with its own copy, so a fleet of `n` isolates allows `n` times the
//! rate and `n` budgets' worth of retries. Limits that must hold for the whole fleet need
//! shared state (`resilix-redis`).

use core::cell::OnceCell;
use core::time::Duration;

use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::call::Call;
use resilix::pipeline::{Attempt, Pipeline};
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{Charge, RetrySuccess, TokenBucket, TokenBucketConfig, Tokens};
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};

use crate::HostCell;

/// How many policy sets the module holds.
pub const SETS: usize = 2;

type Rt = &'static Retry<&'static TokenBucket>;
type P = Pipeline<Rt, (), &'static Breaker, (), (), &'static RateLimiter>;
pub type LiveCall = Call<'static, Rt, (), &'static Breaker, (), (), &'static RateLimiter>;
pub type LiveAttempt = Attempt<'static, (), &'static Breaker, (), (), &'static RateLimiter>;

/// The breaker of set 0: open when more than half of at least 10 calls in the last 10 s
/// failed, or after 5 failures in a row (Finagle's and Envoy's count); stay open 1 s (ours:
/// short, so the run sees it probe; Hystrix's 5 s default suits a real upstream), then admit
/// one probe (the essay's (docs/design/essay.md) "single trial request").
const UPSTREAM_BREAKER: BreakerConfig = BreakerConfig {
    minimum_calls: 10,
    consecutive_failures: Some(5),
    open_wait: Duration::from_secs(1),
    max_half_open_wait: Some(Duration::from_secs(10)),
    ..BreakerConfig::DEFAULT
};

/// The retry budget of set 0, the AWS SDK standard quota's shape scaled to one isolate (ours):
/// 10 tokens starting at 5, a retry costs 1 (2 after a timeout), a first-try success deposits
/// 0.1 and a successful retry 0.1. Granted retries are bounded by
/// `(initial + deposits) / cost`: what the run checks against the upstream's count.
pub const UPSTREAM_BUDGET: TokenBucketConfig = TokenBucketConfig {
    capacity: Tokens::whole(10),
    initial: Tokens::whole(5),
    retry_cost: Tokens::whole(1),
    timeout_retry_cost: Tokens::whole(2),
    first_try_success: Tokens::milli(100),
    retry_success: RetrySuccess::Deposit(Tokens::milli(100)),
    floor: Tokens::ZERO,
    charge: Charge::GrantedRetry,
};

/// Three attempts (Google SRE), full jitter from 100 ms capped at 2 s (docs/design/spec.md §3.1), and a
/// Retry-After obeyed up to 30 s (ours: longer than any wait worth holding a request for).
const UPSTREAM_RETRY: RetryConfig = match RetryConfig::new(
    3,
    match Backoff::new(
        Strategy::FullJitter,
        Duration::from_millis(100),
        Duration::from_secs(2),
    ) {
        Ok(b) => b,
        Err(_) => panic!("the backoff is valid"),
    },
) {
    Ok(c) => c.with_max_retry_after(Duration::from_secs(30)),
    Err(_) => panic!("the retry is valid"),
};

/// 100 requests a second per isolate, in bursts of up to 100 (ours).
const UPSTREAM_RATE: RateLimitConfig = RateLimitConfig::new(Rate::per_second(100));

/// Set 1: the same shape, quick to open and short waits, so the frozen-clock check can walk
/// every transition within a few hundred milliseconds.
const SELFTEST_BREAKER: BreakerConfig = BreakerConfig {
    minimum_calls: 3,
    consecutive_failures: Some(3),
    open_wait: Duration::from_millis(300),
    ..UPSTREAM_BREAKER
};
const SELFTEST_RATE: RateLimitConfig = RateLimitConfig::new(Rate::per_second(10)).with_burst(5);

macro_rules! valid {
    ($e:expr, $what:literal) => {
        match $e {
            Ok(p) => p,
            Err(_) => panic!($what),
        }
    };
}

static BREAKERS: [Breaker; SETS] = [
    valid!(
        Breaker::new(UPSTREAM_BREAKER),
        "the upstream breaker is valid"
    ),
    valid!(
        Breaker::new(SELFTEST_BREAKER),
        "the selftest breaker is valid"
    ),
];
static BUDGETS: [TokenBucket; SETS] = [
    valid!(TokenBucket::new(UPSTREAM_BUDGET), "the budget is valid"),
    valid!(TokenBucket::new(UPSTREAM_BUDGET), "the budget is valid"),
];
static RATES: [RateLimiter; SETS] = [
    valid!(
        RateLimiter::new(UPSTREAM_RATE),
        "the upstream rate is valid"
    ),
    valid!(
        RateLimiter::new(SELFTEST_RATE),
        "the selftest rate is valid"
    ),
];
static RETRIES: [Retry<&TokenBucket>; SETS] = [
    Retry::new(UPSTREAM_RETRY, &BUDGETS[0]),
    Retry::new(UPSTREAM_RETRY, &BUDGETS[1]),
];
/// The pipelines, assembled on first use (the core's slot setters are not `const`), which is
/// inside the first request: assembling draws nothing and reads no clock.
static PIPELINES: HostCell<[OnceCell<P>; SETS]> = HostCell([const { OnceCell::new() }; SETS]);

pub fn pipeline(set: usize) -> &'static P {
    PIPELINES.0[set].get_or_init(|| {
        Pipeline::new()
            .retry(&RETRIES[set])
            .breaker(&BREAKERS[set])
            .rate_limit(&RATES[set])
    })
}

pub fn breaker(set: usize) -> &'static Breaker {
    &BREAKERS[set]
}

pub fn budget(set: usize) -> &'static TokenBucket {
    &BUDGETS[set]
}
