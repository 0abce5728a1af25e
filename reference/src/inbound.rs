//! The inbound admission, plainly, beside the real [`Inbound`]; and RFC 8289's CoDel
//! transcribed line for line, beside the core's per-pop [`Codel`].
//!
//! What is written plainly here:
//!
//! * **time**: instants are `u64` nanoseconds. "Busy since" is the instant the queue last
//!   went from empty to one waiter, kept whole; the queue stands when it holds a waiter and
//!   `⌊now / tick⌋ − ⌊busy / tick⌋ ≥ ⌈interval / tick⌉`, the one thing kept from the real
//!   admission being its documented resolution (the finest tick of at least 4 ns on which the
//!   interval is below 2^31 ticks).
//! * **the limit**: the limiter's own model ([`crate::limiter::Model`]), with a slot taken
//!   only while `in_flight < share(limit)`.
//! * **shares**: `total − ⌊total · reserved · rank / 3⌋` on plain integers, `reserved` in
//!   millionths.
//! * **the queue**: four lines of waiting requests in arrival order; the dispatch rule
//!   (expire the oldest per line (M only for sheddable lines), then the most critical line's
//!   oldest, or its newest while the queue stands and that oldest has no deadline, then its
//!   deadline, then CoDel for sheddable lines only) re-stated over them.
//! * **early shedding**: a newcomer that would wait is shed at once when
//!   `(waiters of its criticality or more + 1) × service / limit` is longer than it may wait
//!   or would take it past its deadline; the shed pressure is `p ← p − ⌊p / 256⌋ (+ 256 if the
//!   arrival was shed for room or time)`, one per criticality over its arrivals decided past
//!   the first deadline check, and above 32,768 (one half) that criticality may wait only
//!   `target`, or the service time if known and shorter.
//! * **the service time**: the average of settled requests' time in their slot, in whole µs,
//!   `(7 × average + taken) / 8` after the first (which sets it); cancelled requests say
//!   nothing.
//!
//! What is shared rather than re-stated: the per-pop CoDel controller ([`Codel`]) — it is held
//! to [`RfcCodel`], the RFC's pseudocode over a packet queue, by its own differential test and by
//! the simulator's `inbound` experiment — and the limiter's rules (see its model). The limiter
//! models' randomness: the twin refuses configs that refresh the baseline (which draws), so
//! settle draws nothing on either side.

use core::time::Duration;
use std::collections::VecDeque;

use resilix::inbound::{
    Backlog, Codel, CodelConfig, Decision, End, Inbound, InboundConfig, InboundPermit, Pop,
    Priority, QueuePlace, Shed, ShedCause, Waiting, dispatch,
};
use resilix::permit::{Env, Permit};
use resilix::random::Random;
use resilix::time::{Deadline, Instant};
use resilix::verdict::Verdict;

use crate::limiter::{Model as LimiterModel, ModelPermit};

mod capacity;
use crate::timeline::Timeline;
use crate::twin::{Mismatch, Mix};
pub use capacity::CapacityModel;

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

// ---------------------------------------------------------------------------------------------
// RFC 8289, §5, line for line.

/// RFC 8289's CoDel over a queue of packets of one unit each (`MAXPACKET` = one packet): the
/// pseudocode of §5 with its variable names, `first_above_time == 0` meaning "unset" and
/// signed time for `now - drop_next`. The control law is `t + ⌊INTERVAL / √count⌋` in whole
/// nanoseconds (the RFC's `INTERVAL / sqrt(count)`, truncated to the clock's unit).
#[derive(Clone, Debug)]
pub struct RfcCodel {
    target: u64,
    interval: u64,
    first_above_time: u64,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
    queue: VecDeque<u64>,
}

impl RfcCodel {
    /// An empty queue with CoDel's `TARGET` and `INTERVAL`.
    pub fn new(config: CodelConfig) -> RfcCodel {
        RfcCodel {
            target: nanos(config.target),
            interval: nanos(config.interval),
            first_above_time: 0,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
            queue: VecDeque::new(),
        }
    }

