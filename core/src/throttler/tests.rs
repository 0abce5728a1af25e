extern crate std;

use core::cell::Cell;
use core::time::Duration;
use std::vec::Vec;

use super::*;
use crate::pipeline::Pipeline;
use crate::random::SeededRandom;

fn throttler(config: ThrottlerConfig) -> Throttler {
    Throttler::new(config).expect("valid config")
}

const UNGATED: ThrottlerConfig = ThrottlerConfig {
    min_requests: 0,
    ..ThrottlerConfig::DEFAULT
};

fn settle_n(t: &Throttler, now: Instant, n: u32, verdict: Verdict) {
    // A generator that never sheds cannot be assumed, so admit through a zero-probability
    // path: count directly as settled calls do.
    let mut rng = SeededRandom::new(0);
    let mut env = Env::new(now, &mut rng);
    for _ in 0..n {
        let permit = ThrottlerPermit { throttler: t };
        permit.settle(&verdict, &mut env);
    }
}

#[test]
fn config_errors_are_refused_not_clamped() {
    let cases = [
        (
            ThrottlerConfig {
                accepts_multiplier: 0.99,
                ..UNGATED
            },
            ThrottlerConfigError::AcceptsMultiplierBelowOne,
        ),
        (
            ThrottlerConfig {
                accepts_multiplier: f64::NAN,
                ..UNGATED
            },
            ThrottlerConfigError::AcceptsMultiplierBelowOne,
        ),
        (
            ThrottlerConfig {
                max_rejection_rate: 1.0,
                ..UNGATED
            },
            ThrottlerConfigError::MaxRejectionRateAtLeastOne,
        ),
        (
            ThrottlerConfig {
                max_rejection_rate: 0.999_999_9,
                ..UNGATED
            },
            ThrottlerConfigError::MaxRejectionRateAtLeastOne,
        ),
        (
            ThrottlerConfig {
                max_rejection_rate: -0.1,
                ..UNGATED
            },
            ThrottlerConfigError::MaxRejectionRateNegative,
        ),
        (
            ThrottlerConfig {
                window: Duration::ZERO,
                ..UNGATED
            },
            ThrottlerConfigError::ZeroWindow,
        ),
    ];
    for (config, err) in cases {
        assert_eq!(Throttler::new(config).unwrap_err(), err);
    }
    assert_eq!(
        Throttler::<0>::with_buckets(UNGATED).unwrap_err(),
        ThrottlerConfigError::ZeroBuckets
    );
    assert!(
        Throttler::<1>::with_buckets(ThrottlerConfig {
            accepts_multiplier: 1.0,
            max_rejection_rate: 0.0,
            ..UNGATED
        })
        .is_ok(),
        "the edges K = 1 and cap = 0 are valid"
    );
}

#[test]
fn min_requests_must_be_reachable_within_the_window() {
    // The case: u32::MAX is where the counts saturate, so it never sheds.
    let never = ThrottlerConfig {
        min_requests: u32::MAX,
        ..ThrottlerConfig::DEFAULT
    };
    assert_eq!(
        Throttler::new(never).unwrap_err(),
        ThrottlerConfigError::MinRequestsUnreachable
    );
    // The largest reachable value over two minutes is just below the ceiling...
    let edge = ThrottlerConfig {
        min_requests: u32::MAX - 1,
        ..ThrottlerConfig::DEFAULT
    };
    assert!(Throttler::new(edge).is_ok());
    // ...and over a millisecond, one request per 10 ns: 100,000.
    let ms = |min_requests| ThrottlerConfig {
        min_requests,
        window: Duration::from_millis(1),
        ..ThrottlerConfig::DEFAULT
    };
    assert!(Throttler::new(ms(100_000)).is_ok());
    assert_eq!(
        Throttler::new(ms(100_001)).unwrap_err(),
        ThrottlerConfigError::MinRequestsUnreachable
    );
    assert_eq!(config::max_min_requests(Duration::MAX), u32::MAX - 1);
    assert_eq!(config::max_min_requests(Duration::from_nanos(9)), 0);
}

