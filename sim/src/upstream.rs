//! Upstream models: what happens to an attempt that reaches the server.
//!
//! Each model answers at arrival with the instant its reply leaves and the verdict, which is
//! exact for a FIFO server because a request's start time is known when it arrives.

use std::collections::VecDeque;
use std::time::Duration;

use resilix::Verdict;
use resilix::random::{Random, SeededRandom};
use resilix::time::Instant;

use crate::rng::{exponential, secs};

pub trait Upstream {
    /// An attempt arrives at `now`: when its reply leaves, and what it says.
    fn serve(&mut self, now: Instant, rng: &mut SeededRandom) -> (Instant, Verdict);
}

/// Fails each attempt independently with probability `p` (Brooker 2022's server; the SRE
/// amplification setups with q), after a fixed service time. Load does not matter.
#[derive(Clone, Copy, Debug)]
pub struct Flaky {
    pub p: f64,
    pub service: Duration,
    /// The verdict a failure carries (`Transient`, or `Overload` for "rejected by the backend").
    pub failure: Verdict,
}

impl Upstream for Flaky {
    fn serve(&mut self, now: Instant, rng: &mut SeededRandom) -> (Instant, Verdict) {
        let failed = rng.unit() < self.p;
        let verdict = if failed {
            self.failure
        } else {
            Verdict::Success
        };
        (now.saturating_add(self.service), verdict)
    }
}

/// A server of capacity `workers / service` requests per second: `workers` run in parallel,
/// each request takes `service`, up to `queue` wait in FIFO order, and beyond that a request is
/// rejected at once with `Overload` (cheap rejection, as the SRE chapter assumes). Latency
/// grows with the queue: a request behind `k` others waits about `k · service / workers`.
#[derive(Debug)]
pub struct Capacity {
    service: Duration,
    /// When each worker is next free (a FIFO start is the earliest of these, or now).
    free_at: Vec<Instant>,
    /// Start times of accepted requests not yet started (their count is the queue length).
    waiting: VecDeque<Instant>,
    queue: usize,
    pub accepted: u64,
    pub rejected: u64,
}

impl Capacity {
    pub fn new(workers: usize, service: Duration, queue: usize) -> Self {
        Capacity {
            service,
            free_at: vec![Instant::ZERO; workers.max(1)],
            waiting: VecDeque::new(),
            queue,
            accepted: 0,
            rejected: 0,
        }
    }

    /// Requests per second it can serve.
    #[allow(dead_code)] // read by tests; experiments compute it from their constants
    pub fn rate(&self) -> f64 {
        self.free_at.len() as f64 / self.service.as_secs_f64()
    }
}

impl Upstream for Capacity {
    fn serve(&mut self, now: Instant, _rng: &mut SeededRandom) -> (Instant, Verdict) {
        while self.waiting.front().is_some_and(|&s| s <= now) {
            self.waiting.pop_front();
        }
        let (idx, &free) = self
            .free_at
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| **t)
            .expect("at least one worker");
        let start = free.max(now);
        if start > now && self.waiting.len() >= self.queue {
            self.rejected += 1;
            return (now, Verdict::Overload { retry_after: None });
        }
        if start > now {
            self.waiting.push_back(start);
        }
        let done = start.saturating_add(self.service);
        self.free_at[idx] = done;
        self.accepted += 1;
        (done, Verdict::Success)
    }
}

/// Always answers, after a service time that is `base` until `from` and `base · factor` after
/// (exponentially distributed around it when `exp` is set): a degradation in which
/// time-in-system multiplies while the arrival rate does not (Little's Law, docs/design/spec.md §6).
#[derive(Clone, Copy, Debug)]
pub struct Degrading {
    pub base: Duration,
    pub factor: f64,
    pub from: Instant,
    pub exp: bool,
}

impl Upstream for Degrading {
    fn serve(&mut self, now: Instant, rng: &mut SeededRandom) -> (Instant, Verdict) {
        let mean = if now >= self.from {
            self.base.as_secs_f64() * self.factor
        } else {
            self.base.as_secs_f64()
        };
        let t = if self.exp {
            exponential(rng, mean)
        } else {
            mean
        };
        (now.saturating_add(secs(t)), Verdict::Success)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_serves_queues_then_rejects() {
        let ms = Duration::from_millis;
        let mut s = Capacity::new(2, ms(10), 1);
        let mut rng = SeededRandom::new(1);
        let t0 = Instant::ZERO;
        assert_eq!(
            s.serve(t0, &mut rng),
            (Instant::from_millis(10), Verdict::Success)
        );
        assert_eq!(
            s.serve(t0, &mut rng),
            (Instant::from_millis(10), Verdict::Success)
        );
        // Both workers busy: the third waits in the one queue place.
        assert_eq!(
            s.serve(t0, &mut rng),
            (Instant::from_millis(20), Verdict::Success)
        );
        // Queue full: rejected at once.
        assert_eq!(
            s.serve(t0, &mut rng).1,
            Verdict::Overload { retry_after: None }
        );
        // At 10 ms the queued one has started; the queue has room again.
        assert_eq!(
            s.serve(Instant::from_millis(10), &mut rng),
            (Instant::from_millis(20), Verdict::Success)
        );
        assert_eq!((s.accepted, s.rejected), (4, 1));
        assert_eq!(s.rate(), 200.0);
    }

    #[test]
    fn flaky_fails_at_its_rate() {
        let mut f = Flaky {
            p: 0.25,
            service: Duration::ZERO,
            failure: Verdict::Transient,
        };
        let mut rng = SeededRandom::new(2);
        let fails = (0..40_000)
            .filter(|_| f.serve(Instant::ZERO, &mut rng).1 == Verdict::Transient)
            .count();
        assert!((9_600..10_400).contains(&fails), "{fails}");
    }
}
