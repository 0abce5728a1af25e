//! The full pipeline's twin: a real [`Pipeline`] over real policies beside their composed
//! reference models.
//!
//! The pipeline adds one thing to its policies: how they compose (docs/design/spec.md §7). An arrival asks
//! each policy in order — throttler → breaker → limiter → bulkhead → rate limit — and the
//! first refusal decides: its
//! reason and retry-at are the pipeline's, the policies after it are never asked, and the
//! permits taken before it are dropped, which is a cancellation (nothing recorded, slots given
//! back). An admitted attempt ends by settling every permit, innermost first, with the
//! verdict, or by being dropped, which cancels each. [`Models`] is that composition written
//! over the per-policy models of this crate; [`PipelineTwin`] drives it beside the real
//! pipeline and compares every decision and, after every step, each model's observable state
//! with its real policy's.
//!
//! Randomness: the real pipeline passes one generator through its `Env` to each policy in
//! turn. The twin records every raw draw the real pipeline makes in a step and replays that
//! sequence to the models, which consume it in the same policy order; a step in which the
//! models do not consume exactly the draws the real policies made is a mismatch of its own.
//!
//! ```
//! use resilix::breaker::{Breaker, Config, DEFAULT_WINDOW};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::limiter::{Limiter, LimiterConfig};
//! use resilix::random::SeededRandom;
//! use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
//! use resilix::throttler::{Throttler, ThrottlerConfig};
//! use resilix_reference::pipeline::{Models, PipelineTwin, Policies};
//! use resilix_reference::{Scenario, drive_scenario};
//!
//! let limiter_config = LimiterConfig::gradient2();
//! let rate = RateLimitConfig::new(Rate::per_second(100)).with_burst(10);
//! let throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
//! let breaker = Breaker::new(Config::DEFAULT).unwrap();
//! let limiter = Limiter::new(limiter_config).unwrap();
//! let bulkhead = Bulkhead::new(BulkheadConfig::new(8).unwrap());
//! let rate_limit = RateLimiter::new(rate).unwrap();
//! let policies = Policies { throttler: &throttler, breaker: &breaker, limiter: &limiter, bulkhead: &bulkhead, rate_limit: &rate_limit };
//! let pipeline = policies.pipeline();
//! let models = Models::new(
//!     &ThrottlerConfig::DEFAULT,
//!     resilix_reference::breaker::Model::time_based(Config::DEFAULT, DEFAULT_WINDOW, 10),
//!     &limiter_config,
//!     8,
//!     rate,
//! );
//! let mut twin = PipelineTwin::new(&pipeline, policies, models);
//! let report = drive_scenario(&mut twin, &Scenario::day(3), &mut SeededRandom::new(3)).unwrap();
//! assert!(report.admitted > 0 && report.refused > 0);
//! ```

use crate::draws::{Recorder, replay};
use core::time::Duration;

use resilix::breaker::{Breaker, OutcomeWindow};
use resilix::bulkhead::Bulkhead;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::Env;
use resilix::pipeline::{Attempt, Pipeline};
use resilix::random::Random;
use resilix::rate_limit::{RateLimitConfig, RateLimiter};
use resilix::rejection::RejectReason;
use resilix::retry::NoRetry;
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::breaker::{Model as BreakerModel, Ticket as BreakerTicket};
use crate::bulkhead::Model as BulkheadModel;
use crate::limiter::{Model as LimiterModel, ModelPermit as LimiterTicket};
use crate::rate_limit::{self, RateLimitModel};
use crate::throttler::ThrottlerModel;
use crate::twin::{Decision, Twin, same};

/// The real pipeline the twin drives: every policy slot (not retry), each a borrowed policy.
pub type RealPipeline<'a, W> =
    Pipeline<NoRetry, &'a Throttler, &'a Breaker<W>, &'a Limiter, &'a Bulkhead, &'a RateLimiter>;

/// One admitted real attempt.
type RealAttempt<'a, W> =
    Attempt<'a, &'a Throttler, &'a Breaker<W>, &'a Limiter, &'a Bulkhead, &'a RateLimiter>;

