//! Chaos beside its reference model on a timeline the fuzzer steers: the rates, latency and
//! verdicts, the moments the master switch flips, every gap (1 ns to ten years) and every
//! draw come from the input bytes. Panics on the first injection, draw count or event on which
//! they differ (the model never injects a fault beside an outcome, nor anything while off),
//! and on an injection after the switch is turned off at the end.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::Verdict;
use resilix::chaos::{Chaos, ChaosConfig, MILLION};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix_reference::chaos::ChaosTwin;
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

fn rate(rng: &mut Input<'_>) -> u32 {
    match rng.below(4) {
        0 => 0,
        1 => MILLION,
        _ => rng.below(u64::from(MILLION) + 1) as u32,
    }
}

fn verdict(rng: &mut Input<'_>) -> Verdict {
    match rng.below(7) {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Transient,
        3 => Verdict::Uncertain,
        4 => Verdict::Timeout,
        5 => Verdict::Overload { retry_after: None },
        _ => Verdict::Overload {
            retry_after: Some(Duration::from_nanos(rng.next_u64())),
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rng = Input {
        bytes: Bytes::new(data),
        tail: SeededRandom::new(data.len() as u64),
    };
    let config = ChaosConfig::NONE
        .with_latency(rate(&mut rng), Duration::from_nanos(1 + rng.below(u64::MAX - 1)))
        .with_fault(rate(&mut rng), verdict(&mut rng))
        .with_outcome(rate(&mut rng), verdict(&mut rng));
    let real = Chaos::new(config).expect("every generated config is valid");
    let flip = rng.below(40);
    let mut twin = ChaosTwin::new(&real, &config, flip);
    let steps = (data.len() as u64 / 3).min(4_000);
    let start = Instant::from_nanos(rng.below(1 << 62));
    let mut timeline = Timeline::new(start, Gaps::LONG);
    if let Err(m) =
        resilix_reference::drive(&mut twin, &mut timeline, &mut rng, steps, Mix::MOSTLY_HEALTHY, 16)
    {
        panic!("{m}");
    }
    // Switched off, nothing is injected whatever the draws.
    real.disable();
    let mut env = resilix::permit::Env::new(start, &mut rng);
    let i = real.decide(&mut env);
    assert!(i.is_none());
});
