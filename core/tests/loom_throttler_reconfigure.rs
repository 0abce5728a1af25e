//! Model-checks `Throttler::reconfigure` (K and the cap in one settings block, read once per
//! decision) against the threads that decide and count.
//!
//! What must hold in every interleaving: a decision racing a change uses K and the cap of one
//! config, never K of one and the cap of the other; of two reconfigurations racing, each
//! either applies or is refused `Busy`, at least one applies, and what is in force is one that
//! applied; a call admitted before a change settles into the same window.
//!
//! The window holds 10 requests and 1 accept. Config A (K = 1, cap 0.5) sheds with
//! probability 0.5 (capped from 9/11); config B (K = 5000, cap 0.95) sheds nothing
//! (5000 × 1 ≥ 10). K of A with the cap of B would read 9/11: a torn pair. (K of B with the
//! cap of A reads 0, like B: that direction is the settings block's own model,
//! `loom_settings`.)
//!
//! One bucket: a decision reads every bucket of the window, and loom counts each load.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_throttler_reconfigure`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;

use resilix::Verdict;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{Probability, Throttler, ThrottlerConfig, ThrottlerReconfigureError};
use resilix::time::Instant;

/// Every interleaving with up to three preemptions (as `loom_settings`).
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    // The setup's ten calls are single-threaded steps, but loom counts them too.
    builder.max_branches = 10_000;
    builder.check(f);
}

const NOW: Instant = Instant::from_secs(1);

fn config(k: f64, cap: f64) -> ThrottlerConfig {
    ThrottlerConfig {
        accepts_multiplier: k,
        max_rejection_rate: cap,
        min_requests: 0,
        ..ThrottlerConfig::DEFAULT
    }
}

fn a() -> ThrottlerConfig {
    config(1.0, 0.5)
}

fn b() -> ThrottlerConfig {
    config(5_000.0, 0.95)
}

/// A throttler under `a()` whose window holds 10 requests, 1 of them accepted (counted under
/// a dry run, which sheds nothing, then switched to `a()`).
fn loaded() -> Throttler<1> {
    let t = Throttler::<1>::with_buckets(config(1.0, 0.0)).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(NOW, &mut rng);
    for i in 0..10 {
        let verdict = if i == 0 {
            Verdict::Success
        } else {
            Verdict::Transient
        };
        t.admit(&mut env).unwrap().settle(&verdict, &mut env);
    }
    t.reconfigure(a(), &mut env).unwrap();
    t
}

fn reconfigure(t: &Throttler<1>, c: ThrottlerConfig) -> Result<(), ThrottlerReconfigureError> {
    let mut rng = SeededRandom::new(2);
    t.reconfigure(c, &mut Env::new(NOW, &mut rng))
}

#[test]
fn a_decision_racing_a_change_pairs_k_and_the_cap_of_one_config() {
    model(|| {
        let t = Arc::new(loaded());
        let reader = {
            let t = t.clone();
            thread::spawn(move || t.rejection_probability(NOW))
        };
        reconfigure(&t, b()).unwrap();
        let p = reader.join().unwrap();
        assert!(
            p == Probability::new(1, 2) || p.is_zero(),
            "a torn pair: {p:?}"
        );
        assert!(t.rejection_probability(NOW).is_zero(), "B in force after");
    });
}

#[test]
fn two_racing_reconfigurations_apply_or_are_refused_busy() {
    model(|| {
        let t = Arc::new(loaded());
        let other = {
            let t = t.clone();
            thread::spawn(move || reconfigure(&t, b()))
        };
        let mine = reconfigure(&t, config(1.0, 0.25));
        let theirs = other.join().unwrap();
        for r in [mine, theirs] {
            assert!(
                matches!(r, Ok(()) | Err(ThrottlerReconfigureError::Busy)),
                "{r:?}"
            );
        }
        assert!(mine.is_ok() || theirs.is_ok(), "both refused");
        let p = t.rejection_probability(NOW);
        let mine_in_force = p == Probability::new(1, 4);
        let theirs_in_force = p.is_zero();
        assert!(
            (mine_in_force && mine.is_ok()) || (theirs_in_force && theirs.is_ok()),
            "in force {p:?}, results {mine:?} {theirs:?}"
        );
    });
}

#[test]
fn a_call_admitted_before_a_change_settles_into_the_same_window() {
    model(|| {
        let t = Arc::new(Throttler::<1>::with_buckets(config(2.0, 0.9)).unwrap());
        let settler = {
            let t = t.clone();
            thread::spawn(move || {
                let mut rng = SeededRandom::new(3);
                let mut env = Env::new(NOW, &mut rng);
                let permit = t.admit(&mut env).unwrap();
                permit.settle(&Verdict::Success, &mut env);
            })
        };
        reconfigure(&t, a()).unwrap();
        settler.join().unwrap();
        assert_eq!(t.counts(NOW), (1, 1));
    });
}
