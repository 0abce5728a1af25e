//! The bulkhead: a hard cap on calls in flight to one dependency, so a slow dependency cannot
//! take every worker, connection or task with it (the essay (docs/design/essay.md): "one flooded compartment does not
//! sink the vessel").
//!
//! The cap is exact under any concurrency: admission is a compare-and-swap on one 32-bit
//! counter, so no interleaving of threads, tasks or interrupt handlers ever holds one slot more
//! than the cap (a loom model and a many-thread stress test check it). Settling a permit with
//! any verdict — `Rejected` included — gives its slot back; so does dropping it (a cancelled
//! call). The bulkhead records no outcome: it counts slots, not successes.
//!
//! ```
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::permit::{Env, Permit, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::{RejectReason, Verdict};
//!
//! static DATABASE: Bulkhead = Bulkhead::new(match BulkheadConfig::new(2) {
//!     Ok(c) => c,
//!     Err(_) => panic!("invalid bulkhead config"),
//! });
//!
//! let mut rng = SeededRandom::new(3);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let a = DATABASE.admit(&mut env).unwrap();
//! let b = DATABASE.admit(&mut env).unwrap();
//! let refused = DATABASE.admit(&mut env).unwrap_err();
//! assert_eq!(refused.reason(), RejectReason::BulkheadFull);
//! a.settle(&Verdict::Transient, &mut env); // any verdict frees the slot
//! drop(b); // so does cancelling
//! assert_eq!(DATABASE.held(), 0);
//! ```
//!
//! # Waiting for a slot: the protocol for async adapters
//!
//! The core never waits and never queues: waiting needs a list of waiters and a way to wake
//! them, which means storage per waiter and a lock or an executor, and the core has neither.
//! So the core offers a *signal* and the adapter owns the wait. The signal has three parts:
//!
//! 1. A count of slot releases (wrapping `u32`), bumped after each slot is given back — an
//!    event count ([`Bulkhead::releases`] reads it).
//! 2. [`Bulkhead::try_admit`]: on refusal it returns [`Full`], which carries the occupancy and
//!    the release count read *before* the attempt; [`Bulkhead::released_since`] later says
//!    whether the count has moved since.
//! 3. A [`ReleaseHook`] the bulkhead calls after every release (settle or drop, on whichever
//!    thread or interrupt released). It is a type parameter, so the bulkhead without one
//!    (`()`) pays nothing for it.
//!
//! The count and the hook are [`crate::release::ReleaseSignal`], the one mechanism shared
//! with the adaptive limiter (whose queue zone waits on in-flight releases the same way), and
//! the adapters' side of the protocol is written once too, in [`crate::waiters`].
//!
//! The [`wait`] module adds what every adapter would otherwise rewrite: [`wait::WaitConfig`]
//! (maximum waiters, maximum wait, FIFO or LIFO; validated) and [`wait::WaitQueue`], a
//! fixed-capacity queue of waiters that the adapter keeps under its own lock or critical
//! section.
//!
//! A waiter does this:
//!
//! 1. `try_admit()`. Admitted: go. Refused with `full`:
//! 2. If waiting is off, or the queue already holds the maximum number of waiters: refuse
//!    with `bulkhead-full` now (a bounded queue is the point; an unbounded one fills with
//!    requests whose callers have left).
//! 3. Join the queue (under the adapter's lock), with deadline `now + max_wait`.
//! 4. If `bulkhead.released_since(&full)`, a slot was given back after step 1 — maybe before
//!    step 3, when the hook found nobody to wake. Leave the queue and go to 1.
//! 5. Otherwise sleep until woken or until the deadline. Woken: go to 1 (staying at your place
//!    in the queue until admitted). Deadline: leave the queue and refuse with `bulkhead-full`.
//!
//! The hook, on every release, takes the adapter's lock and wakes one waiter:
//! [`wait::WaitQueue::pop`] in the configured order ([`wait::WaitQueue::pop_expired`] first
//! finds those whose wait is over).
//!
//! The protocol loses no wake-up and needs no `SeqCst`; the hook wakes a waiter but does not
//! hand it the slot, so fairness (FIFO by default, LIFO under sustained overload, where the
//! newest waiter is the one whose caller still waits) is the adapter's, and
//! [`crate::waiters`] passes on a wake-up a woken waiter did not use.
//!
//! Design notes (no lost wake-up, no hand-off): docs/design/bulkhead.md#the-wait-protocol-why-it-holds
//!
//! A synchronous waiter, on the manual timeline, following the protocol (the queue is a
//! `RefCell` here because the example is single-threaded; an adapter uses a mutex or a
//! critical section):
//!
//! ```
//! use core::cell::RefCell;
//! use core::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder, WaitQueue};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig, ReleaseHook};
//! use resilix::time::Instant;
//!
//! /// Wakes the next waiter on every release: records who, as a real adapter would wake a task.
//! struct WakeNext<'q> {
//!     queue: &'q RefCell<WaitQueue<char, 4>>,
//!     woken: &'q RefCell<Vec<char>>,
//!     order: WaitOrder,
//! }
//! impl ReleaseHook for WakeNext<'_> {
//!     fn on_release(&self) {
//!         if let Some(name) = self.queue.borrow_mut().pop(self.order) {
//!             self.woken.borrow_mut().push(name);
//!         }
//!     }
//! }
//!
//! let wait = WaitConfig::new(4, Duration::from_millis(100), WaitOrder::Lifo).unwrap();
//! let queue = RefCell::new(WaitQueue::new());
//! let woken = RefCell::new(Vec::new());
//! let hook = WakeNext { queue: &queue, woken: &woken, order: wait.order() };
//! let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), hook);
//!
//! let holder = bulkhead.try_admit().unwrap();
//! let now = Instant::ZERO;
//! for name in ['a', 'b', 'c'] {
//!     let full = bulkhead.try_admit().unwrap_err(); // step 1: refused
//!     queue.borrow_mut().push(name, now, &wait).unwrap(); // step 3: join
//!     assert!(!bulkhead.released_since(&full)); // step 4: no release meanwhile
//! }
//! drop(holder); // the release wakes one waiter: under LIFO, the newest
//! assert_eq!(*woken.borrow(), ['c']);
//! let c = bulkhead.try_admit().expect("the woken waiter takes the freed slot");
//! # drop(c);
//! ```

mod config;
mod reconfigure;
pub mod wait;

pub use config::{BulkheadConfig, BulkheadConfigError};

use core::fmt;

use crate::observe::Observer;
use crate::permit::{Detach, Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::slots::Slots;
use crate::sync::{AtomicU32, Ordering};
use crate::verdict::Verdict;

pub use crate::release::ReleaseHook;
use crate::release::ReleaseSignal;

/// A hard concurrency cap. See the [module docs](self) for the cap's guarantees and the wait
/// protocol.
///
/// ```
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
///
/// let b = Bulkhead::new(BulkheadConfig::new(1).unwrap());
/// let permit = b.try_admit().unwrap();
/// assert_eq!((b.held(), b.available()), (1, 0));
/// let full = b.try_admit().unwrap_err();
/// assert_eq!(full.held(), 1);
/// drop(permit);
/// assert_eq!(b.releases(), 1);
/// ```
#[derive(Debug)]
pub struct Bulkhead<H = ()> {
    // One word: the cap is the bulkhead's only setting, so a reconfiguration is one swap and
    // needs no `Settings` block (see `reconfigure.rs`).
    max_concurrent: AtomicU32,
    slots: Slots,
    // The wait protocol's event count and wake-up (shared with the limiter's queue zone).
    released: ReleaseSignal<H>,
}

impl Bulkhead<()> {
    crate::sync::const_fn_unless_loom! {
        /// A bulkhead with no release hook, usable in a `static`.
        ///
        /// ```
        /// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
        ///
        /// static UPSTREAM: Bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
        /// assert_eq!(UPSTREAM.max_concurrent(), 25);
        /// ```
        pub fn new(config: BulkheadConfig) -> Self {
            Bulkhead::with_hook(config, ())
        }
    }
}

/// [`BulkheadConfig::DEFAULT`], no hook.
///
/// ```
/// assert_eq!(resilix::bulkhead::Bulkhead::default().max_concurrent(), 25);
/// ```
impl Default for Bulkhead {
    fn default() -> Self {
        Bulkhead::new(BulkheadConfig::DEFAULT)
    }
}

impl<H> Bulkhead<H> {
    crate::sync::const_fn_unless_loom! {
        /// A bulkhead that calls `hook` after every slot release (an adapter's wake-up).
        ///
        /// ```
        /// use resilix::bulkhead::{Bulkhead, BulkheadConfig, ReleaseHook};
        ///
        /// struct Wake;
        /// impl ReleaseHook for Wake {
        ///     fn on_release(&self) { /* wake the next waiter */ }
        /// }
        /// static UPSTREAM: Bulkhead<Wake> = Bulkhead::with_hook(BulkheadConfig::DEFAULT, Wake);
        /// assert_eq!(UPSTREAM.held(), 0);
        /// ```
        pub fn with_hook(config: BulkheadConfig, hook: H) -> Self {
            Bulkhead {
                max_concurrent: AtomicU32::new(config.max_concurrent()),
                slots: Slots::new(),
                released: ReleaseSignal::new(hook),
            }
        }
    }

    /// The cap in force (a snapshot: [`Self::reconfigure`] may change it).
    pub fn max_concurrent(&self) -> u32 {
        self.cap()
    }

    /// The cap for one admission. Relaxed: an admission racing a reconfiguration may use
    /// either cap, and one that happens after it sees the new one (coherence); the wait
    /// protocol's ordering comes from the release count, read before this (`reconfigure.rs`).
    #[inline(always)]
    fn cap(&self) -> u32 {
        self.max_concurrent.load(Ordering::Relaxed)
    }

    /// Slots held now: a snapshot, stale as soon as it is read under concurrency.
    pub fn held(&self) -> u32 {
        self.slots.held()
    }

    /// Slots free now (a snapshot).
    pub fn available(&self) -> u32 {
        self.cap().saturating_sub(self.held())
    }

    /// How many slots have been given back since construction, plus one for each raise of
    /// the cap ([`Self::reconfigure`]), wrapping at `u32::MAX`: the event count of the wait
    /// protocol, as a snapshot. A waiter's step 4 uses
    /// [`Self::released_since`], which is ordered after the waiter's registration; a plain
    /// comparison with this snapshot is not.
    pub fn releases(&self) -> u32 {
        self.released.count()
    }

    /// Whether any slot was given back since `full`'s attempt: step 4 of the wait protocol.
    ///
    /// It is a read-modify-write (adding zero), not a load, so it is ordered with every
    /// release's bump: if it says no, the next release's hook call sees everything this thread
    /// did before calling it. It is only for the waiting path; it writes to a shared line.
    ///
    /// ```
    /// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
    ///
    /// let b = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    /// let holder = b.try_admit().unwrap();
    /// let full = b.try_admit().unwrap_err();
    /// assert!(!b.released_since(&full));
    /// drop(holder);
    /// assert!(b.released_since(&full));
    /// ```
    pub fn released_since(&self, full: &Full) -> bool {
        self.released.released_since(full.releases)
    }

    /// The release hook, so an adapter can reach the waiter queue it keeps there.
    pub const fn hook(&self) -> &H {
        self.released.hook()
    }
}

impl<H: ReleaseHook> Bulkhead<H> {
    /// Takes a slot, or reports how full the bulkhead was and the release count read before
    /// trying (step 1 of the wait protocol). [`Policy::admit`] is the same without the
    /// release-count read.
    ///
    /// ```
    /// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
    ///
    /// let b = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    /// let p = b.try_admit().unwrap();
    /// assert_eq!(p.held_at_admission(), 1);
    /// let full = b.try_admit().unwrap_err();
    /// drop(p);
    /// assert!(b.released_since(&full), "a slot came back after the refusal");
    /// ```
    pub fn try_admit(&self) -> Result<BulkheadPermit<'_, H>, Full> {
        // Read before the attempt: a release this attempt missed bumps the count after this
        // read, which is what lets the waiter detect it (see the module docs).
        let releases = self.released.count();
        match self.slots.try_acquire(self.cap()) {
            Ok(held) => Ok(BulkheadPermit {
                bulkhead: self,
                held_at_admission: held,
            }),
            Err(held) => Err(Full { held, releases }),
        }
    }

    fn release(&self) {
        self.slots.release();
        self.released.notify();
    }
}

impl<H: ReleaseHook> Policy for Bulkhead<H> {
    type Permit<'a>
        = BulkheadPermit<'a, H>
    where
        Self: 'a;

    /// Takes a slot or refuses with [`RejectReason::BulkheadFull`]. Time and randomness play no
    /// part: a slot is free or it is not.
    #[inline]
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<BulkheadPermit<'a, H>, Rejection> {
        match self.slots.try_acquire(self.cap()) {
            Ok(held) => Ok(BulkheadPermit {
                bulkhead: self,
                held_at_admission: held,
            }),
            Err(_) => Err(Rejection::new(RejectReason::BulkheadFull)),
        }
    }
}

