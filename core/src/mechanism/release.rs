//! The release signal: how a policy that hands out slots tells an adapter's waiters that one
//! came back. One mechanism, used by the bulkhead (its slots) and the adaptive limiter (its
//! in-flight slots, for callers waiting in the queue zone).
//!
//! The core never waits (that needs a list of waiters and a way to wake them); it offers a
//! signal and the adapter owns the wait. The signal is an event count (a wrapping `u32` bumped
//! after every release) and a [`ReleaseHook`] called right after the bump. The protocol that
//! uses them is in [`crate::bulkhead`]'s module docs; it is the same for every policy that
//! embeds a [`ReleaseSignal`]. Why it loses no wake-up:
//! docs/design/bulkhead.md#the-wait-protocol-why-it-holds
//!
//! ```
//! use resilix::release::{ReleaseHook, ReleaseSignal};
//!
//! let signal = ReleaseSignal::new(());
//! let seen = signal.count();
//! assert!(!signal.released_since(seen));
//! signal.notify(); // a slot came back
//! assert!(signal.released_since(seen));
//! ```

use crate::sync::{AtomicU32, Ordering};

/// Called after every slot release: the wake-up half of the wait protocol (see the
/// [`crate::bulkhead`] module docs).
///
/// It runs on the releasing thread or interrupt, inside `settle` or `drop`, so it must be short
/// and must not block: take the adapter's queue lock, pick a waiter, wake it. It must not call
/// back into the same policy's `admit`.
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig, ReleaseHook};
///
/// struct CountReleases(AtomicU32);
/// impl ReleaseHook for CountReleases {
///     fn on_release(&self) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let b = Bulkhead::with_hook(BulkheadConfig::DEFAULT, CountReleases(AtomicU32::new(0)));
/// drop(b.try_admit().unwrap());
/// assert_eq!(b.hook().0.load(Ordering::Relaxed), 1);
/// ```
pub trait ReleaseHook {
    /// One slot was given back; the release count already counts it.
    fn on_release(&self);

    /// `n` slots were added at once (a bulkhead's cap raised by `reconfigure`); the release
    /// count already counts the raise. A raise is a wake-up path like a release: up to `n`
    /// waiters may now be admitted. The default calls [`on_release`](Self::on_release) `n`
    /// times; a hook that can wake several waiters in one step, or knows how many wait
    /// (as [`crate::waiters::SlotWaiters`] does), should override it.
    fn on_slots_added(&self, n: u32) {
        for _ in 0..n {
            self.on_release();
        }
    }
}

/// No hook: nothing is called and nothing is paid.
impl ReleaseHook for () {
    #[inline(always)]
    fn on_release(&self) {}
    #[inline(always)]
    fn on_slots_added(&self, _: u32) {}
}

impl<H: ReleaseHook + ?Sized> ReleaseHook for &H {
    #[inline(always)]
    fn on_release(&self) {
        (**self).on_release()
    }
    fn on_slots_added(&self, n: u32) {
        (**self).on_slots_added(n)
    }
}

/// The release count and the hook called after each bump, kept together so no policy can
/// bump without calling the hook or call it before bumping.
#[derive(Debug)]
pub struct ReleaseSignal<H = ()> {
    // Wraps: a waiter compares two reads a few instructions apart, and 2^32 releases cannot
    // happen in between. Never SeqCst: the protocol's ordering comes from read-modify-writes
    // on this one word.
    releases: AtomicU32,
    hook: H,
}

impl<H> ReleaseSignal<H> {
    crate::sync::const_fn_unless_loom! {
        /// No release yet; `hook` is called after each one.
        pub fn new(hook: H) -> Self {
            ReleaseSignal { releases: AtomicU32::new(0), hook }
        }
    }

    /// How many releases so far, wrapping at `u32::MAX`: read it *before* trying to take a
    /// slot, so a release the attempt missed shows in [`Self::released_since`].
    pub fn count(&self) -> u32 {
        self.releases.load(Ordering::Acquire)
    }

