use std::sync::{Mutex, MutexGuard};

use resilix::waiters::{WaiterList, WaiterLock};

/// A waiter list behind a `std::sync::Mutex`, held only to queue, pop and wake.
#[derive(Debug)]
pub struct StdLock<const N: usize>(Mutex<WaiterList<N>>);

impl<const N: usize> StdLock<N> {
    fn lock(&self) -> MutexGuard<'_, WaiterList<N>> {
        // Nothing panics while holding the lock except a waker's clone; the list is
        // consistent between statements, so a poisoned lock is safe to keep using.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<const N: usize> WaiterLock<N> for StdLock<N> {
    // A fresh mutex each time it is named: that is what a `const` constructor means here.
    #[allow(clippy::declare_interior_mutable_const)]
    const NEW: Self = StdLock(Mutex::new(WaiterList::new()));

    fn with<R>(&self, f: impl FnOnce(&mut WaiterList<N>) -> R) -> R {
        f(&mut self.lock())
    }
}

/// The waiters of one bulkhead or limiter: pass it to `Bulkhead::with_hook` or
/// `Limiter::with_hook`. Holds at most `min(N, max_waiters)` waiters; see
/// [`resilix::waiters`] for the rules.
///
/// ```
/// use std::time::Duration;
/// use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix_std::SlotWaiters;
///
/// let wait = WaitConfig::new(8, Duration::from_millis(100), WaitOrder::Fifo).unwrap();
/// let bulkhead = Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::<8>::new(wait));
/// assert_eq!(bulkhead.hook().waiting(), 0);
/// ```
pub type SlotWaiters<const N: usize> = resilix::waiters::SlotWaiters<N, StdLock<N>>;
