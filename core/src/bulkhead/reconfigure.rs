//! Changing a running bulkhead's cap.
//!
//! The cap is one word, so the change is one atomic swap: an admission racing it uses the old
//! cap or the new one, and every admission that happens after it uses the new one. What is in
//! flight is a fact and is kept: the held count is never touched.
//!
//! * **Lowered** below what is held: nobody is admitted until enough permits come back to
//!   bring the count under the new cap (admission compares the held count with the cap in
//!   force, so a count above it simply refuses). Nothing is revoked: a permit taken under the
//!   old cap settles and drops as usual.
//! * **Raised**: the new slots are free at once, and the raise is a wake-up path exactly like
//!   a release. After the swap it bumps the release count once and calls the hook's
//!   [`on_slots_added`](crate::release::ReleaseHook::on_slots_added), so no waiter stays asleep
//!   behind a slot the raise freed. Why nothing is lost, in both halves of the protocol:
//!   a waiter that read the release count before the bump (`Acquire`) and then found the
//!   bulkhead full under the old cap sees the bump in its step 4, or the bump (a
//!   read-modify-write on the same count) sees the waiter's registration and the hook finds
//!   it; a waiter whose count read saw the bump synchronises with it and reads the new cap.
//!   Under [`crate::waiters`]' lock, the swap comes before the hook takes the lock, so a join
//!   that misses the new slots is followed by the hook's wake-ups.
//!
//! Two reconfigurations may race (no flag is needed): each wakes for the rise it saw from the
//! cap it replaced, and the rises seen add up to at least the net rise, so a race wakes too
//! many (a woken waiter that finds no room queues again at its place) but never too few.

use super::{Bulkhead, BulkheadConfig};
use crate::control::emit_reconfigured;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::release::ReleaseHook;
use crate::sync::Ordering;

