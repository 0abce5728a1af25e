//! How long a request would wait, decided when it arrives: the queue position × the time
//! between completions, and whether a criticality is overloaded (most of its recent arrivals
//! shed).
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
//! **Overloaded.** The admission keeps, per criticality, the share of its recent arrivals shed
//! for want of room or time (a moving average over about 256 arrivals, weight 1/256 each, in
//! 1/65,536ths). Above one half that criticality is overloaded: its arrivals exceed twice
//! what the server serves of them (under sustained load `L` × capacity a server can serve at
//! most `1/L` of the arrivals, whatever it queues). While it is, its requests may wait only
//! `target` (Fail at Scale's M) or one service time if that is shorter, so the queue under
//! sustained overload is kept short and an accepted request waits little: about a waiter per
//! slot, enough to keep the handler busy. At 1× and a little above, a queue that fills in a
//! burst sheds a few arrivals (the ones a FIFO would have served late), never half, so it
//! keeps the whole interval and loses nothing a FIFO would have served in time. Per
//! criticality, because with a mix the sheddable classes absorb the shedding: CRITICAL
//! requests whose own demand fits the capacity are rarely shed and keep their long wait,
//! while a server whose callers send no criticality (all CRITICAL) gets the short wait as
//! soon as it is overloaded, which is what a server that cannot tell its callers apart
//! should do. Each average is one word updated by compare-and-swap; arrivals shed only
//! because their own deadline is shorter than a service time do not count.

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
        let limit = u128::from(self.limit().max(1));
        let nanos = self.service_time().as_nanos() * (u128::from(ahead) + 1) / limit;
        Duration::from_nanos(nanos.min(u128::from(u64::MAX)) as u64)
    }

    /// Whether requests of `priority` are overloaded: more than half of their recent arrivals
    /// were shed for want of room or time.
    pub fn overloaded(&self, priority: Priority) -> bool {
        self.pressure[priority.rank() as usize].load(Ordering::Relaxed) > PRESSURE_ONE / 2
    }

    /// The share of `priority`'s recent arrivals shed for want of room or time, in `[0, 1]`.
    pub fn shed_pressure(&self, priority: Priority) -> f32 {
        let p = self.pressure[priority.rank() as usize].load(Ordering::Relaxed);
        p as f32 / PRESSURE_ONE as f32
    }

    /// How long a request of `priority` arriving at `now` may wait: while its criticality is
    /// overloaded, `target` (Fail at Scale's M) or one service time if shorter (a waiter per
    /// slot keeps the handler busy; more only adds latency); for SHEDDABLE and SHEDDABLE_PLUS
    /// requests while the queue stands, `target`; otherwise `interval` (N).
    pub fn admission_wait(&self, now: Instant, priority: Priority) -> Duration {
        if self.overloaded(priority) {
            let service = self.service_time();
            if service.is_zero() {
                self.codel.target
            } else {
                self.codel.target.min(service)
            }
        } else {
            self.queue_timeout(now, priority)
        }
    }

    /// An arrival of `priority` was decided: `shed` if it was refused for want of room or time.
    pub(super) fn arrival(&self, priority: Priority, shed: bool) {
        let _ = self.pressure[priority.rank() as usize].fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |p| Some(next_pressure(p, shed)),
        );
    }

    /// A request held its slot for `took`: the service time's average moves 1/8 of the way to
    /// it (`(7 × average + took) / 8` in whole microseconds; the first sets it).
    pub(super) fn record_service(&self, took: Duration) {
        let sample = took.as_micros().min(u128::from(u32::MAX)) as u64;
        let _ = self
            .service
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(next_service(u64::from(old), sample))
            });
    }

    /// A waiter joined: `n` waiters are held now, this one included.
    pub(super) fn joined(&self, now: Instant, priority: Priority, n: u32) {
        if n == 1 {
            self.busy.mark(now);
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

/// The moving average after `sample` (µs): the sample itself first, then `(7 × old + sample)
/// / 8`, truncated.
pub(super) const fn next_service(old: u64, sample: u64) -> u32 {
    let next = if old == 0 {
        sample
    } else {
        (7 * old + sample) / 8
    };
    if next > u32::MAX as u64 {
        u32::MAX
    } else {
        next as u32
    }
}

/// The shed pressure's one: 2^16.
pub(super) const PRESSURE_ONE: u32 = 1 << 16;

/// The shed pressure after one more arrival: `p − ⌊p / 256⌋`, plus `2^16 / 256` if it was shed.
pub(super) const fn next_pressure(p: u32, shed: bool) -> u32 {
    let p = p - p / 256;
    if shed { p + PRESSURE_ONE / 256 } else { p }
}
