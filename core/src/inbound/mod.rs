//! Inbound load shedding: a server's own admission, by priority, with a bounded queue that
//! turns LIFO and drops by CoDel once it stands, and deadlines that travel with requests.
//!
//! Everything else in resilix protects a caller from its upstreams; this protects a server
//! from its callers (the essay (docs/design/essay.md): "choose which requests to shed … cheaply at the edge with a
//! 503 and a Retry-After, ideally by priority"). One decision per arriving request,
//! [`Inbound::admit`]`(now, priority, deadline)`:
//!
//! * **admit now** ([`Decision::Admit`]): a slot is free under this priority's share of the
//!   concurrency limit and nobody is waiting. The limit is fixed, or adaptive: the capacity
//!   rule ([`CapacityRule`]) finds how many requests the handler really runs at once from its
//!   latency, probing down to see the no-load latency (see `capacity.rs`).
//! * **queue until an instant** ([`Decision::Queue`]): it waits for a slot, at most until
//!   [`QueuePlace::until`]: `interval` (Fail at Scale's N, 100 ms) after arrival, or only
//!   `target` (M, 5 ms) for sheddable requests while the queue stands (not empty for N) and
//!   for every request of a criticality that is overloaded (more than half of its recent
//!   arrivals shed), and never past its own deadline less a typical service time.
//! * **reject with a retry-at** ([`Decision::Reject`] with a [`Shed`]): the queue has no room
//!   for this priority, or the request's predicted wait (its place in the queue × the time
//!   between completions, [`Inbound::predicted_wait`]) is longer than it may wait or would
//!   take it past its deadline. The refusal is decided and answered on arrival, not when the
//!   wait or the deadline runs out.
//!
//! Priority ([`Priority`], Google SRE's criticalities) applies only under load: each
//! criticality may fill a smaller share of the limit and of the queue (Stripe's 20 % kept for
//! critical traffic), so with room to spare everything is admitted alike; and a freed slot goes
//! to the most critical waiter first.
//!
//! When a slot frees, the driver (an adapter's queue, the simulator's) calls [`dispatch`]
//! with its waiting requests ([`Backlog`]): it drops waiters whose wait or deadline is over,
//! takes the most critical class, its oldest waiter while the queue drains (FIFO) or its
//! newest while it stands (adaptive LIFO, Fail at Scale: the newest has the most of its
//! deadline left), lets [`Codel`] (RFC 8289) drop it if the queue's delay has stood above
//! target, and hands the slot to the first waiter that survives.
//!
//! State and where it lives: the limit and the in-flight count are the limiter's atomics; the
//! queue's length is an exact compare-and-swap counter; "busy since" is a 32-bit tick word with
//! its era (`standing.rs`). All lock-free, allocation-free, `&self`. The waiting requests
//! themselves and the CoDel state belong to the driver's queue, behind its own lock.
//!
//! ```
//! use core::time::Duration;
//! use resilix::inbound::{Decision, Inbound, InboundConfig, Priority, ShedCause};
//! use resilix::permit::{Env, Permit};
//! use resilix::random::SeededRandom;
//! use resilix::time::{Deadline, Instant};
//! use resilix::Verdict;
//!
//! let inbound = Inbound::new(InboundConfig { queue: 1, ..InboundConfig::fixed(1) }).unwrap();
//! let now = Instant::from_secs(1);
//! let Decision::Admit(running) = inbound.admit(now, Priority::Critical, None) else { panic!() };
//! // The slot is taken: the next request waits, at most 100 ms (the queue is not standing).
//! let Decision::Queue(place) = inbound.admit(now, Priority::Critical, None) else { panic!() };
//! assert_eq!(place.until(), now + Duration::from_millis(100));
//! // No room left: shed, with a time to come back.
//! let Decision::Reject(shed) = inbound.admit(now, Priority::Sheddable, None) else { panic!() };
//! assert_eq!(shed.cause(), ShedCause::QueueFull);
//! // A deadline already gone is refused at once.
//! let gone = Some(Deadline::at(now));
//! let Decision::Reject(late) = inbound.admit(now, Priority::CriticalPlus, gone) else { panic!() };
//! assert_eq!(late.cause(), ShedCause::Deadline);
//!
//! let mut rng = SeededRandom::new(1);
//! let later = now + Duration::from_millis(3);
//! running.settle(&Verdict::Success, &mut Env::new(later, &mut rng));
//! let next = place.try_admit(later).ok().expect("the slot is free");
//! drop(next); // cancelled
//! assert_eq!((inbound.in_flight(), inbound.waiting()), (0, 0));
//! ```

mod capacity;
mod codel;
mod config;
mod dispatch;
mod permit;
mod priority;
mod shed;
mod standing;
mod wait;

pub use capacity::{CapacityConfig, CapacityRule};
pub use codel::{Codel, CodelConfig, Pop, control_delay};
pub use config::{InboundConfig, InboundConfigError, MAX_INTERVAL, MAX_QUEUE};
pub use dispatch::{Backlog, End, Step, Waiting, dispatch};
pub use permit::{InboundPermit, QueuePlace};
pub use priority::Priority;
pub use shed::{Shed, ShedCause};

