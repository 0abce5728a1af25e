//! The adaptive concurrency limiter on the device: exact admission at the limit, and the limit
//! the algorithms compute (fixed-point arithmetic, f32 queue factor) from seeded latencies.

use core::time::Duration;

use resilix::limiter::Limiter;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

use super::ensure;
use crate::Trace;

pub(crate) fn adapts(t: &mut Trace) -> Result<(), &'static str> {
    for config in crate::config::LIMITERS {
        let limiter = Limiter::new(config).map_err(|_| "valid limiter config refused")?;
        let mut rng = SeededRandom::new(0x1111);
        let mut latency_rng = SeededRandom::new(0x2222);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);

        // Exact admission: the limit, then refusals.
        let limit = limiter.limit();
        let mut held: [Option<_>; 16] = [const { None }; 16];
        let mut admitted = 0;
        for slot in held.iter_mut() {
            match limiter.admit(&mut env) {
                Ok(p) => {
                    *slot = Some(p);
                    admitted += 1;
                }
                Err(r) => ensure(
                    r.reason() == RejectReason::LimiterFull,
                    "refused for the wrong reason",
                )?,
            }
        }
        ensure(
            admitted == limit,
            "admitted a different number than the limit",
        )?;
        held = [const { None }; 16]; // all cancelled: slots back, no samples
        drop(held);
        ensure(
            limiter.in_flight() == 0,
            "cancelled permits kept their slots",
        )?;

        // Phase 1: fast and healthy (≈10 ms); phase 2: latency climbs to ≈80 ms with drops.
        for round in 0..400u32 {
            let slow = round >= 200;
            let p = limiter.admit(&mut env);
            let base = if slow { 80 } else { 10 };
            env.now = env.now + Duration::from_micros(base * 1000 + latency_rng.below(2_000));
            if let Ok(p) = p {
                let verdict = if slow && latency_rng.chance(1, 10) {
                    Verdict::Overload { retry_after: None }
                } else {
                    Verdict::Success
                };
                p.settle(&verdict, &mut env);
            }
            if round % 50 == 49 {
                t.push(u64::from(limiter.limit_fixed()));
            }
        }
        ensure(limiter.in_flight() == 0, "in-flight count leaked")?;
        t.push(u64::from(limiter.limit()));
    }
    Ok(())
}