/// The real policies, borrowed: the pipeline's slots, and what [`PipelineTwin::check`] reads.
#[derive(Debug)]
pub struct Policies<'a, W: OutcomeWindow> {
    /// The client-side throttler (its default 20 buckets).
    pub throttler: &'a Throttler,
    /// The circuit breaker.
    pub breaker: &'a Breaker<W>,
    /// The adaptive limiter.
    pub limiter: &'a Limiter,
    /// The bulkhead.
    pub bulkhead: &'a Bulkhead,
    /// The rate limiter.
    pub rate_limit: &'a RateLimiter,
}

impl<W: OutcomeWindow> Clone for Policies<'_, W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<W: OutcomeWindow> Copy for Policies<'_, W> {}

impl<'a, W: OutcomeWindow> Policies<'a, W> {
    /// The pipeline over these policies, in spec order, without retry or attempt timeout.
    pub fn pipeline(&self) -> RealPipeline<'a, W> {
        Pipeline::new()
            .throttler(self.throttler)
            .breaker(self.breaker)
            .limiter(self.limiter)
            .bulkhead(self.bulkhead)
            .rate_limit(self.rate_limit)
    }
}

/// The models' claims for one attempt, filled in pipeline order: a slot is `None` until its
/// model admitted. A refused arrival cancels the slots filled before the refusal.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tickets {
    throttler: bool,
    breaker: Option<BreakerTicket>,
    limiter: Option<LimiterTicket>,
    bulkhead: bool,
}

/// The reference models composed as the pipeline composes its policies.
#[derive(Clone, Debug)]
pub struct Models {
    /// The throttler's model.
    pub throttler: ThrottlerModel,
    /// The breaker's model.
    pub breaker: BreakerModel,
    /// The limiter's model.
    pub limiter: LimiterModel,
    /// The bulkhead's model.
    pub bulkhead: BulkheadModel,
    /// The rate limiter's model.
    pub rate_limit: RateLimitModel,
}

impl Models {
    /// The models of a throttler of `throttler` (20 buckets), a breaker (`breaker`, built from
    /// the real breaker's config and window), a limiter built from `limiter`, a bulkhead of
    /// `cap` and a rate limiter of `rate` (all configurations the real policies accepted).
    pub fn new(
        throttler: &ThrottlerConfig,
        breaker: BreakerModel,
        limiter: &LimiterConfig,
        cap: u32,
        rate: RateLimitConfig,
    ) -> Models {
        Models {
            throttler: ThrottlerModel::new(throttler, 20),
            breaker,
            limiter: LimiterModel::new(limiter),
            bulkhead: BulkheadModel::new(cap),
            rate_limit: RateLimitModel::new(rate).expect("a rate the real limiter accepted"),
        }
    }

    /// An arrival at `now`: each model in pipeline order, the first refusal deciding (what
    /// was admitted before it is cancelled).
    pub fn admit(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Tickets, Decision> {
        let mut t = Tickets::default();
        let refused = 'ask: {
            if !self.throttler.admit(now, rng) {
                break 'ask Decision::Refused {
                    reason: RejectReason::Throttled,
                    retry_at: None,
                };
            }
            t.throttler = true;
            match self.breaker.admit(now, rng) {
                Ok(ticket) => t.breaker = Some(ticket),
                Err(d) => break 'ask d,
            }
            match self.limiter.admit(now.as_nanos()) {
                Some(ticket) => t.limiter = Some(ticket),
                None => {
                    break 'ask Decision::Refused {
                        reason: RejectReason::LimiterFull,
                        retry_at: None,
                    };
                }
            }
            match self.bulkhead.arrive() {
                Decision::Admitted => t.bulkhead = true,
                d => break 'ask d,
            }
            match self.rate_limit.try_acquire_n(now, 1) {
                Ok(()) => return Ok(t),
                // One cell always fits a valid burst; `ExceedsBurst` is mapped anyway.
                Err(e) => rate_limit::refused(e),
            }
        };
        self.cancel(t, now, rng);
        Err(refused)
    }

    /// The attempt of `t` settles at `now` with `verdict`: innermost first, as
    /// `Attempt::settle` (the rate limiter's cell was spent at admission: nothing to settle).
    pub fn settle(&mut self, t: Tickets, now: Instant, verdict: Verdict, rng: &mut dyn Random) {
        if t.bulkhead {
            self.bulkhead.end();
        }
        if let Some(p) = t.limiter {
            self.limiter.settle(p, &verdict, now.as_nanos(), rng);
        }
        if let Some(ticket) = t.breaker {
            self.breaker.end(ticket, now, Some(verdict), rng);
        }
        if t.throttler {
            self.throttler.settle(now, &verdict);
        }
    }

    /// The claims of `t` are cancelled at `now` (a dropped attempt, or the claims taken before
    /// a refusal): each slot gives back what it holds and records nothing.
    pub fn cancel(&mut self, t: Tickets, now: Instant, rng: &mut dyn Random) {
        // The throttler counts a call only when it settles: a cancelled one is nothing to it.
        if let Some(ticket) = t.breaker {
            self.breaker.end(ticket, now, None, rng);
        }
        if let Some(p) = t.limiter {
            self.limiter.cancel(p);
        }
        if t.bulkhead {
            self.bulkhead.end();
        }
    }
}

