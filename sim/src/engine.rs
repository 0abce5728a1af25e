//! The workload engine: clients sending logical calls through real resilix pipelines to an
//! upstream model over a network, on a manual timeline.
//!
//! * Open-loop clients start calls at Poisson arrivals whatever happens to earlier calls;
//!   serial clients keep one call in flight and start the next at `max(now, last start +
//!   Exp(1/rate))` (Brooker 2022's `SerialClient`); periodic clients start one call every
//!   `1/rate` exactly, all in phase from instant zero, so N of them offer N calls per tick (the
//!   setup of docs/design/spec.md §9's inner-shedding measurement).
//! * Calls start until `duration`; then arrivals stop and the engine drains: in-flight
//!   attempts and their retries finish.
//! * Each attempt is admitted through the pipeline, travels one network delay, is served by
//!   the upstream, travels back and is settled with the upstream's verdict. If the pipeline
//!   gives the attempt a deadline that fires first, it is settled `Timeout` and the late reply
//!   is ignored.
//! * Counters after `warmup` are kept apart, for steady-state figures.

use std::collections::BTreeMap;
use std::time::Duration;

use resilix::Verdict;
use resilix::call::{CallOptions, Next, Stop};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;

use crate::net::Delay;
use crate::observer::{Tally, give_up_key};
use crate::queue::EventQueue;
use crate::rng::{Purpose, exponential, secs, stream};
use crate::stack::Stack;
use crate::upstream::Upstream;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    Open,
    Serial,
    Periodic,
}

impl ClientKind {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "open" => Ok(ClientKind::Open),
            "serial" => Ok(ClientKind::Serial),
            "periodic" => Ok(ClientKind::Periodic),
            _ => Err(format!(
                "client kind {s:?}: expected open, serial or periodic"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub clients: usize,
    /// Calls per second per client.
    pub rate: f64,
    pub kind: ClientKind,
    /// Calls start in `[0, duration)`; then the engine drains.
    pub duration: Duration,
    /// The steady-state counters only count events at or after this instant.
    pub warmup: Duration,
    pub net: Delay,
    /// Calls are declared idempotent (so timeouts may be retried).
    pub idempotent: bool,
    /// Width of the time-series buckets (0 = no series).
    pub bucket: Duration,
}

/// Counters over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// Logical calls started (first tries, "unique calls").
    pub calls: u64,
    /// Attempts admitted by the pipeline and sent upstream (the upstream's traffic).
    pub sent: u64,
    /// Attempts the pipeline refused (each is also a rejection event).
    pub refused: u64,
    /// Of the attempts sent, those the upstream accepted (`Success`/`Answered`).
    pub accepted: u64,
    /// Logical calls that ended with an answer.
    pub succeeded: u64,
    /// Logical calls that ended without one (given up or refused).
    pub failed: u64,
    /// Attempts settled `Timeout` by their deadline.
    pub timeouts: u64,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub all: Counts,
    pub steady: Counts,
    /// When the last event happened.
    pub end: Instant,
    /// Time-average of attempts admitted and not yet settled, over `[warmup, duration)`.
    pub mean_in_flight: f64,
    pub max_in_flight: u64,
    /// Per bucket: attempts sent.
    pub series_sent: Vec<u64>,
    /// Per bucket: time-average attempts in flight.
    pub series_in_flight: Vec<f64>,
    /// Per bucket: calls started.
    pub series_calls: Vec<u64>,
    /// Per bucket: attempts settled (by reply or deadline).
    pub series_settled: Vec<u64>,
    /// Per bucket: total seconds from admission to settling of the attempts settled in it.
    pub series_time_in_system: Vec<f64>,
    /// What callers were told when a call could not start: refusals by reason code.
    pub refused_by: BTreeMap<&'static str, u64>,
    /// What callers were told when a call gave up after an attempt, by give-up key.
    pub gave_up: BTreeMap<String, u64>,
}

enum Ev {
    Arrive(usize),
    Send(usize),
    /// Slot, attempt number, and the client that sent it: the slot may hold another call by
    /// the time a late attempt reaches the server.
    AtServer(usize, u64, usize),
    Reply(usize, u64, Verdict),
    Deadline(usize, u64),
}

struct Slot<'a, S: Stack + 'a> {
    client: usize,
    call: S::Call<'a>,
    attempt: Option<S::Attempt<'a>>,
    /// When the outstanding attempt was admitted.
    sent_at: Instant,
    /// Which attempt is outstanding, numbered over the whole run (not per call: slots are
    /// reused, so a per-call number would let a late reply to an earlier call's attempt settle
    /// a later call's attempt in the same slot). A reply or deadline for another one is stale.
    generation: u64,
}

struct InFlight {
    count: u64,
    since: Instant,
    integral: f64,
    window: (Instant, Instant),
    bucket: Duration,
    series: Vec<f64>,
}

impl InFlight {
    fn change(&mut self, now: Instant, delta: i64) {
        let (from, to) = (self.since, now);
        if to > from && self.count > 0 {
            let (w0, w1) = self.window;
            let a = from.max(w0);
            let b = to.min(w1);
            if b > a {
                self.integral += self.count as f64 * (b - a).as_secs_f64();
            }
            if !self.bucket.is_zero() {
                let width = self.bucket.as_secs_f64();
                let mut t = from.since_origin().as_secs_f64();
                let end = to.since_origin().as_secs_f64();
                while t < end {
                    let idx = (t / width) as usize;
                    let next = ((idx + 1) as f64 * width).min(end);
                    if self.series.len() <= idx {
                        self.series.resize(idx + 1, 0.0);
                    }
                    self.series[idx] += self.count as f64 * (next - t) / width;
                    t = next;
                }
            }
        }
        self.since = now;
        self.count = (self.count as i64 + delta) as u64;
    }
}

pub struct Engine<'a, S: Stack, U: Upstream> {
    stacks: &'a [S],
    upstream: U,
    w: Workload,
    tally: &'a Tally,
    options: CallOptions,
    deadline: Option<Duration>,
    watch: Option<&'a dyn Fn(Instant, u64)>,
}