#[test]
fn a_window_shorter_than_its_buckets_is_refused() {
    let short = |nanos| ThrottlerConfig {
        window: Duration::from_nanos(nanos),
        ..UNGATED
    };
    assert_eq!(
        Throttler::new(short(159)).unwrap_err(),
        ThrottlerConfigError::WindowShorterThanBuckets
    );
    let t = Throttler::new(short(160)).unwrap();
    assert_eq!(t.window.bucket_length(), Duration::from_nanos(8));
}

#[test]
fn the_documented_meanings_of_the_extreme_values() {
    // K at infinity (or anything from 2^32): shed only while nothing was accepted.
    for k in [4_294_967_296.0, 1e300, f64::INFINITY] {
        let t = throttler(ThrottlerConfig {
            accepts_multiplier: k,
            ..UNGATED
        });
        settle_n(&t, Instant::ZERO, 1_000, Verdict::Transient);
        assert_eq!(
            t.rejection_probability(Instant::ZERO).as_f64(),
            0.9,
            "K = {k}"
        );
        settle_n(&t, Instant::ZERO, 1, Verdict::Success);
        assert!(t.rejection_probability(Instant::ZERO).is_zero(), "K = {k}");
    }
    // A cap of zero: counts, never sheds.
    let dry = throttler(ThrottlerConfig {
        max_rejection_rate: 0.0,
        ..UNGATED
    });
    settle_n(&dry, Instant::ZERO, 1_000, Verdict::Transient);
    assert_eq!(dry.counts(Instant::ZERO), (1_000, 0));
    assert!(dry.rejection_probability(Instant::ZERO).is_zero());
}

#[test]
fn every_config_error_has_its_own_text() {
    use std::string::ToString;
    let all = [
        ThrottlerConfigError::AcceptsMultiplierBelowOne,
        ThrottlerConfigError::MaxRejectionRateAtLeastOne,
        ThrottlerConfigError::MaxRejectionRateNegative,
        ThrottlerConfigError::ZeroWindow,
        ThrottlerConfigError::ZeroBuckets,
        ThrottlerConfigError::MinRequestsUnreachable,
        ThrottlerConfigError::WindowShorterThanBuckets,
    ];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a.to_string(), b.to_string());
        }
    }
}

#[test]
fn the_sre_cases_through_the_window() {
    let t = throttler(ThrottlerConfig {
        max_rejection_rate: 0.95,
        ..UNGATED
    });
    let now = Instant::from_secs(10);
    settle_n(&t, now, 10, Verdict::Transient);
    assert_eq!(t.rejection_probability(now), Probability::new(10, 11));
    t.reset(&mut Env::new(now, &mut SeededRandom::new(0)));
    settle_n(&t, now, 40, Verdict::Success);
    settle_n(&t, now, 60, Verdict::Timeout);
    assert_eq!(t.counts(now), (100, 40));
    assert_eq!(t.rejection_probability(now), Probability::new(20, 101));
    t.reset(&mut Env::new(now, &mut SeededRandom::new(0)));
    settle_n(&t, now, 50, Verdict::Answered);
    settle_n(&t, now, 50, Verdict::Overload { retry_after: None });
    assert!(
        t.rejection_probability(now).is_zero(),
        "requests = K·accepts"
    );
}

#[test]
fn the_cap_holds_and_is_measured() {
    let t = throttler(UNGATED);
    let now = Instant::from_secs(1);
    settle_n(&t, now, 1_000, Verdict::Transient);
    assert_eq!(t.rejection_probability(now), Probability::new(9, 10));
    let mut rng = SeededRandom::new(99);
    let mut env = Env::new(now, &mut rng);
    let shed = (0..10_000).filter(|_| t.admit(&mut env).is_err()).count();
    assert!(
        (8_850..=9_150).contains(&shed),
        "{shed} of 10 000 at P = 0.9"
    );
}