    /// A packet arrives, stamped `tstamp`.
    pub fn enqueue(&mut self, tstamp: u64) {
        self.queue.push_back(tstamp);
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// RFC `count`.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// RFC `dropping`.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    fn control_law(&self, t: u64, count: u32) -> u64 {
        // ⌊INTERVAL / √count⌋ = ⌊√⌊INTERVAL² / count⌋⌋, written out with Newton's method.
        let square =
            u128::from(self.interval) * u128::from(self.interval) / u128::from(count.max(1));
        let mut x = square;
        if x > 1 {
            let mut y = (x + square / x) / 2;
            while y < x {
                x = y;
                y = (x + square / x) / 2;
            }
        }
        t.saturating_add(x as u64)
    }

    /// RFC `dodequeue()`: the packet at the head, and whether it is ok to drop.
    fn dodequeue(&mut self, now: u64) -> (Option<u64>, bool) {
        let Some(p) = self.queue.pop_front() else {
            self.first_above_time = 0;
            return (None, false);
        };
        let sojourn_time = now.saturating_sub(p);
        let mut ok_to_drop = false;
        if sojourn_time < self.target || self.queue.len() <= 1 {
            self.first_above_time = 0;
        } else if self.first_above_time == 0 {
            self.first_above_time = now.saturating_add(self.interval);
        } else if now >= self.first_above_time {
            ok_to_drop = true;
        }
        (Some(p), ok_to_drop)
    }

    /// RFC `dequeue()` at `now`: the packet sent (its stamp), and the stamps dropped.
    pub fn dequeue(&mut self, now: u64) -> (Option<u64>, Vec<u64>) {
        let mut dropped = Vec::new();
        let (mut p, mut ok_to_drop) = self.dodequeue(now);
        if p.is_none() {
            self.dropping = false;
            return (p, dropped);
        }
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while now >= self.drop_next && self.dropping {
                dropped.extend(p);
                self.count = self.count.saturating_add(1);
                (p, ok_to_drop) = self.dodequeue(now);
                if !ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                }
            }
        } else if ok_to_drop {
            dropped.extend(p);
            (p, _) = self.dodequeue(now);
            self.dropping = true;
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            if delta > 1
                && (i128::from(now) - i128::from(self.drop_next)) < 16 * i128::from(self.interval)
            {
                self.count = delta;
            }
            self.drop_next = self.control_law(now, self.count);
            self.lastcount = self.count;
        }
        (p, dropped)
    }
}

