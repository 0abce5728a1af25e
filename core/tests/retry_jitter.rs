//! The jitter distributions match their formulas (spec §3.1, §10).
//!
//! For each strategy and each attempt number, 100 000 seeded draws are binned into 20 bins of
//! equal width over the formula's support, and compared with the exact expected counts of a
//! uniform draw over the integers of that support (nanoseconds) by Pearson's chi-square test.
//! Threshold: 43.82, the 0.999 quantile of chi-square with 19 degrees of freedom (20 bins).
//! A draw that is biased, too narrow or shifted by a constant fails it by orders of magnitude;
//! an unbiased one passes with probability 0.999 per test, and the seeds are fixed, so the
//! result is reproducible on every run.
#![cfg(not(loom))]

use core::time::Duration;

use resilix::random::SeededRandom;
use resilix::retry::{Backoff, Strategy};

const DRAWS: u64 = 100_000;
const BINS: usize = 20;
/// χ²(0.999, df = 19).
const CHI2_CRITICAL_19: f64 = 43.82;

const BASE: Duration = Duration::from_millis(5);
const CAP: Duration = Duration::from_millis(2_000);

fn backoff(strategy: Strategy) -> Backoff {
    Backoff::new(strategy, BASE, CAP).unwrap()
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Pearson's statistic of `draws` against a uniform distribution over the integers of
/// `[low, high]`, in `BINS` equal-width bins.
fn chi_square_uniform(draws: &[u64], low: u64, high: u64) -> f64 {
    let span = high - low + 1;
    let bin_of = |x: u64| (((x - low) as u128 * BINS as u128) / span as u128) as usize;
    let mut observed = [0u64; BINS];
    for &x in draws {
        assert!((low..=high).contains(&x), "{x} outside [{low}, {high}]");
        observed[bin_of(x)] += 1;
    }
    // The exact number of integers in each bin (they differ by at most one).
    let mut width = [0u64; BINS];
    for (i, w) in width.iter_mut().enumerate() {
        let start = (i as u128 * span as u128).div_ceil(BINS as u128) as u64;
        let end = ((i as u128 + 1) * span as u128).div_ceil(BINS as u128) as u64;
        *w = end - start;
    }
    let n = draws.len() as f64;
    observed
        .iter()
        .zip(width)
        .map(|(&o, w)| {
            let e = n * w as f64 / span as f64;
            (o as f64 - e).powi(2) / e
        })
        .sum()
}

fn draws(b: &Backoff, attempt: u32, previous: Duration, seed: u64) -> Vec<u64> {
    let mut rng = SeededRandom::new(seed);
    (0..DRAWS)
        .map(|_| nanos(b.delay(attempt, previous, &mut rng)))
        .collect()
}

#[test]
fn full_jitter_is_uniform_from_zero_to_the_ceiling_at_every_attempt() {
    let b = backoff(Strategy::FullJitter);
    for attempt in 1..=10 {
        let ceiling = nanos(b.ceiling(attempt));
        let d = draws(&b, attempt, BASE, 100 + attempt as u64);
        let chi2 = chi_square_uniform(&d, 0, ceiling);
        assert!(chi2 < CHI2_CRITICAL_19, "attempt {attempt}: χ² = {chi2:.1}");
        assert!(d.iter().all(|&x| x <= nanos(CAP)));
    }
}

#[test]
fn equal_jitter_is_uniform_over_the_upper_half_at_every_attempt() {
    let b = backoff(Strategy::EqualJitter);
    for attempt in 1..=10 {
        let half = nanos(b.ceiling(attempt)) / 2;
        let d = draws(&b, attempt, BASE, 200 + attempt as u64);
        let chi2 = chi_square_uniform(&d, half, 2 * half);
        assert!(chi2 < CHI2_CRITICAL_19, "attempt {attempt}: χ² = {chi2:.1}");
        assert!(d.iter().all(|&x| x <= nanos(CAP)));
    }
}

#[test]
fn decorrelated_is_uniform_between_base_and_three_times_previous_below_the_cap() {
    let b = backoff(Strategy::Decorrelated);
    // Previous delays whose triple stays below the cap: a pure uniform draw. The attempt
    // number must not matter, so it varies too.
    for (i, previous_ms) in [5u64, 17, 100, 400, 666].into_iter().enumerate() {
        let previous = Duration::from_millis(previous_ms);
        let d = draws(&b, i as u32 + 1, previous, 300 + previous_ms);
        let chi2 = chi_square_uniform(&d, nanos(BASE), 3 * nanos(previous));
        assert!(
            chi2 < CHI2_CRITICAL_19,
            "previous {previous_ms} ms: χ² = {chi2:.1}"
        );
    }
}

#[test]
fn decorrelated_piles_the_excess_at_the_cap() {
    let b = backoff(Strategy::Decorrelated);
    let previous = Duration::from_millis(1_000); // draws from [5 ms, 3 s], capped at 2 s
    let d = draws(&b, 4, previous, 400);
    let (low, high) = (nanos(BASE), 3 * nanos(previous));
    let at_cap = d.iter().filter(|&&x| x == nanos(CAP)).count() as f64;
    let below: Vec<u64> = d.iter().copied().filter(|&x| x < nanos(CAP)).collect();
    // P(draw ≥ cap) = (high − cap + 1) / (high − low + 1).
    let p = (high - nanos(CAP) + 1) as f64 / (high - low + 1) as f64;
    let expected = p * DRAWS as f64;
    let sd = (DRAWS as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (at_cap - expected).abs() < 4.0 * sd,
        "{at_cap} at the cap, expected {expected:.0}"
    );
    // Below the cap, still uniform.
    let chi2 = chi_square_uniform(&below, low, nanos(CAP) - 1);
    assert!(chi2 < CHI2_CRITICAL_19, "χ² = {chi2:.1}");
}

#[test]
fn decorrelated_chains_stay_within_base_and_cap() {
    let b = backoff(Strategy::Decorrelated);
    let mut rng = SeededRandom::new(500);
    let mut previous = b.first_previous();
    let (mut lowest, mut highest) = (u64::MAX, 0);
    for attempt in 1..=DRAWS as u32 {
        let d = b.delay(attempt, previous, &mut rng);
        assert!(d >= BASE && d <= CAP, "{d:?}");
        lowest = lowest.min(nanos(d));
        highest = highest.max(nanos(d));
        previous = d;
    }
    // The chain explores the whole range, and the cap is reached often.
    assert!(lowest < nanos(BASE) + 1_000_000 && highest == nanos(CAP));
}

#[test]
fn exponential_and_none_are_exact() {
    let e = backoff(Strategy::Exponential);
    let mut rng = SeededRandom::new(600);
    for attempt in 1..=12 {
        let expected = (nanos(BASE) << attempt).min(nanos(CAP));
        for _ in 0..1_000 {
            assert_eq!(nanos(e.delay(attempt, BASE, &mut rng)), expected);
            assert_eq!(Backoff::NONE.delay(attempt, BASE, &mut rng), Duration::ZERO);
        }
    }
}

/// The test itself must fail a wrong distribution, or it proves nothing.
#[test]
fn the_chi_square_test_rejects_wrong_distributions() {
    let b = backoff(Strategy::FullJitter);
    let d = draws(&b, 3, BASE, 700);
    let ceiling = nanos(b.ceiling(3));
    // Claiming the support is twice as wide (the off-by-one-attempt bug)...
    assert!(chi_square_uniform(&d, 0, 2 * ceiling) > 1_000.0);
    // ...or squaring the draws (a skewed distribution) is rejected.
    let skewed: Vec<u64> = d
        .iter()
        .map(|&x| ((x as u128 * x as u128) / ceiling as u128) as u64)
        .collect();
    assert!(chi_square_uniform(&skewed, 0, ceiling) > 1_000.0);
}
