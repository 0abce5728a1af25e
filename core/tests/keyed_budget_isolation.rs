//! What per-key budgets buy (spec §9), measured on a manual clock: one hostile key whose every
//! attempt fails sends half the traffic; nine healthy keys, whose attempts fail 5% of the time,
//! send the other half (10 calls per second each). Each call makes up to three attempts,
//! retrying at once when the budget grants it, for a simulated minute. Under the shared budget
//! alone (Google SRE's 10%), the hostile key's retries take most of the allowance and the
//! healthy keys' transient failures go unretried; under [`KeyedBudget`] with the same shared
//! budget, each key spends only its own share and the healthy keys' failures are retried.
//!
//! `cargo test -p resilix --test keyed_budget_isolation -- --nocapture` prints the figures.
#![cfg(not(loom))]

use core::time::Duration;

use resilix::VerdictKind;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RatioBudget, RetryBudget};
use resilix::time::{Instant, ManualClock};

/// 180 calls per second: every other one is the hostile key's.
const CALL_GAP: Duration = Duration::from_nanos(1_000_000_000 / 180);
const CALLS: u32 = 180 * 60;
const HEALTHY_FAILURE_PERCENT: u64 = 5;

#[derive(Debug, Default)]
struct Tally {
    healthy_calls: u32,
    healthy_ok: u32,
    hostile_calls: u32,
    hostile_retries: u32,
    attempts: u32,
}

impl Tally {
    fn healthy_success(&self) -> f64 {
        f64::from(self.healthy_ok) / f64::from(self.healthy_calls)
    }

    fn load(&self) -> f64 {
        f64::from(self.attempts) / f64::from(self.healthy_calls + self.hostile_calls)
    }
}

/// Runs the minute with `budget(key)` as each call's budget (what `Retry` would hold).
fn run<Bu: RetryBudget>(budget: impl Fn(u64) -> Bu) -> Tally {
    let clock = ManualClock::new(Instant::from_secs(1));
    let mut rng = SeededRandom::new(2026);
    let mut tally = Tally::default();
    for i in 0..CALLS {
        let now = clock.advance(CALL_GAP);
        let key = if i % 2 == 0 {
            0
        } else {
            1 + u64::from(i / 2 % 9)
        };
        let b = budget(key);
        let mut attempt = 1;
        let ok = loop {
            tally.attempts += 1;
            let fails = key == 0 || rng.below(100) < HEALTHY_FAILURE_PERCENT;
            if attempt == 1 {
                b.record_first_attempt(now);
            }
            if !fails {
                let retried = (attempt > 1).then_some(VerdictKind::Transient);
                b.record_success(now, retried);
                break true;
            }
            if attempt == 3 {
                b.record_unretried_failure(now, VerdictKind::Transient);
                break false;
            }
            if !b.try_spend(now, VerdictKind::Transient) {
                break false;
            }
            if key == 0 {
                tally.hostile_retries += 1;
            }
            attempt += 1;
        };
        if key == 0 {
            tally.hostile_calls += 1;
        } else {
            tally.healthy_calls += 1;
            tally.healthy_ok += u32::from(ok);
        }
    }
    tally
}

#[test]
fn per_key_budgets_keep_the_healthy_keys_retries() {
    let alone = RatioBudget::with_defaults();
    let shared_only = run(|_| &alone);
    let shared = RatioBudget::with_defaults();
    let table: KeyedBudget<64, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    let keyed = run(|k| table.for_key(k));
    for (name, t) in [("shared only", &shared_only), ("keyed", &keyed)] {
        println!(
            "{name:>11}: healthy success {:.2}% ({} of {}), hostile retries {} for {} calls, \
             load {:.3} attempts per call",
            100.0 * t.healthy_success(),
            t.healthy_ok,
            t.healthy_calls,
            t.hostile_retries,
            t.hostile_calls,
            t.load()
        );
    }
    // Without retries the healthy keys would succeed 95% of the time; alone, the shared
    // budget leaves them barely more; per key, nearly every failure is retried.
    assert!(shared_only.healthy_success() < 0.97, "{shared_only:?}");
    assert!(keyed.healthy_success() > 0.995, "{keyed:?}");
    // The hostile key gets about its own 10% (plus its floor of one per window), not the
    // whole allowance; the upstream's load is no higher than under the shared budget alone.
    let hostile_share = f64::from(keyed.hostile_retries) / f64::from(keyed.hostile_calls);
    assert!(hostile_share <= 0.11, "{keyed:?}");
    let retries = |t: &Tally| t.attempts - t.healthy_calls - t.hostile_calls;
    assert!(
        f64::from(shared_only.hostile_retries) >= 0.9 * f64::from(retries(&shared_only)),
        "alone, the hostile key takes nearly every retry: {shared_only:?}"
    );
    assert!(
        retries(&keyed) - keyed.hostile_retries
            > 4 * (retries(&shared_only) - shared_only.hostile_retries),
        "per key, the healthy keys get their retries: {keyed:?} {shared_only:?}"
    );
    assert!(
        keyed.load() <= shared_only.load(),
        "{keyed:?} {shared_only:?}"
    );
    assert!(keyed.load() <= 1.1 + 0.01, "the SRE bound holds: {keyed:?}");
}
