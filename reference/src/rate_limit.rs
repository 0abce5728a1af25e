//! The rate limiter, plainly: GCRA in `u128` nanoseconds, and the keyed table as a list.
//!
//! GCRA keeps one instant, the theoretical arrival time (TAT): when the bucket would be full
//! again. Its debt at `now` is `TAT − now`; a cell costs one emission interval T; a call of n
//! cells is admitted when the debt after it is at most the span `burst · T` (equivalently, the
//! debt before a one-cell call is at most the tolerance τ = (burst − 1) · T), and the TAT
//! becomes `max(TAT, now) + n · T`. A refused call learns the instant at which it would be
//! admitted: `TAT − (span − n · T)`.
//!
//! What the real limiter adds to textbook GCRA, and this model states plainly:
//!
//! * **A resolution.** The limiter measures time in steps of `2^s` ns (8 ns at the finest,
//!   chosen per configuration, see [`Params::of`]) and reads `now` to the step below. Its T is
//!   the configured `period / count` rounded up to whole steps plus one step (a clock read to
//!   the step below can read an elapsed time one step long; the extra step per cell pays for
//!   it), so `burst + elapsed · count / period` bounds the cells admitted in any span exactly,
//!   in real nanoseconds. [`RateLimitTwin`] checks that bound beside the decisions.
//! * **A lag allowance.** Debt beyond `span + allowance` (allowance: max(span, 1 s), capped)
//!   is not debt but a clock far behind the latest admission (time stepped back), read as a
//!   bucket left idle. On a forward timeline it never happens; it is modelled anyway.
//! * **Reconfiguration.** The cells in the bucket (with their fraction: `held = span − debt`
//!   in exact nanoseconds at `now`, worth `held / T` cells) carry over: under the new T' they
//!   are `⌊held · T' / T⌋` ns of credit, capped at the new span; the new debt is the rest,
//!   counted from `now` and rounded up to the new resolution.
//!
//! A bucket that is full at `now` is written as full from the start of `now`'s step.
//!
//! The keyed table ([`KeyedModel`]) is the part of [`KeyedRateLimiter`] that is deterministic
//! single-threaded: [`crate::keyed::Table`] of buckets, a bucket idle when it is full at `now`
//! (an idle key is indistinguishable from a new one) and a newly placed key's bucket full at
//! `now`; a key without an entry is limited by the one overflow bucket that every such key
//! shares.
//!
//! [`KeyedRateLimiter`]: resilix::rate_limit::KeyedRateLimiter

use core::time::Duration;

use resilix::random::Random;
use resilix::rate_limit::{
    AcquireError, KeyedRateLimiter, RateLimitConfig, RateLimitConfigError, RateLimiter,
};
use resilix::rejection::{RejectReason, Rejection};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::keyed::{Arrivals, Idle, Table, agree};
use crate::twin::{Decision, Twin};

/// The finest resolution: 8 ns (`2^3`).
const MIN_SHIFT: u32 = 3;
/// Spans stay below 2^30 steps.
const SPAN_STEPS: u128 = 1 << 30;
/// T is chosen to be 2 049–4 097 steps where the span allows.
const PRECISION_BITS: u32 = 11;
/// The lag allowance before its cap: one second, or the span if longer.
const LAG: u128 = 1_000_000_000;

/// A configuration as the limiter holds it, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The resolution, ns (a power of two, at least 8).
    pub resolution: u128,
    /// The stored emission interval T, ns (a whole number of resolutions).
    pub t: u128,
    /// Cells a full bucket holds.
    pub burst: u128,
    /// burst · T, ns.
    pub span: u128,
    /// The lag allowance, ns.
    pub allowance: u128,
}

