//! The retry policy against its plain reference model (`resilix_reference::retry`), over
//! random long timelines: every decision, every budget call and the per-call state must be
//! identical.
//!
//! Retry holds no tick word: its per-call state is an attempt count and the last backoff, and
//! every comparison with time (`now + Retry-After` and `now + delay` against the deadline,
//! the Retry-After against the cap) is made in 64-bit nanoseconds at the moment of the
//! decision. So there is no circle to cross and no tick scale to select; what the runs cover
//! instead is every configuration axis (each backoff formula, bases from 1 ns to seconds, caps
//! up to the end of time, Retry-After caps from zero to none) against deadlines and
//! Retry-Afters from 1 ns to ten years, with idle gaps between attempts from 1 ns to ten
//! years (`Gaps::LONG`), up to the end of the `u64` timeline.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{
    Backoff, GiveUpReason, Retry, RetryConfig, Strategy as Formula, UncertainRetry,
};
use resilix::time::{Deadline, Instant};
use resilix::verdict::Verdict;
use resilix_reference::retry::{RetryModel, RetryTwin, ScriptedBudget};
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, drive};

/// Mostly failures, so calls run long chains of retries.
const FAILING: Mix = Mix {
    success: 40,
    transient: 80,
    timeout: 40,
    overload: 80,
    answered: 8,
};

fn strategy() -> impl proptest::strategy::Strategy<Value = Formula> {
    prop_oneof![
        Just(Formula::None),
        Just(Formula::Exponential),
        Just(Formula::FullJitter),
        Just(Formula::EqualJitter),
        Just(Formula::Decorrelated),
    ]
}

/// A duration log-uniform over 1 ns .. 2^exp ns.
fn log_duration(max_bits: u32) -> impl proptest::strategy::Strategy<Value = Duration> {
    (0..max_bits, any::<u64>()).prop_map(|(bits, x)| {
        let low = 1u64 << bits;
        Duration::from_nanos(low + x % low)
    })
}

fn config() -> impl proptest::strategy::Strategy<Value = RetryConfig> {
    (
        prop_oneof![1u32..8, Just(u32::MAX)],
        strategy(),
        log_duration(35),
        prop_oneof![
            (0u32..12).prop_map(Some),
            Just(None), // the cap at the end of time
        ],
        prop_oneof![
            Just(Duration::ZERO),
            Just(RetryConfig::DEFAULT_MAX_RETRY_AFTER),
            Just(Duration::MAX),
            log_duration(59),
        ],
        prop_oneof![
            Just(UncertainRetry::Always),
            Just(UncertainRetry::IdempotentOnly)
        ],
    )
        .prop_map(|(attempts, s, base, growth, cap_ra, uncertain)| {
            let cap = match growth {
                Some(g) => base.saturating_mul(1 << g),
                None => Duration::MAX,
            };
            let backoff = Backoff::new(s, base, cap).unwrap();
            RetryConfig::new(attempts, backoff)
                .unwrap()
                .with_max_retry_after(cap_ra)
                .with_uncertain_retry(uncertain)
        })
}

fn run(config: RetryConfig, seed: u64, start: Instant, mix: Mix, steps: u64) {
    let budget = ScriptedBudget::new();
    let real = Retry::new(config, &budget);
    let mut twin = RetryTwin::new(&real, &budget);
    let mut timeline = Timeline::new(start, Gaps::LONG);
    let mut rng = SeededRandom::new(seed);
    let report = drive(&mut twin, &mut timeline, &mut rng, steps, mix, 8)
        .unwrap_or_else(|m| panic!("{config:?} seed {seed}: {m}"));
    assert_eq!(report.steps, steps);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn decisions_match_the_model_on_long_timelines(
        config in config(),
        seed in any::<u64>(),
        start in prop_oneof![Just(0u64), any::<u64>(), (u64::MAX - (1 << 40))..=u64::MAX],
        failing in any::<bool>(),
    ) {
        let mix = if failing { FAILING } else { Mix::MOSTLY_HEALTHY };
        run(config, seed, Instant::from_nanos(start), mix, 2_000);
    }
}

