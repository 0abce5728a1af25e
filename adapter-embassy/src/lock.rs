use core::cell::RefCell;

use critical_section::Mutex;
use resilix::waiters::{WaiterList, WaiterLock};

/// A waiter list behind a critical section: `const`, so a policy with waiters can be a
/// `static`, and safe against the interrupt that releases a slot.
#[derive(Debug)]
pub struct CsLock<const N: usize>(Mutex<RefCell<WaiterList<N>>>);

impl<const N: usize> WaiterLock<N> for CsLock<N> {
    // A fresh cell each time it is named: that is what a `const` constructor means here.
    #[allow(clippy::declare_interior_mutable_const)]
    const NEW: Self = CsLock(Mutex::new(RefCell::new(WaiterList::new())));

    fn with<R>(&self, f: impl FnOnce(&mut WaiterList<N>) -> R) -> R {
        critical_section::with(|cs| f(&mut self.0.borrow_ref_mut(cs)))
    }
}

/// The waiters of one bulkhead or limiter: pass it to `Bulkhead::with_hook` or
/// `Limiter::with_hook`. Holds at most `min(N, max_waiters)` waiters; the rules are the
/// core's ([`resilix::waiters`]).
pub type SlotWaiters<const N: usize> = resilix::waiters::SlotWaiters<N, CsLock<N>>;
