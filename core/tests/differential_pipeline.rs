//! The full pipeline (throttler → breaker → limiter → bulkhead → rate limit) against the composition of
//! its policies' plain wide-time models (`resilix_reference::pipeline`): on random timelines
//! whose gaps run from 1 ns to ten years, with the defaults and with tight configurations in
//! which every policy refuses, every decision (which policy refused, its reason and
//! retry-at), every randomness draw and, after every step, each policy's observable state
//! must be identical. A model composed wrongly is caught.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use resilix::breaker::{Breaker, CallRing, Config, DEFAULT_WINDOW, OutcomeWindow};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::limiter::{Gradient2, Limiter, LimiterConfig};
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::rejection::RejectReason;
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;
use resilix_reference::breaker::Model as BreakerModel;
use resilix_reference::pipeline::{Models, PipelineTwin, Policies};
use resilix_reference::twin::{Decision, Mix};
use resilix_reference::{Gaps, Mismatch, Report, Timeline, Twin, drive};

/// Calls end badly often enough that the breaker opens and the limiter cuts.
const STORMY: Mix = Mix {
    success: 120,
    transient: 50,
    timeout: 30,
    overload: 25,
    answered: 15,
};

/// A twin that counts the refusals by reason as they pass.
struct Counting<T> {
    inner: T,
    refusals: Vec<(RejectReason, u64)>,
}

impl<T: Twin> Twin for Counting<T> {
    fn open(&self) -> usize {
        self.inner.open()
    }
    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let d = self.inner.arrive(now, rng)?;
        if let Decision::Refused { reason, .. } = d {
            match self.refusals.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => self.refusals.push((reason, 1)),
            }
        }
        Ok(d)
    }
    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        self.inner.end(now, index, verdict, rng)
    }
    fn check(&mut self, now: Instant) -> Result<(), String> {
        self.inner.check(now)
    }
}

/// One pipeline's configuration.
#[derive(Clone, Copy, Debug)]
struct Setup {
    throttler: ThrottlerConfig,
    breaker: Config,
    /// `None`: the default time window; `Some(n)`: the last `n` calls.
    calls: Option<u32>,
    limiter: LimiterConfig,
    cap: u32,
    rate: RateLimitConfig,
}

impl Setup {
    const DEFAULTS: Setup = Setup {
        throttler: ThrottlerConfig::DEFAULT,
        breaker: Config::DEFAULT,
        calls: None,
        limiter: LimiterConfig::gradient2(),
        cap: BulkheadConfig::DEFAULT_MAX_CONCURRENT,
        rate: RateLimitConfig::new(Rate::per_second(100)).with_burst(10),
    };
}

/// Builds the real policies and models of `s`, drives `steps` steps, and answers the report
/// and the refusals by reason; `tamper` may change the models first.
fn run(
    s: Setup,
    seed: u64,
    steps: u64,
    mix: Mix,
    max_open: usize,
    tamper: impl FnOnce(&mut Models),
) -> Result<(Report, Vec<(RejectReason, u64)>), Mismatch> {
    fn go<W: OutcomeWindow>(
        breaker: &Breaker<W>,
        model: BreakerModel,
        s: Setup,
        (seed, steps, mix, max_open): (u64, u64, Mix, usize),
        tamper: impl FnOnce(&mut Models),
    ) -> Result<(Report, Vec<(RejectReason, u64)>), Mismatch> {
        let limiter = Limiter::new(s.limiter).expect("valid");
        let bulkhead = Bulkhead::new(BulkheadConfig::new(s.cap).expect("valid"));
        let rate_limit = RateLimiter::new(s.rate).expect("valid");
        let throttler = Throttler::new(s.throttler).expect("valid");
        let policies = Policies {
            throttler: &throttler,
            breaker,
            limiter: &limiter,
            bulkhead: &bulkhead,
            rate_limit: &rate_limit,
        };
        let pipeline = policies.pipeline();
        let mut models = Models::new(&s.throttler, model, &s.limiter, s.cap, s.rate);
        tamper(&mut models);
        let mut twin = Counting {
            inner: PipelineTwin::new(&pipeline, policies, models),
            refusals: Vec::new(),
        };
        let mut timeline = Timeline::new(Instant::from_secs(1), Gaps::LONG);
        let mut rng = SeededRandom::new(seed);
        let r = drive(&mut twin, &mut timeline, &mut rng, steps, mix, max_open)?;
        Ok((r, twin.refusals))
    }
    match s.calls {
        None => go(
            &Breaker::new(s.breaker).expect("valid"),
            BreakerModel::time_based(s.breaker, DEFAULT_WINDOW, 10),
            s,
            (seed, steps, mix, max_open),
            tamper,
        ),
        Some(n) => go(
            &Breaker::<CallRing<7>>::count_based(s.breaker, n).expect("valid"),
            BreakerModel::count_based(s.breaker, n),
            s,
            (seed, steps, mix, max_open),
            tamper,
        ),
    }
}

