//! The SRE client-side throttler, plainly: counts of requests and accepts per bucket period in
//! a map keyed by the full `u64` period number, summed over the last `B` periods, and the
//! formula `P = max(0, (requests − K·accepts) / (requests + 1))` capped, zero below
//! `min_requests`.
//!
//! **Bucketed, as documented.** The real window is a ring of `B` buckets, each `window / B`
//! long (rounded up to a nanosecond), and counts the calls whose bucket period is one of the
//! last `B` (the current one included): it covers between `B − 1` and `B` bucket lengths
//! (`core/src/mechanism/window.rs`). That is its meaning, so the model is bucketed the same way, and
//! single-threaded decisions are identical: no tolerance.
//!
//! **Randomness.** A shed is one draw, `Random::chance(numerator, denominator)`, on the exact
//! fraction. How many words a draw consumes depends on the denominator, so the model keeps the
//! fraction in the same terms (over `(requests + 1) × 10^6`, K and the cap to a millionth, as
//! the config documents); the twin records the words the real throttler drew and replays them
//! to the model, so both decide on the same draws.
//!
//! The model assumes time never goes backwards (the differential timelines only move forward)
//! and counts in `u64` (the real counters saturate at `u32::MAX`, which no run reaches).

use crate::draws::Recorder;
use crate::window::Periods;

use resilix::permit::{Env, Permit, Policy};
use resilix::random::Random;
use resilix::rejection::RejectReason;
use resilix::throttler::{
    LocalRejections, Probability, Throttler, ThrottlerConfig, ThrottlerPermit,
    ThrottlerReconfigureError,
};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::twin::{Decision, Twin, same};

/// One, in millionths.
const MILLION: u128 = 1_000_000;

/// The throttler's semantics in wide time.
#[derive(Clone, Debug)]
pub struct ThrottlerModel {
    /// K × 10^6, rounded to the nearest millionth (saturating: an infinite K is `u64::MAX`).
    k_millionths: u128,
    /// The cap × 10^6.
    cap_millionths: u128,
    min_requests: u64,
    local_rejections: LocalRejections,
    /// (requests, accepts) per bucket period.
    window: Periods,
    buckets: usize,
    /// `⌈window / buckets⌉`, at least 8 ns: what a reconfiguration may not change.
    bucket_nanos: u128,
}

impl ThrottlerModel {
    /// The model of a `Throttler<buckets>` with `config` (a config the real one accepts).
    pub fn new(config: &ThrottlerConfig, buckets: usize) -> ThrottlerModel {
        ThrottlerModel {
            k_millionths: (config.accepts_multiplier * 1e6 + 0.5) as u64 as u128,
            cap_millionths: (config.max_rejection_rate * 1e6 + 0.5) as u64 as u128,
            min_requests: u64::from(config.min_requests),
            local_rejections: config.local_rejections,
            window: Periods::new(config.window, buckets),
            buckets,
            bucket_nanos: config
                .window
                .as_nanos()
                .div_ceil(buckets.max(1) as u128)
                .max(8),
        }
    }

    /// `(requests, accepts)` of the calls whose period is one of the last `B` at `now`.
    pub fn counts(&self, now: Instant) -> (u64, u64) {
        self.window.totals(now)
    }

    /// The shedding probability at `now`, as `(numerator, denominator)`; `(0, 1)` for never.
    pub fn probability(&self, now: Instant) -> (u64, u64) {
        let (requests, accepts) = self.counts(now);
        if requests < self.min_requests {
            return (0, 1);
        }
        let excess = u128::from(requests) * MILLION;
        let weighted = self.k_millionths * u128::from(accepts);
        if excess <= weighted {
            return (0, 1);
        }
        let numerator = excess - weighted;
        let denominator = u128::from(requests + 1) * MILLION;
        if numerator * MILLION > self.cap_millionths * denominator {
            (self.cap_millionths as u64, MILLION as u64)
        } else {
            (numerator as u64, denominator as u64)
        }
    }

    /// `Throttler::reconfigure`, single-threaded: K and the cap of `config` from now on, over
    /// the same counts; a change of window (its bucket length, in plain `u128` nanoseconds),
    /// of `local_rejections` or of `min_requests` is refused with the field's name. `config`
    /// is one the real throttler accepts as a config.
    pub fn reconfigure(&mut self, config: &ThrottlerConfig) -> Result<(), &'static str> {
        let next = ThrottlerModel::new(config, self.buckets);
        if next.bucket_nanos != self.bucket_nanos {
            return Err("window");
        }
        if next.local_rejections != self.local_rejections {
            return Err("local_rejections");
        }
        if next.min_requests != self.min_requests {
            return Err("min_requests");
        }
        self.k_millionths = next.k_millionths;
        self.cap_millionths = next.cap_millionths;
        Ok(())
    }

    fn add(&mut self, now: Instant, requests: u64, accepts: u64) {
        self.window.add(now, requests, accepts);
    }

    /// A call arrives at `now`: admitted, or shed with probability P drawn from `rng`.
    pub fn admit(&mut self, now: Instant, rng: &mut dyn Random) -> bool {
        let (numerator, denominator) = self.probability(now);
        if numerator > 0 && rng.chance(numerator, denominator) {
            if self.local_rejections == LocalRejections::CountAsRequests {
                self.add(now, 1, 0);
            }
            return false;
        }
        true
    }

    /// An admitted call settles at `now`: a request unless refused downstream (`Rejected`),
    /// an accept if the upstream did the work (success, answered).
    pub fn settle(&mut self, now: Instant, verdict: &Verdict) {
        let accept = matches!(verdict, Verdict::Success | Verdict::Answered);
        if !matches!(verdict, Verdict::Rejected(_)) {
            self.add(now, 1, u64::from(accept));
        }
    }
}