/// The core's per-pop [`Codel`] driven as RFC `dequeue()` would be: pop until a packet is
/// served or the queue is empty, at one instant. Answers what [`RfcCodel::dequeue`] answers.
pub fn per_pop_dequeue(
    codel: &mut Codel,
    queue: &mut VecDeque<u64>,
    now: u64,
) -> (Option<u64>, Vec<u64>) {
    let mut dropped = Vec::new();
    loop {
        let Some(p) = queue.pop_front() else {
            codel.empty(Instant::from_nanos(now));
            return (None, dropped);
        };
        let sojourn = Duration::from_nanos(now.saturating_sub(p));
        match codel.pop(Instant::from_nanos(now), sojourn, queue.len()) {
            Pop::Drop => dropped.push(p),
            Pop::Serve => return (Some(p), dropped),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The admission, plainly.

/// What the model decided for an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelDecision {
    /// Admitted, with the limiter model's permit.
    Admit(ModelPermit),
    /// Queued until `until` (ns).
    Queue {
        /// The latest instant it waits to.
        until: u64,
    },
    /// Shed.
    Reject {
        /// Why.
        cause: ShedCause,
        /// When to come back (ns).
        retry_at: Option<u64>,
    },
}

/// A waiting request in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelWaiter {
    /// The twin's number for it.
    pub id: u64,
    /// Its priority.
    pub priority: Priority,
    /// When it joined (ns).
    pub since: u64,
    /// Its deadline (ns).
    pub deadline: Option<u64>,
    /// When it gives up (ns).
    pub until: u64,
}

/// The inbound admission, plainly.
#[derive(Clone, Debug)]
pub struct Model {
    /// The limit and in-flight count.
    pub limiter: LimiterModel,
    /// The adaptive limit under the limiter's, if configured.
    pub capacity: Option<CapacityModel>,
    queue: u64,
    reserved: u64,
    target: u64,
    interval: u64,
    retry_after: u64,
    shift: u32,
    interval_ticks: u64,
    /// Requests holding a waiting place.
    pub waiting: u64,
    busy_since: u64,
    /// Per criticality (`Priority::rank`), the share of its recent arrivals shed for room or
    /// time, in 1/65,536ths.
    pressure: [u64; 4],
    /// The service time's average (µs; 0 before any request settled).
    pub service_us: u64,
    /// The waiting requests, one line per priority (`Priority::rank`).
    pub lines: [VecDeque<ModelWaiter>; 4],
    /// The model's CoDel (the core's controller; see the module docs).
    pub codel: Codel,
}

impl Model {
    /// The model of an admission built from `c` (a config the real one accepts).
    pub fn new(c: &InboundConfig) -> Model {
        let interval = nanos(c.codel.interval);
        let mut shift = 2;
        while shift < 63 && (interval >> shift) >= 1 << 31 {
            shift += 1;
        }
        Model {
            limiter: LimiterModel::new(&c.limiter),
            capacity: c.capacity.as_ref().map(CapacityModel::new),
            queue: u64::from(c.queue),
            reserved: ((f64::from(c.reserved) * 1e6 + 0.5) as u64).min(999_999),
            target: nanos(c.codel.target),
            interval,
            retry_after: nanos(c.retry_after),
            shift,
            interval_ticks: interval.div_ceil(1 << shift),
            waiting: 0,
            busy_since: 0,
            pressure: [0; 4],
            service_us: 0,
            lines: Default::default(),
            codel: Codel::new(c.codel),
        }
    }

    /// The limit in force: the capacity's under the limiter's.
    pub fn limit(&self) -> u64 {
        let limit = self.limiter.whole_limit();
        match &self.capacity {
            Some(c) => limit.min(c.limit()),
            None => limit,
        }
    }

    /// `total − ⌊total · reserved · rank / 3⌋`.
    pub fn share(&self, total: u64, p: Priority) -> u64 {
        total - total * self.reserved * u64::from(p.rank()) / 3_000_000
    }

    /// The typical service time (ns): the average of settled requests' time in their slot.
    pub fn service(&self) -> u64 {
        self.service_us * 1_000
    }

    /// A request admitted at `admitted` (ns) settles at `now`: the average moves to
    /// `(7 × average + µs taken) / 8`, truncated, or is set by the first.
    pub fn settled(&mut self, admitted: u64, now: u64) {
        let took = (now.saturating_sub(admitted) / 1_000).min(u64::from(u32::MAX));
        let next = if self.service_us == 0 {
            took
        } else {
            (7 * self.service_us + took) / 8
        };
        self.service_us = next.min(u64::from(u32::MAX));
    }

    fn can_meet(&self, now: u64, deadline: u64) -> bool {
        deadline > now.saturating_add(self.service())
    }

    /// Whether the queue stands at `now`.
    pub fn standing(&self, now: u64) -> bool {
        self.waiting > 0
            && (now >> self.shift).saturating_sub(self.busy_since >> self.shift)
                >= self.interval_ticks
    }

    fn timeout(&self, now: u64, p: Priority) -> u64 {
        if !p.is_critical() && self.standing(now) {
            self.target
        } else {
            self.interval
        }
    }

    /// Waiters of `p`'s criticality or more.
    pub fn ahead(&self, p: Priority) -> u64 {
        self.lines[..=p.rank() as usize]
            .iter()
            .map(|l| l.len() as u64)
            .sum()
    }

    /// `(ahead + 1) × service / limit` (ns).
    pub fn predicted(&self, ahead: u64) -> u64 {
        let limit = u128::from(self.limit().max(1));
        let w = u128::from(self.service()) * (u128::from(ahead) + 1) / limit;
        w.min(u128::from(u64::MAX)) as u64
    }

    /// Whether more than half of `p`'s recent arrivals were shed for room or time.
    pub fn overloaded(&self, p: Priority) -> bool {
        self.pressure[p.rank() as usize] > 32_768
    }

    /// One more arrival of `p`: `x − ⌊x / 256⌋`, plus 256 if it was shed.
    fn arrival(&mut self, p: Priority, shed: bool) {
        let x = &mut self.pressure[p.rank() as usize];
        *x = *x - *x / 256 + if shed { 256 } else { 0 };
    }

    fn admission_wait(&self, now: u64, p: Priority) -> u64 {
        if self.overloaded(p) {
            match self.service() {
                0 => self.target,
                s => self.target.min(s),
            }
        } else {
            self.timeout(now, p)
        }
    }

    fn full(&mut self, now: u64, p: Priority) -> ModelDecision {
        self.arrival(p, true);
        ModelDecision::Reject {
            cause: ShedCause::QueueFull,
            retry_at: Some(now.saturating_add(self.retry_after)),
        }
    }

    /// An arrival of `priority` at `now` with `deadline` (ns).
    pub fn admit(&mut self, now: u64, priority: Priority, deadline: Option<u64>) -> ModelDecision {
        if let Some(d) = deadline
            && !self.can_meet(now, d)
        {
            return ModelDecision::Reject {
                cause: ShedCause::Deadline,
                retry_at: None,
            };
        }
        if self.waiting == 0 && self.limiter.in_flight < self.share(self.limit(), priority) {
            self.arrival(priority, false);
            return ModelDecision::Admit(self.limiter.admit(now).expect("under the limit"));
        }
        let predicted = self.predicted(self.ahead(priority));
        let wait = self.admission_wait(now, priority);
        if predicted > wait {
            return self.full(now, priority);
        }
        if let Some(d) = deadline
            && !self.can_meet(now.saturating_add(predicted), d)
        {
            self.arrival(priority, true);
            return ModelDecision::Reject {
                cause: ShedCause::Deadline,
                retry_at: None,
            };
        }
        if self.waiting < self.share(self.queue, priority) {
            self.arrival(priority, false);
            self.waiting += 1;
            if self.waiting == 1 {
                self.busy_since = now;
            }
            let mut until = now.saturating_add(wait);
            if let Some(d) = deadline {
                until = until.min(d.saturating_sub(self.service()));
            }
            return ModelDecision::Queue { until };
        }
        self.full(now, priority)
    }

    /// The refusal a waiter leaving with `cause` at `now` gets.
    pub fn shed(&self, cause: ShedCause, now: u64) -> (ShedCause, Option<u64>) {
        match cause {
            ShedCause::Deadline => (cause, None),
            _ => (cause, Some(now.saturating_add(self.retry_after))),
        }
    }

    /// Waiter `w` gives up at `now` (its `until` came): leaves its line, and why.
    pub fn give_up(&mut self, w: ModelWaiter, now: u64) -> (ShedCause, Option<u64>) {
        self.leave(w.id);
        match w.deadline {
            Some(d) if !self.can_meet(now, d) => (ShedCause::Deadline, None),
            _ => self.shed(ShedCause::QueueTimeout, now),
        }
    }

    fn leave(&mut self, id: u64) {
        for line in &mut self.lines {
            line.retain(|w| w.id != id);
        }
        self.waiting -= 1;
    }

    fn take(&mut self, p: Priority, end: End) -> ModelWaiter {
        let line = &mut self.lines[p.rank() as usize];
        let w = match end {
            End::Oldest => line.pop_front(),
            End::Newest => line.pop_back(),
        };
        self.waiting -= 1;
        w.expect("a waiter at that end")
    }

    /// Hands free slots to waiters at `now`: the served (with their permits and the count in
    /// flight with each) and the shed, in order.
    #[allow(clippy::type_complexity)]
    pub fn dispatch(
        &mut self,
        now: u64,
    ) -> (
        Vec<(u64, ModelPermit, u64)>,
        Vec<(u64, ShedCause, Option<u64>)>,
    ) {
        let mut served = Vec::new();
        let mut shed = Vec::new();
        loop {
            let len: usize = self.lines.iter().map(VecDeque::len).sum();
            if len == 0 {
                self.codel.empty(Instant::from_nanos(now));
                break;
            }
            if self.limiter.in_flight >= self.limit() {
                break;
            }
            let standing = self.standing(now);
            let mut dropped = None;
            for p in Priority::ALL {
                if let Some(w) = self.lines[p.rank() as usize].front() {
                    if let Some(d) = w.deadline
                        && !self.can_meet(now, d)
                    {
                        dropped = Some((p, End::Oldest, ShedCause::Deadline));
                    } else if now.saturating_sub(w.since) >= self.timeout(now, p) {
                        dropped = Some((p, End::Oldest, ShedCause::QueueTimeout));
                    }
                    if dropped.is_some() {
                        break;
                    }
                }
            }
            let step = match dropped {
                Some(d) => Some(d),
                None => {
                    let p = Priority::ALL
                        .into_iter()
                        .find(|p| !self.lines[p.rank() as usize].is_empty())
                        .expect("a waiter");
                    let line = &self.lines[p.rank() as usize];
                    let oldest = *line.front().expect("a waiter");
                    let (end, w) = if standing && oldest.deadline.is_none() {
                        (End::Newest, *line.back().expect("a waiter"))
                    } else {
                        (End::Oldest, oldest)
                    };
                    let sojourn = Duration::from_nanos(now.saturating_sub(w.since));
                    if w.deadline.is_some_and(|d| !self.can_meet(now, d)) {
                        Some((p, end, ShedCause::Deadline))
                    } else if p.is_critical() {
                        let w = self.take(p, end);
                        let permit = self.limiter.admit(now).expect("a free slot");
                        served.push((w.id, permit, self.limiter.in_flight));
                        None
                    } else {
                        match self.codel.pop(Instant::from_nanos(now), sojourn, len - 1) {
                            Pop::Drop => Some((p, end, ShedCause::QueueDelay)),
                            Pop::Serve => {
                                let w = self.take(p, end);
                                let permit = self.limiter.admit(now).expect("a free slot");
                                served.push((w.id, permit, self.limiter.in_flight));
                                None
                            }
                        }
                    }
                }
            };
            if let Some((p, end, cause)) = step {
                let w = self.take(p, end);
                let (cause, retry_at) = self.shed(cause, now);
                shed.push((w.id, cause, retry_at));
            }
        }
        (served, shed)
    }
}

// ---------------------------------------------------------------------------------------------
// The twin.

/// The real admission's waiting places, one line per priority, numbered as the twin's.
#[derive(Debug, Default)]
struct Lines<'a>([VecDeque<(u64, QueuePlace<&'a Inbound>)>; 4]);