/// A duration drawn log-uniformly from 2^`lo` to 2^`hi` ns.
fn log_duration(lo: u32, hi: u32) -> impl Strategy<Value = Duration> {
    (lo..hi, any::<u64>()).prop_map(|(bits, x)| {
        let base = 1u64 << bits;
        Duration::from_nanos(base + x % base)
    })
}

/// Tight configurations: a throttler shedding above K of 1.0..1.5 (windows of 8 ns × 20 to
/// days, so every tick scale), a breaker opening on 2 consecutive failures (waits from 1 µs
/// to 9 h), a limiter of 1..6 calls, a bulkhead of 1..4, a rate of a few cells per 1 ms..1 h.
fn tight() -> impl Strategy<Value = Setup> {
    (
        (0u32..=50, log_duration(8, 48), 1u32..10, any::<bool>()),
        (
            log_duration(10, 45),
            prop::option::of(log_duration(10, 46)),
            0u8..50,
        ),
        prop::option::of(2u32..=40),
        (
            1u32..=2,
            0u32..=2,
            0u32..=3,
            log_duration(10, 40),
            any::<bool>(),
        ),
        1u32..=4,
        (1u32..=5, log_duration(20, 42), 1u32..=4),
    )
        .prop_map(
            |(
                (k, throttle_window, min_requests, count_local),
                (wait, half, jitter),
                calls,
                (min, up, top, window, gradient),
                cap,
                (n, per, burst),
            )| {
                let breaker = Config {
                    failure_rate_above_percent: Some(50),
                    minimum_calls: 2,
                    consecutive_failures: Some(2),
                    open_wait: wait,
                    open_jitter_percent: jitter,
                    half_open_probes: 2,
                    probes_to_close: 1,
                    max_half_open_wait: half,
                    ..Config::DEFAULT
                };
                breaker.validate().expect("valid by construction");
                let limiter = LimiterConfig {
                    min_limit: min,
                    initial_limit: min + up,
                    max_limit: min + up + top,
                    min_window: window / 4,
                    max_window: window,
                    window_samples: 2,
                    min_rtt: Duration::ZERO,
                    probe_multiplier: 3,
                    ..if gradient {
                        LimiterConfig {
                            algorithm: resilix::limiter::Algorithm::Gradient2(Gradient2 {
                                long_window: 10,
                                ..Gradient2::DEFAULT
                            }),
                            ..LimiterConfig::gradient2()
                        }
                    } else {
                        LimiterConfig::vegas()
                    }
                };
                let throttler = ThrottlerConfig {
                    accepts_multiplier: 1.0 + f64::from(k) / 100.0,
                    window: throttle_window,
                    min_requests,
                    local_rejections: if count_local {
                        LocalRejections::CountAsRequests
                    } else {
                        LocalRejections::Ignore
                    },
                    ..ThrottlerConfig::DEFAULT
                };
                Setup {
                    throttler,
                    breaker,
                    calls,
                    limiter,
                    cap,
                    rate: RateLimitConfig::new(Rate::new(n, per)).with_burst(burst),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn real_and_models_agree_with_tight_configs(
        s in tight(),
        seed in any::<u64>(),
        stormy in any::<bool>(),
        max_open in 1usize..10,
    ) {
        let mix = if stormy { STORMY } else { Mix::MOSTLY_HEALTHY };
        if let Err(m) = run(s, seed, 3_000, mix, max_open, |_| {}) {
            panic!("{s:?}\nseed {seed}: {m}");
        }
    }

    #[test]
    fn real_and_models_agree_with_the_defaults(seed in any::<u64>(), max_open in 1usize..40) {
        if let Err(m) = run(Setup::DEFAULTS, seed, 5_000, STORMY, max_open, |_| {}) {
            panic!("seed {seed}: {m}");
        }
    }
}

/// The tight configurations make every policy refuse: each reason of the four slots comes
/// back from the pipeline (and so was checked against the models) over a few runs.
#[test]
fn every_policy_refuses_and_agrees() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen: Vec<RejectReason> = Vec::new();
    for i in 0..40u64 {
        let s = tight().new_tree(&mut runner).unwrap().current();
        let (report, refusals) = run(s, i, 2_000, STORMY, 1 + i as usize % 8, |_| {})
            .unwrap_or_else(|m| panic!("{s:?}: {m}"));
        assert!(report.admitted > 0 && report.ended > 0, "{report:?}");
        seen.extend(refusals.iter().map(|(r, _)| *r));
    }
    for reason in [
        RejectReason::Throttled,
        RejectReason::CircuitOpen,
        RejectReason::LimiterFull,
        RejectReason::BulkheadFull,
        RejectReason::RateLimited,
    ] {
        assert!(seen.contains(&reason), "{reason:?} never refused: {seen:?}");
    }
}

/// A bulkhead model one slot larger than the real bulkhead: caught at the first call the real
/// one refuses.
#[test]
fn a_wrong_bulkhead_model_is_caught() {
    let s = Setup {
        cap: 2,
        ..Setup::DEFAULTS
    };
    let m = run(s, 5, 5_000, Mix::MOSTLY_HEALTHY, 10, |models| {
        models.bulkhead = resilix_reference::bulkhead::Model::new(3);
    })
    .unwrap_err();
    assert!(m.what.contains("BulkheadFull"), "{m}");
}

/// A rate model at twice the real rate: caught (a decision or the cells available differ).
#[test]
fn a_wrong_rate_model_is_caught() {
    let m = run(
        Setup::DEFAULTS,
        6,
        5_000,
        Mix::MOSTLY_HEALTHY,
        10,
        |models| {
            models.rate_limit = resilix_reference::rate_limit::RateLimitModel::new(
                RateLimitConfig::new(Rate::per_second(200)).with_burst(10),
            )
            .unwrap();
        },
    )
    .unwrap_err();
    assert!(
        m.what.contains("RateLimited") || m.what.contains("available"),
        "{m}"
    );
}

/// A breaker model that opens on 3 consecutive failures where the real one opens on 2.
#[test]
fn a_wrong_breaker_model_is_caught() {
    let breaker = Config {
        failure_rate_above_percent: None,
        consecutive_failures: Some(2),
        ..Config::DEFAULT
    };
    let s = Setup {
        breaker,
        ..Setup::DEFAULTS
    };
    let m = run(s, 7, 5_000, STORMY, 10, |models| {
        let wrong = Config {
            consecutive_failures: Some(3),
            ..breaker
        };
        models.breaker = BreakerModel::time_based(wrong, DEFAULT_WINDOW, 10);
    })
    .unwrap_err();
    // The real breaker opens a call earlier: it draws its open wait's jitter where the model
    // draws nothing, or then refuses where the model admits.
    assert!(
        ["breaker", "Circuit", "randomness"]
            .iter()
            .any(|w| m.what.contains(w)),
        "{m}"
    );
}

/// A limiter model that starts at a different limit: caught by the state check at once.
#[test]
fn a_wrong_limiter_model_is_caught() {
    let m = run(Setup::DEFAULTS, 8, 100, STORMY, 10, |models| {
        models.limiter = resilix_reference::limiter::Model::new(&LimiterConfig {
            initial_limit: 21,
            ..LimiterConfig::gradient2()
        });
    })
    .unwrap_err();
    assert!(m.what.contains("limiter"), "{m}");
    assert_eq!(m.step, 0, "{m}");
}
