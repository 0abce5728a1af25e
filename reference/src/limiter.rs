//! The adaptive concurrency limiter, plainly: windows, in-flight accounting and the queue zone
//! in wide time, beside the real [`Limiter`].
//!
//! What is written plainly here:
//!
//! * **time**: instants are `u64` nanoseconds; a window opens at an instant and its age is the
//!   plain difference, never a word modulo 2^32. The one thing kept from the real limiter is
//!   its documented resolution: a window's age and length are counted in ticks of
//!   `2^shift` ns, `shift` the finest (at least 2, 4 ns) on which `max_window` is below 2^31
//!   ticks. That is the window's unit, not its width: the model's tick counts are `u64`.
//! * **in flight, waiting, tickets**: plain counters; admission is `in_flight < ⌊limit⌋`.
//! * **the window**: plain sums (the latency sum is capped at `u32::MAX` µs, as the real one
//!   saturates), closed at the first settle that finds it old and full enough, or whose sum
//!   passed 2^31 µs.
//! * **the queue zone**: the ladder of `limiter::Zone` on plain counts.
//!
//! What is re-stated rather than shared: the limit rules (Gradient2, Vegas, AIMD) and the
//! config's compilation to fixed point are `pub(crate)` in the core, so they are written again
//! here from their documentation, in the same integer units (a limit in 256ths of a call,
//! ratios in 65,536ths, RTTs in sixteenths of a microsecond). They must be the same units
//! because a decision (admit or refuse) turns on the exact limit; an approximation in floating
//! point would drift by a call after enough windows and make every later decision
//! incomparable. The comparison stays meaningful: the time handling, the windowing, the
//! counting and the zone are written independently in wide time, which is where the real
//! limiter's packing and tick words could go wrong on a long timeline; and an error in either
//! re-statement of a rule shows as a difference in the limit after the first window that
//! exercises it, which [`LimiterTwin::check`](Twin::check) compares after every step.
//!
//! One semantic choice made explicit: a window RTT at the ceiling of the RTT unit (268 s,
//! saturated) is not a candidate for the baseline refresh (the real limiter keeps its "none
//! seen" marker in that value).

use crate::draws::Recorder;
use core::time::Duration;

use resilix::RejectReason;
use resilix::limiter::{Admission, Algorithm, Limiter, LimiterConfig, LimiterPermit, QueuePlace};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::Random;
use resilix::time::Instant;
use resilix::verdict::Verdict;

use crate::twin::{Decision, Twin, same};

/// One call, in 256ths.
const CALL: u64 = 256;
/// 1.0 in 65,536ths.
const UNIT: u64 = 65_536;
/// Windows averaged plainly before Gradient2's long RTT becomes an EMA.
const WARMUP: u32 = 10;
/// A latency sum (µs) at which a window closes whatever its age.
const SUM_CLOSE_US: u64 = 1 << 31;

/// `x` in 65,536ths, as the real config rounds it (the same `f32` arithmetic).
fn q16(x: f32) -> u64 {
    let scaled = x * 65_536.0 + 0.5;
    if scaled >= u32::MAX as f32 {
        u64::from(u32::MAX)
    } else if scaled > 0.0 {
        scaled as u64
    } else {
        0
    }
}

fn sat32(x: u64) -> u64 {
    x.min(u64::from(u32::MAX))
}

/// `x · r`, `r` in 65,536ths, rounded to nearest.
fn times(x: u64, r: u64) -> u64 {
    sat32((x * r + UNIT / 2) / UNIT)
}

/// `(1 − s)·a + s·b`, `s` in 65,536ths (at most 1), rounded to nearest.
fn blend(a: u64, b: u64, s: u64) -> u64 {
    let s = s.min(UNIT);
    sat32((a * (UNIT - s) + b * s + UNIT / 2) / UNIT)
}

/// The limit rules, in the units above.
#[derive(Clone, Copy, Debug)]
enum Rule {
    Gradient2 {
        smoothing: u64,
        queue: u64,
        long_window: u64,
        tolerance: u64,
        backoff: u64,
        threshold: u64,
    },
    Vegas {
        smoothing: u64,
    },
    Aimd {
        backoff: u64,
        timeout: u64,
    },
}

/// What a closed window says.
#[derive(Clone, Copy, Debug)]
struct Summary {
    /// Average latency in sixteenths of a µs; `None` without latency samples.
    rtt: Option<u64>,
    max_in_flight: u64,
    samples: u64,
    drops: u64,
}

