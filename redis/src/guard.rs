//! What stands between a call and the backend: a breaker on the backend (the core's
//! [`Breaker`]), a bound on the calls in flight, and the estimate of the server's clock that
//! turns the caller's deadline into the script's.
//!
//! A call goes to Redis only with a ticket: the breaker is closed and an in-flight slot was
//! free. Otherwise it is decided locally at once, in nanoseconds, without waiting for
//! anything. The breaker opens on consecutive failures (errors, and timeouts), and probes
//! with its own calls: when its open wait ends, the next caller is decided locally like the
//! others, and a background `PING` (bounded by the backend timeout) is the half-open probe;
//! its answer closes the breaker, its failure opens it again. No caller ever waits on a probe. A
//! timeout counts as a failure only if no reply at all arrived while the call waited: replies
//! still arriving mean the call sat in a queue (a busy client, a long pipeline), and slow is
//! not down.

use core::time::Duration;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use std::sync::Arc;

use resilix::breaker::{Breaker, BreakerPermit, Config, TimeBuckets};
use resilix::permit::{Detach, Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::backend::Backend;

/// Why a call was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotSent {
    /// The backend breaker is open (or its probe is out).
    BreakerOpen,
    /// Every in-flight slot is taken: sending would only queue behind them.
    InFlightFull,
}

/// The default breaker on the backend: open after 5 consecutive failures (Finagle's and Envoy's count), probe after 10 ms
/// (jittered down by up to half, so a fleet does not probe together), one probe at a time;
/// the failure rate is off (a fleet limiter's calls fail together or not at all).
pub(crate) const DEFAULT_BREAKER: Config = Config {
    failure_rate_above_percent: None,
    minimum_calls: 1,
    slow_calls: None,
    consecutive_failures: Some(5),
    open_wait: Duration::from_millis(10),
    open_backoff: None,
    open_jitter_percent: 50,
    half_open_probes: 1,
    probes_to_close: 1,
    max_half_open_wait: Some(Duration::from_secs(1)),
};

/// The server-minus-local clock offset, estimated from replies: a reply read at local time
/// `r` carrying the server's `now` gives `now - r`, a lower bound of the offset (the decision
/// came before the reply). The largest sample is kept, and replaced by a fresh one every
/// second so a server clock that stepped back is followed.
#[derive(Clone, Copy)]
struct Offset {
    best_ns: i128,
    at: Instant,
    known: bool,
}

pub(crate) struct Guard {
    breaker: Breaker<TimeBuckets<10>>,
    in_flight: AtomicU32,
    max_in_flight: u32,
    offset: Mutex<Offset>,
    seed: AtomicU64,
    /// Woken when an in-flight slot is given back (a batch's leader waits on it).
    pub(crate) freed: tokio::sync::Notify,
    /// When the last reply arrived (local ns): a call that timed out while other replies
    /// kept arriving waited on a queue (this client's, or the server's), not on a backend
    /// that is down.
    last_reply: AtomicU64,
    /// Where the probes go, and how long they may take.
    backend: Backend,
    probe_timeout: Duration,
}

/// A call's right to go to Redis: a breaker permit and an in-flight slot, both given back
/// when it is settled or dropped.
pub(crate) struct Ticket<'a> {
    guard: &'a Guard,
    permit: Option<BreakerPermit<'a, TimeBuckets<10>>>,
}

impl Guard {
    pub(crate) fn new(
        breaker: Config,
        max_in_flight: u32,
        backend: Backend,
        probe_timeout: Duration,
    ) -> Result<Arc<Guard>, ()> {
        Ok(Arc::new(Guard {
            breaker: Breaker::new(breaker).map_err(|_| ())?,
            in_flight: AtomicU32::new(0),
            max_in_flight,
            offset: Mutex::new(Offset {
                best_ns: 0,
                at: Instant::ZERO,
                known: false,
            }),
            seed: AtomicU64::new(0x5EED_F1EE),
            freed: tokio::sync::Notify::new(),
            last_reply: AtomicU64::new(0),
            backend,
            probe_timeout,
        }))
    }