    /// Whether any release happened since `seen` was read.
    ///
    /// A read-modify-write (adding zero), not a load, so it is ordered with every release's
    /// bump: if it says no, the next release's hook call sees everything this thread did
    /// before calling it. Only for the waiting path; it writes to a shared line.
    pub fn released_since(&self, seen: u32) -> bool {
        self.releases.fetch_add(0, Ordering::AcqRel) != seen
    }

    /// The hook, so an adapter can reach the waiters it keeps there.
    pub const fn hook(&self) -> &H {
        &self.hook
    }
}

impl<H: ReleaseHook> ReleaseSignal<H> {
    /// A slot was given back (call it after the slot is free): bump, then call the hook.
    pub fn notify(&self) {
        self.releases.fetch_add(1, Ordering::AcqRel);
        self.hook.on_release();
    }

    /// `n ≥ 1` slots were added at once (call it after the new cap is stored): one bump, then
    /// [`ReleaseHook::on_slots_added`]. One bump is enough for the protocol: a waiter only
    /// asks whether the count moved, and the bump orders the raise with its step 4 exactly as
    /// a release's does.
    pub fn notify_added(&self, n: u32) {
        self.releases.fetch_add(1, Ordering::AcqRel);
        self.hook.on_slots_added(n);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use core::cell::Cell;

    struct Count<'a>(&'a Cell<u32>);
    impl ReleaseHook for Count<'_> {
        fn on_release(&self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn notify_bumps_then_calls_the_hook_once() {
        let calls = Cell::new(0);
        let signal = ReleaseSignal::new(Count(&calls));
        let seen = signal.count();
        signal.notify();
        assert_eq!((signal.count(), calls.get()), (1, 1));
        assert!(signal.released_since(seen));
        assert!(!signal.released_since(signal.count()));
    }

    #[test]
    fn a_raise_bumps_once_and_the_default_hook_sees_every_slot() {
        let calls = Cell::new(0);
        let signal = ReleaseSignal::new(Count(&calls));
        let seen = signal.count();
        signal.notify_added(3);
        assert_eq!((signal.count(), calls.get()), (1, 3));
        assert!(signal.released_since(seen));
    }

    /// Counts releases and raises apart, so a forwarder that fell back to the trait's default
    /// `on_slots_added` (n calls of `on_release`) would show.
    struct Apart<'a> {
        releases: &'a Cell<u32>,
        added: &'a Cell<u32>,
    }
    impl ReleaseHook for Apart<'_> {
        fn on_release(&self) {
            self.releases.set(self.releases.get() + 1);
        }
        fn on_slots_added(&self, n: u32) {
            self.added.set(self.added.get() + n);
        }
    }

    #[test]
    fn a_hook_through_a_reference_sees_every_release_and_raise() {
        // Adapters keep their waiters outside the policy and lend them (`&SlotWaiters`): the
        // reference's forwarders are the only path from the signal to those waiters.
        let (releases, added) = (Cell::new(0), Cell::new(0));
        let hook = Apart {
            releases: &releases,
            added: &added,
        };
        let signal: ReleaseSignal<&Apart<'_>> = ReleaseSignal::new(&hook);
        signal.notify();
        assert_eq!(
            (releases.get(), added.get()),
            (1, 0),
            "a release reaches the hook"
        );
        signal.notify_added(4);
        assert_eq!(
            (releases.get(), added.get()),
            (1, 4),
            "a raise reaches the hook's own on_slots_added, not the default"
        );
        assert_eq!(signal.count(), 2);
    }

    #[test]
    fn the_count_wraps_without_panicking() {
        let signal = ReleaseSignal::new(());
        signal.releases.store(u32::MAX, Ordering::Relaxed);
        signal.notify();
        assert_eq!(signal.count(), 0);
        assert!(signal.released_since(u32::MAX));
    }
}
