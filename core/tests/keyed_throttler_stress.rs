//! Many threads, one small keyed throttler, many keys, placing, counting and evicting at once,
//! with time standing still: a key with a call in flight stays placed; an entry that counted
//! anything is never evicted (so no count is lost: the entries' and the overflow's requests
//! and accepts add up exactly to the counted settles); entries whose calls were only cancelled
//! or refused further in are idle and go.
#![cfg(not(loom))]

#[path = "support/alongside.rs"]
mod alongside;
#[path = "support/churn.rs"]
mod churn;

use std::sync::atomic::{AtomicU64, Ordering};

use resilix::RejectReason;
use resilix::permit::{Env, Permit};
use resilix::random::Random;
use resilix::throttler::{KeyedThrottler, LocalRejections, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use churn::Churn;

const ROUNDS: u32 = 30_000;
const KEYS: u64 = 24;
/// Keys whose calls are only ever cancelled or refused inward: they never count anything.
const QUIET: u64 = 20;

#[test]
fn no_live_entry_is_evicted_and_no_count_is_lost() {
    // Its own refusals are not counted (a shed call is then in no books at all).
    let config = ThrottlerConfig {
        local_rejections: LocalRejections::Ignore,
        ..ThrottlerConfig::DEFAULT
    };
    let table: KeyedThrottler<8, 4> = KeyedThrottler::with_buckets(config).unwrap();
    let now = Instant::from_secs(5);
    let (requests, accepts) = (AtomicU64::new(0), AtomicU64::new(0));
    let churn = Churn::default();
    churn.evicting(
        ROUNDS,
        || table.evict_idle(now),
        |rng| {
            // Quiet keys most of the time, so the table churns.
            let key = if rng.below(4) == 0 {
                QUIET + rng.below(KEYS - QUIET)
            } else {
                rng.below(QUIET)
            };
            let mut env = Env::new(now, rng);
            let Ok(p) = table.admit(key, &mut env) else {
                return;
            };
            churn.admitted(key, p.is_overflow(), |k| table.placed(k));
            if key < QUIET {
                if env.rng.below(2) == 0 {
                    drop(p);
                } else {
                    let inward = Verdict::Rejected(RejectReason::BulkheadFull);
                    p.settle(&inward, &mut env);
                }
            } else {
                let accepted = env.rng.below(2) == 0;
                let v = if accepted {
                    Verdict::Success
                } else {
                    Verdict::Transient
                };
                p.settle(&v, &mut env);
                requests.fetch_add(1, Ordering::Relaxed);
                accepts.fetch_add(u64::from(accepted), Ordering::Relaxed);
            }
        },
    );
    churn.assert_churned();
    let (r, a) = table.overflow().counts(now);
    let (mut r, mut a) = (u64::from(r), u64::from(a));
    for key in 0..KEYS {
        if let Some((kr, ka)) = table.counts(key, now) {
            assert!(
                key >= QUIET || (kr, ka) == (0, 0),
                "quiet key {key} counted"
            );
            r += u64::from(kr);
            a += u64::from(ka);
        }
    }
    assert_eq!(
        (r, a),
        (
            requests.load(Ordering::Relaxed),
            accepts.load(Ordering::Relaxed)
        ),
        "counts lost or doubled"
    );
    // Every call has ended: the quiet keys' entries are idle and go, the others stay.
    table.evict_idle(now);
    assert!((0..QUIET).all(|k| !table.placed(k)));
}
