//! The pure decision: which injections one attempt gets, from the config and the caller's
//! randomness, drawn in a fixed order so a seed reproduces every decision.

use crate::chaos::Injection;
use crate::chaos::config::{ChaosConfig, MILLION};
use crate::random::Random;

/// Whether a kind at `ppm` per million injects: one draw when the rate is above zero, none
/// otherwise (so a kind left off never shifts the draws of the others).
#[inline]
fn hit<R: Random + ?Sized>(ppm: u32, rng: &mut R) -> bool {
    ppm > 0 && rng.below(u64::from(MILLION)) < u64::from(ppm)
}

/// Latency, then fault, then (only if no fault) outcome.
pub(crate) fn injection<R: Random + ?Sized>(config: &ChaosConfig, rng: &mut R) -> Injection {
    let latency = hit(config.latency_ppm, rng).then_some(config.latency);
    let fault = hit(config.fault_ppm, rng).then_some(config.fault);
    let outcome = if fault.is_none() && hit(config.outcome_ppm, rng) {
        Some(config.outcome)
    } else {
        None
    };
    Injection {
        latency,
        fault,
        outcome,
    }
}