impl<'a> Backlog for Lines<'a> {
    type Item = (u64, QueuePlace<&'a Inbound>);
    fn len(&self) -> usize {
        self.0.iter().map(VecDeque::len).sum()
    }
    fn peek(&self, p: Priority, end: End) -> Option<Waiting> {
        let line = &self.0[p.rank() as usize];
        let (_, w) = match end {
            End::Oldest => line.front(),
            End::Newest => line.back(),
        }?;
        Some(Waiting {
            since: w.since(),
            deadline: w.deadline(),
        })
    }
    fn take(&mut self, p: Priority, end: End) -> Option<Self::Item> {
        let line = &mut self.0[p.rank() as usize];
        match end {
            End::Oldest => line.pop_front(),
            End::Newest => line.pop_back(),
        }
    }
}

/// What a differential run did (for checking that it was not vacuous).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboundReport {
    /// Steps taken.
    pub steps: u64,
    /// Arrivals admitted at once.
    pub admitted: u64,
    /// Arrivals queued.
    pub queued: u64,
    /// Arrivals shed at once.
    pub rejected: u64,
    /// Waiters served by dispatch.
    pub served: u64,
    /// Waiters shed, by [`ShedCause`] (`ShedCause::ALL` order), at dispatch or on giving up.
    pub shed: [u64; 4],
    /// Dispatches that found the queue standing.
    pub standing: u64,
    /// Arrivals that found their criticality overloaded (most of its recent arrivals shed).
    pub overloaded: u64,
    /// Windows of the adaptive capacity that closed and changed its state.
    pub capacity_windows: u64,
}

