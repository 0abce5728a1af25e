//! Who gets a freed slot: the one dequeue rule, shared by every driver's queue.
//!
//! A driver keeps its waiting requests (tasks, simulated requests) in a container of its own,
//! one FIFO line per [`Priority`], behind its own lock, and exposes it as a [`Backlog`]. When a
//! slot may have freed (a request finished, a request joined the queue), it calls [`dispatch`]
//! under that lock. Each step ([`Inbound::next_step`]) is pure over the admission's state, the
//! [`Codel`] state and the backlog's ends:
//!
//! 1. nobody waits: [`Step::Empty`] (CoDel leaves its dropping state);
//! 2. the oldest waiter of some class has waited its time (`interval`, or `target` for a
//!    sheddable class while the queue stands) or can no longer meet its deadline: drop it;
//! 3. otherwise the candidate is the most critical class's oldest waiter, or its newest while
//!    the queue stands and that oldest brought no deadline (adaptive LIFO: under a standing
//!    queue the newest request has the most of its time left, and the oldest are the ones
//!    whose clients are giving up; a line of requests with deadlines is served oldest first,
//!    which is earliest deadline first, and each was admitted only if its predicted start
//!    left it time, so LIFO would only make the oldest miss a deadline they could meet);
//! 4. a candidate that cannot meet its deadline is dropped;
//! 5. a SHEDDABLE or SHEDDABLE_PLUS candidate goes through [`Codel`], which sees its sojourn:
//!    drop it (the delay has stood above target for an interval) or serve it. A CRITICAL or
//!    CRITICAL_PLUS candidate is served: it was admitted only with a predicted wait within
//!    its time, and dropping it after it waited would answer it late and lose a request a FIFO
//!    would have served (issue 36); the overloaded queue's short wait bounds its queue instead.
//!
//! A drop is answered at once ([`ShedCause`]); the next step follows at the same instant, as
//! RFC 8289's dequeue loop does.

use core::ops::Deref;

use super::{Codel, Inbound, InboundPermit, Pop, Priority, ShedCause};
use crate::time::{Deadline, Instant};

/// Which end of a priority's line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum End {
    /// The request that has waited longest.
    Oldest,
    /// The request that joined last.
    Newest,
}

/// What dispatch needs to know of a waiting request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Waiting {
    /// When it joined the queue ([`QueuePlace::since`](super::QueuePlace::since)).
    pub since: Instant,
    /// Its propagated deadline.
    pub deadline: Option<Deadline>,
}

/// One dispatch step's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Step {
    /// Hand the slot to the request at `end` of `priority`'s line.
    Serve {
        /// Its line.
        priority: Priority,
        /// Which end.
        end: End,
    },
    /// Shed the request at `end` of `priority`'s line, and step again.
    Drop {
        /// Its line.
        priority: Priority,
        /// Which end.
        end: End,
        /// Why.
        cause: ShedCause,
    },
    /// Nobody waits.
    Empty,
}

/// A driver's waiting requests: one line per priority, in order of arrival.
///
/// ```
/// use std::collections::VecDeque;
/// use resilix::inbound::{Backlog, End, Priority, Waiting};
///
/// /// Waiting requests, one line per priority (`Priority::rank` indexes them).
/// struct Lines([VecDeque<Waiting>; 4]);
///
/// impl Backlog for Lines {
///     type Item = Waiting;
///     fn len(&self) -> usize {
///         self.0.iter().map(VecDeque::len).sum()
///     }
///     fn peek(&self, p: Priority, end: End) -> Option<Waiting> {
///         let line = &self.0[p.rank() as usize];
///         match end { End::Oldest => line.front(), End::Newest => line.back() }.copied()
///     }
///     fn take(&mut self, p: Priority, end: End) -> Option<Waiting> {
///         let line = &mut self.0[p.rank() as usize];
///         match end { End::Oldest => line.pop_front(), End::Newest => line.pop_back() }
///     }
/// }
/// ```
pub trait Backlog {
    /// What the driver keeps per waiting request (its place, how to wake it).
    type Item;
    /// Requests waiting, in every line.
    fn len(&self) -> usize;
    /// The request at `end` of `priority`'s line, if any.
    fn peek(&self, priority: Priority, end: End) -> Option<Waiting>;
    /// Removes and returns the request at `end` of `priority`'s line.
    fn take(&mut self, priority: Priority, end: End) -> Option<Self::Item>;
    /// Whether nobody waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inbound {
    /// The next dispatch step at `now` (the dequeue rule: expire, most critical class, oldest
    /// or newest while standing, deadline, CoDel). Advances `codel` when it judges a candidate
    /// or finds the backlog empty; call it only with a slot in hand (or with an empty
    /// backlog), and apply its decision before the next step.
    pub fn next_step<B: Backlog + ?Sized>(
        &self,
        codel: &mut Codel,
        now: Instant,
        backlog: &B,
    ) -> Step {
        let len = backlog.len();
        if len == 0 {
            codel.empty(now);
            return Step::Empty;
        }
        let standing = self.standing(now);
        let mut first = None;
        for priority in Priority::ALL {
            let Some(w) = backlog.peek(priority, End::Oldest) else {
                continue;
            };
            if let Some(cause) = self.expired(now, w, self.queue_timeout(now, priority)) {
                return Step::Drop {
                    priority,
                    end: End::Oldest,
                    cause,
                };
            }
            first = first.or(Some(priority));
        }
        let Some(priority) = first else {
            // A backlog whose lines disagree with its length: nothing to serve.
            codel.empty(now);
            return Step::Empty;
        };
        let end = match backlog.peek(priority, End::Oldest) {
            Some(oldest) if standing && oldest.deadline.is_none() => End::Newest,
            _ => End::Oldest,
        };
        let Some(w) = backlog.peek(priority, end) else {
            return Step::Empty;
        };
        if let Some(d) = w.deadline
            && !self.can_meet(now, d)
        {
            return Step::Drop {
                priority,
                end,
                cause: ShedCause::Deadline,
            };
        }
        if priority.is_critical() {
            return Step::Serve { priority, end };
        }
        match codel.pop(now, now.saturating_duration_since(w.since), len - 1) {
            Pop::Drop => Step::Drop {
                priority,
                end,
                cause: ShedCause::QueueDelay,
            },
            Pop::Serve => Step::Serve { priority, end },
        }
    }

