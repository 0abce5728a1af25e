//! What the loom models of bounded waiting share: the waiter list behind loom's mutex, a task
//! whose thread parks until its waker fires, and time that never moves. Included by path
//! (`#[path = "support/loom_wait.rs"] mod loom_wait;`), so it is no test target of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::{Mutex, Notify};
use resilix::bulkhead::Bulkhead;
use resilix::execute::Timer;
use resilix::time::Instant;
use resilix::waiters::{SlotWaiters, WaitTimer, WaiterList, WaiterLock};

/// The waiter list behind loom's mutex, so loom explores every order of the lock sections
/// (queue, wake, leave, resolve). Loom's mutex has no `const fn new`, and `WaiterLock::NEW`
/// is a constant, so it is made on first use: by the main thread, before any thread starts.
pub struct LoomLock<const N: usize>(OnceLock<Mutex<WaiterList<N>>>);

impl<const N: usize> WaiterLock<N> for LoomLock<N> {
    #[allow(clippy::declare_interior_mutable_const)]
    const NEW: Self = LoomLock(OnceLock::new());
    fn with<R>(&self, f: impl FnOnce(&mut WaiterList<N>) -> R) -> R {
        let list = self.0.get_or_init(|| Mutex::new(WaiterList::new()));
        f(&mut list.lock().unwrap())
    }
}

pub type Slot = Bulkhead<SlotWaiters<4, LoomLock<4>>>;

/// A task's waker: a loom notification its thread parks on. Loom's may also wake
/// spuriously, which is a spurious poll to a waiting future: harmless.
pub struct Parked(Notify);

impl Wake for Parked {
    fn wake(self: Arc<Self>) {
        self.0.notify();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.notify();
    }
}

pub struct Task {
    parked: Arc<Parked>,
    waker: Waker,
}

impl Task {
    pub fn new() -> Self {
        let parked = Arc::new(Parked(Notify::new()));
        Task {
            waker: Waker::from(parked.clone()),
            parked,
        }
    }
    pub fn poll<F: Future + Unpin>(&self, f: &mut F) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(&self.waker))
    }
    /// Polls until ready, parking between polls. Never woken: parked forever.
    pub fn run<F: Future + Unpin>(&self, f: &mut F) -> F::Output {
        loop {
            if let Poll::Ready(v) = self.poll(f) {
                return v;
            }
            self.park();
        }
    }
    /// Parks until woken (or spuriously).
    pub fn park(&self) {
        self.parked.0.wait();
    }
}

/// Time that never moves: a wait ends only by a wake-up.
#[derive(Clone, Copy)]
pub struct Still;

impl Timer for Still {
    type Sleep<'a> = std::future::Pending<()>;
    fn now(&self) -> Instant {
        Instant::ZERO
    }
    fn sleep_until(&self, _: Instant) -> Self::Sleep<'_> {
        std::future::pending()
    }
}

impl WaitTimer for Still {
    type OwnedSleep = std::future::Pending<()>;
    fn sleep_owned(&self, _: Instant) -> Self::OwnedSleep {
        std::future::pending()
    }
}
