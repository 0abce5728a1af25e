//! Loom model: two threads race to admit under a limit of one while a window closes; neither
//! ever sees two calls in flight, and every slot comes back.
#![cfg(loom)]

#[path = "support/loom_limiter.rs"]
mod loom_limiter;

use core::time::Duration;

use resilix::Verdict;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

use loom_limiter::{bounded, call_across_a_close, closing_at_every_settle};

#[test]
fn admission_is_exact_under_a_racing_window_close() {
    bounded(|| {
        let limiter = loom::sync::Arc::new(Limiter::new(closing_at_every_settle(2)).unwrap());
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let limiter = limiter.clone();
                loom::thread::spawn(move || {
                    call_across_a_close(&limiter, t, |p| {
                        assert!(p.in_flight_at_admission() <= p.limit_at_admission());
                    });
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(limiter.in_flight(), 0);
        assert!((1..=2).contains(&limiter.limit()));
    });
}

/// The wait protocol's hook for the model: wakes the registered waiter, if any.
struct Wake {
    registered: loom::sync::atomic::AtomicBool,
    woken: loom::sync::atomic::AtomicBool,
}

impl resilix::release::ReleaseHook for Wake {
    fn on_release(&self) {
        use loom::sync::atomic::Ordering;
        if self.registered.load(Ordering::Acquire) {
            self.woken.store(true, Ordering::Release);
        }
    }
}

#[test]
fn a_release_racing_the_waiters_re_check_never_loses_the_wake_up() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    use resilix::limiter::Admission;

    // A holder takes the one in-flight slot and gives it back (a cancelled call: the shortest
    // release path) while a waiter reads the release count, finds no slot, takes a queue-zone
    // place, registers and re-checks the count (the protocol in `resilix::release`). Under
    // every interleaving the waiter is admitted, or sees the count move (and retries), or
    // sleeps registered and the release hook finds it. Never: asleep and not woken.
    bounded(|| {
        let config = LimiterConfig {
            initial_limit: 1,
            min_limit: 1,
            queue_factor: 2.0,
            queue_rungs: 1,
            ..LimiterConfig::gradient2()
        };
        let hook = Wake {
            registered: AtomicBool::new(false),
            woken: AtomicBool::new(false),
        };
        let limiter = loom::sync::Arc::new(Limiter::with_hook(config, hook).unwrap());
        let l2 = limiter.clone();
        let holder = loom::thread::spawn(move || {
            let mut rng = SeededRandom::new(2);
            let mut env = Env::new(Instant::from_secs(1), &mut rng);
            // Admitted, or (when the waiter won the slot) a place or a refusal: all dropped.
            drop(l2.admit_or_queue(&mut env));
        });

        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(1), &mut rng);
        let seen = limiter.releases(); // step 1: before trying
        let slept = match limiter.admit_or_queue(&mut env) {
            Admission::Admitted(permit) => {
                drop(permit);
                false
            }
            Admission::Refused(_) => false,
            Admission::Wait(place) => {
                // Step 3 with a plain release store: the protocol needs no SeqCst.
                limiter.hook().registered.store(true, Ordering::Release);
                if limiter.released_since(seen) {
                    // Step 4 saw the release: retry instead of sleeping.
                    drop(place.try_admit(&mut env));
                    false
                } else {
                    drop(place);
                    true
                }
            }
        };
        holder.join().unwrap();
        if slept {
            assert!(
                limiter.hook().woken.load(Ordering::Acquire),
                "the waiter slept and no release woke it"
            );
        }
        assert_eq!((limiter.in_flight(), limiter.waiting()), (0, 0));
    });
}

#[test]
fn racing_settles_after_a_whole_circle_idle_close_the_window_exactly_once() {
    // The window opened at 2 s; the next settles come one circle of its 4 ns tick word later
    // (2^34 ns) plus 1 ms, from two threads at once. Read modulo 2^32 the window would look
    // 1 ms old and stay open; widened with its era it is 17.18 s old. Under every
    // interleaving exactly one settle wins the `closing` flag and closes it (AIMD: +1 call),
    // and the loser sees the reopened window (era and word from the winner) as young.
    bounded(|| {
        let limiter = loom::sync::Arc::new(Limiter::new(closing_at_every_settle(10)).unwrap());
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(2), &mut rng);
        let first = limiter.admit(&mut env).unwrap();
        first.settle(&Verdict::Success, &mut env); // closes the window opened at 0: limit 2
        assert_eq!(limiter.limit(), 2);
        let late = Instant::from_nanos(2_000_000_000 + (1 << 34) + 1_000_000);
        // Each thread admits 1 ms before `late` and settles at `late`.
        let call = move |limiter: &Limiter, seed: u64| {
            let mut rng = SeededRandom::new(seed);
            let mut env = Env::new(late - Duration::from_millis(1), &mut rng);
            let p = limiter.admit(&mut env).unwrap();
            env.now = late;
            p.settle(&Verdict::Success, &mut env);
        };
        let l2 = limiter.clone();
        let other = loom::thread::spawn(move || call(&l2, 2));
        call(&limiter, 3);
        other.join().unwrap();
        assert_eq!(limiter.limit(), 3, "closed exactly once");
        assert_eq!(limiter.in_flight(), 0);
    });
}