/// A held bulkhead slot. Settling (with any verdict) or dropping it gives the slot back and
/// calls the release hook.
///
/// ```
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix::permit::{Env, Permit, Policy};
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
/// use resilix::{RejectReason, Verdict};
///
/// let b = Bulkhead::new(BulkheadConfig::new(1).unwrap());
/// let mut rng = SeededRandom::new(9);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let permit = b.admit(&mut env).unwrap();
/// // Even a call refused further in (our own shedding) frees its slot.
/// permit.settle(&Verdict::Rejected(RejectReason::RateLimited), &mut env);
/// assert_eq!(b.held(), 0);
/// ```
#[must_use = "dropping a bulkhead permit releases its slot at once"]
pub struct BulkheadPermit<'a, H: ReleaseHook = ()> {
    bulkhead: &'a Bulkhead<H>,
    held_at_admission: u32,
}

impl<H: ReleaseHook> BulkheadPermit<'_, H> {
    /// Slots held right after this one was taken, this one included (1 ..= the cap in force
    /// at admission): how close to the cap the admission was.
    pub const fn held_at_admission(&self) -> u32 {
        self.held_at_admission
    }
}

impl<H: ReleaseHook> fmt::Debug for BulkheadPermit<'_, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("held_at_admission", &self.held_at_admission)
            .finish_non_exhaustive()
    }
}