/// A running request: the real permit, the model's, and what the model knew at admission:
/// when (ns), with how many in flight, under which limit.
#[derive(Debug)]
struct Running<'a> {
    real: InboundPermit<&'a Inbound>,
    model: ModelPermit,
    admitted: u64,
    in_flight: u64,
    limit: u64,
}

/// The real admission beside its model, with the same waiting requests on both sides.
#[derive(Debug)]
pub struct InboundTwin<'a> {
    real: &'a Inbound,
    /// The model.
    pub model: Model,
    codel: Codel,
    running: Vec<Running<'a>>,
    lines: Lines<'a>,
    next_id: u64,
    /// What happened so far.
    pub report: InboundReport,
}

impl<'a> InboundTwin<'a> {
    /// A twin of `real`, built from `config` and not used yet. Refuses a limiter that
    /// refreshes its baseline (its jitter would need the draws replayed).
    pub fn new(real: &'a Inbound, config: &InboundConfig) -> InboundTwin<'a> {
        assert_eq!(
            config.limiter.probe_multiplier, 0,
            "the twin needs a limiter that draws nothing"
        );
        InboundTwin {
            real,
            model: Model::new(config),
            codel: Codel::new(config.codel),
            running: Vec::new(),
            lines: Lines::default(),
            next_id: 0,
            report: InboundReport::default(),
        }
    }

    /// Requests running.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// A request arrives: both decide alike, and a queued one is dispatched at once.
    pub fn arrive(
        &mut self,
        now: Instant,
        priority: Priority,
        deadline: Option<Deadline>,
    ) -> Result<(), String> {
        let t = now.as_nanos();
        if self.real.overloaded(priority) {
            self.report.overloaded += 1;
        }
        let model = self
            .model
            .admit(t, priority, deadline.map(|d| d.instant().as_nanos()));
        match (self.real.admit(now, priority, deadline), model) {
            (Decision::Admit(p), ModelDecision::Admit(m)) => {
                self.report.admitted += 1;
                self.running.push(Running {
                    real: p,
                    model: m,
                    admitted: t,
                    in_flight: self.model.limiter.in_flight,
                    limit: self.model.limit(),
                });
                Ok(())
            }
            (Decision::Queue(place), ModelDecision::Queue { until }) => {
                if place.until().as_nanos() != until {
                    return Err(format!("queued until {:?}, model {until}", place.until()));
                }
                self.report.queued += 1;
                let id = self.next_id;
                self.next_id += 1;
                self.model.lines[priority.rank() as usize].push_back(ModelWaiter {
                    id,
                    priority,
                    since: t,
                    deadline: deadline.map(|d| d.instant().as_nanos()),
                    until,
                });
                self.lines.0[priority.rank() as usize].push_back((id, place));
                self.dispatch(now)
            }
            (Decision::Reject(shed), ModelDecision::Reject { cause, retry_at }) => {
                self.report.rejected += 1;
                same_shed(shed, cause, retry_at)
            }
            (real, model) => Err(format!("real {}, model {model:?}", describe(&real))),
        }
    }

    /// Running request `index` ends at `now` (settled with `verdict`, or cancelled), and the
    /// freed slot is dispatched.
    pub fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        let Running {
            real: p,
            model: m,
            admitted,
            in_flight,
            limit,
        } = self.running.remove(index);
        match verdict {
            Some(v) => {
                p.settle(&v, &mut Env::new(now, rng));
                self.model.settled(admitted, now.as_nanos());
                if let (Some(c), Verdict::Success | Verdict::Answered) =
                    (&mut self.model.capacity, &v)
                {
                    let before = c.rule;
                    c.record(now.as_nanos(), admitted, in_flight, limit);
                    if c.rule != before {
                        self.report.capacity_windows += 1;
                    }
                }
                self.model.limiter.settle(m, &v, now.as_nanos(), rng);
            }
            None => {
                drop(p);
                self.model.limiter.cancel(m);
            }
        }
        self.dispatch(now)
    }

