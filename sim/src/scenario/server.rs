//! The scenario's upstream: `servers` serving at once, a bounded waiting room served by
//! priority and then FCFS or LIFO, service times from a distribution, and episodes that
//! change all of it over time.
//!
//! Unlike `upstream::Capacity`, which answers at arrival, this server decides a request's
//! start only when a server frees: under LIFO a waiting request's start depends on arrivals
//! that have not happened yet. The server never learns that a caller stopped waiting, so
//! work for timed-out attempts is still done (and counted as wasted): the extra load a retry
//! storm puts on a slow upstream.

use std::collections::VecDeque;
use std::time::Duration;

use resilix::Verdict;
use resilix::random::{Random, SeededRandom};

use super::file::{Discipline, Episode, EpisodeKind, Latency, UpstreamSpec};
use crate::rng::{exponential, secs, standard_normal};

impl Latency {
    pub fn sample(&self, rng: &mut SeededRandom) -> Duration {
        match self {
            Latency::Constant { value } => value.0,
            Latency::Exponential { mean } => secs(exponential(rng, mean.secs())),
            Latency::Lognormal { p50, p99 } => {
                // ln X ~ N(mu, sigma): the median is e^mu, the 99th percentile e^(mu + 2.326 sigma).
                let mu = p50.secs().ln();
                let sigma = (p99.secs() / p50.secs()).ln() / Z99;
                secs((mu + sigma * standard_normal(rng)).exp())
            }
            Latency::Bimodal {
                fast,
                slow,
                slow_fraction,
            } => {
                if rng.unit() < *slow_fraction {
                    slow.0
                } else {
                    fast.0
                }
            }
            Latency::Pareto { min, alpha, max } => {
                let u = 1.0 - rng.unit(); // (0, 1]
                let x = min.secs() / u.powf(1.0 / alpha);
                secs(max.map_or(x, |m| x.min(m.secs())))
            }
        }
    }
}

/// The standard normal's 99th percentile.
const Z99: f64 = 2.326_347_874;

/// A request waiting for, or holding, a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// The engine's id for the attempt (unique over the run).
    pub attempt: u64,
    /// The engine's slot of the call the attempt belongs to (reused once the call ends, so
    /// the attempt id is what tells whether the caller still waits).
    pub slot: usize,
    pub priority: u8,
}

/// What the server says when a request arrives.
#[derive(Debug, PartialEq)]
pub enum Arrival {
    /// Answered without a server, after this long.
    Answer(Duration, Verdict),
    /// Started at once; it finishes after this long.
    Started(Duration),
    /// Waiting for a server. A full queue makes room for a higher priority by turning away
    /// the newest waiter of the lowest priority below it, which is answered `Overload`.
    Queued { evicted: Option<Job> },
}

pub struct Server<'a> {
    spec: &'a UpstreamSpec,
    episodes: Vec<&'a Episode>,
    /// One queue per priority level, highest last.
    levels: Vec<u8>,
    waiting: Vec<VecDeque<Job>>,
    queued: usize,
    pub busy: u32,
}