impl<'a, S: Stack, U: Upstream> Engine<'a, S, U> {
    /// Client `i` uses `stacks[i % stacks.len()]`: one stack per client, one shared, or any
    /// grouping in between.
    pub fn new(stacks: &'a [S], upstream: U, w: Workload, tally: &'a Tally) -> Self {
        assert!(!stacks.is_empty());
        Engine {
            stacks,
            upstream,
            w,
            tally,
            options: CallOptions::default().idempotent(w.idempotent),
            deadline: None,
            watch: None,
        }
    }

    /// `watch(now, in_flight)` is called right after every admission, with the number of
    /// attempts then in flight (the new one included): where an experiment reads the state of
    /// the policies it built at the moment an invariant must hold.
    pub fn watch(mut self, watch: &'a dyn Fn(Instant, u64)) -> Self {
        self.watch = Some(watch);
        self
    }

    /// Every call gets an overall deadline this long after it starts.
    #[allow(dead_code)] // for the deadline experiments (docs/design/spec.md §3.3) once they are written
    pub fn call_deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    pub fn run(&mut self, master: u64, run: u64) -> Outcome {
        let w = self.w;
        let end_of_arrivals = Instant::ZERO.saturating_add(w.duration);
        let warm = Instant::ZERO.saturating_add(w.warmup);
        let mut rngs: Vec<SeededRandom> = (0..w.clients)
            .map(|i| stream(master, run, Purpose::Client, i as u64))
            .collect();
        let mut up_rng = stream(master, run, Purpose::Upstream, 0);
        let mut last_start = vec![Instant::ZERO; w.clients];
        let mut queue = EventQueue::new();
        let mut slots: Vec<Option<Slot<'a, S>>> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut attempts_sent: u64 = 0;
        let mut out = Outcome::default();
        let mut fl = InFlight {
            count: 0,
            since: Instant::ZERO,
            integral: 0.0,
            window: (warm, end_of_arrivals),
            bucket: w.bucket,
            series: Vec::new(),
        };
        let bucket_of = |t: Instant| -> Option<usize> {
            (!w.bucket.is_zero())
                .then(|| (t.since_origin().as_secs_f64() / w.bucket.as_secs_f64()) as usize)
        };
        fn bump(v: &mut Vec<u64>, i: Option<usize>) {
            if let Some(i) = i {
                if v.len() <= i {
                    v.resize(i + 1, 0);
                }
                v[i] += 1;
            }
        }
        let mean_gap = 1.0 / w.rate;
        let period = secs(mean_gap);
        for (c, rng) in rngs.iter_mut().enumerate() {
            let first = match w.kind {
                ClientKind::Periodic => Duration::ZERO,
                _ => secs(exponential(rng, mean_gap)),
            };
            queue.schedule(Instant::ZERO.saturating_add(first), Ev::Arrive(c));
        }

        // Counts an event in `all` and, past the warm-up, in `steady`.
        macro_rules! count {
            ($now:expr, $field:ident) => {{
                out.all.$field += 1;
                if $now >= warm {
                    out.steady.$field += 1;
                }
            }};
        }

        while let Some((now, ev)) = queue.pop() {
            // Which slot to try to send now, if any.
            let mut send: Option<usize> = None;
            // A call that ended, and its client.
            let mut ended: Option<usize> = None;
            match ev {
                Ev::Arrive(c) => {
                    if now >= end_of_arrivals {
                        continue;
                    }
                    let stack = &self.stacks[c % self.stacks.len()];
                    let mut opts = self.options;
                    if let Some(d) = self.deadline {
                        opts = opts.deadline(resilix::time::Deadline::after(now, d));
                    }
                    let slot = Slot {
                        client: c,
                        call: stack.begin(now, opts),
                        attempt: None,
                        sent_at: now,
                        generation: 0,
                    };
                    let id = match free.pop() {
                        Some(id) => {
                            slots[id] = Some(slot);
                            id
                        }
                        None => {
                            slots.push(Some(slot));
                            slots.len() - 1
                        }
                    };
                    count!(now, calls);
                    bump(&mut out.series_calls, bucket_of(now));
                    last_start[c] = now;
                    match w.kind {
                        ClientKind::Open => {
                            let gap = secs(exponential(&mut rngs[c], mean_gap));
                            queue.schedule(now.saturating_add(gap), Ev::Arrive(c));
                        }
                        ClientKind::Periodic => {
                            queue.schedule(now.saturating_add(period), Ev::Arrive(c));
                        }
                        ClientKind::Serial => {}
                    }
                    send = Some(id);
                }
                Ev::Send(id) => send = Some(id),
                Ev::AtServer(id, g, c) => {
                    let (at, verdict) = self.upstream.serve(now, &mut up_rng);
                    let back = w.net.sample(&mut rngs[c]);
                    queue.schedule(at.saturating_add(back), Ev::Reply(id, g, verdict));
                }
                Ev::Reply(id, g, _) | Ev::Deadline(id, g)
                    if {
                        // Only the first of reply and deadline settles the attempt.
                        slots[id]
                            .as_ref()
                            .is_some_and(|s| s.generation == g && s.attempt.is_some())
                    } =>
                {
                    let verdict = match ev {
                        Ev::Reply(_, _, v) => v,
                        _ => Verdict::Timeout,
                    };
                    let slot = slots[id].as_mut().expect("live slot");
                    let attempt = slot.attempt.take().expect("outstanding attempt");
                    fl.change(now, -1);
                    let b = bucket_of(now);
                    bump(&mut out.series_settled, b);
                    if let Some(i) = b {
                        if out.series_time_in_system.len() <= i {
                            out.series_time_in_system.resize(i + 1, 0.0);
                        }
                        out.series_time_in_system[i] += (now - slot.sent_at).as_secs_f64();
                    }
                    if verdict.is_accept() {
                        count!(now, accepted);
                    }
                    if verdict == Verdict::Timeout {
                        count!(now, timeouts);
                    }
                    let mut env = Env::new(now, &mut rngs[slot.client]).with_observer(self.tally);
                    match S::settle(&mut slot.call, attempt, &verdict, &mut env) {
                        Next::Done => {
                            count!(now, succeeded);
                            ended = Some(id);
                        }
                        Next::RetryAt(at) => queue.schedule(at, Ev::Send(id)),
                        Next::GiveUp(reason) => {
                            *out.gave_up.entry(give_up_key(&reason)).or_default() += 1;
                            count!(now, failed);
                            ended = Some(id);
                        }
                    }
                }
                Ev::Reply(..) | Ev::Deadline(..) => {}
            }

            if let Some(id) = send {
                let slot = slots[id].as_mut().expect("live slot");
                let c = slot.client;
                let mut env = Env::new(now, &mut rngs[c]).with_observer(self.tally);
                match S::admit(&mut slot.call, &mut env) {
                    Ok(attempt) => {
                        let deadline = S::deadline(&attempt);
                        slot.attempt = Some(attempt);
                        slot.sent_at = now;
                        attempts_sent += 1;
                        slot.generation = attempts_sent;
                        let g = slot.generation;
                        count!(now, sent);
                        bump(&mut out.series_sent, bucket_of(now));
                        fl.change(now, 1);
                        out.max_in_flight = out.max_in_flight.max(fl.count);
                        if let Some(watch) = self.watch {
                            watch(now, fl.count);
                        }
                        let there = w.net.sample(&mut rngs[c]);
                        queue.schedule(now.saturating_add(there), Ev::AtServer(id, g, c));
                        if let Some(d) = deadline {
                            queue.schedule(d.instant(), Ev::Deadline(id, g));
                        }
                    }
                    Err(stop) => {
                        if let Stop::Refused(rejection) = stop {
                            *out.refused_by.entry(rejection.reason().code()).or_default() += 1;
                            count!(now, refused);
                        }
                        count!(now, failed);
                        ended = Some(id);
                    }
                }
            }

            if let Some(id) = ended {
                let slot = slots[id].take().expect("live slot");
                free.push(id);
                if w.kind == ClientKind::Serial && now < end_of_arrivals {
                    let c = slot.client;
                    let gap = secs(exponential(&mut rngs[c], mean_gap));
                    let next = now.max(last_start[c].saturating_add(gap));
                    queue.schedule(next, Ev::Arrive(c));
                }
            }
        }
        fl.change(queue.now(), 0);
        out.end = queue.now();
        let window = (end_of_arrivals - warm).as_secs_f64();
        out.mean_in_flight = if window > 0.0 {
            fl.integral / window
        } else {
            0.0
        };
        out.series_in_flight = fl.series;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::Flaky;
    use resilix::pipeline::Pipeline;

    fn workload(kind: ClientKind) -> Workload {
        Workload {
            clients: 10,
            rate: 10.0,
            kind,
            duration: Duration::from_secs(10),
            warmup: Duration::ZERO,
            net: Delay::Exponential {
                mean: Duration::from_millis(10),
            },
            idempotent: false,
            bucket: Duration::from_secs(1),
        }
    }

    #[test]
    fn open_loop_without_policies_sends_every_call_once() {
        let p = [Pipeline::new()];
        let tally = Tally::default();
        let up = Flaky {
            p: 0.3,
            service: Duration::ZERO,
            failure: Verdict::Transient,
        };
        let o = Engine::new(&p, up, workload(ClientKind::Open), &tally).run(7, 0);
        let a = o.all;
        // 10 clients × 10/s × 10 s ≈ 1000 calls.
        assert!((900..1100).contains(&a.calls), "{a:?}");
        assert_eq!(a.sent, a.calls);
        assert_eq!(a.succeeded + a.failed, a.calls);
        assert_eq!(a.accepted, a.succeeded);
        assert_eq!(tally.executed.get(), a.sent);
        let fail = a.failed as f64 / a.calls as f64;
        assert!((fail - 0.3).abs() < 0.05, "{fail}");
        // Little: λ = 100/s, W ≈ 20 ms → L ≈ 2.
        assert!((o.mean_in_flight - 2.0).abs() < 0.4, "{}", o.mean_in_flight);
        assert_eq!(o.series_sent.iter().sum::<u64>(), a.sent);
    }

    #[test]
    fn a_late_reply_never_settles_a_later_call_in_the_same_slot() {
        // Every attempt takes 100 ms at the upstream and times out at 40 ms, so no call can
        // succeed. Slots are reused every few tens of milliseconds: when attempts were numbered
        // per call, the late reply to a timed-out call's first attempt matched the first
        // attempt of the later call now in its slot and settled it as a success.
        let p = [Pipeline::new().attempt_timeout(Duration::from_millis(40))];
        let tally = Tally::default();
        let up = Flaky {
            p: 0.0,
            service: Duration::from_millis(100),
            failure: Verdict::Transient,
        };
        let mut w = workload(ClientKind::Open);
        w.net = Delay::Fixed(Duration::ZERO);
        let o = Engine::new(&p, up, w, &tally).run(5, 0);
        assert!(o.all.calls > 500, "{:?}", o.all);
        assert_eq!(o.all.succeeded, 0, "{:?}", o.all);
        assert_eq!(o.all.failed, o.all.calls, "{:?}", o.all);
    }

    #[test]
    fn serial_clients_never_overlap_their_own_calls() {
        let p = [Pipeline::new()];
        let tally = Tally::default();
        let up = Flaky {
            p: 0.0,
            service: Duration::from_millis(500),
            failure: Verdict::Transient,
        };
        let o = Engine::new(&p, up, workload(ClientKind::Serial), &tally).run(3, 0);
        // One in flight per client at most.
        assert!(o.max_in_flight <= 10, "{}", o.max_in_flight);
        // Each call takes ≥ 0.5 s, so each client makes at most ~20 calls in 10 s.
        assert!(o.all.calls <= 10 * 21, "{:?}", o.all);
    }

    #[test]
    fn same_seed_same_outcome_other_seed_differs() {
        let p = [Pipeline::new()];
        let up = Flaky {
            p: 0.2,
            service: Duration::from_millis(1),
            failure: Verdict::Transient,
        };
        let run = |seed| {
            let tally = Tally::default();
            let o = Engine::new(&p, up, workload(ClientKind::Open), &tally).run(seed, 0);
            (o.all, o.end, o.series_sent)
        };
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }

    #[test]
    fn periodic_clients_offer_one_call_each_per_tick_in_phase() {
        let p = [Pipeline::new()];
        let tally = Tally::default();
        let up = Flaky {
            p: 0.0,
            service: Duration::from_millis(5),
            failure: Verdict::Transient,
        };
        let mut w = workload(ClientKind::Periodic);
        w.rate = 25.0; // one call every 40 ms
        w.net = Delay::Fixed(Duration::ZERO);
        let o = Engine::new(&p, up, w, &tally).run(1, 0);
        // 10 clients × 250 ticks in 10 s, all at the tick instants.
        assert_eq!(o.all.calls, 2_500);
        assert_eq!(o.series_calls, vec![250; 10]);
        assert_eq!(o.max_in_flight, 10);
        // Each call is in flight 5 ms of every 40: L = 10 × 5/40.
        assert!(
            (o.mean_in_flight - 1.25).abs() < 1e-6,
            "{}",
            o.mean_in_flight
        );
        let w_mean = o.series_time_in_system.iter().sum::<f64>()
            / o.series_settled.iter().sum::<u64>() as f64;
        assert!((w_mean - 0.005).abs() < 1e-9, "{w_mean}");
    }

    #[test]
    fn the_caller_sees_each_refusal_and_give_up_the_observer_hears() {
        use resilix::bulkhead::{Bulkhead, BulkheadConfig};
        let bulkhead = Bulkhead::new(BulkheadConfig::new(2).unwrap());
        let p = [Pipeline::new().bulkhead(&bulkhead)];
        let tally = Tally::default();
        let up = Flaky {
            p: 0.5,
            service: Duration::from_millis(100),
            failure: Verdict::Transient,
        };
        let watched = std::cell::Cell::new(0u64);
        let watch = |_: Instant, n: u64| {
            assert!(n <= 2 && bulkhead.held() as u64 == n);
            watched.set(watched.get() + 1);
        };
        let o = Engine::new(&p, up, workload(ClientKind::Open), &tally)
            .watch(&watch)
            .run(5, 0);
        let refused = o.refused_by.get("bulkhead-full").copied().unwrap_or(0);
        assert!(refused > 0);
        assert_eq!(refused, tally.rejected(resilix::RejectReason::BulkheadFull));
        assert_eq!(refused, o.all.refused);
        let gave_up = o.gave_up.get("attempts-exhausted").copied().unwrap_or(0);
        assert_eq!(gave_up + refused, o.all.failed);
        assert_eq!(watched.get(), o.all.sent);
    }
}
