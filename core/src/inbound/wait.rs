//! How long a request would wait, decided when it arrives: the queue position × the time
//! between completions, and whether the queue is overloaded (it has overflowed in the current
//! busy period).
//!
//! A request that finds every slot taken starts after the waiters it queues behind (those of
//! its criticality or more: a freed slot serves the most critical first) and one more have
//! finished. With `limit` slots each busy for a typical service time `S`, a slot frees every
//! `S / limit` on average (Little's law over the slots), so the predicted wait of a request
//! with `ahead` waiters before it is `(ahead + 1) × S / limit`. It is shed at once when that
//! wait is longer than the queue lets it wait, or when it would end past its deadline: the
//! refusal is then known on arrival, so it is answered on arrival, instead of after a wait
//! that cannot end well (issue 36: shed answers came at the client's deadline).
//!
//! **Overloaded.** A busy period (the queue non-empty without a break) in which an arrival
//! was shed for want of room or time is overloaded until the queue next empties. While it is,
//! every criticality may wait only `target` (Fail at Scale's M), so a queue that stands under
//! sustained overload is kept short and an accepted request waits little; a queue that fills
//! and drains at 1× never overflowed, so it loses nothing a FIFO would have served. The state
//! is two counters: the number of the current busy period (advanced when the queue goes from
//! empty to one waiter) and the number of the last period that overflowed. It is approximate
//! under races in the same way as `standing.rs` (a join and an overflow racing across a busy
//! period's edge may mark the wrong period), and the period number wraps after 2^32 busy
//! periods, where one stale overflow could read as current for one period.

use core::time::Duration;

use super::{Inbound, Priority};
use crate::sync::Ordering;
use crate::time::Instant;

impl Inbound {
    /// Waiters a request of `priority` would queue behind now: those of its criticality or
    /// more (a snapshot).
    pub fn ahead(&self, priority: Priority) -> u32 {
        Priority::ALL
            .iter()
            .filter(|p| **p >= priority)
            .map(|p| self.classes[p.rank() as usize].held())
            .fold(0u32, u32::saturating_add)
    }

    /// The predicted wait of a request with `ahead` waiters before it, every slot taken:
    /// `(ahead + 1) × service time / limit`. Zero until the service time is known.
    pub fn predicted_wait(&self, ahead: u32) -> Duration {
        let limit = u128::from(self.limiter.limit().max(1));
        let nanos = self.service_time().as_nanos() * (u128::from(ahead) + 1) / limit;
        Duration::from_nanos(nanos.min(u128::from(u64::MAX)) as u64)
    }

    /// Whether the queue is overloaded: it holds a waiter and an arrival was shed for
    /// want of room or time since it last went from empty to one waiter.
    pub fn overloaded(&self) -> bool {
        self.queued.held() > 0
            && self.overflowed.load(Ordering::Acquire) == self.period.load(Ordering::Acquire)
    }

    /// How long a request of `priority` arriving at `now` may wait: `target` (Fail at Scale's
    /// M) while the queue is overloaded, or for SHEDDABLE and SHEDDABLE_PLUS requests while it
    /// stands; otherwise `interval` (N).
    pub fn admission_wait(&self, now: Instant, priority: Priority) -> Duration {
        if self.overloaded() {
            self.codel.target
        } else {
            self.queue_timeout(now, priority)
        }
    }

    /// An arrival was shed for want of room or time: the current busy period overflowed.
    pub(super) fn overflow(&self) {
        let period = self.period.load(Ordering::Acquire);
        self.overflowed.store(period, Ordering::Release);
    }

    /// A waiter joined: `n` waiters are held now, this one included.
    pub(super) fn joined(&self, now: Instant, priority: Priority, n: u32) {
        if n == 1 {
            self.busy.mark(now);
            self.period.fetch_add(1, Ordering::AcqRel);
        }
        // The class count has no cap of its own: the queue's counter holds the cap.
        let _ = self.classes[priority.rank() as usize].try_acquire(u32::MAX);
    }

    /// A waiter of `priority` left the queue (served, shed, or gone).
    pub(super) fn left(&self, priority: Priority) {
        self.classes[priority.rank() as usize].release();
        self.queued.release();
    }
}