impl<'a> Server<'a> {
    pub fn new(spec: &'a UpstreamSpec, episodes: &'a [&'a Episode], priorities: &[u8]) -> Self {
        let mut levels: Vec<u8> = priorities.to_vec();
        levels.sort_unstable();
        levels.dedup();
        if levels.is_empty() {
            levels.push(0);
        }
        Server {
            spec,
            episodes: episodes.to_vec(),
            waiting: vec![VecDeque::new(); levels.len()],
            levels,
            queued: 0,
            busy: 0,
        }
    }

    pub fn queue_len(&self) -> usize {
        self.queued
    }

    /// Servers serving at `t` (a capacity episode lowers it; overlapping ones, the lowest).
    pub fn servers(&self, t: Duration) -> u32 {
        self.episodes
            .iter()
            .filter(|e| e.kind == EpisodeKind::Capacity && e.active(t))
            .filter_map(|e| e.servers)
            .fold(self.spec.servers, u32::min)
    }

    /// A request arrives at `t`.
    pub fn arrive(&mut self, t: Duration, job: Job, rng: &mut SeededRandom) -> Arrival {
        for e in &self.episodes {
            if !e.active(t) {
                continue;
            }
            match e.kind {
                EpisodeKind::Outage if rng.unit() < e.fraction.unwrap_or(1.0) => {
                    return Arrival::Answer(
                        e.after.map_or(Duration::ZERO, |a| a.0),
                        Verdict::Transient,
                    );
                }
                EpisodeKind::Overload if rng.unit() < e.fraction.unwrap_or(1.0) => {
                    return Arrival::Answer(
                        Duration::ZERO,
                        Verdict::Overload {
                            retry_after: e.retry_after.map(|r| r.0),
                        },
                    );
                }
                _ => {}
            }
        }
        if self.busy < self.servers(t) {
            self.busy += 1;
            return Arrival::Started(self.service(t, rng));
        }
        let level = self.level(job.priority);
        let mut evicted = None;
        if self.queued >= self.spec.queue as usize {
            let lower = self.waiting[..level].iter().position(|q| !q.is_empty());
            match lower {
                Some(l) => {
                    evicted = self.waiting[l].pop_back();
                    self.queued -= 1;
                }
                None => return Arrival::Answer(Duration::ZERO, self.overload()),
            }
        }
        self.waiting[level].push_back(job);
        self.queued += 1;
        Arrival::Queued { evicted }
    }

    /// The answer to a request the queue has no room for.
    pub fn overload(&self) -> Verdict {
        Verdict::Overload {
            retry_after: self.spec.retry_after.map(|r| r.0),
        }
    }

    fn level(&self, priority: u8) -> usize {
        self.levels
            .iter()
            .position(|&p| p == priority)
            .expect("every client's priority is a level")
    }

    /// A server finished at `t` (or capacity may have grown): the jobs that start now, with
    /// their service times.
    pub fn free(
        &mut self,
        t: Duration,
        finished: bool,
        rng: &mut SeededRandom,
    ) -> Vec<(Job, Duration)> {
        if finished {
            self.busy -= 1;
        }
        let mut started = Vec::new();
        while self.busy < self.servers(t) && self.queued > 0 {
            let level = self
                .waiting
                .iter()
                .rposition(|q| !q.is_empty())
                .expect("a waiting job");
            let q = &mut self.waiting[level];
            let job = match self.spec.discipline {
                Discipline::Fcfs => q.pop_front(),
                Discipline::Lifo => q.pop_back(),
            }
            .expect("non-empty");
            self.queued -= 1;
            self.busy += 1;
            started.push((job, self.service(t, rng)));
        }
        started
    }

    /// A service time at `t`, slowdowns applied (a latency replacement first, then factors).
    fn service(&self, t: Duration, rng: &mut SeededRandom) -> Duration {
        let active = || {
            self.episodes
                .iter()
                .filter(|e| e.kind == EpisodeKind::Slowdown && e.active(t))
        };
        let base = active()
            .find_map(|e| e.latency.as_ref())
            .unwrap_or(&self.spec.latency)
            .sample(rng);
        let factor: f64 = active().filter_map(|e| e.factor).product();
        base.mul_f64(factor)
    }

    /// Whether a served request fails anyway (the baseline failure rate).
    pub fn fails(&self, rng: &mut SeededRandom) -> bool {
        self.spec.failure_rate > 0.0 && rng.unit() < self.spec.failure_rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::units::Dur;

    fn spec(servers: u32, queue: u32, discipline: Discipline) -> UpstreamSpec {
        UpstreamSpec {
            servers,
            queue,
            discipline,
            latency: Latency::Constant {
                value: Dur(Duration::from_millis(10)),
            },
            failure_rate: 0.0,
            retry_after: Some(Dur(Duration::from_secs(2))),
        }
    }

    fn job(attempt: u64, priority: u8) -> Job {
        Job {
            attempt,
            slot: 0,
            priority,
        }
    }

    #[test]
    fn serves_queues_then_refuses_with_its_retry_after() {
        let s = spec(1, 2, Discipline::Fcfs);
        let mut srv = Server::new(&s, &[], &[0]);
        let mut rng = SeededRandom::new(1);
        let t = Duration::ZERO;
        assert_eq!(
            srv.arrive(t, job(1, 0), &mut rng),
            Arrival::Started(Duration::from_millis(10))
        );
        assert_eq!(
            srv.arrive(t, job(2, 0), &mut rng),
            Arrival::Queued { evicted: None }
        );
        assert_eq!(
            srv.arrive(t, job(3, 0), &mut rng),
            Arrival::Queued { evicted: None }
        );
        assert_eq!(
            srv.arrive(t, job(4, 0), &mut rng),
            Arrival::Answer(
                Duration::ZERO,
                Verdict::Overload {
                    retry_after: Some(Duration::from_secs(2))
                }
            )
        );
        let next = srv.free(Duration::from_millis(10), true, &mut rng);
        assert_eq!(next, vec![(job(2, 0), Duration::from_millis(10))]);
        assert_eq!(srv.queue_len(), 1);
    }

    #[test]
    fn lifo_serves_the_newest_and_priority_comes_first() {
        let s = spec(1, 10, Discipline::Lifo);
        let mut srv = Server::new(&s, &[], &[0, 5]);
        let mut rng = SeededRandom::new(1);
        let t = Duration::ZERO;
        srv.arrive(t, job(1, 0), &mut rng);
        for (a, p) in [(2, 0), (3, 0), (4, 5), (5, 0), (6, 5)] {
            assert_eq!(
                srv.arrive(t, job(a, p), &mut rng),
                Arrival::Queued { evicted: None }
            );
        }
        let order: Vec<u64> = (0..5)
            .map(|_| srv.free(t, true, &mut rng)[0].0.attempt)
            .collect();
        // Priority 5 first (newest first within it), then priority 0 newest first.
        assert_eq!(order, [6, 4, 5, 3, 2]);
    }

    #[test]
    fn a_full_queue_turns_away_the_newest_lower_priority_waiter() {
        let s = spec(1, 2, Discipline::Fcfs);
        let mut srv = Server::new(&s, &[], &[0, 1, 5]);
        let mut rng = SeededRandom::new(1);
        let t = Duration::ZERO;
        srv.arrive(t, job(1, 0), &mut rng);
        srv.arrive(t, job(2, 0), &mut rng);
        srv.arrive(t, job(3, 1), &mut rng);
        // Full: a priority-5 arrival evicts the newest priority-0 waiter (job 2).
        assert_eq!(
            srv.arrive(t, job(4, 5), &mut rng),
            Arrival::Queued {
                evicted: Some(job(2, 0))
            }
        );
        assert_eq!(srv.queue_len(), 2);
        // Nothing below priority 0: refused at the door.
        assert!(matches!(
            srv.arrive(t, job(5, 0), &mut rng),
            Arrival::Answer(_, Verdict::Overload { .. })
        ));
        // A priority-1 arrival finds only priorities 1 and 5 waiting: refused too.
        assert!(matches!(
            srv.arrive(t, job(6, 1), &mut rng),
            Arrival::Answer(_, Verdict::Overload { .. })
        ));
    }

    #[test]
    fn episodes_fail_refuse_slow_down_and_remove_servers() {
        let s = spec(4, 10, Discipline::Fcfs);
        let d = |ms| Dur(Duration::from_millis(ms));
        let ep = |kind| Episode {
            kind,
            from: d(100),
            to: d(200),
            fraction: None,
            after: None,
            retry_after: None,
            factor: None,
            latency: None,
            servers: None,
        };
        let outage = Episode {
            after: Some(d(5)),
            ..ep(EpisodeKind::Outage)
        };
        let slow = Episode {
            from: d(300),
            to: d(400),
            factor: Some(3.0),
            ..ep(EpisodeKind::Slowdown)
        };
        let overload = Episode {
            from: d(500),
            to: d(600),
            retry_after: Some(d(50)),
            ..ep(EpisodeKind::Overload)
        };
        let capacity = Episode {
            from: d(700),
            to: d(800),
            servers: Some(1),
            ..ep(EpisodeKind::Capacity)
        };
        let eps = [&outage, &slow, &overload, &capacity];
        let mut srv = Server::new(&s, &eps, &[0]);
        let mut rng = SeededRandom::new(3);
        assert_eq!(
            srv.arrive(d(150).0, job(1, 0), &mut rng),
            Arrival::Answer(Duration::from_millis(5), Verdict::Transient)
        );
        assert_eq!(
            srv.arrive(d(350).0, job(2, 0), &mut rng),
            Arrival::Started(Duration::from_millis(30))
        );
        assert_eq!(
            srv.arrive(d(550).0, job(3, 0), &mut rng),
            Arrival::Answer(
                Duration::ZERO,
                Verdict::Overload {
                    retry_after: Some(Duration::from_millis(50))
                }
            )
        );
        // One still busy from 350 ms; at 750 ms only one server serves.
        assert_eq!(srv.servers(d(750).0), 1);
        assert_eq!(
            srv.arrive(d(750).0, job(4, 0), &mut rng),
            Arrival::Queued { evicted: None }
        );
        assert!(
            srv.free(d(800).0, false, &mut rng).len() == 1,
            "capacity back at 800 ms"
        );
    }

    #[test]
    fn distributions_have_their_quantiles() {
        let mut rng = SeededRandom::new(5);
        let n = 100_000;
        let mut draw = |l: Latency| {
            let mut v: Vec<f64> = (0..n).map(|_| l.sample(&mut rng).as_secs_f64()).collect();
            v.sort_by(f64::total_cmp);
            (v[n / 2], v[n * 99 / 100], v.iter().sum::<f64>() / n as f64)
        };
        let ms = |x| Dur(Duration::from_millis(x));
        let (p50, p99, _) = draw(Latency::Lognormal {
            p50: ms(20),
            p99: ms(200),
        });
        assert!(
            (p50 - 0.020).abs() < 0.001 && (p99 - 0.200).abs() < 0.01,
            "{p50} {p99}"
        );
        let (_, _, mean) = draw(Latency::Exponential { mean: ms(50) });
        assert!((mean - 0.050).abs() < 0.001, "{mean}");
        let (p50, p99, mean) = draw(Latency::Bimodal {
            fast: ms(10),
            slow: ms(500),
            slow_fraction: 0.1,
        });
        assert!(
            p50 == 0.010 && p99 == 0.5 && (mean - 0.059).abs() < 0.002,
            "{mean}"
        );
        // Pareto(min 10 ms, α 3): mean = α·min/(α−1) = 15 ms; P(X > x) = (min/x)^α.
        let (p50, p99, mean) = draw(Latency::Pareto {
            min: ms(10),
            alpha: 3.0,
            max: None,
        });
        assert!(
            (p99 - 0.04642).abs() < 0.002 && (p50 - 0.01260).abs() < 0.0003,
            "{p50} {p99}"
        );
        assert!((mean - 0.015).abs() < 0.0005, "{mean}");
    }
}