#[test]
fn the_window_expires() {
    let t = throttler(UNGATED);
    settle_n(&t, Instant::from_secs(0), 100, Verdict::Transient);
    assert_eq!(t.counts(Instant::from_secs(100)), (100, 0));
    assert!(!t.rejection_probability(Instant::from_secs(100)).is_zero());
    // 20 buckets of 6 s: the bucket of t = 0 is gone once t reaches 120 s.
    assert_eq!(t.counts(Instant::from_secs(120)), (0, 0));
    assert!(t.rejection_probability(Instant::from_secs(120)).is_zero());
}

#[test]
fn counting_happens_at_settle_never_at_admit() {
    let t = throttler(UNGATED);
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::from_secs(5), &mut rng);
    let permits: Vec<_> = (0..20).map(|_| t.admit(&mut env).unwrap()).collect();
    assert_eq!(
        t.counts(env.now),
        (0, 0),
        "admitted but not settled: nothing counted"
    );
    let mut permits = permits.into_iter();
    for p in permits.by_ref().take(5) {
        p.settle(&Verdict::Success, &mut env);
    }
    for p in permits.by_ref().take(5) {
        p.settle(&Verdict::Transient, &mut env);
    }
    for p in permits.by_ref().take(5) {
        p.settle(&Verdict::Rejected(RejectReason::BulkheadFull), &mut env);
    }
    drop(permits); // the last five are cancelled
    assert_eq!(t.counts(env.now), (10, 5));
}

#[test]
fn local_refusals_count_in_sre_mode_only() {
    for (mode, counted) in [
        (LocalRejections::CountAsRequests, true),
        (LocalRejections::Ignore, false),
    ] {
        let t = throttler(ThrottlerConfig {
            local_rejections: mode,
            ..UNGATED
        });
        let now = Instant::from_secs(3);
        settle_n(&t, now, 100, Verdict::Transient);
        let mut rng = SeededRandom::new(2);
        let mut env = Env::new(now, &mut rng);
        let shed = (0..100).filter(|_| t.admit(&mut env).is_err()).count() as u32;
        assert!(shed > 50);
        let expected = if counted { 100 + shed } else { 100 };
        assert_eq!(t.counts(now), (expected, 0), "{mode:?}");
    }
}

#[test]
fn low_traffic_is_not_shed_below_min_requests() {
    let t = throttler(ThrottlerConfig::DEFAULT);
    let now = Instant::from_secs(1);
    settle_n(&t, now, 9, Verdict::Transient);
    assert!(t.rejection_probability(now).is_zero(), "9 samples < 10");
    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(now, &mut rng);
    assert!((0..1_000).all(|_| t.admit(&mut env).is_ok()));
    settle_n(&t, now, 1, Verdict::Transient);
    assert_eq!(t.rejection_probability(now), Probability::new(9, 10));
}

/// A `Random` that counts its draws.
struct Counting(SeededRandom, u32);
impl Random for Counting {
    fn next_u32(&mut self) -> u32 {
        self.1 += 1;
        self.0.next_u32()
    }
}

#[test]
fn no_randomness_is_drawn_while_nothing_is_shed() {
    let t = throttler(UNGATED);
    let mut rng = Counting(SeededRandom::new(4), 0);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    for _ in 0..100 {
        let p = t.admit(&mut env).unwrap();
        p.settle(&Verdict::Success, &mut env);
    }
    assert_eq!(rng.1, 0);
}

fn decisions(seed: u64) -> Vec<bool> {
    let t = throttler(UNGATED);
    settle_n(&t, Instant::ZERO, 30, Verdict::Transient);
    settle_n(&t, Instant::ZERO, 10, Verdict::Success);
    let mut rng = SeededRandom::new(seed);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    (0..200).map(|_| t.admit(&mut env).is_ok()).collect()
}

#[test]
fn the_same_seed_gives_the_same_shed_decisions() {
    assert_eq!(decisions(42), decisions(42));
    assert_ne!(decisions(42), decisions(43));
}