    /// Every waiter whose `until` has come gives up, in arrival order, on both sides alike.
    pub fn expire(&mut self, now: Instant) -> Result<(), String> {
        let t = now.as_nanos();
        let mut due: Vec<ModelWaiter> = self
            .model
            .lines
            .iter()
            .flatten()
            .filter(|w| w.until <= t)
            .copied()
            .collect();
        due.sort_by_key(|w| w.id);
        for w in due {
            let line = &mut self.lines.0[w.priority.rank() as usize];
            let at = line
                .iter()
                .position(|(id, _)| *id == w.id)
                .ok_or_else(|| format!("waiter {} is only in the model", w.id))?;
            let (_, place) = line.remove(at).expect("found");
            if place.until() > now {
                return Err(format!(
                    "waiter {}: real until {:?} not due",
                    w.id,
                    place.until()
                ));
            }
            let shed = place.give_up(now);
            let (cause, retry_at) = self.model.give_up(w, t);
            self.count_shed(cause);
            same_shed(shed, cause, retry_at)?;
        }
        Ok(())
    }

    fn count_shed(&mut self, cause: ShedCause) {
        let i = ShedCause::ALL
            .iter()
            .position(|c| *c == cause)
            .expect("a cause");
        self.report.shed[i] += 1;
    }

