//! The embassy program's retry policy and script, shared with the host so that the delays the
//! device must draw from its seed are computed here, by the `embassy_backoff` scenario, and
//! checked in as [`expected::EMBASSY_BACKOFF`](crate::expected::EMBASSY_BACKOFF).
//!
//! The program (firmware/embassy) runs these calls against a simulated sensor on real timers;
//! it asserts that its retries drew exactly the host's delays and that each call took the
//! attempts' durations plus those delays.

use core::time::Duration;

use resilix::Verdict;
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};

/// The program's generator seed. Fixed here so the host can replay it; a product seeds from
/// a serial number or a TRNG (firmware has no entropy at start-up).
pub const SEED: u64 = 0xE3BA_5500;

/// Full jitter from 10 ms (the first retry waits up to 20 ms) capped at 40 ms; 4 attempts.
pub const BACKOFF: Backoff = match Backoff::new(
    Strategy::FullJitter,
    Duration::from_millis(10),
    Duration::from_millis(40),
) {
    Ok(b) => b,
    Err(_) => panic!("valid backoff"),
};

/// The core's retry with [`BACKOFF`], unbudgeted (one task, nothing to protect upstream).
pub const RETRY: Retry = Retry::unbudgeted(match RetryConfig::new(4, BACKOFF) {
    Ok(c) => c,
    Err(_) => panic!("valid retry config"),
});

/// One call of the program: the verdicts its attempts settle with, and its idempotency.
pub struct Call {
    /// The verdict of each attempt, in order, up to the last one the retry policy sees.
    pub verdicts: &'static [Verdict],
    /// Whether the call is declared idempotent (timeouts retried).
    pub idempotent: bool,
}

/// The program's calls, in order, as the retry policy sees them. (The 4th call's third
/// attempt is refused by the open breaker at admission; the policy never sees it.)
pub const SCRIPT: &[Call] = &[
    // 1. Two NACKs, then a reading.
    Call {
        verdicts: &[Verdict::Transient, Verdict::Transient, Verdict::Success],
        idempotent: false,
    },
    // 2. A hung sensor, idempotent: four timeouts.
    Call {
        verdicts: &[Verdict::Timeout; 4],
        idempotent: true,
    },
    // 3. A hung sensor, not idempotent: one timeout, final.
    Call {
        verdicts: &[Verdict::Timeout],
        idempotent: false,
    },
    // 4. A dead sensor: two NACKs, then the breaker opens.
    Call {
        verdicts: &[Verdict::Transient, Verdict::Transient],
        idempotent: false,
    },
    // 5. The probe after the open wait.
    Call {
        verdicts: &[Verdict::Success],
        idempotent: false,
    },
];

/// Rounds a delay up to whole milliseconds: the embassy program's tick, and timers never
/// fire early.
pub const fn ceil_millis(nanos: u64) -> u64 {
    nanos.div_ceil(1_000_000)
}
