//! The retry policy beside its plain reference model, steered by the fuzzer: the first bytes
//! choose the config (formula, base, cap, attempts, Retry-After cap, uncertain retry), the rest every gap
//! (1 ns to ten years), verdict, Retry-After, deadline, budget answer and jitter seed of a
//! differential run. Panics on the first decision, budget call or state that differs.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy, UncertainRetry};
use resilix::time::Instant;
use resilix_reference::retry::{RetryTwin, ScriptedBudget};
use resilix_reference::timeline::Bytes;
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, drive};

/// Out of 256: a failing upstream, so calls make long chains of retries.
const FAILING: Mix = Mix {
    success: 40,
    transient: 80,
    timeout: 40,
    overload: 80,
    answered: 8,
};

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes::new(data);
    let head = bytes.next_u32();
    let strategy = [
        Strategy::None,
        Strategy::Exponential,
        Strategy::FullJitter,
        Strategy::EqualJitter,
        Strategy::Decorrelated,
    ][head as usize % 5];
    let attempts = match head / 5 % 9 {
        8 => u32::MAX,
        n => n + 1,
    };
    // Base from 1 ns to 2^34 ns (17 s), cap from the base up by 0..12 doublings or none.
    let base = Duration::from_nanos(1u64 << (head / 45 % 35) | u64::from(bytes.next_u32() & 0xff));
    let cap = match head / 1_575 % 13 {
        12 => Duration::MAX,
        g => base.saturating_mul(1 << g),
    };
    let max_retry_after = match head / 20_475 % 5 {
        0 => Duration::ZERO,
        1 => RetryConfig::DEFAULT_MAX_RETRY_AFTER,
        2 => Duration::MAX,
        _ => Duration::from_nanos(bytes.next_u64() >> (bytes.next_u32() % 64)),
    };
    let start = match head >> 28 {
        0 => Instant::from_nanos(u64::MAX - (bytes.next_u64() >> 20)),
        _ => Instant::from_nanos(bytes.next_u64() >> (head >> 28)),
    };
    let uncertain = match bytes.next_u32() & 1 {
        0 => UncertainRetry::Always,
        _ => UncertainRetry::IdempotentOnly,
    };
    let Ok(backoff) = Backoff::new(strategy, base, cap) else { return };
    let config = RetryConfig::new(attempts, backoff)
        .unwrap()
        .with_max_retry_after(max_retry_after)
        .with_uncertain_retry(uncertain);
    let budget = ScriptedBudget::new();
    let real = Retry::new(config, &budget);
    let mut twin = RetryTwin::new(&real, &budget);
    let mut timeline = Timeline::new(start, Gaps::LONG);
    let mix = if head & (1 << 27) == 0 { FAILING } else { Mix::MOSTLY_HEALTHY };
    let steps = (data.len() as u64 / 4).clamp(1, 2_000);
    if let Err(mismatch) = drive(&mut twin, &mut timeline, &mut bytes, steps, mix, 8) {
        panic!("{config:?}: {mismatch}");
    }
});