    fn rng(&self) -> SeededRandom {
        SeededRandom::new(
            self.seed
                .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed),
        )
    }

    /// A ticket, or why the call is decided locally.
    pub(crate) fn pass(self: &Arc<Self>, now: Instant) -> Result<Ticket<'_>, NotSent> {
        let mut taken = self.in_flight.load(Ordering::Relaxed);
        loop {
            if taken >= self.max_in_flight {
                return Err(NotSent::InFlightFull);
            }
            match self.in_flight.compare_exchange_weak(
                taken,
                taken + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(t) => taken = t,
            }
        }
        let mut rng = self.rng();
        let mut env = Env::new(now, &mut rng);
        match self.breaker.admit(&mut env) {
            Ok(permit) if permit.is_probe() => {
                // The breaker's own probe, in the background; this caller decides locally.
                self.in_flight.fetch_sub(1, Ordering::Release);
                self.freed.notify_waiters();
                self.probe(permit, now);
                Err(NotSent::BreakerOpen)
            }
            Ok(permit) => Ok(Ticket {
                guard: self,
                permit: Some(permit),
            }),
            Err(_) => {
                self.in_flight.fetch_sub(1, Ordering::Release);
                self.freed.notify_waiters();
                Err(NotSent::BreakerOpen)
            }
        }
    }

    /// Sends the half-open probe: a `PING`, bounded by the backend timeout; its answer
    /// closes the breaker, its failure opens it again (and makes a Sentinel-found backend
    /// ask again where the primary is).
    fn probe(self: &Arc<Self>, permit: BreakerPermit<'_, TimeBuckets<10>>, admitted: Instant) {
        let detached = Breaker::<TimeBuckets<10>>::detach(permit);
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            // No runtime to probe on: the dropped probe frees its slot for the next caller.
            drop(self.breaker.attach(detached));
            return;
        };
        let g = self.clone();
        rt.spawn(async move {
            let t0 = std::time::Instant::now();
            let mut conn = g.backend.clone();
            let cmd = redis::cmd("PING");
            let ping = cmd.query_async::<String>(&mut conn);
            let answer = tokio::time::timeout(g.probe_timeout, ping).await;
            let now = admitted.saturating_add(t0.elapsed());
            let verdict = match answer {
                Ok(Ok(_)) => Verdict::Success,
                Ok(Err(e)) if !e.is_timeout() => Verdict::Transient,
                _ => Verdict::Timeout,
            };
            if !verdict.is_accept() {
                g.backend.suspect();
            }
            let permit = g.breaker.attach(detached);
            let mut rng = g.rng();
            let mut env = Env::new(now, &mut rng);
            permit.settle(&verdict, &mut env);
        });
    }

    /// Records a reply's server instant, read at local `reply`.
    pub(crate) fn sampled(&self, server_now: Duration, reply: Instant) {
        self.last_reply
            .fetch_max(reply.as_nanos(), Ordering::Relaxed);
        let sample = server_now.as_nanos() as i128 - i128::from(reply.as_nanos());
        let mut o = self.offset.lock().unwrap_or_else(|e| e.into_inner());
        let stale = reply.saturating_duration_since(o.at) > Duration::from_secs(1);
        if !o.known || sample > o.best_ns || stale {
            *o = Offset {
                best_ns: sample,
                at: reply,
                known: true,
            };
        }
    }

    /// The caller's local deadline on the server's clock, once a reply has been seen. The
    /// offset is a lower bound, so the server's deadline is never later than the caller's:
    /// past it nobody waits for the decision.
    pub(crate) fn server_deadline(&self, local: Instant) -> Option<Duration> {
        let o = *self.offset.lock().unwrap_or_else(|e| e.into_inner());
        if !o.known {
            return None;
        }
        let ns = i128::from(local.as_nanos()) + o.best_ns;
        u64::try_from(ns).ok().map(Duration::from_nanos)
    }

    /// Calls in flight now.
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }
}

impl Ticket<'_> {
    /// Redis decided in time.
    pub(crate) fn succeeded(mut self, now: Instant) {
        self.settle(&Verdict::Success, now);
    }

    /// No answer within the timeout, for a call sent at `sent`: a failure for the breaker
    /// only if no other reply arrived since (slow is not down: replies still arriving mean
    /// the call waited in a queue, and it is forgotten, as a cancelled call is).
    pub(crate) fn timed_out(self, sent: Instant, now: Instant) {
        if self.guard.last_reply.load(Ordering::Relaxed) <= sent.as_nanos() {
            self.failed(true, now);
        }
    }

    /// A server that answered, but past the caller's deadline: alive, and slow; forgotten by
    /// the breaker as a cancelled call is.
    pub(crate) fn late(self) {}

    /// An error, or a timeout with no reply from the backend since the call was sent.
    pub(crate) fn failed(mut self, timeout: bool, now: Instant) {
        let v = if timeout {
            Verdict::Timeout
        } else {
            Verdict::Transient
        };
        self.settle(&v, now);
    }

    fn settle(&mut self, verdict: &Verdict, now: Instant) {
        if let Some(p) = self.permit.take() {
            let mut rng = self.guard.rng();
            let mut env = Env::new(now, &mut rng);
            p.settle(verdict, &mut env);
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        // An unsettled permit (a cancelled call) is dropped as the breaker expects.
        self.permit = None;
        self.guard.in_flight.fetch_sub(1, Ordering::Release);
        self.guard.freed.notify_waiters();
    }
}
