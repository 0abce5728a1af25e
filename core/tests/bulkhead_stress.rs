//! Many threads hammer one bulkhead: nobody is ever inside beyond the cap, and every slot
//! comes back.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use resilix::Verdict;
use resilix::bulkhead::{Bulkhead, BulkheadConfig, ReleaseHook};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

#[derive(Default)]
struct CountReleases(AtomicU32);
impl ReleaseHook for CountReleases {
    fn on_release(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn four_threads_never_one_over_the_cap() {
    const CAP: u32 = 3;
    const ROUNDS: u32 = 200_000;
    let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(CAP).unwrap(), CountReleases::default());
    // Counted by the callers themselves, independently of the bulkhead's own counter: incremented
    // after admission, decremented before the permit goes back.
    let inside = AtomicU32::new(0);
    let peak = AtomicU32::new(0);
    let admitted = AtomicU64::new(0);
    let refused = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (bulkhead, inside, peak, admitted, refused) =
                (&bulkhead, &inside, &peak, &admitted, &refused);
            scope.spawn(move || {
                let mut rng = SeededRandom::new(t);
                for i in 0..ROUNDS {
                    let mut env = Env::new(Instant::from_nanos(u64::from(i)), &mut rng);
                    // Mix both admission paths and both ways of giving back.
                    let permit = if i % 2 == 0 {
                        bulkhead.admit(&mut env).ok()
                    } else {
                        bulkhead.try_admit().ok()
                    };
                    let Some(permit) = permit else {
                        refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    admitted.fetch_add(1, Ordering::Relaxed);
                    let now_inside = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now_inside <= CAP, "{now_inside} inside a bulkhead of {CAP}");
                    peak.fetch_max(now_inside, Ordering::Relaxed);
                    assert!(bulkhead.held() <= CAP);
                    std::hint::spin_loop();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    if i % 3 == 0 {
                        drop(permit);
                    } else {
                        permit.settle(&Verdict::Success, &mut env);
                    }
                }
            });
        }
    });
    let admitted = admitted.load(Ordering::Relaxed);
    assert_eq!(bulkhead.held(), 0, "every slot came back");
    assert_eq!(
        u64::from(bulkhead.hook().0.load(Ordering::Relaxed)),
        admitted,
        "one release hook call per admitted permit"
    );
    assert_eq!(u64::from(bulkhead.releases()), admitted);
    assert_eq!(
        admitted + refused.load(Ordering::Relaxed),
        4 * u64::from(ROUNDS)
    );
    assert!(peak.load(Ordering::Relaxed) >= 1);
    eprintln!(
        "admitted {admitted}, refused {}, peak inside {}",
        refused.load(Ordering::Relaxed),
        peak.load(Ordering::Relaxed)
    );
}