impl<H: ReleaseHook> Permit for BulkheadPermit<'_, H> {
    /// Gives the slot back; the verdict is not recorded (a bulkhead keeps no statistics).
    #[inline]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        _verdict: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
        // Drop does the release, so settle and cancel cannot diverge.
    }
}

/// A [`BulkheadPermit`]'s data, apart from its bulkhead ([`Detach`]).
#[must_use = "attach it to its bulkhead again: dropping it would leave its slot taken"]
#[derive(Debug)]
pub struct DetachedBulkheadPermit {
    held_at_admission: u32,
}

impl<H: ReleaseHook> Detach for Bulkhead<H> {
    type Detached = DetachedBulkheadPermit;

    #[inline]
    fn detach(permit: BulkheadPermit<'_, H>) -> DetachedBulkheadPermit {
        // Its drop would give the slot back: the detached data still holds it.
        let permit = core::mem::ManuallyDrop::new(permit);
        DetachedBulkheadPermit {
            held_at_admission: permit.held_at_admission,
        }
    }

    #[inline]
    fn attach(&self, detached: DetachedBulkheadPermit) -> BulkheadPermit<'_, H> {
        BulkheadPermit {
            bulkhead: self,
            held_at_admission: detached.held_at_admission,
        }
    }
}

impl<H: ReleaseHook> Drop for BulkheadPermit<'_, H> {
    fn drop(&mut self) {
        self.bulkhead.release();
    }
}