#[test]
fn the_default_config_matches_over_many_seeds() {
    let careful = RetryConfig::DEFAULT.with_uncertain_retry(UncertainRetry::IdempotentOnly);
    for seed in 0..64 {
        run(RetryConfig::DEFAULT, seed, Instant::ZERO, FAILING, 4_000);
        run(careful, seed, Instant::ZERO, FAILING, 4_000);
    }
}

#[test]
fn every_reason_and_outcome_is_reached() {
    // The runs above are only worth something if they reach every decision: count them.
    let config = RetryConfig::new(
        4,
        Backoff::new(
            Formula::FullJitter,
            Duration::from_millis(100),
            Duration::from_secs(20),
        )
        .unwrap(),
    )
    .unwrap();
    let budget = ScriptedBudget::new();
    let real = Retry::new(config, &budget);
    let mut twin = RetryTwin::new(&real, &budget);
    let mut timeline = Timeline::new(Instant::ZERO, Gaps::LONG);
    let mut rng = SeededRandom::new(5);
    drive(&mut twin, &mut timeline, &mut rng, 50_000, FAILING, 8).unwrap();
    let [done, retried, gave_up] = twin.decisions;
    assert!(
        done > 1_000 && retried > 1_000 && gave_up > 1_000,
        "{:?}",
        twin.decisions
    );
}

#[test]
fn a_wrong_model_is_caught() {
    // The differential runs must be able to fail: a model whose Retry-After cap is twice as
    // long, whose backoff base is 1 ns longer (so the exponential ceiling grows 2 ns per
    // doubling), that allows one more attempt, or that reads the uncertain-retry setting the
    // other way round (under either setting), disagrees within a short run.
    let exp = Backoff::new(
        Formula::Exponential,
        Duration::from_millis(100),
        Duration::from_secs(20),
    );
    let config = RetryConfig::new(3, exp.unwrap())
        .unwrap()
        .with_max_retry_after(Duration::from_secs(1));
    let careful = config.with_uncertain_retry(UncertainRetry::IdempotentOnly);
    for (config, wrong) in [
        (
            config,
            RetryModel {
                uncertain_only_if_idempotent: true,
                ..RetryModel::of(&config)
            },
        ),
        (
            careful,
            RetryModel {
                uncertain_only_if_idempotent: false,
                ..RetryModel::of(&careful)
            },
        ),
    ]
    .into_iter()
    .chain(
        [
            RetryModel {
                max_retry_after: 2_000_000_000,
                ..RetryModel::of(&config)
            },
            RetryModel {
                base: 100_000_001,
                ..RetryModel::of(&config)
            },
            RetryModel {
                max_attempts: 4,
                ..RetryModel::of(&config)
            },
        ]
        .map(|wrong| (config, wrong)),
    ) {
        let budget = ScriptedBudget::new();
        let real = Retry::new(config, &budget);
        let mut twin = RetryTwin::new(&real, &budget).with_model(wrong);
        // Retry-Afters near the cap: gaps around a second.
        let mut timeline = Timeline::new(
            Instant::ZERO,
            Gaps::between(Duration::from_millis(900), Duration::from_millis(1_100)),
        );
        let mut rng = SeededRandom::new(9);
        assert!(
            drive(&mut twin, &mut timeline, &mut rng, 200_000, FAILING, 8).is_err(),
            "{wrong:?} was not caught"
        );
    }
}

/// One call: first attempt at `start`, settled after `gap` with `verdict`; the decision.
fn first_decision(
    config: RetryConfig,
    start: Instant,
    deadline: Option<Duration>,
    gap: Duration,
    verdict: Verdict,
) -> Next {
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(config));
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(start, &mut rng);
    let mut options = CallOptions::default().idempotent(true);
    if let Some(d) = deadline {
        options = options.deadline(Deadline::after(start, d));
    }
    let mut call = pipeline.call(env.now, options);
    let attempt = call.admit(&mut env).unwrap();
    env.now = start.saturating_add(gap);
    call.settle(attempt, &verdict, &mut env)
}

