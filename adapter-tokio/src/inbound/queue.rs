//! The real queue: waiting tasks in one line per priority behind a mutex, with the CoDel state,
//! and the core's `dispatch` run under that mutex after every release and every join.

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use resilix::inbound::{
    Backlog, Codel, End, Inbound, InboundPermit, Priority, QueuePlace, Shed, Waiting, dispatch,
};
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::verdict::Verdict;
use tokio::sync::oneshot;

/// The admission and its queue, shared by the layer, every service clone and every request.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) inbound: Inbound,
    queue: Mutex<Queue>,
}

/// An owning handle on the admission: what permits and places hold.
#[derive(Clone, Debug)]
pub(crate) struct Handle(pub(crate) Arc<Shared>);

impl Deref for Handle {
    type Target = Inbound;
    fn deref(&self) -> &Inbound {
        &self.0.inbound
    }
}

/// What a waiting task is told: its slot, or why it was shed.
pub(crate) type Handoff = Result<Running, Shed>;

#[derive(Debug)]
struct Entry {
    id: u64,
    place: QueuePlace<Handle>,
    tx: oneshot::Sender<Handoff>,
}

#[derive(Debug)]
struct Queue {
    lines: Lines,
    codel: Codel,
    next_id: u64,
}

#[derive(Debug, Default)]
struct Lines([VecDeque<Entry>; 4]);

impl Backlog for Lines {
    type Item = Entry;
    fn len(&self) -> usize {
        self.0.iter().map(VecDeque::len).sum()
    }
    fn peek(&self, p: Priority, end: End) -> Option<Waiting> {
        let line = &self.0[p.rank() as usize];
        let e = match end {
            End::Oldest => line.front(),
            End::Newest => line.back(),
        }?;
        Some(Waiting {
            since: e.place.since(),
            deadline: e.place.deadline(),
        })
    }
    fn take(&mut self, p: Priority, end: End) -> Option<Entry> {
        let line = &mut self.0[p.rank() as usize];
        match end {
            End::Oldest => line.pop_front(),
            End::Newest => line.pop_back(),
        }
    }
}

impl Shared {
    pub(crate) fn new(inbound: Inbound) -> Shared {
        let codel = Codel::new(inbound.codel_config());
        Shared {
            inbound,
            queue: Mutex::new(Queue {
                lines: Lines::default(),
                codel,
                next_id: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves lines that are still consistent (every step
        // removes an entry before acting on it), so a poisoned lock is used as it is.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Handle {
    /// Joins the queue and dispatches at once (a slot may have freed before the join).
    pub(crate) fn join(&self, place: QueuePlace<Handle>, now: Instant) -> Waiter {
        let (tx, rx) = oneshot::channel();
        let mut queue = self.0.lock();
        let id = queue.next_id;
        queue.next_id += 1;
        let rank = place.priority().rank() as usize;
        queue.lines.0[rank].push_back(Entry { id, place, tx });
        self.dispatch_locked(&mut queue, now);
        drop(queue);
        Waiter {
            handle: self.clone(),
            id,
            rank,
            rx,
        }
    }

    /// Hands freed slots to waiters (after a release).
    pub(crate) fn dispatch(&self, now: Instant) {
        let mut queue = self.0.lock();
        self.dispatch_locked(&mut queue, now);
    }

    /// Runs the core's dispatch under the lock. Nothing dropped in here dispatches again: a
    /// permit handed back by a task that left is returned to `dispatch` bare.
    fn dispatch_locked(&self, queue: &mut Queue, now: Instant) {
        let Queue { lines, codel, .. } = queue;
        dispatch(
            self,
            codel,
            now,
            lines,
            |entry, permit| {
                drop(entry.place);
                let running = Running::new(self.clone(), permit);
                match entry.tx.send(Ok(running)) {
                    Ok(()) => Ok(()),
                    // The waiting task has gone: the slot goes to the next.
                    Err(Ok(mut running)) => match running.permit.take() {
                        Some(p) => Err(p),
                        None => Ok(()),
                    },
                    Err(Err(_)) => Ok(()),
                }
            },
            |entry, cause| {
                let shed = entry.place.shed(cause, now);
                let _ = entry.tx.send(Err(shed));
            },
        );
    }
}

/// A waiting task's hold on its entry: dropping it (the request's future dropped, or its wait
/// over) takes the entry out of the queue if it is still there.
#[derive(Debug)]
pub(crate) struct Waiter {
    handle: Handle,
    id: u64,
    rank: usize,
    pub(crate) rx: oneshot::Receiver<Handoff>,
}

impl Waiter {
    /// Gives up at `now` if still queued: answers why. `None`: dispatch got to it first (its
    /// answer is in `rx`).
    pub(crate) fn give_up(&mut self, now: Instant) -> Option<Shed> {
        let entry = self.remove()?;
        Some(entry.place.give_up(now))
    }

    fn remove(&self) -> Option<Entry> {
        let mut queue = self.handle.0.lock();
        let line = &mut queue.lines.0[self.rank];
        let at = line.iter().position(|e| e.id == self.id)?;
        line.remove(at)
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        // Outside the lock: dropping the entry gives its place back.
        drop(self.remove());
    }
}

/// A running request's slot; when it is settled or dropped, the freed slot is dispatched.
#[derive(Debug)]
pub(crate) struct Running {
    handle: Handle,
    permit: Option<InboundPermit<Handle>>,
}

impl Running {
    pub(crate) fn new(handle: Handle, permit: InboundPermit<Handle>) -> Running {
        Running {
            handle,
            permit: Some(permit),
        }
    }

    /// Settles with the handler's verdict (its latency is the limiter's sample).
    pub(crate) fn settle(mut self, verdict: &Verdict) {
        if let Some(p) = self.permit.take() {
            let now = crate::now();
            let mut rng = SeededRandom::new(crate::thread_seed());
            p.settle(verdict, &mut Env::new(now, &mut rng));
            self.handle.dispatch(now);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            drop(p);
            self.handle.dispatch(crate::now());
        }
    }
}