impl Params {
    /// The parameters the limiter holds for `config`, or why it refuses it.
    ///
    /// The resolution is the coarsest power of two (at least 8 ns) on which T is 2 049–4 097
    /// steps, made coarser while `burst · T` is 2^30 steps or more; the stored T must be within
    /// 0.1% of `period / count` (1% at 8 ns, which holds intervals below 16 µs no closer).
    pub fn of(config: RateLimitConfig) -> Result<Params, RateLimitConfigError> {
        let count = u128::from(config.rate.count());
        let per = config.rate.period().as_nanos().min(u128::from(u64::MAX));
        let burst = u128::from(config.burst);
        if count == 0 {
            return Err(RateLimitConfigError::ZeroRate);
        }
        if per == 0 {
            return Err(RateLimitConfigError::ZeroPeriod);
        }
        if burst == 0 {
            return Err(RateLimitConfigError::ZeroBurst);
        }
        if burst >= SPAN_STEPS {
            return Err(RateLimitConfigError::BurstTooLarge);
        }
        let floor = per / count;
        if floor == 0 {
            return Err(RateLimitConfigError::RateBeyondResolution);
        }
        let mut shift = (127 - floor.leading_zeros())
            .saturating_sub(PRECISION_BITS)
            .max(MIN_SHIFT);
        let steps = loop {
            let steps = per.div_ceil(count << shift) + 1;
            if steps * burst < SPAN_STEPS {
                break steps;
            }
            shift += 1;
            if shift > 63 {
                return Err(RateLimitConfigError::BurstTooLarge);
            }
        };
        let resolution = 1u128 << shift;
        let t = steps * resolution;
        // Stored T · count against the period: 0.1% (1% at 8 ns).
        let tolerance = if shift == MIN_SHIFT { 100 } else { 1_000 };
        if (t * count - per) * tolerance > per {
            return Err(RateLimitConfigError::RateBeyondResolution);
        }
        let span_steps = steps * burst;
        let lag_steps = LAG.div_ceil(resolution).min(u128::from(u32::MAX));
        let allowance_steps = lag_steps.max(span_steps).min(SPAN_STEPS - span_steps);
        Ok(Params {
            resolution,
            t,
            burst,
            span: span_steps * resolution,
            allowance: allowance_steps * resolution,
        })
    }

    /// `now` read to the step below.
    pub fn read(&self, now: Instant) -> u128 {
        let ns = u128::from(now.as_nanos());
        ns - ns % self.resolution
    }

    /// A tick word's circle (2^31 steps), for sweeps.
    pub fn circle(&self) -> u128 {
        self.resolution << 31
    }
}

/// One GCRA bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The theoretical arrival time, ns.
    pub tat: u128,
}

impl Bucket {
    /// A bucket that has never been used: full (its TAT is the timeline's origin).
    pub const NEW: Bucket = Bucket { tat: 0 };

    /// The debt at `now` (read to the step below), ns.
    pub fn debt(&self, p: &Params, now: Instant) -> u128 {
        let now = p.read(now);
        if self.tat <= now || self.tat - now > p.span + p.allowance {
            0
        } else {
            self.tat - now
        }
    }

    /// Takes `n` cells (1 ≤ n ≤ burst) at `now`, or answers when they would be admitted.
    pub fn acquire(&mut self, p: &Params, now: Instant, n: u32) -> Result<(), Instant> {
        let after = self.debt(p, now) + u128::from(n) * p.t;
        if after <= p.span {
            self.tat = p.read(now) + after;
            Ok(())
        } else {
            let at = p.read(now) + after - p.span;
            Err(Instant::from_nanos(at.min(u128::from(u64::MAX)) as u64))
        }
    }

    /// Whole cells available at `now`.
    pub fn available(&self, p: &Params, now: Instant) -> u32 {
        (p.span.saturating_sub(self.debt(p, now)) / p.t) as u32
    }

    /// Whether the bucket is full at `now`.
    pub fn is_full(&self, p: &Params, now: Instant) -> bool {
        self.debt(p, now) == 0
    }

    /// A bucket full at `now`.
    pub fn full(p: &Params, now: Instant) -> Bucket {
        Bucket { tat: p.read(now) }
    }

    /// This bucket's cells carried over from `old` to `new` at `now` (see the module docs).
    pub fn carry_over(&self, old: &Params, new: &Params, now: Instant) -> Bucket {
        let ns = u128::from(now.as_nanos());
        let debt = if self.debt(old, now) == 0 {
            0
        } else {
            self.tat - ns // exact: a TAT in debt lies after `now`
        };
        let held = old.span.saturating_sub(debt);
        let credit = held
            .checked_mul(new.t)
            .map_or(new.span, |x| x / old.t)
            .min(new.span);
        let owed = new.span - credit;
        if owed == 0 {
            Bucket::full(new, now)
        } else {
            Bucket {
                tat: (ns + owed).div_ceil(new.resolution) * new.resolution,
            }
        }
    }
}

/// The model's answer to `try_acquire_n`.
fn acquire_n(bucket: &mut Bucket, p: &Params, now: Instant, n: u32) -> Result<(), AcquireError> {
    if n == 0 {
        return Ok(());
    }
    if u128::from(n) > p.burst {
        return Err(AcquireError::ExceedsBurst {
            requested: n,
            burst: p.burst as u32,
        });
    }
    bucket
        .acquire(p, now, n)
        .map_err(|at| AcquireError::Limited(Rejection::until(RejectReason::RateLimited, at)))
}

