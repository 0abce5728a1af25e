//! The retry circuit breaker beside its reference model on a timeline the fuzzer steers: the
//! config (threshold, minimum, window, bucket count), every gap (1 ns to ten years), arrival
//! and verdict come from the input bytes. Panics on the first grant or book on which they
//! differ, and on a broken invariant at one instant: a grant (or refusal) against the rule
//! at the counts it was read at, or books that do not add up to what was recorded.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::VerdictKind;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{RetryBreaker, RetryBreakerConfig, RetryBudget};
use resilix::time::Instant;
use resilix_reference::retry_breaker::retry_breaker_twin;
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::Mix;

/// The fuzzer's bytes, then a seeded generator (`Bytes` alone reads zeros once used up, on
/// which `Random::below` would loop for ever).
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

fn run<const B: usize>(rng: &mut Input<'_>, steps: u64) {
    let octave = rng.below(49) as u32;
    let lo = ((B as u64) * 8) << octave;
    let config = RetryBreakerConfig {
        max_failure_permille: 1 + rng.below(999) as u32,
        min_attempts: rng.below(40) as u32,
        window: Duration::from_nanos(lo + rng.below(lo)),
    };
    let Ok(real) = RetryBreaker::<B>::new(config) else {
        return; // a minimum the window cannot reach: refused
    };
    // Invariants on the real breaker alone, before the twin drives it.
    let probe = RetryBreaker::<B>::new(config).expect("the same config");
    let now = Instant::from_nanos(rng.below(1 << 62));
    for _ in 0..rng.below(64) {
        match rng.below(3) {
            0 => probe.record_first_attempt(now),
            1 => probe.record_unretried_failure(now, VerdictKind::Transient),
            _ => {
                let (a, f) = probe.counts(now);
                let granted = probe.try_spend(now, VerdictKind::Transient);
                assert_eq!(granted, probe.allows(a, f + 1), "at {a} attempts, {f} failures");
                assert_eq!(probe.counts(now), (a + u32::from(granted), f + 1));
            }
        }
    }
    let mix = Mix {
        success: rng.below(256) as u8,
        transient: 60,
        timeout: 40,
        overload: 40,
        answered: 16,
    };
    let mut twin = retry_breaker_twin(&real, &config);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    if let Err(m) = resilix_reference::drive(&mut twin, &mut timeline, rng, steps, mix, 16) {
        panic!("{m}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Input {
        bytes: Bytes::new(data),
        tail: SeededRandom::new(data.len() as u64),
    };
    let steps = (data.len() as u64 / 3).min(4_000);
    match rng.below(4) {
        0 => run::<1>(&mut rng, steps),
        1 => run::<2>(&mut rng, steps),
        2 => run::<7>(&mut rng, steps),
        _ => run::<10>(&mut rng, steps),
    }
});