#[test]
fn hostile_time_never_panics_or_sticks() {
    let t = throttler(UNGATED);
    let mut rng = SeededRandom::new(5);
    for now in [
        Instant::from_secs(1_000),
        Instant::ZERO, // backwards
        Instant::MAX,
        Instant::from_secs(1_000 + 365 * 86_400),
    ] {
        let mut env = Env::new(now, &mut rng);
        for _ in 0..50 {
            if let Ok(p) = t.admit(&mut env) {
                p.settle(&Verdict::Transient, &mut env);
            }
        }
    }
    // A year after the last failure, the throttler has forgotten it.
    let later = Instant::from_secs(1_000 + 2 * 365 * 86_400);
    assert!(t.rejection_probability(later).is_zero());
}

/// A bulkhead-like test policy: at most `cap` calls in flight; the slot returns on drop.
struct TinyBulkhead {
    held: Cell<u32>,
    cap: u32,
}

struct TinySlot<'a>(&'a Cell<u32>);
impl Drop for TinySlot<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}
impl Permit for TinySlot<'_> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(self, _: &Verdict, _: &mut Env<'_, R, O>) {}
}
impl Policy for TinyBulkhead {
    type Permit<'a> = TinySlot<'a>;
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<TinySlot<'a>, Rejection> {
        if self.held.get() >= self.cap {
            return Err(Rejection::new(RejectReason::BulkheadFull));
        }
        self.held.set(self.held.get() + 1);
        Ok(TinySlot(&self.held))
    }
}

/// Spec §9's scenario: a bulkhead of 5, 20 calls offered per tick, 3 000 ticks (60 000
/// requests). Returns (throttled, bulkhead-refused, sent upstream).
fn bulkhead_scenario(upstream: Verdict) -> (u32, u32, u32) {
    let t = throttler(ThrottlerConfig::DEFAULT);
    let bulkhead = TinyBulkhead {
        held: Cell::new(0),
        cap: 5,
    };
    let pipeline = Pipeline::new().throttler(&t).bulkhead(&bulkhead);
    let mut rng = SeededRandom::new(9);
    let (mut throttled, mut refused, mut sent) = (0, 0, 0);
    for tick in 0..3_000u64 {
        let mut env = Env::new(Instant::from_millis(tick * 40), &mut rng);
        let mut in_flight = Vec::new();
        for _ in 0..20 {
            match pipeline.admit(&mut env, None) {
                Ok(attempt) => in_flight.push(attempt),
                Err(r) if r.reason() == RejectReason::Throttled => throttled += 1,
                Err(_) => refused += 1,
            }
        }
        env.now = Instant::from_millis(tick * 40 + 30);
        for attempt in in_flight {
            sent += 1;
            attempt.settle(&upstream, &mut env);
        }
    }
    (throttled, refused, sent)
}

#[test]
fn regression_inner_shedding_never_throttles() {
    let (throttled, refused, sent) = bulkhead_scenario(Verdict::Success);
    assert_eq!(
        throttled, 0,
        "the bulkhead's shedding read as upstream distress"
    );
    assert_eq!(sent, 5 * 3_000);
    assert_eq!(refused, 15 * 3_000);
}

#[test]
fn regression_a_failing_upstream_is_still_throttled() {
    let (throttled, _refused, sent) = bulkhead_scenario(Verdict::Transient);
    let offered = 20 * 3_000;
    assert!(
        throttled > offered * 8 / 10,
        "throttled {throttled} of {offered}"
    );
    assert!(sent < 5 * 3_000 / 2, "sent {sent}");
}

/// Offers one call every 10 ms to an upstream that fails independently with probability
/// `fail_per_mille` / 1000; returns the rejection rate measured after a warm-up.
fn independent_failures(config: ThrottlerConfig, fail_per_mille: u64, seed: u64) -> f64 {
    let t = throttler(config);
    let mut rng = SeededRandom::new(seed);
    let mut upstream = SeededRandom::new(!seed);
    let (warmup, total) = (24_000u64, 84_000u64); // 240 s, then 600 s measured
    let mut shed = 0u32;
    for i in 0..total {
        let mut env = Env::new(Instant::from_millis(i * 10), &mut rng);
        match t.admit(&mut env) {
            Ok(p) => {
                let v = if upstream.chance(fail_per_mille, 1_000) {
                    Verdict::Transient
                } else {
                    Verdict::Success
                };
                p.settle(&v, &mut env);
            }
            Err(_) if i >= warmup => shed += 1,
            Err(_) => {}
        }
    }
    shed as f64 / (total - warmup) as f64
}