/// One rate limiter, plainly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimitModel {
    /// The configuration in force.
    pub config: RateLimitConfig,
    /// Its parameters.
    pub params: Params,
    /// The bucket.
    pub bucket: Bucket,
}

impl RateLimitModel {
    /// A full bucket, or why `config` is refused.
    pub fn new(config: RateLimitConfig) -> Result<RateLimitModel, RateLimitConfigError> {
        Ok(RateLimitModel {
            config,
            params: Params::of(config)?,
            bucket: Bucket::NEW,
        })
    }

    /// `try_acquire_n`.
    pub fn try_acquire_n(&mut self, now: Instant, n: u32) -> Result<(), AcquireError> {
        acquire_n(&mut self.bucket, &self.params, now, n)
    }

    /// `available`.
    pub fn available(&self, now: Instant) -> u32 {
        self.bucket.available(&self.params, now)
    }

    /// `reconfigure` (never busy, single-threaded).
    pub fn reconfigure(
        &mut self,
        config: RateLimitConfig,
        now: Instant,
    ) -> Result<(), RateLimitConfigError> {
        let next = Params::of(config)?;
        self.bucket = self.bucket.carry_over(&self.params, &next, now);
        self.params = next;
        self.config = config;
        Ok(())
    }
}

/// A [`RateLimiter`] beside its model, with a pool of configurations to reconfigure to.
///
/// Each arrival asks for 1 cell (one in eight asks for up to burst + 1); one arrival in
/// `reconfigure_one_in` reconfigures first, to a configuration drawn from `pool`. Besides
/// identical decisions, [`check`](Twin::check) holds the real limiter to
/// `burst + elapsed · count / period` cells since the last reconfiguration, in real
/// nanoseconds, and to the model's `available`.
#[derive(Debug)]
pub struct RateLimitTwin<'a> {
    real: &'a RateLimiter,
    model: RateLimitModel,
    pool: Vec<RateLimitConfig>,
    reconfigure_one_in: u64,
    open: usize,
    since: Instant,
    cells: u128,
    /// Reconfigurations made.
    pub reconfigured: u64,
}

impl<'a> RateLimitTwin<'a> {
    /// `real` must be fresh, built from `config`.
    pub fn new(
        real: &'a RateLimiter,
        config: RateLimitConfig,
        pool: Vec<RateLimitConfig>,
        reconfigure_one_in: u64,
    ) -> Result<RateLimitTwin<'a>, RateLimitConfigError> {
        Ok(RateLimitTwin {
            real,
            model: RateLimitModel::new(config)?,
            pool,
            reconfigure_one_in,
            open: 0,
            since: Instant::ZERO,
            cells: 0,
            reconfigured: 0,
        })
    }

    /// The model.
    pub fn model(&self) -> &RateLimitModel {
        &self.model
    }

    /// Both take `n` cells at `now`; answers the (identical) result.
    pub fn acquire(&mut self, now: Instant, n: u32) -> Result<Result<(), AcquireError>, String> {
        let real = self.real.try_acquire_n(now, n);
        let model = self.model.try_acquire_n(now, n);
        if real != model {
            return Err(format!(
                "acquire {n} with {:?}: real {real:?}, model {model:?} (model {:?})",
                self.model.config, self.model.bucket
            ));
        }
        if real.is_ok() {
            self.cells += u128::from(n);
        }
        Ok(real)
    }

    /// Both reconfigure to `config` at `now`.
    pub fn reconfigure(&mut self, config: RateLimitConfig, now: Instant) -> Result<(), String> {
        let mut rng = resilix::random::SeededRandom::new(0);
        let real = self
            .real
            .reconfigure(config, &mut resilix::permit::Env::new(now, &mut rng));
        let model = self.model.reconfigure(config, now);
        match (real, model) {
            (Ok(()), Ok(())) => {
                self.since = now;
                self.cells = 0;
                self.reconfigured += 1;
                Ok(())
            }
            (Err(resilix::rate_limit::ReconfigureError::Config(a)), Err(b)) if a == b => Ok(()),
            (r, m) => Err(format!(
                "reconfigure to {config:?}: real {r:?}, model {m:?}"
            )),
        }
    }
}