/// A refusal from [`Bulkhead::try_admit`]: how full the bulkhead was, and the release count
/// read before the attempt (for step 4 of the wait protocol).
///
/// ```
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix::{RejectReason, Rejection};
///
/// let b = Bulkhead::new(BulkheadConfig::new(1).unwrap());
/// let _p = b.try_admit().unwrap();
/// let full = b.try_admit().unwrap_err();
/// assert_eq!((full.held(), full.releases()), (1, 0));
/// assert_eq!(Rejection::from(full).reason(), RejectReason::BulkheadFull);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Full {
    held: u32,
    releases: u32,
}

impl Full {
    /// Slots held when the attempt found the bulkhead full.
    pub const fn held(&self) -> u32 {
        self.held
    }

    /// The release count as read before the attempt (compare with
    /// [`Bulkhead::released_since`]).
    pub const fn releases(&self) -> u32 {
        self.releases
    }
}

impl From<Full> for Rejection {
    fn from(_: Full) -> Rejection {
        Rejection::new(RejectReason::BulkheadFull)
    }
}

impl fmt::Display for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} held)", RejectReason::BulkheadFull, self.held)
    }
}

mod keyed;
pub use keyed::{ForKey, KeyedBulkhead, KeyedPermit};

#[cfg(all(test, not(loom)))]
mod tests;
