//! One decision: a call's own script call, or its batch's; what the outcome counts as; and
//! the failure mode for every call Redis did not decide.

use core::time::Duration;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use resilix::rate_limit::AcquireError;
use resilix::rejection::{RejectReason, Rejection};
use resilix::time::{Clock, Instant};

use crate::FleetRateLimiter;
use crate::batch::{Outcome, Why};
use crate::config::{Admitted, OnBackendError};
use crate::events::{FleetEvent, bump};
use crate::guard::{NotSent, Ticket};
use crate::script::{Decision, ServerClock};

impl<C: Clock> FleetRateLimiter<C> {
    /// One call's own script call, with its ticket.
    pub(crate) async fn alone(
        &self,
        redis_key: &str,
        cells: u32,
        sent: Instant,
        ticket: Ticket<'_>,
    ) -> Outcome {
        // The caller gives up at sent + timeout; the script learns that instant on Redis's
        // clock (never later than the caller's) and decides nothing past it.
        let deadline = self
            .guard
            .server_deadline(sent.saturating_add(self.timeout));
        let mut conn = self.conn.clone();
        let mut loaded = false;
        let call = async {
            match deadline {
                Some(d) => {
                    self.script
                        .eval_before(&mut conn, redis_key, &self.params, cells, d, &mut loaded)
                        .await
                }
                None => self
                    .script
                    .eval(
                        &mut conn,
                        redis_key,
                        &self.params,
                        cells,
                        ServerClock::Redis,
                        &mut loaded,
                    )
                    .await
                    .map(Decision::Decided),
            }
        };
        let answer = tokio::time::timeout(self.timeout, call).await;
        let now = self.clock.now();
        if loaded {
            self.script_loaded();
        }
        match answer {
            Ok(Ok(Decision::Decided(reply))) => {
                self.guard.sampled(reply.server_now, now);
                ticket.succeeded(now);
                if reply.admitted {
                    Outcome::Admitted {
                        remaining: reply.remaining,
                        tat: reply.tat(),
                    }
                } else {
                    Outcome::Refused {
                        remaining: reply.remaining,
                        wait: reply.wait,
                    }
                }
            }
            Ok(Ok(Decision::Expired { server_now })) => {
                self.guard.sampled(server_now, now);
                ticket.late();
                Outcome::NotDecided(Why::Expired)
            }
            // The connection manager's own response timeout is the backend timeout too.
            Ok(Err(e)) if !e.is_timeout() => {
                ticket.failed(false, now);
                self.conn.suspect();
                Outcome::NotDecided(Why::Error(Arc::new(e)))
            }
            _ => {
                ticket.timed_out(sent, now);
                self.conn.suspect();
                Outcome::NotDecided(Why::Timeout)
            }
        }
    }

    /// Counts and reports an outcome, and applies the failure mode to one Redis did not
    /// decide.
    pub(crate) fn apply(
        &self,
        key: Option<&str>,
        cells: u32,
        outcome: Outcome,
    ) -> (Result<Admitted, AcquireError>, Option<Duration>) {
        let c = &self.counters;
        match outcome {
            Outcome::Admitted { remaining, tat } => {
                bump(&c.fleet_admitted);
                self.emit(FleetEvent::Decided {
                    admitted: true,
                    remaining,
                });
                (Ok(Admitted::Fleet { remaining }), Some(tat))
            }
            Outcome::Refused { remaining, wait } => {
                bump(&c.fleet_refused);
                self.emit(FleetEvent::Decided {
                    admitted: false,
                    remaining,
                });
                // The wait counts from the decision, which came before this reading.
                let at = self.clock.now().saturating_add(wait);
                let refused = Rejection::until(RejectReason::RateLimited, at);
                (Err(AcquireError::Limited(refused)), None)
            }
            Outcome::NotDecided(why) => {
                match why {
                    Why::Error(e) => {
                        bump(&c.backend_errors);
                        self.emit(FleetEvent::BackendError(&e));
                    }
                    Why::Timeout => {
                        bump(&c.backend_timeouts);
                        self.emit(FleetEvent::BackendTimeout(self.timeout));
                    }
                    Why::Expired => {
                        bump(&c.expired);
                        self.emit(FleetEvent::Expired);
                    }
                    Why::NotSent(NotSent::BreakerOpen) => {
                        bump(&c.breaker_open);
                        self.emit(FleetEvent::BreakerOpen);
                    }
                    Why::NotSent(NotSent::InFlightFull) => {
                        bump(&c.in_flight_full);
                        self.emit(FleetEvent::InFlightFull);
                    }
                }
                (self.fail(key, cells), None)
            }
        }
    }

    /// The failure mode, for a call Redis did not decide.
    fn fail(&self, key: Option<&str>, cells: u32) -> Result<Admitted, AcquireError> {
        let Some(local) = &self.local else {
            bump(&self.counters.failed_closed);
            self.emit(FleetEvent::FailedClosed);
            return Err(AcquireError::Limited(Rejection::new(
                RejectReason::RateLimited,
            )));
        };
        let now = self.clock.now();
        let r = match key {
            None => local.global.try_acquire_n(now, cells),
            Some(k) => {
                let mut h = std::hash::DefaultHasher::new();
                k.hash(&mut h);
                local.keyed.try_acquire_n(h.finish(), now, cells)
            }
        };
        if let OnBackendError::Local { .. } = self.mode {
            self.emit(FleetEvent::LocalDecision {
                admitted: r.is_ok(),
            });
            bump(if r.is_ok() {
                &self.counters.local_admitted
            } else {
                &self.counters.local_refused
            });
            return r.map(|()| Admitted::Local);
        }
        match r {
            Ok(()) => {
                bump(&self.counters.failed_open);
                self.emit(FleetEvent::FailedOpen);
                Ok(Admitted::FailedOpen)
            }
            Err(e) => {
                bump(&self.counters.failed_open_capped);
                self.emit(FleetEvent::FailOpenCapped);
                Err(e)
            }
        }
    }
}
