//! Scenarios that drive the resilix core with a manual timeline and seeded randomness, record
//! every decision into a [`Trace`], and compare it with the vectors in [`expected`], which
//! were computed on the host (see that module for how to regenerate them).
//!
//! The same code runs on the host (`cargo test -p resilix-firmware-checks`), on Cortex-M0,
//! Cortex-M4F and RISC-V 32 under QEMU (`tests-firmware`), and in wasm32 under Node (`wasm`).
//! A scenario also asserts what it means (a third call into a bulkhead of two is refused), so a
//! wrong core fails even where host and device agree.
#![no_std]
#![forbid(unsafe_code)]

pub mod codes;
pub mod config;
pub mod embassy;
pub mod expected;
mod scenarios;
mod trace;

pub use trace::{Failure, Trace};

/// One named scenario and the vector the host computed for it.
pub struct Check {
    /// Printed by every harness.
    pub name: &'static str,
    /// Runs the scenario, recording its decisions. `Err` when an inline assertion fails.
    pub run: fn(&mut Trace) -> Result<(), &'static str>,
    /// What the host recorded for the same scenario.
    pub expected: &'static [u64],
}

impl Check {
    /// Runs the scenario and compares its trace with the host's.
    pub fn verify(&self) -> Result<(), Failure> {
        self.record()
            .map_err(Failure::Assertion)?
            .compare(self.expected)
    }

    /// Runs the scenario and returns its trace (how the host computes [`expected`]).
    pub fn record(&self) -> Result<Trace, &'static str> {
        let mut trace = Trace::new();
        (self.run)(&mut trace)?;
        Ok(trace)
    }
}

/// Every scenario, in the order the harnesses run them.
pub const ALL: &[Check] = &[
    Check {
        name: "random_pinned_vectors",
        run: scenarios::random::pinned,
        expected: expected::RANDOM_PINNED_VECTORS,
    },
    Check {
        name: "random_reference_recurrence",
        run: scenarios::random::reference,
        expected: expected::RANDOM_REFERENCE_RECURRENCE,
    },
    Check {
        name: "time_edges",
        run: scenarios::time::edges,
        expected: expected::TIME_EDGES,
    },
    Check {
        name: "pipeline_bulkhead",
        run: scenarios::pipeline::bulkhead,
        expected: expected::PIPELINE_BULKHEAD,
    },
    Check {
        name: "call_deadline_and_no_retry",
        run: scenarios::pipeline::call_deadline,
        expected: expected::CALL_DEADLINE_AND_NO_RETRY,
    },
    Check {
        name: "execute_loop",
        run: scenarios::pipeline::execute_loop,
        expected: expected::EXECUTE_LOOP,
    },
    Check {
        name: "classify_http",
        run: scenarios::classify::http,
        expected: expected::CLASSIFY_HTTP,
    },
    Check {
        name: "retry_after_parse",
        run: scenarios::classify::retry_after,
        expected: expected::RETRY_AFTER_PARSE,
    },
    Check {
        name: "histogram",
        run: scenarios::histogram::quantiles,
        expected: expected::HISTOGRAM,
    },
    Check {
        name: "breaker_states",
        run: scenarios::breaker::states,
        expected: expected::BREAKER_STATES,
    },
    Check {
        name: "retry_jitter",
        run: scenarios::retry::jitter,
        expected: expected::RETRY_JITTER,
    },
    Check {
        name: "throttler_and_rate_limiter",
        run: scenarios::retry::throttle_and_rate,
        expected: expected::THROTTLER_AND_RATE_LIMITER,
    },
    Check {
        name: "embassy_backoff",
        run: scenarios::embassy::backoff,
        expected: expected::EMBASSY_BACKOFF,
    },
    Check {
        name: "limiter_adapts",
        run: scenarios::limiter::adapts,
        expected: expected::LIMITER_ADAPTS,
    },
];

/// Runs every check, reporting each result to `report`; returns how many failed.
pub fn run_all(mut report: impl FnMut(&Check, &Result<(), Failure>)) -> u32 {
    let mut failed = 0;
    for check in ALL {
        let result = check.verify();
        if result.is_err() {
            failed += 1;
        }
        report(check, &result);
    }
    failed
}

/// `size_of` every policy on the target this runs on (the firmware prints them on 32 bits).
pub fn sizes() -> [(&'static str, usize); 12] {
    use core::mem::size_of;
    use resilix::{breaker, bulkhead, limiter, observe, rate_limit, retry, throttler};
    [
        ("Breaker (10 time buckets)", size_of::<breaker::Breaker>()),
        (
            "Breaker<CallRing<7>> (100 calls)",
            size_of::<breaker::Breaker<breaker::CallRing<7>>>(),
        ),
        ("Bulkhead", size_of::<bulkhead::Bulkhead>()),
        ("Limiter", size_of::<limiter::Limiter>()),
        ("Throttler (20 buckets)", size_of::<throttler::Throttler>()),
        ("RateLimiter", size_of::<rate_limit::RateLimiter>()),
        (
            "KeyedRateLimiter<16>",
            size_of::<rate_limit::KeyedRateLimiter<16>>(),
        ),
        ("Retry<Unlimited>", size_of::<retry::Retry>()),
        (
            "RatioBudget (10 buckets)",
            size_of::<retry::budget::RatioBudget>(),
        ),
        ("TokenBucket", size_of::<retry::budget::TokenBucket>()),
        (
            "DurationHistogram (P=3)",
            size_of::<observe::DurationHistogram>(),
        ),
        ("SeededRandom", size_of::<resilix::random::SeededRandom>()),
    ]
}