/// A call the model admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelPermit {
    admitted_at: u64,
    in_flight: u64,
}

/// The limiter, plainly.
#[derive(Clone, Debug)]
pub struct Model {
    rule: Rule,
    min: u64,
    max: u64,
    shift: u32,
    min_window: u64,
    max_window: u64,
    window_samples: u64,
    min_rtt_us: u64,
    probe_multiplier: u64,
    /// `queue_factor` in 256ths.
    queue_factor: u64,
    queue_rungs: u64,
    /// The limit in 256ths of a call.
    pub limit: u64,
    /// Calls admitted and not ended.
    pub in_flight: u64,
    /// Waiting places held.
    pub waiting: u64,
    tickets: u64,
    /// The open window: its opening tick (a full `u64` count), length in ticks, sums.
    opened: u64,
    length: u64,
    sum_us: u64,
    samples: u64,
    drops: u64,
    max_in_flight: u64,
    /// The baseline RTT (sixteenths of a µs) and how many windows formed it.
    pub baseline: u64,
    baseline_count: u32,
    recent_min: Option<u64>,
    windows_to_refresh: u64,
}

impl Model {
    /// The model of a limiter built from `c` (a config the real limiter accepts).
    pub fn new(c: &LimiterConfig) -> Model {
        let max_window_ns = nanos(c.max_window);
        let mut shift = 2;
        while shift < 63 && (max_window_ns >> shift) >= 1 << 31 {
            shift += 1;
        }
        let ticks = |d: Duration| sat32(nanos(d).div_ceil(1 << shift));
        let rule = match c.algorithm {
            Algorithm::Gradient2(g) => Rule::Gradient2 {
                smoothing: q16(g.smoothing),
                queue: u64::from(g.queue_size) * CALL,
                long_window: u64::from(g.long_window),
                tolerance: q16(g.rtt_tolerance),
                backoff: q16(g.drop_backoff),
                threshold: q16(g.drop_threshold),
            },
            Algorithm::Vegas(v) => Rule::Vegas {
                smoothing: q16(v.smoothing).min(UNIT),
            },
            Algorithm::Aimd(a) => Rule::Aimd {
                backoff: q16(a.backoff_ratio),
                timeout: rtt_of(nanos(a.timeout)),
            },
            _ => unreachable!("an algorithm the reference does not model: model it"),
        };
        let min_window = ticks(c.min_window);
        let first = u64::from(c.probe_multiplier) * u64::from(c.initial_limit) * 3 / 4;
        Model {
            rule,
            min: u64::from(c.min_limit) * CALL,
            max: u64::from(c.max_limit) * CALL,
            shift,
            min_window,
            max_window: ticks(c.max_window),
            window_samples: u64::from(c.window_samples),
            min_rtt_us: sat32(c.min_rtt.as_micros().min(u128::from(u64::MAX)) as u64),
            probe_multiplier: u64::from(c.probe_multiplier),
            queue_factor: q16(c.queue_factor) >> 8,
            queue_rungs: u64::from(c.queue_rungs),
            limit: u64::from(c.initial_limit) * CALL,
            in_flight: 0,
            waiting: 0,
            tickets: 0,
            opened: 0,
            length: min_window,
            sum_us: 0,
            samples: 0,
            drops: 0,
            max_in_flight: 0,
            baseline: 0,
            baseline_count: 0,
            recent_min: None,
            windows_to_refresh: sat32(first).max(1),
        }
    }

    /// The limit in whole calls.
    pub fn whole_limit(&self) -> u64 {
        self.limit / CALL
    }

    /// The window's resolution: ticks of `2^shift` ns.
    pub fn tick_shift(&self) -> u32 {
        self.shift
    }

    /// Admits now or refuses.
    pub fn admit(&mut self, now: u64) -> Option<ModelPermit> {
        let limit = self.whole_limit();
        (self.in_flight < limit).then(|| {
            self.in_flight += 1;
            ModelPermit {
                admitted_at: now,
                in_flight: self.in_flight,
            }
        })
    }

    /// Waiting places for the current limit: `⌊limit × (factor − 1)⌋`.
    fn room(&self) -> u64 {
        sat32(self.whole_limit() * self.queue_factor.saturating_sub(CALL) / CALL)
    }