    fn dispatch(&mut self, now: Instant) -> Result<(), String> {
        if self.real.standing(now) {
            self.report.standing += 1;
        }
        let mut served = Vec::new();
        let mut shed = Vec::new();
        dispatch(
            &self.real,
            &mut self.codel,
            now,
            &mut self.lines,
            |(id, place), permit| {
                drop(place);
                served.push((id, permit));
                Ok(())
            },
            |(id, place), cause| shed.push((id, place.shed(cause, now))),
        );
        let (model_served, model_shed) = self.model.dispatch(now.as_nanos());
        let real_ids: Vec<u64> = served.iter().map(|s| s.0).collect();
        let model_ids: Vec<u64> = model_served.iter().map(|s| s.0).collect();
        let limit = self.model.limit();
        if real_ids != model_ids {
            return Err(format!("dispatch served {real_ids:?}, model {model_ids:?}"));
        }
        let real_shed: Vec<_> = shed
            .iter()
            .map(|(id, s)| (*id, s.cause(), s.retry_at()))
            .collect();
        let model_shed: Vec<_> = model_shed
            .iter()
            .map(|(id, c, r)| (*id, *c, r.map(Instant::from_nanos)))
            .collect();
        if real_shed != model_shed {
            return Err(format!("dispatch shed {real_shed:?}, model {model_shed:?}"));
        }
        for (_, cause, _) in &real_shed {
            self.count_shed(*cause);
        }
        self.report.served += served.len() as u64;
        for ((_, p), (_, m, in_flight)) in served.into_iter().zip(model_served) {
            self.running.push(Running {
                real: p,
                model: m,
                admitted: now.as_nanos(),
                in_flight,
                limit,
            });
        }
        Ok(())
    }

