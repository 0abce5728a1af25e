//! An exact counter of held slots under a cap: the one mechanism behind the bulkhead, the
//! limiter's in-flight count and the breaker's half-open probes.
//!
//! `try_acquire` is a compare-and-swap loop, so the cap holds exactly under any concurrency:
//! no interleaving of acquires ever lets the count pass the cap in force at the time of the
//! swap. The cap is an argument, not a field, so a policy whose cap moves (the adaptive
//! limiter) uses the same counter.

use crate::sync::{AtomicU32, Ordering};

/// A count of held slots.
#[derive(Debug)]
pub(crate) struct Slots {
    held: AtomicU32,
}

#[allow(dead_code)] // each policy uses the part it needs
impl Slots {
    crate::sync::const_fn_unless_loom! {
        /// No slot held.
        pub(crate) fn new() -> Self {
            Slots { held: AtomicU32::new(0) }
        }
    }

    /// Takes one slot if fewer than `cap` are held. `Ok` carries the count including this one;
    /// `Err` the count that was full.
    #[inline]
    pub(crate) fn try_acquire(&self, cap: u32) -> Result<u32, u32> {
        let mut held = self.held.load(Ordering::Relaxed);
        loop {
            if held >= cap {
                return Err(held);
            }
            // AcqRel: the slot is a hand-off point between the releasing and acquiring call.
            match self.held.compare_exchange_weak(
                held,
                held + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(held + 1),
                Err(actual) => held = actual,
            }
        }
    }

    /// Gives one slot back. Never leaves the count wrapped below zero, so a logic error
    /// elsewhere can never lock the policy shut with a count of four billion.
    pub(crate) fn release(&self) {
        // One locked subtract, not a compare-and-swap loop that retries under contention. A
        // release with nothing held (a logic error elsewhere) would wrap: it is undone at once,
        // and until then acquires see a full counter and refuse, which errs on the safe side.
        if self.held.fetch_sub(1, Ordering::AcqRel) == 0 {
            self.held.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// How many slots are held now (a snapshot).
    pub(crate) fn held(&self) -> u32 {
        self.held.load(Ordering::Acquire)
    }

    /// Forgets every held slot (used when a policy resets a state whose holders are ignored
    /// through an epoch check).
    pub(crate) fn clear(&self) {
        self.held.store(0, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn cap_edges() {
        let s = Slots::new();
        assert_eq!(s.try_acquire(0), Err(0), "a cap of zero admits nothing");
        assert_eq!(s.try_acquire(1), Ok(1));
        assert_eq!(s.try_acquire(1), Err(1));
        s.release();
        assert_eq!(s.held(), 0);
        s.release();
        assert_eq!(s.held(), 0, "release saturates at zero");
        assert_eq!(s.try_acquire(u32::MAX), Ok(1));
    }

    #[test]
    fn clear_forgets_every_held_slot() {
        let s = Slots::new();
        assert_eq!(s.try_acquire(2), Ok(1));
        assert_eq!(s.try_acquire(2), Ok(2));
        assert_eq!(s.try_acquire(2), Err(2));
        s.clear();
        assert_eq!(s.held(), 0);
        assert_eq!(
            s.try_acquire(2),
            Ok(1),
            "a cleared counter admits again at once"
        );
    }

    #[test]
    fn many_threads_never_exceed_the_cap() {
        use std::sync::atomic::{AtomicU32 as StdU32, Ordering as O};
        let s = Slots::new();
        let peak = StdU32::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..20_000 {
                        if let Ok(n) = s.try_acquire(3) {
                            peak.fetch_max(n, O::Relaxed);
                            assert!(s.held() <= 3);
                            s.release();
                        }
                    }
                });
            }
        });
        assert!(peak.load(O::Relaxed) <= 3);
        assert_eq!(s.held(), 0, "every acquire was released");
    }
}
