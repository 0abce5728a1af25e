//! What the differential tests share: the strategies their configurations are drawn from, the
//! verdict mixes that make policies refuse, and a run from a seed.
// Each test includes this file for some of it, not all.
#![allow(dead_code)]

use core::time::Duration;

use proptest::prelude::*;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{Charge, RetrySuccess, TokenBucket, TokenBucketConfig, Tokens};
use resilix::time::Instant;
use resilix_reference::timeline::{Gaps, Timeline};
use resilix_reference::twin::{Mix, Report, Twin};

/// Failures often enough that retry budgets run out and retry breakers trip.
pub const RETRIES_RUN_OUT: Mix = Mix {
    success: 80,
    transient: 70,
    timeout: 40,
    overload: 40,
    answered: 16,
};

/// Failures often enough that a throttler sheds.
pub const SHEDDING: Mix = Mix {
    success: 60,
    transient: 80,
    timeout: 40,
    overload: 40,
    answered: 20,
};

/// A window, log-uniform from 1 µs (a few tens of ns per bucket) to four days.
pub fn window() -> impl Strategy<Value = Duration> {
    (0u32..=38, any::<u64>()).prop_map(|(octave, x)| {
        let lo = 1_000u64 << octave;
        Duration::from_nanos(lo + x % lo)
    })
}

/// A token bucket with every setting random, among those `TokenBucket::new` accepts.
pub fn token_bucket() -> impl Strategy<Value = TokenBucketConfig> {
    (
        1u32..20_000,
        any::<u32>(),
        1u32..3_000,
        1u32..3_000,
        0u32..1_000,
        any::<bool>(),
        0u32..1_000,
        any::<u32>(),
        any::<bool>(),
    )
        .prop_filter_map(
            "a valid bucket",
            |(cap, init, cost, tcost, first, refund, deposit, floor, every)| {
                let c = TokenBucketConfig {
                    capacity: Tokens::milli(cap),
                    initial: Tokens::milli(init % (cap + 1)),
                    retry_cost: Tokens::milli(cost),
                    timeout_retry_cost: Tokens::milli(tcost),
                    first_try_success: Tokens::milli(first),
                    retry_success: if refund {
                        RetrySuccess::RefundCost
                    } else {
                        RetrySuccess::Deposit(Tokens::milli(deposit))
                    },
                    floor: Tokens::milli(floor % cap),
                    charge: if every {
                        Charge::EveryFailure
                    } else {
                        Charge::GrantedRetry
                    },
                };
                TokenBucket::new(c).ok().map(|_| c)
            },
        )
}

/// Busy stretches for a retry budget or breaker: for 40 seeds, `run(seed, window, gaps)` with
/// a window of 100 ns << (seed mod 30) and gaps from 1 ns to three windows, so windows are
/// full; the retries it answers (granted, refused) must both come over a thousand times.
pub fn busy_retries(run: impl Fn(u64, Duration, Gaps) -> Result<(u64, u64), String>) {
    let (mut granted, mut refused) = (0u64, 0u64);
    for seed in 0..40u64 {
        let window = Duration::from_nanos(100 << (seed % 30));
        let gaps = Gaps::between(Duration::from_nanos(1), window * 3);
        let (g, r) = run(seed, window, gaps).unwrap_or_else(|m| panic!("seed {seed}: {m}"));
        granted += g;
        refused += r;
    }
    assert!(
        granted > 1_000 && refused > 1_000,
        "{granted} granted, {refused} refused"
    );
}

/// Drives `twin` for `steps` steps from a start drawn from `seed` (anywhere in 2^62 ns), with
/// at most 16 calls open; the first disagreement as text.
pub fn seeded_run(
    twin: &mut impl Twin,
    seed: u64,
    steps: u64,
    gaps: Gaps,
    mix: Mix,
) -> Result<Report, String> {
    let mut rng = SeededRandom::new(seed);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, gaps);
    resilix_reference::drive(twin, &mut timeline, &mut rng, steps, mix, 16)
        .map_err(|m| m.to_string())
}
