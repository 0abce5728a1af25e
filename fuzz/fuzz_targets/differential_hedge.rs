//! The hedge policy beside its reference model on a timeline the fuzzer steers: the config,
//! the shared budget, every gap (1 ns to ten years or busy), arrival, idempotency, deadline,
//! winning copy and verdict come from the input bytes. Panics on the first plan, delay,
//! local-cap balance, window fill or budget book on which they differ, and if hedges ever
//! exceed the calls' earned share plus the burst.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::hedge::{BudgetAccounting, HedgeConfig};
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig,
};
use resilix::time::Instant;
use resilix_reference::budget::{Books, BudgetModel, RatioModel, TokenBucketModel};
use resilix_reference::hedge::HedgeTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::Mix;

fn config(rng: &mut Input<'_>) -> HedgeConfig {
    let load = 1 + rng.below(999) as u32;
    HedgeConfig {
        max_extra_load_permille: load,
        window: 1000u32.div_ceil(load) + rng.below(50) as u32,
        min_delay: Duration::from_nanos(rng.below(5_000_000)),
        fixed_delay: (rng.below(3) == 0).then(|| Duration::from_nanos(1 + rng.below(50_000_000))),
        max_hedges: 1 + rng.below(4) as u32,
        burst: 1 + rng.below(30) as u32,
        accounting: if rng.below(2) == 0 {
            BudgetAccounting::Calls
        } else {
            BudgetAccounting::SpendOnly
        },
    }
}

fn go<R: RetryBudget + Books, M: BudgetModel>(
    budget: &R,
    model: M,
    rng: &mut Input<'_>,
    steps: u64,
) {
    let config = config(rng);
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(Duration::from_nanos(1), Duration::from_millis(20))
    };
    let mix = Mix {
        success: rng.below(256) as u8,
        transient: 40,
        timeout: 30,
        overload: 20,
        answered: 16,
    };
    let mut twin = HedgeTwin::new(config, budget, model).expect("a valid config");
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, gaps);
    if let Err(m) = resilix_reference::drive(&mut twin, &mut timeline, rng, steps, mix, 12) {
        panic!("{m}");
    }
    let (sent, _) = twin.hedges();
    // Each step begins at most one call, and each call earns load / 1000 of a hedge.
    let bound = u64::from(config.burst) * 1000 + steps * u64::from(config.max_extra_load_permille);
    assert!(
        sent * 1000 <= bound,
        "{sent} hedges in {steps} steps: {config:?}"
    );
}

/// The fuzzer's bytes, then a seeded generator (see differential_budget.rs for why).
struct Input<'a> {
    bytes: Bytes<'a>,
    tail: SeededRandom,
}

impl Random for Input<'_> {
    fn next_u32(&mut self) -> u32 {
        if self.bytes.is_empty() {
            self.tail.next_u32()
        } else {
            self.bytes.next_u32()
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Input {
        bytes: Bytes::new(data),
        tail: SeededRandom::new(data.len() as u64),
    };
    let steps = (data.len() as u64 / 3).min(4_000);
    match rng.below(4) {
        0 => {
            let c = RatioBudgetConfig {
                max_retry_permille: 1 + rng.below(1_000) as u32,
                min_retries_per_window: rng.below(5) as u32,
                window: Duration::from_nanos(80 + rng.below(10_000_000_000)),
            };
            let real = RatioBudget::<10>::new(c).expect("valid");
            go(&real, RatioModel::new(&c, 10), &mut rng, steps);
        }
        k => {
            let c = [
                TokenBucketConfig::AWS_SDK_STANDARD,
                TokenBucketConfig::GRPC_A6_EXAMPLE,
                TokenBucketConfig::BROOKER_2022,
            ][k as usize - 1];
            let real = TokenBucket::new(c).expect("valid");
            go(&real, TokenBucketModel::new(&c), &mut rng, steps);
        }
    }
});