use core::ops::Deref;
use core::time::Duration;

use crate::limiter::Limiter;
use crate::slots::Slots;
use crate::sync::{AtomicU32, Ordering};
use crate::time::{Deadline, Instant};
use capacity::CapacityCell;
use standing::BusySince;

/// The inbound admission. See the [module docs](self).
#[derive(Debug)]
pub struct Inbound {
    limiter: Limiter,
    capacity: Option<CapacityCell>,
    queued: Slots,
    /// Waiters per criticality (`Priority::rank`), for the position a newcomer takes.
    classes: [Slots; 4],
    busy: BusySince,
    /// Per criticality (`Priority::rank`), the share of its recent arrivals shed for want of
    /// room or time, in 1/65,536ths (`wait.rs`).
    pressure: [AtomicU32; 4],
    /// The service time's moving average, in microseconds (0: none settled yet; `wait.rs`).
    service: AtomicU32,
    queue: u32,
    /// `reserved` in millionths.
    reserved: u32,
    codel: CodelConfig,
    retry_after: Duration,
}

/// What [`Inbound::admit`] decided. `P` is how the permit or place holds the admission: a
/// `&Inbound`, or an `Arc<Inbound>` ([`Inbound::admit_by`]) for a permit that outlives a borrow.
#[derive(Debug)]
#[must_use = "a permit or waiting place is given back when dropped"]
pub enum Decision<P: Deref<Target = Inbound>> {
    /// Run it now; settle the permit with the outcome (or drop it: cancelled).
    Admit(InboundPermit<P>),
    /// Wait for a slot, at most until [`QueuePlace::until`]; the driver's [`dispatch`] hands
    /// one over, or the waiter gives up ([`QueuePlace::give_up`]).
    Queue(QueuePlace<P>),
    /// Shed: answer at once (a 503 with `Retry-After`) without running the handler.
    Reject(Shed),
}

impl Inbound {
    crate::sync::const_fn_unless_loom! {
        /// An admission from `config`, or why the config is invalid.
        pub fn new(config: InboundConfig) -> Result<Inbound, InboundConfigError> {
            let reserved = match config::check(&config) {
                Ok(r) => r,
                Err(e) => return Err(e),
            };
            let limiter = match Limiter::new(config.limiter) {
                Ok(l) => l,
                Err(e) => return Err(InboundConfigError::Limiter(e)),
            };
            Ok(Inbound {
                limiter,
                capacity: match &config.capacity {
                    Some(c) => Some(CapacityCell::new(c)),
                    None => None,
                },
                queued: Slots::new(),
                classes: [Slots::new(), Slots::new(), Slots::new(), Slots::new()],
                busy: BusySince::new(config.codel.interval),
                pressure: [
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                ],
                service: AtomicU32::new(0),
                queue: config.queue,
                reserved,
                codel: config.codel,
                retry_after: config.retry_after,
            })
        }
    }

    /// Decides for a request of `priority` arriving at `now` with an optional propagated
    /// `deadline`. Never allocates, never blocks.
    pub fn admit(
        &self,
        now: Instant,
        priority: Priority,
        deadline: Option<Deadline>,
    ) -> Decision<&Inbound> {
        Inbound::admit_by(&self, now, priority, deadline)
    }

    /// [`Inbound::admit`] for an admission held by `this` (an `Arc<Inbound>`, a `&Inbound`):
    /// the permit or place holds a clone of it, so it can outlive any borrow (a spawned task, a
    /// tower response future). Clones only when it admits or queues.
    pub fn admit_by<P: Deref<Target = Inbound> + Clone>(
        this: &P,
        now: Instant,
        priority: Priority,
        deadline: Option<Deadline>,
    ) -> Decision<P> {
        let inbound: &Inbound = this;
        if let Some(d) = deadline
            && !inbound.can_meet(now, d)
        {
            return Decision::Reject(Shed::new(ShedCause::Deadline, None));
        }
        // Newcomers do not pass waiters: while anyone waits, a newcomer queues (and the
        // driver's dispatch serves the most critical first).
        if inbound.queued.held() == 0
            && let Some((n, limit)) = inbound.acquire(Some(priority))
        {
            inbound.arrival(priority, false);
            return Decision::Admit(InboundPermit::new(this.clone(), now, n, limit));
        }
        // It would wait: shed it now if it cannot be served in the time it may wait, or
        // before its deadline (`wait.rs`), rather than when that time runs out.
        let predicted = inbound.predicted_wait(inbound.ahead(priority));
        let wait = inbound.admission_wait(now, priority);
        if predicted > wait {
            inbound.arrival(priority, true);
            return Decision::Reject(inbound.full(now));
        }
        if let Some(d) = deadline
            && !inbound.can_meet(now.saturating_add(predicted), d)
        {
            inbound.arrival(priority, true);
            return Decision::Reject(Shed::new(ShedCause::Deadline, None));
        }
        match inbound
            .queued
            .try_acquire(priority.share_of(inbound.queue, inbound.reserved))
        {
            Ok(n) => {
                inbound.arrival(priority, false);
                inbound.joined(now, priority, n);
                let mut until = now.saturating_add(wait);
                if let Some(d) = deadline {
                    until = until.min(d.instant().saturating_sub(inbound.service_time()));
                }
                Decision::Queue(QueuePlace::new(
                    this.clone(),
                    priority,
                    now,
                    deadline,
                    until,
                ))
            }
            Err(_) => {
                inbound.arrival(priority, true);
                Decision::Reject(inbound.full(now))
            }
        }
    }