/// A real [`Throttler`] beside its [`ThrottlerModel`].
///
/// With [`with_reconfigurations`](Self::with_reconfigurations), one arrival in `one_in`
/// first reconfigures both to a config drawn from a pool: the real one must accept exactly
/// what the model accepts and refuse the rest with the same field.
pub struct ThrottlerTwin<'a, const B: usize> {
    real: &'a Throttler<B>,
    model: ThrottlerModel,
    open: Vec<ThrottlerPermit<'a, B>>,
    pool: Vec<ThrottlerConfig>,
    reconfigure_one_in: u64,
    /// Reconfigurations both accepted.
    pub reconfigured: u64,
    /// Reconfigurations both refused (a fixed field).
    pub refused: u64,
}

impl<'a, const B: usize> ThrottlerTwin<'a, B> {
    /// Twins `real`, built with `config`, and a fresh model of it.
    pub fn new(real: &'a Throttler<B>, config: &ThrottlerConfig) -> Self {
        ThrottlerTwin {
            real,
            model: ThrottlerModel::new(config, B),
            open: Vec::new(),
            pool: Vec::new(),
            reconfigure_one_in: 0,
            reconfigured: 0,
            refused: 0,
        }
    }

    /// Reconfigures, before one arrival in `one_in`, to a config drawn from `pool` (each one
    /// the real throttler accepts as a config).
    pub fn with_reconfigurations(mut self, pool: Vec<ThrottlerConfig>, one_in: u64) -> Self {
        self.pool = pool;
        self.reconfigure_one_in = one_in;
        self
    }

    /// Both reconfigure to `config` at `now`.
    pub fn reconfigure(&mut self, config: &ThrottlerConfig, now: Instant) -> Result<(), String> {
        let mut rng = resilix::random::SeededRandom::new(0);
        let real = self.real.reconfigure(*config, &mut Env::new(now, &mut rng));
        match (real, self.model.reconfigure(config)) {
            (Ok(()), Ok(())) => self.reconfigured += 1,
            (Err(ThrottlerReconfigureError::Fixed { field }), Err(f)) if field == f => {
                self.refused += 1
            }
            (r, m) => {
                return Err(format!(
                    "reconfigure to {config:?}: real {r:?}, model {m:?}"
                ));
            }
        }
        Ok(())
    }

    /// The model (for sweeps that read it directly).
    pub fn model(&self) -> &ThrottlerModel {
        &self.model
    }
}

impl<const B: usize> Twin for ThrottlerTwin<'_, B> {
    fn open(&self) -> usize {
        self.open.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        if self.reconfigure_one_in > 0
            && !self.pool.is_empty()
            && rng.below(self.reconfigure_one_in) == 0
        {
            let config = self.pool[rng.below(self.pool.len() as u64) as usize];
            self.reconfigure(&config, now)?;
        }
        let (n, d) = self.model.probability(now);
        let real_p = self.real.rejection_probability(now);
        if real_p != Probability::new(n, d) {
            return Err(format!("probability: real {real_p:?}, model {n}/{d}"));
        }
        let mut recorder = Recorder::new(rng);
        let real = self.real.admit(&mut Env::new(now, &mut recorder));
        let real_decision = Decision::of(&real);
        let model = &mut self.model;
        let model_admits = recorder.replay("throttler", |r| model.admit(now, r))?;
        let model_decision = if model_admits {
            Decision::Admitted
        } else {
            Decision::Refused {
                reason: RejectReason::Throttled,
                retry_at: None,
            }
        };
        let decision = same(real_decision, model_decision)?;
        if let Ok(permit) = real {
            self.open.push(permit);
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
        let permit = self.open.remove(index);
        match verdict {
            Some(v) => {
                let mut env = Env::new(now, rng);
                permit.settle(&v, &mut env);
                self.model.settle(now, &v);
            }
            None => drop(permit),
        }
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        let (r, a) = self.real.counts(now);
        let real = (u64::from(r), u64::from(a));
        let model = self.model.counts(now);
        if real == model {
            Ok(())
        } else {
            Err(format!(
                "counts (requests, accepts): real {real:?}, model {model:?}"
            ))
        }
    }
}
