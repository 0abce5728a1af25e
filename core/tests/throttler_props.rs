//! Properties of the throttler: the formula, the cap, what is counted, and reproducibility.
#![cfg(not(loom))]

use std::time::Duration;

use proptest::prelude::*;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{LocalRejections, Probability, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::{RejectReason, Verdict};

#[derive(Clone, Copy, Debug)]
enum Op {
    Settle(u8),
    Drop,
    Advance(u64),
}

fn verdict(i: u8) -> Verdict {
    match i % 6 {
        0 => Verdict::Success,
        1 => Verdict::Answered,
        2 => Verdict::Overload { retry_after: None },
        3 => Verdict::Transient,
        4 => Verdict::Timeout,
        _ => Verdict::Rejected(RejectReason::BulkheadFull),
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            6 => any::<u8>().prop_map(Op::Settle),
            1 => Just(Op::Drop),
            1 => (0u64..30_000).prop_map(Op::Advance),
        ],
        1..400,
    )
}

fn config() -> impl Strategy<Value = ThrottlerConfig> {
    (1.0f64..4.0, 0.0f64..0.99, 0u32..20, any::<bool>()).prop_map(|(k, cap, min, sre)| {
        ThrottlerConfig {
            accepts_multiplier: k,
            max_rejection_rate: cap,
            min_requests: min,
            local_rejections: if sre {
                LocalRejections::CountAsRequests
            } else {
                LocalRejections::Ignore
            },
            ..ThrottlerConfig::DEFAULT
        }
    })
}

proptest! {
    /// P is the SRE formula of the window's counts, within [0, cap], and zero below the
    /// low-traffic floor and while requests ≤ K × accepts.
    #[test]
    fn probability_is_the_formula_of_the_counts(config in config(), ops in ops(), seed in any::<u64>()) {
        let t: Throttler = Throttler::new(config).unwrap();
        let mut rng = SeededRandom::new(seed);
        let mut now = Instant::from_secs(10);
        for op in ops {
            let mut env = Env::new(now, &mut rng);
            match op {
                Op::Advance(ms) => now = now + Duration::from_millis(ms),
                Op::Drop => drop(t.admit(&mut env)),
                Op::Settle(v) => {
                    if let Ok(p) = t.admit(&mut env) {
                        p.settle(&verdict(v), &mut env);
                    }
                }
            }
            let (requests, accepts) = t.counts(now);
            prop_assert!(accepts <= requests);
            let p = t.rejection_probability(now).as_f64();
            prop_assert!((0.0..=config.max_rejection_rate + 1e-6).contains(&p));
            let k = config.accepts_multiplier;
            if requests < config.min_requests || requests as f64 <= k * accepts as f64 - 1e-3 {
                prop_assert_eq!(p, 0.0);
            } else {
                let raw = (requests as f64 - k * accepts as f64) / (requests as f64 + 1.0);
                let expected = raw.clamp(0.0, config.max_rejection_rate);
                prop_assert!((p - expected).abs() < 1e-5, "{} vs {}", p, expected);
            }
        }
    }

    /// Only settled, counted calls (and, in SRE mode, local refusals) are requests; only
    /// Success and Answered are accepts. Dropped permits and Rejected verdicts count nothing.
    #[test]
    fn exactly_the_right_calls_are_counted(config in config(), ops in ops(), seed in any::<u64>()) {
        let t: Throttler = Throttler::new(config).unwrap();
        let mut rng = SeededRandom::new(seed);
        let now = Instant::from_secs(1); // one instant: nothing slides out
        let (mut requests, mut accepts) = (0u32, 0u32);
        for op in ops {
            let mut env = Env::new(now, &mut rng);
            let admitted = match op {
                Op::Advance(_) => continue,
                Op::Drop => t.admit(&mut env).map(drop),
                Op::Settle(v) => t.admit(&mut env).map(|p| {
                    let v = verdict(v);
                    if v.is_counted() {
                        requests += 1;
                        accepts += u32::from(v.is_accept());
                    }
                    p.settle(&v, &mut env);
                }),
            };
            if admitted.is_err() && config.local_rejections == LocalRejections::CountAsRequests {
                requests += 1;
            }
            prop_assert_eq!(t.counts(now), (requests, accepts));
        }
    }

    /// The same seed and the same operations give the same shed decisions.
    #[test]
    fn same_seed_same_decisions(config in config(), ops in ops(), seed in any::<u64>()) {
        let run = || {
            let t: Throttler = Throttler::new(config).unwrap();
            let mut rng = SeededRandom::new(seed);
            let mut now = Instant::ZERO;
            let mut out = Vec::new();
            for op in &ops {
                let mut env = Env::new(now, &mut rng);
                match *op {
                    Op::Advance(ms) => now = now + Duration::from_millis(ms),
                    Op::Drop => out.push(t.admit(&mut env).is_ok()),
                    Op::Settle(v) => match t.admit(&mut env) {
                        Ok(p) => { out.push(true); p.settle(&verdict(v % 5), &mut env) }
                        Err(_) => out.push(false),
                    },
                }
            }
            out
        };
        prop_assert_eq!(run(), run());
    }

    /// Fractions compare by value.
    #[test]
    fn probability_equality_is_by_value(n in 0u64..1_000_000, d in 1u64..1_000_000, m in 1u64..1_000) {
        prop_assert_eq!(Probability::new(n, d), Probability::new(n * m, d * m));
    }
}