    /// Compares the counts, the limit and the standing state at `now`.
    pub fn check(&self, now: Instant) -> Result<(), String> {
        let real = (
            self.real.in_flight(),
            self.real.waiting(),
            self.real.limit(),
            self.real.standing(now),
            self.real.service_time(),
            Priority::ALL.map(|p| self.real.overloaded(p)),
        );
        let model = (
            self.model.limiter.in_flight as u32,
            self.model.waiting as u32,
            self.model.limit() as u32,
            self.model.standing(now.as_nanos()),
            Duration::from_nanos(self.model.service()),
            Priority::ALL.map(|p| self.model.overloaded(p)),
        );
        if real != model {
            return Err(format!(
                "(in flight, waiting, limit, standing, service, overloaded) real {real:?}, \
                 model {model:?}"
            ));
        }
        if real.0 as usize != self.running.len() || real.1 as usize != self.lines.len() {
            return Err("the twin's own counts stray".into());
        }
        let model = self.model.capacity.as_ref().map(|c| c.rule);
        if self.real.capacity() != model {
            return Err(format!(
                "capacity real {:?}, model {model:?}",
                self.real.capacity()
            ));
        }
        Ok(())
    }
}

fn describe<P: core::ops::Deref<Target = Inbound>>(d: &Decision<P>) -> String {
    match d {
        Decision::Admit(_) => "admit".into(),
        Decision::Queue(p) => format!("queue until {:?}", p.until()),
        Decision::Reject(s) => format!("reject {s}"),
    }
}

fn same_shed(real: Shed, cause: ShedCause, retry_at: Option<u64>) -> Result<(), String> {
    let model = Shed::new(cause, retry_at.map(Instant::from_nanos));
    if real == model {
        Ok(())
    } else {
        Err(format!("real {real:?}, model {model:?}"))
    }
}

/// A deadline for an arrival at `now`: none a third of the time, else up to 1 ms, 20 ms,
/// 200 ms or 5 s away (some already passed).
pub fn draw_deadline(now: Instant, rng: &mut dyn Random) -> Option<Deadline> {
    let span = match rng.below(6) {
        0 | 1 => return None,
        2 => 1_000_000,
        3 => 20_000_000,
        4 => 200_000_000,
        _ => 5_000_000_000,
    };
    Some(Deadline::at(Instant::from_nanos(
        now.as_nanos().saturating_add(rng.below(span)),
    )))
}

/// Runs `steps` steps of `twin` on `timeline`: at each, time moves on by one gap, waiters whose
/// wait is over give up, then a running request ends (with a verdict from `mix`, or
/// cancelled) or a request arrives with a random priority and deadline, with even odds while
/// requests run. Stops at the first [`Mismatch`].
pub fn drive_inbound(
    twin: &mut InboundTwin<'_>,
    timeline: &mut Timeline,
    rng: &mut dyn Random,
    steps: u64,
    mix: Mix,
) -> Result<InboundReport, Mismatch> {
    for step in 0..steps {
        let now = timeline.advance(&mut &mut *rng);
        let fail = |what: String| Mismatch {
            step,
            at: now,
            what,
        };
        twin.expire(now).map_err(fail)?;
        let running = twin.running();
        if running > 0 && rng.below(2) == 0 {
            let index = rng.below(running as u64) as usize;
            let verdict = mix.draw(rng);
            twin.end(now, index, verdict, rng).map_err(fail)?;
        } else {
            let priority = Priority::ALL[rng.below(4) as usize];
            let deadline = draw_deadline(now, rng);
            twin.arrive(now, priority, deadline).map_err(fail)?;
        }
        twin.check(now).map_err(fail)?;
        twin.report.steps += 1;
    }
    Ok(twin.report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilix::random::SeededRandom;

    #[test]
    fn the_transcription_and_the_per_pop_controller_agree_on_a_standing_queue() {
        let mut rfc = RfcCodel::new(CodelConfig::RFC_8289);
        let mut codel = Codel::new(CodelConfig::RFC_8289);
        let mut queue = VecDeque::new();
        let mut rng = SeededRandom::new(5);
        let mut now = 0u64;
        let mut drops = 0;
        for _ in 0..20_000 {
            now += rng.below(2_000_000);
            for _ in 0..rng.below(3) {
                rfc.enqueue(now);
                queue.push_back(now);
            }
            if rng.below(2) == 0 {
                let a = rfc.dequeue(now);
                let b = per_pop_dequeue(&mut codel, &mut queue, now);
                assert_eq!(a, b);
                drops += a.1.len();
            }
        }
        assert!(drops > 100, "{drops}");
    }
}