    /// A slot for a waiter, under the whole limit whatever its priority (the priority counted
    /// when it queued and counts again in [`dispatch`]'s order), or `None` if none is free.
    pub fn take_slot<P: Deref<Target = Inbound> + Clone>(
        this: &P,
        now: Instant,
    ) -> Option<InboundPermit<P>> {
        let (n, limit) = this.acquire(None)?;
        Some(InboundPermit::new(this.clone(), now, n, limit))
    }

    /// Whether the queue stands at `now`: it holds a waiter and has not been empty for an
    /// interval (Fail at Scale: serve LIFO and allow only `target` of waiting).
    pub fn standing(&self, now: Instant) -> bool {
        self.queued.held() > 0 && self.busy.stood(now)
    }

    /// How long a request of `priority` queued at `now` may wait: `interval` (Fail at Scale's
    /// N), or only `target` (M) for SHEDDABLE and SHEDDABLE_PLUS requests while the queue
    /// stands. Critical requests keep the whole interval (bounded by their deadline): a freed
    /// slot goes to them first, so their wait stays short while the standing queue is made of
    /// sheddable ones (ours: Fail at Scale has one class; with M for every class a burst of
    /// critical requests served newest-first loses its oldest to M). This is the dispatch's
    /// expiry; an arrival waits [`Inbound::admission_wait`], shorter for a criticality that is
    /// overloaded.
    pub fn queue_timeout(&self, now: Instant, priority: Priority) -> Duration {
        if !priority.is_critical() && self.standing(now) {
            self.codel.target
        } else {
            self.codel.interval
        }
    }

    /// Whether a request with `deadline` can still be served in time at `now`: at least a
    /// typical service time ([`Inbound::service_time`]) is left.
    pub fn can_meet(&self, now: Instant, deadline: Deadline) -> bool {
        deadline.instant() > now.saturating_add(self.service_time())
    }

    /// A typical service time: the moving average of settled requests' time in their slot
    /// (admission to settle), weight 1/8 per request, from the first request settled; zero
    /// before any. It forms from the first requests (the limiter's baseline waits for a
    /// window to close), so a server shedding from its first second predicts with it.
    pub fn service_time(&self) -> Duration {
        Duration::from_micros(u64::from(self.service.load(Ordering::Relaxed)))
    }

    /// The concurrency limit in force: the adaptive capacity's ([`CapacityRule`]) under the
    /// limiter's, or the limiter's.
    pub fn limit(&self) -> u32 {
        let limit = self.limiter.limit();
        match &self.capacity {
            Some(c) => limit.min(c.limit()),
            None => limit,
        }
    }

    /// The adaptive capacity's state (its limit, floor and probe), if the config has one.
    pub fn capacity(&self) -> Option<CapacityRule> {
        self.capacity.as_ref().map(CapacityCell::rule)
    }

    /// A slot under the limit in force, or under `priority`'s share of it; answers the count
    /// in flight with it and the limit it was taken under.
    fn acquire(&self, priority: Option<Priority>) -> Option<(u32, u32)> {
        let cap = self.capacity.as_ref().map_or(u32::MAX, CapacityCell::limit);
        let (n, limit) = self.limiter.acquire_within(|limit| {
            let limit = limit.min(cap);
            match priority {
                Some(p) => p.share_of(limit, self.reserved),
                None => limit,
            }
        })?;
        Some((n, limit.min(cap)))
    }

    /// Requests admitted and not yet settled or dropped (a snapshot).
    pub fn in_flight(&self) -> u32 {
        self.limiter.in_flight()
    }

    /// Requests holding a place in the queue (a snapshot).
    pub fn waiting(&self) -> u32 {
        self.queued.held()
    }

    /// The CoDel parameters, for the driver's [`Codel`].
    pub const fn codel_config(&self) -> CodelConfig {
        self.codel
    }

    /// The limiter underneath (its limit, baseline and in-flight count).
    pub const fn limiter(&self) -> &Limiter {
        &self.limiter
    }

    fn full(&self, now: Instant) -> Shed {
        Shed::new(
            ShedCause::QueueFull,
            Some(now.saturating_add(self.retry_after)),
        )
    }

    fn retry_at(&self, now: Instant) -> Option<Instant> {
        Some(now.saturating_add(self.retry_after))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, not(loom)))]
mod tests_capacity;
#[cfg(all(test, not(loom)))]
mod tests_wait;