    /// A place in the queue zone for a call that found the limit reached, or `None`.
    pub fn queue_place(&mut self) -> bool {
        let room = self.room();
        if self.waiting >= room {
            return false;
        }
        let rung = self.waiting * self.queue_rungs / room;
        let ticket = self.tickets;
        self.tickets = (self.tickets + 1) % (1 << 32);
        if ticket % self.queue_rungs < rung {
            return false; // shed on the ladder
        }
        self.waiting += 1;
        true
    }

    /// A waiting place tries to admit: the place is given back if it does.
    pub fn try_admit(&mut self, now: u64) -> Option<ModelPermit> {
        let p = self.admit(now)?;
        self.waiting -= 1;
        Some(p)
    }

    /// A waiting place is given back.
    pub fn leave(&mut self) {
        self.waiting -= 1;
    }

    /// A call is cancelled: its slot comes back, nothing is recorded.
    pub fn cancel(&mut self, _p: ModelPermit) {
        self.in_flight -= 1;
    }

    /// A call ends at `now` with `verdict`.
    pub fn settle(&mut self, p: ModelPermit, verdict: &Verdict, now: u64, rng: &mut dyn Random) {
        self.in_flight -= 1;
        match verdict {
            Verdict::Success | Verdict::Answered => {
                let micros = sat32(now.saturating_sub(p.admitted_at) / 1_000);
                if micros < self.min_rtt_us {
                    return;
                }
                self.sum_us = sat32(self.sum_us + micros);
                self.samples += 1;
            }
            Verdict::Overload { .. } | Verdict::Timeout => self.drops += 1,
            Verdict::Transient | Verdict::Uncertain | Verdict::Rejected(_) => return,
        }
        self.max_in_flight = self.max_in_flight.max(p.in_flight);
        self.maybe_close(now, rng);
    }

    fn maybe_close(&mut self, now: u64, rng: &mut dyn Random) {
        let now_tick = now >> self.shift;
        let outcomes = sat32(self.samples + self.drops);
        let age = now_tick.checked_sub(self.opened).unwrap_or(u64::MAX);
        let ready = outcomes > 0
            && ((age >= self.length && outcomes >= self.window_samples)
                || self.sum_us >= SUM_CLOSE_US);
        if !ready {
            return;
        }
        let w = Summary {
            rtt: (self.samples > 0).then(|| sat32(self.sum_us * 16 / self.samples)),
            max_in_flight: self.max_in_flight,
            samples: self.samples,
            drops: self.drops,
        };
        self.opened = now_tick;
        (self.sum_us, self.samples, self.drops, self.max_in_flight) = (0, 0, 0, 0);
        let (new, mut base, mut count) = self.update(w);
        if let Some(rtt) = w.rtt {
            if rtt < u64::from(u32::MAX) {
                self.recent_min = Some(self.recent_min.map_or(rtt, |m| m.min(rtt)));
            }
            let ns = rtt * 1_000 / 16;
            let twice = sat32(sat32(ns.div_ceil(1 << self.shift)) * 2);
            self.length = twice.clamp(self.min_window, self.max_window);
        }
        if self.probe_multiplier > 0 {
            if self.windows_to_refresh <= 1 {
                if let Some(recent) = self.recent_min.take()
                    && !matches!(self.rule, Rule::Aimd { .. })
                {
                    base = recent;
                    count = count.max(WARMUP);
                }
                let span = self.probe_multiplier * (new / CALL).max(1);
                let half = span / 2;
                self.windows_to_refresh = sat32(half + rng.below(span - half)).max(1);
            } else {
                self.windows_to_refresh -= 1;
            }
        }
        self.baseline = base;
        self.baseline_count = count;
        self.limit = new;
    }

    fn clamp(&self, x: u64) -> u64 {
        x.clamp(self.min, self.max)
    }

