//! A running request's slot and a waiting request's place: linear, given back when dropped.

use core::ops::Deref;

use super::{Inbound, Priority, Shed, ShedCause};
use crate::observe::Observer;
use crate::permit::{Env, Permit};
use crate::random::Random;
use crate::time::{Deadline, Instant};
use crate::verdict::Verdict;

/// An admitted request's slot. Settle it with the handler's outcome (its latency is the
/// limiter's sample; a `Rejected` verdict records nothing), or drop it: cancelled, the slot
/// comes back and nothing is recorded.
///
/// ```
/// use resilix::inbound::{Decision, Inbound, InboundConfig, Priority};
/// use resilix::permit::{Env, Permit};
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let inbound = Inbound::new(InboundConfig::fixed(1)).unwrap();
/// let Decision::Admit(p) = inbound.admit(Instant::ZERO, Priority::Sheddable, None) else {
///     panic!()
/// };
/// assert_eq!((p.in_flight_at_admission(), p.limit_at_admission()), (1, 1));
/// let mut rng = SeededRandom::new(3);
/// p.settle(&Verdict::Success, &mut Env::new(Instant::from_millis(2), &mut rng));
/// assert_eq!(inbound.in_flight(), 0);
/// ```
#[derive(Debug)]
#[must_use = "settle the permit with the outcome; dropping it records a cancellation"]
pub struct InboundPermit<P: Deref<Target = Inbound>> {
    /// `None` once settled (so the drop gives nothing back twice).
    inbound: Option<P>,
    admitted_at: Instant,
    in_flight: u32,
    limit: u32,
}

impl<P: Deref<Target = Inbound>> InboundPermit<P> {
    pub(super) fn new(inbound: P, admitted_at: Instant, in_flight: u32, limit: u32) -> Self {
        InboundPermit {
            inbound: Some(inbound),
            admitted_at,
            in_flight,
            limit,
        }
    }

    /// When it was admitted.
    pub fn admitted_at(&self) -> Instant {
        self.admitted_at
    }

    /// Requests in flight at admission, this one included.
    pub fn in_flight_at_admission(&self) -> u32 {
        self.in_flight
    }

    /// The limit in force at admission.
    pub fn limit_at_admission(&self) -> u32 {
        self.limit
    }
}

impl<P: Deref<Target = Inbound>> Permit for InboundPermit<P> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let Some(inbound) = self.inbound.take() {
            inbound.record_service(env.now.saturating_duration_since(self.admitted_at));
            if let (Some(c), Verdict::Success | Verdict::Answered) = (&inbound.capacity, verdict) {
                c.record(env.now, self.admitted_at, self.in_flight, self.limit);
            }
            inbound.limiter.release_slot();
            inbound
                .limiter
                .record_outcome(self.admitted_at, self.in_flight, verdict, env);
        }
    }
}

impl<P: Deref<Target = Inbound>> Drop for InboundPermit<P> {
    fn drop(&mut self) {
        if let Some(inbound) = self.inbound.take() {
            inbound.limiter.release_slot();
        }
    }
}

/// A waiting request's place in the queue. Dropping it gives the place back.
///
/// ```
/// use core::time::Duration;
/// use resilix::inbound::{Decision, Inbound, InboundConfig, Priority, ShedCause};
/// use resilix::time::{Deadline, Instant};
///
/// let inbound = Inbound::new(InboundConfig::fixed(1)).unwrap();
/// let now = Instant::from_secs(5);
/// let _running = inbound.admit(now, Priority::Critical, None);
/// let deadline = Deadline::after(now, Duration::from_millis(30));
/// let Decision::Queue(place) = inbound.admit(now, Priority::Critical, Some(deadline)) else {
///     panic!()
/// };
/// // The deadline is nearer than the queue's 100 ms: it bounds the wait.
/// assert_eq!(place.until(), deadline.instant());
/// assert_eq!(place.give_up(deadline.instant()).cause(), ShedCause::Deadline);
/// assert_eq!(inbound.waiting(), 0);
/// ```
#[derive(Debug)]
#[must_use = "dropping a waiting place gives it back"]
pub struct QueuePlace<P: Deref<Target = Inbound>> {
    /// `None` once turned into a permit.
    inbound: Option<P>,
    priority: Priority,
    since: Instant,
    deadline: Option<Deadline>,
    until: Instant,
}

impl<P: Deref<Target = Inbound>> QueuePlace<P> {
    pub(super) fn new(
        inbound: P,
        priority: Priority,
        since: Instant,
        deadline: Option<Deadline>,
        until: Instant,
    ) -> Self {
        QueuePlace {
            inbound: Some(inbound),
            priority,
            since,
            deadline,
            until,
        }
    }

    /// The request's priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// When it started waiting.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Its propagated deadline, if it has one.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// The latest instant it may wait until: then it gives up ([`QueuePlace::give_up`]).
    pub fn until(&self) -> Instant {
        self.until
    }

    /// Takes a slot under the whole limit if one is free, giving the place back; otherwise
    /// returns the place to keep waiting with. (A driver using [`dispatch`](super::dispatch)
    /// takes the slot itself; this is for a waiter polling on its own.)
    pub fn try_admit(mut self, now: Instant) -> Result<InboundPermit<P>, QueuePlace<P>> {
        let Some(inbound) = self.inbound.take() else {
            return Err(self);
        };
        match inbound.acquire(None) {
            Some((n, limit)) => {
                inbound.left(self.priority);
                Ok(InboundPermit::new(inbound, now, n, limit))
            }
            None => {
                self.inbound = Some(inbound);
                Err(self)
            }
        }
    }

    /// Gives up waiting at `now` (its wait is over, or its deadline cannot be met), giving the
    /// place back, and says why: the refusal to answer with.
    pub fn give_up(self, now: Instant) -> Shed {
        match (self.deadline, self.inbound.as_deref()) {
            (Some(d), Some(inbound)) if !inbound.can_meet(now, d) => {
                Shed::new(ShedCause::Deadline, None)
            }
            _ => self.shed(ShedCause::QueueTimeout, now),
        }
    }

    /// Leaves the queue with `cause` (the driver's dispatch dropped it), giving the place back.
    pub fn shed(self, cause: ShedCause, now: Instant) -> Shed {
        match (cause, self.inbound.as_deref()) {
            (ShedCause::Deadline, _) | (_, None) => Shed::new(cause, None),
            (_, Some(inbound)) => Shed::new(cause, inbound.retry_at(now)),
        }
    }
}

impl<P: Deref<Target = Inbound>> Drop for QueuePlace<P> {
    fn drop(&mut self) {
        if let Some(inbound) = self.inbound.take() {
            inbound.left(self.priority);
        }
    }
}