impl<H: ReleaseHook> Bulkhead<H> {
    /// Puts `config`'s cap in force at once, keeping every permit in flight, and emits
    /// [`Event::PolicyReconfigured`]. See the rules above: a lowered cap admits nobody until
    /// the calls in flight drain below it; a raised one wakes up to as many waiters as it
    /// added slots.
    ///
    /// It cannot fail: a [`BulkheadConfig`] is valid by construction, and the change is one
    /// swap that never waits for anything (so, unlike the rate limiter's, it is never busy).
    ///
    /// ```
    /// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let b = Bulkhead::new(BulkheadConfig::new(3).unwrap());
    /// let held: Vec<_> = (0..3).map(|_| b.try_admit().unwrap()).collect();
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    ///
    /// b.reconfigure(BulkheadConfig::new(1).unwrap(), &mut env);
    /// assert_eq!((b.max_concurrent(), b.held()), (1, 3), "in-flight calls are kept");
    /// drop(held); // they drain as usual
    /// assert!(b.try_admit().is_ok(), "and the new cap admits again once below it");
    /// ```
    ///
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: BulkheadConfig,
        env: &mut Env<'_, R, O>,
    ) {
        let cap = config.max_concurrent();
        // Release: a waiter that synchronises with the bump below reads this cap.
        let old = self.max_concurrent.swap(cap, Ordering::AcqRel);
        if cap > old {
            self.released.notify_added(cap - old);
        }
        emit_reconfigured(PolicyKind::Bulkhead, env);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;
    use crate::observe::Event;
    use crate::permit::{Permit, Policy};
    use crate::random::SeededRandom;
    use crate::time::Instant;
    use crate::verdict::Verdict;
    use core::cell::{Cell, RefCell};

    fn cap(n: u32) -> BulkheadConfig {
        BulkheadConfig::new(n).unwrap()
    }

    struct Log(RefCell<Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }

    struct Added(Cell<u32>, Cell<u32>);
    impl ReleaseHook for Added {
        fn on_release(&self) {
            self.0.set(self.0.get() + 1);
        }
        fn on_slots_added(&self, n: u32) {
            self.1.set(self.1.get() + n);
        }
    }

    fn reconfigure<H: ReleaseHook>(b: &Bulkhead<H>, n: u32) -> Vec<Event> {
        let log = Log(RefCell::new(Vec::new()));
        let mut rng = SeededRandom::new(1);
        let mut env = Env::new(Instant::from_secs(7), &mut rng).with_observer(&log);
        b.reconfigure(cap(n), &mut env);
        log.0.into_inner()
    }

    #[test]
    fn a_reconfiguration_is_an_event() {
        let b = Bulkhead::new(cap(2));
        assert_eq!(
            reconfigure(&b, 4),
            [Event::PolicyReconfigured {
                policy: PolicyKind::Bulkhead,
                at: Instant::from_secs(7)
            }]
        );
        assert_eq!(b.max_concurrent(), 4);
    }

    #[test]
    fn a_cap_lowered_below_the_in_flight_count_admits_nobody_until_it_drains() {
        let b = Bulkhead::new(cap(4));
        let mut held: Vec<_> = (0..4).map(|_| b.try_admit().unwrap()).collect();
        reconfigure(&b, 2);
        assert_eq!((b.held(), b.available()), (4, 0));
        for expected_held in [4, 3] {
            let full = b.try_admit().unwrap_err();
            assert_eq!(
                full.held(),
                expected_held,
                "refused while at or above the cap"
            );
            drop(held.pop());
        }
        // Two in flight, cap two: still full; one more back, and one is admitted.
        assert!(b.try_admit().is_err());
        drop(held.pop());
        let p = b.try_admit().unwrap();
        assert_eq!(p.held_at_admission(), 2);
        assert!(b.try_admit().is_err(), "the new cap holds exactly");
    }

    #[test]
    fn permits_taken_under_the_old_cap_settle_normally() {
        let b = Bulkhead::new(cap(3));
        let mut rng = SeededRandom::new(2);
        let mut env = Env::new(Instant::ZERO, &mut rng);
        let a = b.admit(&mut env).unwrap();
        let c = b.admit(&mut env).unwrap();
        b.reconfigure(cap(1), &mut env);
        a.settle(&Verdict::Success, &mut env);
        drop(c);
        assert_eq!((b.held(), b.releases()), (0, 2));
    }

    #[test]
    fn a_raise_frees_its_slots_at_once_and_is_a_wake_up() {
        let b = Bulkhead::with_hook(cap(1), Added(Cell::new(0), Cell::new(0)));
        let _p = b.try_admit().unwrap();
        let full = b.try_admit().unwrap_err();
        reconfigure(&b, 3);
        assert!(b.released_since(&full), "step 4 of a waiter sees the raise");
        assert_eq!(
            (b.hook().0.get(), b.hook().1.get()),
            (0, 2),
            "two slots added"
        );
        assert_eq!(b.available(), 2);
        let _q = b.try_admit().unwrap();
        let _r = b.try_admit().unwrap();
        assert!(b.try_admit().is_err());
    }

    #[test]
    fn a_lowering_or_an_equal_cap_wakes_nobody() {
        let b = Bulkhead::with_hook(cap(3), Added(Cell::new(0), Cell::new(0)));
        let before = b.releases();
        reconfigure(&b, 3);
        reconfigure(&b, 1);
        assert_eq!((b.releases(), b.hook().1.get()), (before, 0));
    }

    /// The raise seen by each of a sequence of swaps adds up to at least the net raise, which
    /// is why racing reconfigurations need no flag.
    #[test]
    fn interleaved_changes_wake_at_least_the_net_raise() {
        let b = Bulkhead::with_hook(cap(5), Added(Cell::new(0), Cell::new(0)));
        for n in [10, 7, 2, 8] {
            reconfigure(&b, n);
        }
        assert_eq!(b.max_concurrent(), 8);
        assert_eq!(b.hook().1.get(), 5 + 6, "5→10, then 2→8");
    }
}