/// The real pipeline beside its composed models.
pub struct PipelineTwin<'a, W: OutcomeWindow> {
    pipeline: &'a RealPipeline<'a, W>,
    real: Policies<'a, W>,
    /// The models, driven alongside.
    pub models: Models,
    open: Vec<(RealAttempt<'a, W>, Tickets)>,
}

impl<'a, W: OutcomeWindow> PipelineTwin<'a, W> {
    /// A twin of `pipeline`, which must be `real.pipeline()` over fresh policies from which
    /// `models` were built.
    pub fn new(
        pipeline: &'a RealPipeline<'a, W>,
        real: Policies<'a, W>,
        models: Models,
    ) -> PipelineTwin<'a, W> {
        PipelineTwin {
            pipeline,
            real,
            models,
            open: Vec::new(),
        }
    }
}

impl<W: OutcomeWindow> Twin for PipelineTwin<'_, W> {
    fn open(&self) -> usize {
        self.open.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let mut rec = Recorder::new(rng);
        let real = self.pipeline.admit(&mut Env::new(now, &mut rec), None);
        let models = &mut self.models;
        let model = rec.replay("pipeline", |r| models.admit(now, r))?;
        let decision = same(
            Decision::of(&real),
            match model {
                Ok(_) => Decision::Admitted,
                Err(d) => d,
            },
        )?;
        if let (Ok(attempt), Ok(tickets)) = (real, model) {
            if attempt.admitted_at() != now || attempt.deadline().is_some() {
                return Err(format!(
                    "attempt admitted at {:?} with deadline {:?}, expected {now:?} and none",
                    attempt.admitted_at(),
                    attempt.deadline()
                ));
            }
            self.open.push((attempt, tickets));
        }
        Ok(decision)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        let (attempt, tickets) = self.open.remove(index);
        let models = &mut self.models;
        match verdict {
            Some(v) => {
                let admitted_at = attempt.admitted_at();
                let mut rec = Recorder::new(rng);
                let took = attempt.settle(&v, &mut Env::new(now, &mut rec));
                rec.replay("pipeline", |r| models.settle(tickets, now, v, r))?;
                let expected: Duration = now - admitted_at;
                if took != expected {
                    return Err(format!("settle took {took:?}, expected {expected:?}"));
                }
            }
            None => {
                // A dropped attempt draws nothing: the models must not either.
                drop(attempt);
                replay(&[], "pipeline", |r| models.cancel(tickets, now, r))?;
            }
        }
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        let (r, m) = (self.real, &self.models);
        let breaker = (r.breaker.state(), r.breaker.probes_in_flight());
        let breaker_model = (m.breaker.state(), m.breaker.probes_in_flight());
        if breaker != breaker_model {
            return Err(format!(
                "breaker (state, probes): real {breaker:?}, model {breaker_model:?}"
            ));
        }
        let limiter = (
            u64::from(r.limiter.limit_fixed()),
            u64::from(r.limiter.in_flight()),
            r.limiter.baseline().as_duration(),
        );
        let limiter_model = (
            m.limiter.limit,
            m.limiter.in_flight,
            Duration::from_nanos(m.limiter.baseline * 1_000 / 16),
        );
        if limiter != limiter_model {
            return Err(format!(
                "limiter (limit/256, in flight, baseline): real {limiter:?}, model {limiter_model:?}"
            ));
        }
        // The release count wraps at 2^32 by design (an event count, compared for change).
        let bulkhead = (r.bulkhead.held(), r.bulkhead.releases());
        let bulkhead_model = (m.bulkhead.held(), m.bulkhead.releases() as u32);
        if bulkhead != bulkhead_model {
            return Err(format!(
                "bulkhead (held, releases): real {bulkhead:?}, model {bulkhead_model:?}"
            ));
        }
        let (requests, accepts) = r.throttler.counts(now);
        let counts = (u64::from(requests), u64::from(accepts));
        if counts != m.throttler.counts(now) {
            return Err(format!(
                "throttler (requests, accepts): real {counts:?}, model {:?}",
                m.throttler.counts(now)
            ));
        }
        let (available, model) = (r.rate_limit.available(now), m.rate_limit.available(now));
        if available != model {
            return Err(format!(
                "rate limit available: real {available}, model {model}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilix::breaker::{CircuitState, Config, DEFAULT_WINDOW};
    use resilix::bulkhead::BulkheadConfig;
    use resilix::random::SeededRandom;
    use resilix::rate_limit::Rate;

    /// A refusal by an inner policy cancels what the outer ones admitted, in the real pipeline
    /// and in the models alike; a dropped attempt cancels every slot.
    #[test]
    fn an_inner_refusal_cancels_the_outer_admissions() {
        let limiter_config = LimiterConfig::gradient2();
        let rate = RateLimitConfig::new(Rate::per_second(1)).with_burst(2);
        let breaker = Breaker::new(Config::DEFAULT).unwrap();
        let limiter = Limiter::new(limiter_config).unwrap();
        let bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
        let rate_limit = RateLimiter::new(rate).unwrap();
        let throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
        let policies = Policies {
            throttler: &throttler,
            breaker: &breaker,
            limiter: &limiter,
            bulkhead: &bulkhead,
            rate_limit: &rate_limit,
        };
        let pipeline = policies.pipeline();
        let models = Models::new(
            &ThrottlerConfig::DEFAULT,
            BreakerModel::time_based(Config::DEFAULT, DEFAULT_WINDOW, 10),
            &limiter_config,
            1,
            rate,
        );
        let mut twin = PipelineTwin::new(&pipeline, policies, models);
        let mut rng = SeededRandom::new(1);
        let t = Instant::from_secs(10);
        assert!(twin.arrive(t, &mut rng).unwrap().is_admitted());
        // The bulkhead is full: the limiter's admission is cancelled, the rate limiter is
        // never asked (its second cell stays).
        let refused = twin.arrive(t, &mut rng).unwrap();
        assert_eq!(
            refused,
            Decision::Refused {
                reason: RejectReason::BulkheadFull,
                retry_at: None
            }
        );
        twin.check(t).unwrap();
        assert_eq!((limiter.in_flight(), twin.models.limiter.in_flight), (1, 1));
        assert_eq!(rate_limit.available(t), 1);
        // Dropped: every slot gives back.
        twin.end(t, 0, None, &mut rng).unwrap();
        twin.check(t).unwrap();
        assert_eq!((limiter.in_flight(), bulkhead.held()), (0, 0));
        assert_eq!(breaker.state(), CircuitState::Closed);
        // The rate limiter refuses next, with its retry-at, and the models agree on it.
        assert!(twin.arrive(t, &mut rng).unwrap().is_admitted());
        twin.end(t, 0, Some(Verdict::Success), &mut rng).unwrap();
        match twin.arrive(t, &mut rng).unwrap() {
            Decision::Refused {
                reason: RejectReason::RateLimited,
                retry_at: Some(at),
            } => assert!(at > t),
            d => panic!("{d:?}"),
        }
        twin.check(t).unwrap();
        assert_eq!(limiter.in_flight(), 0);
    }
}