impl Twin for RateLimitTwin<'_> {
    fn open(&self) -> usize {
        self.open
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        if self.reconfigure_one_in > 0
            && !self.pool.is_empty()
            && rng.below(self.reconfigure_one_in) == 0
        {
            let config = self.pool[rng.below(self.pool.len() as u64) as usize];
            self.reconfigure(config, now)?;
        }
        let n = cells(rng, self.model.params.burst);
        let result = self.acquire(now, n)?;
        Ok(decide(result, &mut self.open))
    }

    fn end(
        &mut self,
        _now: Instant,
        _index: usize,
        _verdict: Option<Verdict>,
        _rng: &mut dyn Random,
    ) -> Result<(), String> {
        end(&mut self.open);
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        let (real, model) = (self.real.available(now), self.model.available(now));
        if real != model {
            return Err(format!("available: real {real}, model {model}"));
        }
        if self.real.burst() != self.model.config.burst
            || self.real.emission_interval().as_nanos() != self.model.params.t
        {
            return Err(format!(
                "config: real burst {} T {:?}, model {:?}",
                self.real.burst(),
                self.real.emission_interval(),
                self.model.params
            ));
        }
        // Exact in real nanoseconds against the configured rate (a forward timeline).
        let c = self.model.config;
        let elapsed = u128::from(now.as_nanos().saturating_sub(self.since.as_nanos()));
        let bound = u128::from(c.burst)
            + elapsed * u128::from(c.rate.count()) / c.rate.period().as_nanos().max(1);
        if self.cells > bound {
            return Err(format!(
                "{} cells since {:?} > burst + rate × elapsed = {bound}",
                self.cells, self.since
            ));
        }
        Ok(())
    }
}

/// A key's bucket, beside the parameters its idle rule reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct KeyBucket {
    params: Params,
    bucket: Bucket,
}

impl Idle for KeyBucket {
    fn is_idle(&self, now: Instant) -> bool {
        self.bucket.is_full(&self.params, now)
    }
}

/// The keyed table, plainly: `N` entries of buckets and one overflow bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedModel {
    /// The parameters (one configuration for every key).
    pub params: Params,
    table: Table<KeyBucket>,
}

impl KeyedModel {
    /// An empty table of `n` entries.
    pub fn new(config: RateLimitConfig, n: usize) -> Result<KeyedModel, RateLimitConfigError> {
        if n == 0 {
            return Err(RateLimitConfigError::ZeroCapacity);
        }
        let params = Params::of(config)?;
        let never_used = KeyBucket {
            params,
            bucket: Bucket::NEW,
        };
        Ok(KeyedModel {
            params,
            table: Table::new(never_used, n),
        })
    }

    /// `try_acquire_n`.
    pub fn try_acquire_n(&mut self, key: u64, now: Instant, n: u32) -> Result<(), AcquireError> {
        if n == 0 {
            return Ok(());
        }
        if u128::from(n) > self.params.burst {
            return Err(AcquireError::ExceedsBurst {
                requested: n,
                burst: self.params.burst as u32,
            });
        }
        let params = self.params;
        let home = self.table.place_fresh(key, now, || KeyBucket {
            params,
            bucket: Bucket::full(&params, now),
        });
        acquire_n(&mut self.table.model(home).bucket, &params, now, n)
    }

    /// `available`.
    pub fn available(&self, key: u64, now: Instant) -> u32 {
        let own = self.table.get(key);
        let bucket = own.unwrap_or(self.table.overflow()).bucket;
        bucket.available(&self.params, now)
    }

    /// `evict_idle`.
    pub fn evict_idle(&mut self, now: Instant) -> usize {
        self.table.evict_idle(now)
    }

    /// `len`.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// `is_empty`.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// A [`KeyedRateLimiter`] beside its model: arrivals for keys `0..keys` (spread by a
/// multiplier so their homes collide sometimes), one in `evict_one_in` preceded by
/// `evict_idle`; [`check`](Twin::check) compares `len` and every key's `available`.
#[derive(Debug)]
pub struct KeyedTwin<'a, const N: usize> {
    real: &'a KeyedRateLimiter<N>,
    model: KeyedModel,
    arrivals: Arrivals,
    open: usize,
}