/// The sweep of the first decision after an idle gap. Retry has no tick word whose circle
/// could alias, so the sweep crosses the bounds that do exist instead: a call with a deadline
/// `W` after it starts settles its first attempt after an idle gap from 0 to 3·W, at a step
/// of W/10 and, around each bound a decision turns on (the deadline less the Retry-After, less
/// the delay, and the deadline itself), nanosecond by nanosecond; from starts at 0, at
/// multiples of 2^32·4 ns (the 4 ns tick circle the other policies have) and near the end of
/// the u64 timeline. Every decision must be the model's, and the reasons land where the
/// arithmetic says.
#[test]
fn the_first_decision_after_an_idle_gap() {
    let exp = Backoff::new(
        Formula::Exponential,
        Duration::from_millis(50),
        Duration::from_secs(2),
    )
    .unwrap();
    let config = RetryConfig::new(3, exp).unwrap();
    let delay = Duration::from_millis(100); // 50 ms · 2^1
    let cap = config.max_retry_after();
    let circle = Duration::from_nanos(4 << 32);
    let model = RetryModel::of(&config);
    let mut checked = 0u32;
    for w in [Duration::from_secs(1), cap, Duration::from_secs(86_400)] {
        for start in [
            Instant::ZERO,
            Instant::ZERO + circle,
            Instant::ZERO + 3 * circle,
            Instant::from_nanos(u64::MAX - (w.as_nanos() as u64) * 4),
        ] {
            for ra in [
                None,
                Some(w / 2),
                Some(cap),
                Some(cap + Duration::from_nanos(1)),
            ] {
                let verdict = Verdict::Overload { retry_after: ra };
                let wait = ra.map_or(delay, |r| r.max(delay));
                let mut gaps: Vec<Duration> = (0..=30).map(|k| w / 10 * k).collect();
                for edge in [w.saturating_sub(wait), w] {
                    for d in 0..3u64 {
                        gaps.push(edge.saturating_sub(Duration::from_nanos(d)));
                        gaps.push(edge + Duration::from_nanos(d));
                    }
                }
                for gap in gaps {
                    let next = first_decision(config, start, Some(w), gap, verdict);
                    // The model, by hand: the same question in plain numbers.
                    let mut call = model.begin();
                    let mut rng = SeededRandom::new(1);
                    let now = start.saturating_add(gap).as_nanos();
                    let settled = resilix_reference::retry::Settled {
                        now,
                        verdict,
                        attempt: 1,
                        idempotent: true,
                        deadline: Some(Deadline::after(start, w).instant().as_nanos()),
                    };
                    let want = model.decide(&mut call, settled, &mut rng, &mut |_| true);
                    assert_eq!(want, next, "w {w:?} start {start:?} gap {gap:?} ra {ra:?}");
                    // And where the reason must fall.
                    let deadline = u128::from(Deadline::after(start, w).instant().as_nanos());
                    let reach =
                        |d: Duration| (u128::from(now) + d.as_nanos()).min(u128::from(u64::MAX));
                    let reason = match next {
                        Next::GiveUp(r) => Some(r),
                        _ => None,
                    };
                    if ra.is_some_and(|r| r > cap) {
                        assert_eq!(reason, Some(GiveUpReason::RetryAfterTooLong));
                    } else if ra.is_some_and(|r| reach(r) >= deadline) {
                        assert_eq!(reason, Some(GiveUpReason::RetryAfterBeyondDeadline));
                    } else if reach(wait) >= deadline {
                        assert_eq!(reason, Some(GiveUpReason::DeadlineWouldPass));
                    } else {
                        assert_eq!(
                            next,
                            Next::RetryAt(Instant::from_nanos(now).saturating_add(wait))
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1_000, "{checked}");
}