    fn expired(
        &self,
        now: Instant,
        w: Waiting,
        timeout: core::time::Duration,
    ) -> Option<ShedCause> {
        match w.deadline {
            Some(d) if !self.can_meet(now, d) => Some(ShedCause::Deadline),
            _ if now.saturating_duration_since(w.since) >= timeout => Some(ShedCause::QueueTimeout),
            _ => None,
        }
    }
}

/// Hands free slots to waiting requests at `now` until no slot is free or nobody waits,
/// shedding the ones [`Inbound::next_step`] drops. `serve` gets each chosen request with its
/// permit and answers `Err(permit)` if the request can no longer take it (its waiter left):
/// the slot then goes to the next. `shed` gets each dropped request and why. Answers how many
/// were served.
///
/// Call it under the lock that guards `backlog`, after every release of a slot and after every
/// request joins the queue: a slot freed before a request joined is then seen by the join's
/// dispatch, and one freed after by the release's, so no waiter sleeps beside a free slot.
///
/// ```
/// use std::collections::VecDeque;
/// use resilix::inbound::{dispatch, Backlog, Codel, Decision, End, Inbound, InboundConfig};
/// use resilix::inbound::{Priority, QueuePlace, Waiting};
/// use resilix::time::Instant;
///
/// struct Line<'a>(VecDeque<QueuePlace<&'a Inbound>>);
/// impl<'a> Backlog for Line<'a> {
///     type Item = QueuePlace<&'a Inbound>;
///     fn len(&self) -> usize { self.0.len() }
///     fn peek(&self, _: Priority, end: End) -> Option<Waiting> {
///         let p = match end { End::Oldest => self.0.front(), End::Newest => self.0.back() }?;
///         Some(Waiting { since: p.since(), deadline: p.deadline() })
///     }
///     fn take(&mut self, _: Priority, end: End) -> Option<Self::Item> {
///         match end { End::Oldest => self.0.pop_front(), End::Newest => self.0.pop_back() }
///     }
/// }
///
/// let inbound = Inbound::new(InboundConfig::fixed(1)).unwrap();
/// let mut codel = Codel::new(inbound.codel_config());
/// let now = Instant::from_secs(1);
/// let Decision::Admit(running) = inbound.admit(now, Priority::Critical, None) else { panic!() };
/// let Decision::Queue(place) = inbound.admit(now, Priority::Critical, None) else { panic!() };
/// let mut line = Line(VecDeque::from([place]));
/// let mut started = Vec::new();
/// let serve = |_place, permit| { started.push(permit); Ok(()) };
/// assert_eq!(dispatch(&&inbound, &mut codel, now, &mut line, serve, |_, _| {}), 0, "no slot");
/// drop(running);
/// let serve = |_place, permit| { started.push(permit); Ok(()) };
/// assert_eq!(dispatch(&&inbound, &mut codel, now, &mut line, serve, |_, _| {}), 1);
/// assert_eq!((inbound.in_flight(), inbound.waiting()), (1, 0));
/// ```
pub fn dispatch<P, B>(
    this: &P,
    codel: &mut Codel,
    now: Instant,
    backlog: &mut B,
    mut serve: impl FnMut(B::Item, InboundPermit<P>) -> Result<(), InboundPermit<P>>,
    mut shed: impl FnMut(B::Item, ShedCause),
) -> usize
where
    P: Deref<Target = Inbound> + Clone,
    B: Backlog + ?Sized,
{
    let mut served = 0;
    let mut slot = None;
    loop {
        if backlog.is_empty() {
            codel.empty(now);
            break;
        }
        let permit = match slot.take() {
            Some(p) => p,
            None => match Inbound::take_slot(this, now) {
                Some(p) => p,
                None => break,
            },
        };
        match this.next_step(codel, now, backlog) {
            Step::Empty => break,
            Step::Drop {
                priority,
                end,
                cause,
            } => {
                slot = Some(permit);
                if let Some(item) = backlog.take(priority, end) {
                    shed(item, cause);
                }
            }
            Step::Serve { priority, end } => match backlog.take(priority, end) {
                Some(item) => match serve(item, permit) {
                    Ok(()) => served += 1,
                    Err(p) => slot = Some(p),
                },
                None => slot = Some(permit),
            },
        }
    }
    served
}