impl<'a, const N: usize> KeyedTwin<'a, N> {
    /// `real` must be fresh, built from `config`.
    pub fn new(
        real: &'a KeyedRateLimiter<N>,
        config: RateLimitConfig,
        keys: u64,
        evict_one_in: u64,
    ) -> Result<KeyedTwin<'a, N>, RateLimitConfigError> {
        Ok(KeyedTwin {
            real,
            model: KeyedModel::new(config, N)?,
            arrivals: Arrivals::new(keys, evict_one_in),
            open: 0,
        })
    }

    /// The key numbered `i`.
    pub fn key(i: u64) -> u64 {
        crate::keyed::key(i)
    }

    /// Both take `n` cells for `key` at `now`.
    pub fn acquire(
        &mut self,
        key: u64,
        now: Instant,
        n: u32,
    ) -> Result<Result<(), AcquireError>, String> {
        let real = self.real.try_acquire_n(key, now, n);
        let model = self.model.try_acquire_n(key, now, n);
        if real == model {
            Ok(real)
        } else {
            Err(format!("key {key} n {n}: real {real:?}, model {model:?}"))
        }
    }

    /// Both evict idle entries at `now`.
    pub fn evict_idle(&mut self, now: Instant) -> Result<usize, String> {
        agree(
            "evict_idle",
            self.real.evict_idle(now),
            self.model.evict_idle(now),
        )
    }
}

impl<const N: usize> Twin for KeyedTwin<'_, N> {
    fn open(&self) -> usize {
        self.open
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let (evict, key) = self.arrivals.draw(rng);
        if evict {
            self.evict_idle(now)?;
        }
        let n = cells(rng, self.model.params.burst);
        let result = self.acquire(key, now, n)?;
        Ok(decide(result, &mut self.open))
    }

    fn end(
        &mut self,
        _now: Instant,
        _index: usize,
        _verdict: Option<Verdict>,
        _rng: &mut dyn Random,
    ) -> Result<(), String> {
        end(&mut self.open);
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        agree("len", self.real.len(), self.model.len())?;
        for key in self.arrivals.keys() {
            agree(
                format_args!("available({key})"),
                self.real.available(key, now),
                self.model.available(key, now),
            )?;
        }
        Ok(())
    }
}

/// How many cells an arrival asks for: one, or (one time in eight) up to one beyond `burst`,
/// so that `ExceedsBurst` comes up too.
fn cells(rng: &mut dyn Random, burst: u128) -> u32 {
    if rng.below(8) == 0 {
        1 + rng.below(burst as u64 + 1) as u32
    } else {
        1
    }
}

/// The decision a twin reports for an acquire's `result`; an admitted call is one more open.
fn decide(result: Result<(), AcquireError>, open: &mut usize) -> Decision {
    match result {
        Ok(()) => {
            *open += 1;
            Decision::Admitted
        }
        Err(e) => refused(e),
    }
}

/// The refusal an acquire's error stands for: limited (with when to come back), or more cells
/// than the burst, refused as the real limiter refuses it.
pub fn refused(e: AcquireError) -> Decision {
    match e {
        AcquireError::Limited(r) => Decision::Refused {
            reason: r.reason(),
            retry_at: r.retry_at(),
        },
        AcquireError::ExceedsBurst { .. } => Decision::Refused {
            reason: RejectReason::RateLimited,
            retry_at: None,
        },
        _ => unreachable!("an acquire error the reference does not model: model it"),
    }
}

/// A call ends: a rate-limit permit holds nothing (the cell was spent at admit).
fn end(open: &mut usize) {
    *open = open.saturating_sub(1);
}

/// A rate given as `count` per `period`, for tests that draw rates log-uniformly.
pub fn config(count: u32, period: Duration, burst: u32) -> RateLimitConfig {
    RateLimitConfig::new(resilix::rate_limit::Rate::new(count, period)).with_burst(burst)
}

/// A configuration with a rate log-uniform between one a day and ten million a second and a
/// burst log-uniform between 1 and a million: every tick scale a configuration can select
/// (some of them refused, at the fine end and for the largest bursts).
pub fn arbitrary_config(rng: &mut dyn Random) -> RateLimitConfig {
    const DAY: f64 = 86_400e9;
    let unit = |rng: &mut dyn Random| rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
    // A period log-uniform from 1 µs to 2 days, then a count giving a rate in range.
    let per = (1e3f64.ln() + unit(rng) * ((2.0 * DAY).ln() - 1e3f64.ln())).exp();
    let rate_per_ns = ((1.0 / DAY).ln() + unit(rng) * (1e-2f64.ln() - (1.0 / DAY).ln())).exp();
    let count = (rate_per_ns * per).round().clamp(1.0, f64::from(u32::MAX)) as u32;
    let burst = (unit(rng) * 1e6f64.ln()).exp().round().max(1.0) as u32;
    config(count, Duration::from_nanos(per as u64), burst)
}
