//! Calls that find every in-flight slot taken are batched: calls on the same bucket join one
//! pending batch, whose first call (the leader) waits, within its own deadline, for a slot,
//! then sends one script call for all of the batch's cells, admitting as many as fit
//! ([`GcraScript::eval_batch`](crate::script::GcraScript::eval_batch)), first come first
//! served. So the offered load beyond what the connections carry costs one round trip per
//! batch, not per call, and is still decided by Redis. A batch holds at most 4,096 calls; a
//! call that finds it full, or whose deadline passes first, is decided by the failure mode.

use core::time::Duration;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use redis::RedisError;

use resilix::time::{Clock, Instant};
use tokio::sync::oneshot;

use crate::FleetRateLimiter;
use crate::guard::{NotSent, Ticket};
use crate::script::Decision;

/// What a call learns, alone or in a batch.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    /// Redis admitted its cells; the TAT its cells left (for a refund).
    Admitted { remaining: u32, tat: Duration },
    /// Redis refused its cells; they would be admitted after `wait`.
    Refused { remaining: u32, wait: Duration },
    /// Redis did not decide.
    NotDecided(Why),
}

#[derive(Clone, Debug)]
pub(crate) enum Why {
    Error(Arc<RedisError>),
    Timeout,
    Expired,
    NotSent(NotSent),
}

/// Calls a batch holds at most (one deadline's worth of offered load beyond the in-flight
/// bound); a call finding its batch this full is decided by the failure mode.
const MAX_BATCH: usize = 4096;

struct Pending {
    cells: u32,
    followers: Vec<(u32, oneshot::Sender<Outcome>)>,
}

#[derive(Default)]
pub(crate) struct Batcher {
    pending: Mutex<HashMap<String, Pending>>,
}

enum Join {
    Leader,
    Follower(oneshot::Receiver<Outcome>),
    Full,
}

impl Batcher {
    fn join(&self, key: &str, cells: u32) -> Join {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match p.get_mut(key) {
            None => {
                p.insert(
                    key.to_owned(),
                    Pending {
                        cells,
                        followers: Vec::new(),
                    },
                );
                Join::Leader
            }
            Some(b) if b.followers.len() < MAX_BATCH => {
                let (tx, rx) = oneshot::channel();
                b.cells = b.cells.saturating_add(cells);
                b.followers.push((cells, tx));
                Join::Follower(rx)
            }
            Some(_) => Join::Full,
        }
    }

    fn take(&self, key: &str) -> Pending {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.remove(key).unwrap_or(Pending {
            cells: 0,
            followers: Vec::new(),
        })
    }
}

impl<C: Clock> FleetRateLimiter<C> {
    /// A call that found every slot taken: joins (or leads) its bucket's batch.
    pub(crate) async fn batched(&self, key: &str, cells: u32, sent: Instant) -> Outcome {
        let until = sent.saturating_add(self.timeout());
        match self.batcher().join(key, cells) {
            Join::Full => Outcome::NotDecided(Why::NotSent(NotSent::InFlightFull)),
            Join::Follower(rx) => {
                let left = until.saturating_duration_since(self.now());
                match tokio::time::timeout(left, rx).await {
                    Ok(Ok(outcome)) => outcome,
                    _ => Outcome::NotDecided(Why::NotSent(NotSent::InFlightFull)),
                }
            }
            Join::Leader => self.lead(key, cells, until).await,
        }
    }

    /// Waits for a slot until `until`, sends the batch, tells every follower its outcome and
    /// answers the leader's.
    async fn lead(&self, key: &str, own: u32, until: Instant) -> Outcome {
        let ticket = loop {
            let freed = self.guard().freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            match self.guard().pass(self.now()) {
                Ok(t) => break Ok(t),
                Err(NotSent::InFlightFull) => {
                    let left = until.saturating_duration_since(self.now());
                    if left.is_zero() || tokio::time::timeout(left, freed).await.is_err() {
                        break Err(NotSent::InFlightFull);
                    }
                }
                Err(why) => break Err(why),
            }
        };
        let batch = self.batcher().take(key);
        let ticket: Ticket<'_> = match ticket {
            Ok(t) => t,
            Err(why) => {
                let o = Outcome::NotDecided(Why::NotSent(why));
                for (_, tx) in batch.followers {
                    let _ = tx.send(o.clone());
                }
                return o;
            }
        };
        // No more than the burst can be admitted at once: asking for more only refuses more.
        let total = batch.cells.max(own).min(self.params().burst());
        let sent = self.now();
        let deadline = self.guard().server_deadline(until);
        let mut conn = self.conn();
        let mut loaded = false;
        let call =
            self.script()
                .eval_batch(&mut conn, key, self.params(), total, deadline, &mut loaded);
        // The batch is bounded by its leader's deadline, the earliest of its calls'.
        let left = until.saturating_duration_since(sent);
        let answer = tokio::time::timeout(left, call).await;
        let now = self.now();
        if loaded {
            self.script_loaded();
        }
        let shared = match answer {
            Ok(Ok((admitted, Decision::Decided(reply)))) => {
                self.guard().sampled(reply.server_now, now);
                ticket.succeeded(now);
                Ok((admitted, reply))
            }
            Ok(Ok((_, Decision::Expired { server_now }))) => {
                self.guard().sampled(server_now, now);
                ticket.late();
                Err(Why::Expired)
            }
            Ok(Err(e)) if !e.is_timeout() => {
                ticket.failed(false, now);
                self.conn_suspect();
                Err(Why::Error(Arc::new(e)))
            }
            _ => {
                ticket.timed_out(sent, now);
                self.conn_suspect();
                Err(Why::Timeout)
            }
        };
        let (admitted, reply) = match shared {
            Ok(r) => r,
            Err(why) => {
                for (_, tx) in batch.followers {
                    let _ = tx.send(Outcome::NotDecided(why.clone()));
                }
                return Outcome::NotDecided(why);
            }
        };
        // First come, first served: the leader, then the followers in the order they joined.
        let t = self.params().emission_ns();
        let span = self.params().span_ns();
        let debt_after = reply.reset_after.as_nanos() as u64;
        let mut given = 0u32;
        let mut decide = |cells: u32| {
            if given + cells <= admitted {
                given += cells;
                // The TAT this call's cells left: the batch's, less the cells given after it.
                let later = u64::from(admitted - given) * t;
                Outcome::Admitted {
                    remaining: reply.remaining,
                    tat: reply.tat() - Duration::from_nanos(later.min(debt_after)),
                }
            } else {
                let need = (debt_after + u64::from(cells) * t).saturating_sub(span);
                Outcome::Refused {
                    remaining: reply.remaining,
                    wait: Duration::from_nanos(need),
                }
            }
        };
        let mine = decide(own);
        for (cells, tx) in batch.followers {
            let _ = tx.send(decide(cells));
        }
        mine
    }
}
