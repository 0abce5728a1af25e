//! Many threads admit and release on one bulkhead while another keeps changing its cap:
//! no admission ever holds more than the cap it was admitted under, every admission that
//! happens after the last change obeys the last cap, and every slot comes back.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use resilix::bulkhead::{Bulkhead, BulkheadConfig, ReleaseHook};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;

#[derive(Default)]
struct Hook {
    releases: AtomicU32,
    added: AtomicU64,
}
impl ReleaseHook for Hook {
    fn on_release(&self) {
        self.releases.fetch_add(1, Ordering::Relaxed);
    }
    fn on_slots_added(&self, n: u32) {
        self.added.fetch_add(u64::from(n), Ordering::Relaxed);
    }
}

#[test]
fn four_threads_under_a_moving_cap_never_pass_it() {
    const CAPS: [u32; 4] = [2, 6, 1, 4];
    const FINAL: u32 = 2;
    // After the last change, each admitter goes on this many rounds.
    const ROUNDS: u32 = 20_000;
    let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(4).unwrap(), Hook::default());
    let settled = AtomicBool::new(false);
    let admitted = AtomicU64::new(0);
    let late = AtomicU64::new(0);
    let raised = AtomicU64::new(0);
    let start = std::sync::Barrier::new(5);
    std::thread::scope(|scope| {
        let (bulkhead, settled, raised, start) = (&bulkhead, &settled, &raised, &start);
        scope.spawn(move || {
            start.wait();
            let mut rng = SeededRandom::new(99);
            let mut env = Env::new(Instant::ZERO, &mut rng);
            let mut cap = 4;
            for i in 0..20_000usize {
                let next = CAPS[i % CAPS.len()];
                raised.fetch_add(u64::from(next.saturating_sub(cap)), Ordering::Relaxed);
                bulkhead.reconfigure(BulkheadConfig::new(next).unwrap(), &mut env);
                cap = next;
                std::hint::spin_loop();
            }
            raised.fetch_add(u64::from(FINAL.saturating_sub(cap)), Ordering::Relaxed);
            bulkhead.reconfigure(BulkheadConfig::new(FINAL).unwrap(), &mut env);
            settled.store(true, Ordering::Release);
        });
        for _ in 0..4 {
            let (admitted, late) = (&admitted, &late);
            scope.spawn(move || {
                start.wait();
                let mut rounds_after = 0;
                while rounds_after < ROUNDS {
                    // Read before the attempt: if set, the attempt happens after the last change.
                    let after_last = settled.load(Ordering::Acquire);
                    rounds_after += u32::from(after_last);
                    let Ok(permit) = bulkhead.try_admit() else {
                        continue;
                    };
                    let held = permit.held_at_admission();
                    assert!(held <= 6, "{held} held, above every cap ever set");
                    if after_last {
                        assert!(held <= FINAL, "{held} held after the cap went to {FINAL}");
                        late.fetch_add(1, Ordering::Relaxed);
                    }
                    admitted.fetch_add(1, Ordering::Relaxed);
                    std::hint::spin_loop();
                    drop(permit);
                }
            });
        }
    });
    let admitted = admitted.load(Ordering::Relaxed);
    assert_eq!(bulkhead.held(), 0, "every slot came back");
    assert_eq!(bulkhead.max_concurrent(), FINAL);
    assert_eq!(
        u64::from(bulkhead.hook().releases.load(Ordering::Relaxed)),
        admitted,
        "one release per admission: a reconfiguration never releases"
    );
    assert_eq!(
        bulkhead.hook().added.load(Ordering::Relaxed),
        raised.load(Ordering::Relaxed),
        "every raise reached the hook with the slots it added"
    );
    eprintln!(
        "admitted {admitted}, {} after the last change",
        late.load(Ordering::Relaxed)
    );
}