    /// The next limit, baseline and baseline count after window `w`.
    fn update(&self, w: Summary) -> (u64, u64, u32) {
        let (limit, base, count) = (self.limit, self.baseline, self.baseline_count);
        match self.rule {
            Rule::Gradient2 {
                smoothing,
                queue,
                long_window,
                tolerance,
                backoff,
                threshold,
            } => {
                // Congested: drops above `threshold` of the window's outcomes.
                let outcomes = sat32(w.samples + w.drops);
                if backoff < UNIT && w.drops > 0 && w.drops * UNIT > threshold * outcomes {
                    return (self.clamp(times(limit, backoff)), base, count);
                }
                let Some(short) = w.rtt else {
                    return (limit, base, count);
                };
                let short = short.max(1);
                let mut long = if count < WARMUP {
                    (base * u64::from(count) + short) / (u64::from(count) + 1)
                } else {
                    // long + (short − long)·2/(window + 1), rounded half away from zero.
                    let d = (short as i64 - base as i64) * 2;
                    let n = long_window as i64 + 1;
                    let step = if d >= 0 {
                        (d + n / 2) / n
                    } else {
                        (d - n / 2) / n
                    };
                    (base as i64 + step) as u64
                };
                if long > 2 * short {
                    long = long * 95 / 100;
                }
                let (base, count) = (sat32(long), count.saturating_add(1));
                if w.max_in_flight * 2 * CALL < limit {
                    return (limit, base, count); // app-limited
                }
                let gradient = (tolerance * long / short).clamp(UNIT / 2, UNIT);
                let target = sat32(times(limit, gradient) + queue);
                (self.clamp(blend(limit, target, smoothing)), base, count)
            }
            Rule::Vegas { smoothing } => {
                let l = (limit / CALL).max(1);
                let log = log10_at_least_one(l);
                let dropped = w.drops > 0;
                let mut queue = 0;
                if let Some(rtt) = w.rtt {
                    if base == 0 || rtt < base {
                        return (limit, rtt, count.saturating_add(1));
                    }
                    queue = (l * (rtt - base)).div_ceil(rtt);
                } else if !dropped {
                    return (limit, base, count);
                }
                let new = if dropped {
                    l.saturating_sub(log)
                } else if w.max_in_flight * 2 < l {
                    return (limit, base, count);
                } else if queue <= log {
                    l + 6 * log
                } else if queue < 3 * log {
                    l + log
                } else if queue > 6 * log {
                    l - log
                } else {
                    return (limit, base, count);
                };
                let new = self.clamp(sat32(new * CALL));
                (blend(limit, new, smoothing), base, count)
            }
            Rule::Aimd { backoff, timeout } => {
                let slow = w.rtt.is_some_and(|r| r > timeout);
                let new = if w.drops > 0 || slow {
                    times(limit, backoff) / CALL * CALL
                } else if w.rtt.is_some() && w.max_in_flight * 2 * CALL >= limit {
                    sat32(limit + CALL)
                } else {
                    limit
                };
                (self.clamp(new), base, count)
            }
        }
    }
}

