//! The optimistic-concurrency model of AWS's backoff simulator (`aws-samples/
//! aws-arch-backoff-simulator`, `backoff_simulator.py`), event for event:
//!
//! * one row with an integer version; a read returns it and is not counted; a write carrying
//!   the version it read counts as a call and succeeds only if the version is unchanged;
//! * each client updates the row exactly once: read, then write; on a failed write it backs
//!   off and starts again with a read. Every hop takes one network delay;
//! * the run ends when the queue is empty; its time is the last event, the moment the last
//!   client hears its write succeed.
//!
//! Here each client's update is one logical call through a real resilix pipeline: an attempt
//! is one read+write round, a failed write is `Verdict::Transient`, and the pipeline's retry
//! policy (with the real backoff) says when to read again. The Python schedules the next read
//! to arrive at `t + delay + backoff`; we retry at `t + backoff` and the read then travels one
//! delay, which is the same instant.

use std::time::Duration;

use resilix::Verdict;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;

use crate::net::Delay;
use crate::observer::Tally;
use crate::queue::EventQueue;
use crate::rng::{Purpose, stream};
use crate::stack::Stack;

/// The single row.
#[derive(Debug, Default)]
pub struct OccServer {
    version: u64,
    /// Writes received (the simulator's "calls", the work).
    pub calls: u64,
    /// Writes refused because the version had moved.
    pub failures: u64,
}

impl OccServer {
    pub fn read(&self) -> u64 {
        self.version
    }

    pub fn write(&mut self, read_version: u64) -> bool {
        self.calls += 1;
        if read_version == self.version {
            self.version += 1;
            true
        } else {
            self.failures += 1;
            false
        }
    }
}

enum Ev {
    ReadAtServer(usize),
    ReadReply(usize, u64),
    WriteAtServer(usize, u64),
    WriteReply(usize, bool),
    Retry(usize),
}

/// One run's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OccRun {
    pub calls: u64,
    pub completion: Duration,
    /// Clients whose retry policy gave up (0 for the published setup, which never gives up).
    pub gave_up: u64,
    pub succeeded: u64,
}

struct Client<'a, S: Stack + 'a> {
    rng: SeededRandom,
    call: S::Call<'a>,
    attempt: Option<S::Attempt<'a>>,
}

/// Runs `clients` clients against one row until every client is done.
pub fn run<S: Stack>(stack: &S, clients: usize, net: Delay, master: u64, run: u64) -> OccRun {
    let tally = Tally::default();
    let mut server = OccServer::default();
    let mut queue = EventQueue::new();
    let mut cs: Vec<Client<'_, S>> = Vec::with_capacity(clients);
    for i in 0..clients {
        let mut rng = stream(master, run, Purpose::Client, i as u64);
        let mut call = stack.begin(Instant::ZERO, CallOptions::default());
        let attempt = {
            let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&tally);
            S::admit(&mut call, &mut env).ok()
        };
        if attempt.is_some() {
            let d = net.sample(&mut rng);
            queue.schedule(Instant::ZERO.saturating_add(d), Ev::ReadAtServer(i));
        }
        cs.push(Client { rng, call, attempt });
    }
    let (mut gave_up, mut succeeded) = (0, 0);
    while let Some((now, ev)) = queue.pop() {
        match ev {
            Ev::ReadAtServer(c) => {
                let d = net.sample(&mut cs[c].rng);
                queue.schedule(now.saturating_add(d), Ev::ReadReply(c, server.read()));
            }
            Ev::ReadReply(c, v) => {
                let d = net.sample(&mut cs[c].rng);
                queue.schedule(now.saturating_add(d), Ev::WriteAtServer(c, v));
            }
            Ev::WriteAtServer(c, v) => {
                let ok = server.write(v);
                let d = net.sample(&mut cs[c].rng);
                queue.schedule(now.saturating_add(d), Ev::WriteReply(c, ok));
            }
            Ev::WriteReply(c, ok) => {
                let client = &mut cs[c];
                let attempt = client.attempt.take().expect("a reply answers an attempt");
                let verdict = if ok {
                    Verdict::Success
                } else {
                    Verdict::Transient
                };
                let mut env = Env::new(now, &mut client.rng).with_observer(&tally);
                match S::settle(&mut client.call, attempt, &verdict, &mut env) {
                    Next::Done => succeeded += 1,
                    Next::RetryAt(at) => queue.schedule(at, Ev::Retry(c)),
                    Next::GiveUp(_) => gave_up += 1,
                }
            }
            Ev::Retry(c) => {
                let client = &mut cs[c];
                let mut env = Env::new(now, &mut client.rng).with_observer(&tally);
                match S::admit(&mut client.call, &mut env) {
                    Ok(attempt) => {
                        client.attempt = Some(attempt);
                        let d = net.sample(&mut client.rng);
                        queue.schedule(now.saturating_add(d), Ev::ReadAtServer(c));
                    }
                    Err(_) => gave_up += 1,
                }
            }
        }
    }
    OccRun {
        calls: server.calls,
        completion: queue.now().since_origin(),
        gave_up,
        succeeded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilix::pipeline::Pipeline;

    #[test]
    fn the_row_counts_writes_not_reads() {
        let mut s = OccServer::default();
        assert_eq!(s.read(), 0);
        assert!(s.write(0));
        assert!(!s.write(0), "a stale version must fail");
        assert!(s.write(1));
        assert_eq!((s.calls, s.failures, s.read()), (3, 1, 2));
    }

    /// Hand-worked: three clients, every hop exactly 10 ms, no retry policy. All read version
    /// 0 at 10 ms, all writes land at 30 ms in client order: the first wins (version → 1), the
    /// other two fail. Three calls, one success, two give-ups, last reply at 40 ms.
    #[test]
    fn three_clients_fixed_delay_by_hand() {
        let net = Delay::Fixed(Duration::from_millis(10));
        let r = run(&Pipeline::new(), 3, net, 1, 0);
        assert_eq!(
            r,
            OccRun {
                calls: 3,
                completion: Duration::from_millis(40),
                gave_up: 2,
                succeeded: 1,
            }
        );
    }

    #[test]
    fn one_client_takes_one_round_of_four_hops() {
        let net = Delay::Fixed(Duration::from_millis(7));
        let r = run(&Pipeline::new(), 1, net, 5, 0);
        assert_eq!(
            (r.calls, r.completion, r.succeeded),
            (1, Duration::from_millis(28), 1)
        );
    }
}
