//! The keyed retry budget (1, 4 or 8 entries of 10, 4 or 1 buckets, up to 24 keys, so homes
//! collide, idle entries are reused and the overflow budget serves) under a shared ratio
//! budget or token bucket, against its reference model, steered by the fuzzer: the per-key
//! and shared settings, then every gap (1 ns to ten years), key, verdict, cancellation and
//! `evict_idle` come from the input. Panics on the first grant, `evict_idle` count, `len`, or
//! books (a key's, the overflow's, the shared budget's) on which they differ, and if the
//! table ever holds more keys than entries.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::retry::budget::{
    KeyedBudget, RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig,
};
use resilix::time::Instant;
use resilix_reference::budget::{Books, BudgetModel, RatioModel, TokenBucketModel};
use resilix_reference::keyed_budget::KeyedBudgetTwin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::{Mix, drive};

fn ratio_config(rng: &mut Bytes<'_>) -> RatioBudgetConfig {
    let octave = rng.below(48) as u32;
    let lo = 80u64 << octave;
    RatioBudgetConfig {
        max_retry_permille: rng.below(1_001) as u32,
        min_retries_per_window: rng.below(8) as u32,
        window: Duration::from_nanos(lo + rng.below(lo)),
    }
}

fn run<const N: usize, S: RetryBudget + Books, const B: usize, M: BudgetModel>(
    real: &KeyedBudget<N, S, B>,
    per_key: &RatioBudgetConfig,
    model: M,
    rng: &mut Bytes<'_>,
    steps: u64,
) {
    let keys = 1 + rng.below(24);
    let mut twin = KeyedBudgetTwin::new(real, per_key, model, keys, 1 + rng.below(32));
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(Duration::from_nanos(1), per_key.window.max(Duration::from_nanos(2)))
    };
    let mix = Mix {
        success: rng.below(256) as u8,
        transient: 60,
        timeout: 40,
        overload: 40,
        answered: 16,
    };
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 2), gaps);
    if let Err(m) = drive(&mut twin, &mut timeline, rng, steps, mix, 12) {
        panic!("{m}");
    }
    assert!(real.len() <= N);
}

fn with_shared<const N: usize, const B: usize>(rng: &mut Bytes<'_>, steps: u64) {
    let per_key = ratio_config(rng);
    if RatioBudget::<B>::with_buckets(per_key).is_err() {
        return; // refused (a zero ratio with a zero floor, or a window too short for B)
    }
    if rng.below(2) == 0 {
        let c = ratio_config(rng);
        let Ok(shared) = RatioBudget::new(c) else {
            return;
        };
        let real = KeyedBudget::<N, RatioBudget, B>::with_buckets(per_key, shared).unwrap();
        run(&real, &per_key, RatioModel::new(&c, 10), rng, steps);
    } else {
        let c = match rng.below(3) {
            0 => TokenBucketConfig::GRPC_A6_EXAMPLE,
            1 => TokenBucketConfig::AWS_SDK_STANDARD,
            _ => TokenBucketConfig::BROOKER_2022,
        };
        let real =
            KeyedBudget::<N, TokenBucket, B>::with_buckets(per_key, TokenBucket::new(c).unwrap())
                .unwrap();
        run(&real, &per_key, TokenBucketModel::new(&c), rng, steps);
    }
}

fuzz_target!(|data: &[u8]| {
    let steps = (data.len() as u64 / 3).min(4_000);
    let mut rng = Bytes::new(data);
    match rng.below(4) {
        0 => with_shared::<1, 10>(&mut rng, steps),
        1 => with_shared::<4, 4>(&mut rng, steps),
        2 => with_shared::<8, 1>(&mut rng, steps),
        _ => with_shared::<8, 10>(&mut rng, steps),
    }
});