fn within_five_percent(measured: f64, analytic: f64) -> bool {
    if analytic == 0.0 {
        measured == 0.0
    } else {
        (measured - analytic).abs() <= 0.05 * analytic
    }
}

#[test]
fn independent_failures_match_the_analysis_failsafe_go_mode() {
    let config = ThrottlerConfig {
        local_rejections: LocalRejections::Ignore,
        ..ThrottlerConfig::DEFAULT
    };
    let k = 2.0;
    for fail in [300u64, 600, 750, 900, 1_000] {
        let f = fail as f64 / 1_000.0;
        let analytic = (1.0 - k * (1.0 - f)).clamp(0.0, 0.9);
        let measured = independent_failures(config, fail, fail);
        assert!(
            within_five_percent(measured, analytic),
            "f = {f}: measured {measured}, analytic {analytic}"
        );
    }
}

#[test]
fn independent_failures_match_the_analysis_sre_mode() {
    // Zero while K(1 − f) ≥ 1, the cap otherwise (see the module docs).
    for (fail, analytic) in [(300u64, 0.0), (450, 0.0), (600, 0.9), (900, 0.9)] {
        let measured = independent_failures(ThrottlerConfig::DEFAULT, fail, fail + 1);
        assert!(
            within_five_percent(measured, analytic),
            "f = {fail}‰: measured {measured}, analytic {analytic}"
        );
    }
}

/// Offers `offered` calls per 100 ms tick to an upstream that accepts the first `capacity`
/// of each tick and answers the rest with overload. Returns (rejection rate, calls sent
/// upstream per tick), measured after a warm-up.
fn capacity_model(mode: LocalRejections, offered: u64, capacity: u64) -> (f64, f64) {
    let t = throttler(ThrottlerConfig {
        local_rejections: mode,
        ..ThrottlerConfig::DEFAULT
    });
    let mut rng = SeededRandom::new(77);
    let (warmup, ticks) = (2_400u64, 5_400u64);
    let (mut shed, mut sent) = (0u64, 0u64);
    for tick in 0..ticks {
        let mut env = Env::new(Instant::from_millis(tick * 100), &mut rng);
        let mut served = 0;
        for _ in 0..offered {
            match t.admit(&mut env) {
                Ok(p) => {
                    served += 1;
                    let v = if served <= capacity {
                        Verdict::Success
                    } else {
                        Verdict::Overload { retry_after: None }
                    };
                    p.settle(&v, &mut env);
                    if tick >= warmup {
                        sent += 1;
                    }
                }
                Err(_) if tick >= warmup => shed += 1,
                Err(_) => {}
            }
        }
    }
    let measured_ticks = (ticks - warmup) as f64;
    (
        shed as f64 / (measured_ticks * offered as f64),
        sent as f64 / measured_ticks,
    )
}

#[test]
fn capacity_model_sre_holds_upstream_traffic_at_k_times_capacity() {
    let (rate, sent) = capacity_model(LocalRejections::CountAsRequests, 50, 10);
    // P = 1 − KC/R = 0.6; traffic = K·C = 20 per tick.
    assert!(within_five_percent(rate, 0.6), "rate {rate}");
    assert!(within_five_percent(sent, 20.0), "sent {sent}");
}

#[test]
fn capacity_model_failsafe_go_lets_traffic_grow_with_the_square_root() {
    let (rate, sent) = capacity_model(LocalRejections::Ignore, 50, 10);
    // P = 1 − √(KC/R) = 1 − √0.4; traffic = √(KCR) = √1000 per tick.
    let analytic = 1.0 - libm_sqrt(0.4);
    assert!(
        within_five_percent(rate, analytic),
        "rate {rate} vs {analytic}"
    );
    assert!(within_five_percent(sent, libm_sqrt(1_000.0)), "sent {sent}");
}

fn libm_sqrt(x: f64) -> f64 {
    std::primitive::f64::sqrt(x)
}