/// `max(1, ⌊log10 l⌋)`.
fn log10_at_least_one(l: u64) -> u64 {
    let mut log = 0;
    let mut n = l;
    while n >= 10 {
        n /= 10;
        log += 1;
    }
    log.max(1)
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// Nanoseconds in sixteenths of a µs (rounded down, saturating), as `Rtt::from_duration`.
fn rtt_of(ns: u64) -> u64 {
    sat32((ns / 1_000).saturating_mul(16) + (ns % 1_000) * 16 / 1_000)
}

/// What the twin holds for one open call or waiting place.
#[derive(Debug)]
enum Open<'a> {
    Call(LimiterPermit<'a>, ModelPermit),
    Waiting(QueuePlace<'a>),
}

/// The real limiter beside its model.
#[derive(Debug)]
pub struct LimiterTwin<'a> {
    real: &'a Limiter,
    /// The model, driven alongside.
    pub model: Model,
    open: Vec<Open<'a>>,
    /// Whether arrivals may be offered a waiting place (the config has a queue zone).
    queue: bool,
}

impl<'a> LimiterTwin<'a> {
    /// A twin of `real`, which was built from `config` and not used yet.
    pub fn new(real: &'a Limiter, config: &LimiterConfig) -> LimiterTwin<'a> {
        LimiterTwin {
            real,
            model: Model::new(config),
            open: Vec::new(),
            queue: config.queue_factor > 1.0,
        }
    }

    fn refused() -> Decision {
        Decision::Refused {
            reason: RejectReason::LimiterFull,
            retry_at: None,
        }
    }
}

impl Twin for LimiterTwin<'_> {
    fn open(&self) -> usize {
        self.open.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let t = now.as_nanos();
        let mut env = Env::new(now, rng);
        if self.queue && env.rng.below(2) == 0 {
            let model = match self.model.admit(t) {
                Some(p) => Some(Ok(p)),
                None => self.model.queue_place().then_some(Err(())),
            };
            return match (self.real.admit_or_queue(&mut env), model) {
                (Admission::Admitted(p), Some(Ok(m))) => {
                    check_permit(&p, &m)?;
                    self.open.push(Open::Call(p, m));
                    Ok(Decision::Admitted)
                }
                (Admission::Wait(place), Some(Err(()))) => {
                    self.open.push(Open::Waiting(place));
                    Ok(Decision::Admitted)
                }
                (Admission::Refused(r), None) => same(Decision::of::<()>(&Err(r)), Self::refused()),
                (real, model) => Err(format!(
                    "admit_or_queue: real {}, model {model:?}",
                    match real {
                        Admission::Admitted(_) => "admitted",
                        Admission::Wait(_) => "wait",
                        Admission::Refused(_) => "refused",
                    }
                )),
            };
        }
        let real = self.real.admit(&mut env);
        let model = self.model.admit(t);
        let decision = same(
            Decision::of(&real),
            if model.is_some() {
                Decision::Admitted
            } else {
                Self::refused()
            },
        )?;
        if let (Ok(p), Some(m)) = (real, model) {
            check_permit(&p, &m)?;
            self.open.push(Open::Call(p, m));
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
        let t = now.as_nanos();
        match (self.open.remove(index), verdict) {
            (Open::Call(p, m), Some(v)) => {
                let mut rec = Recorder::new(rng);
                p.settle(&v, &mut Env::new(now, &mut rec));
                let model = &mut self.model;
                rec.replay("limiter", |r| model.settle(m, &v, t, r))?;
            }
            (Open::Call(p, m), None) => {
                drop(p);
                self.model.cancel(m);
            }
            (Open::Waiting(place), Some(_)) => {
                let model = self.model.try_admit(t);
                match (place.try_admit(&mut Env::new(now, rng)), model) {
                    (Ok(p), Some(m)) => {
                        check_permit(&p, &m)?;
                        self.open.push(Open::Call(p, m));
                    }
                    (Err(place), None) => {
                        // Still waiting: the caller gives up.
                        drop(place);
                        self.model.leave();
                    }
                    (real, model) => {
                        return Err(format!(
                            "try_admit: real admitted {}, model {model:?}",
                            real.is_ok()
                        ));
                    }
                }
            }
            (Open::Waiting(place), None) => {
                drop(place);
                self.model.leave();
            }
        }
        Ok(())
    }

    fn check(&mut self, _now: Instant) -> Result<(), String> {
        let (r, m) = (self.real, &self.model);
        let real = (
            u64::from(r.limit_fixed()),
            u64::from(r.in_flight()),
            u64::from(r.waiting()),
            r.baseline().as_duration(),
        );
        let model = (
            m.limit,
            m.in_flight,
            m.waiting,
            Duration::from_nanos(m.baseline * 1_000 / 16),
        );
        if real == model {
            Ok(())
        } else {
            Err(format!(
                "(limit/256, in flight, waiting, baseline): real {real:?}, model {model:?}"
            ))
        }
    }
}

fn check_permit(p: &LimiterPermit<'_>, m: &ModelPermit) -> Result<(), String> {
    if u64::from(p.in_flight_at_admission()) == m.in_flight {
        Ok(())
    } else {
        Err(format!(
            "in flight at admission: real {}, model {}",
            p.in_flight_at_admission(),
            m.in_flight
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_match_the_documented_numbers() {
        assert_eq!(q16(0.2), 13_107);
        assert_eq!(q16(1.5), 98_304);
        assert_eq!(q16(0.02), 1_311);
        assert_eq!(blend(20 * CALL, 24 * CALL, q16(0.2)), 5_325, "20.8 calls");
        assert_eq!(log10_at_least_one(0), 1);
        assert_eq!(log10_at_least_one(100), 2);
        assert_eq!(rtt_of(10_000_000), 160_000);
    }

    #[test]
    fn the_default_window_is_on_4_ns_ticks() {
        let m = Model::new(&LimiterConfig::gradient2());
        assert_eq!(m.tick_shift(), 2);
        assert_eq!(m.length, 250_000_000, "1 s");
        let hour = LimiterConfig {
            max_window: Duration::from_secs(3_600),
            ..LimiterConfig::gradient2()
        };
        assert_eq!(Model::new(&hour).tick_shift(), 11);
    }
}
