//! The hedge policy, plainly.
//!
//! [`HedgeModel`] keeps the window's original latencies in a `Vec` of `u64` nanoseconds and
//! reads the quantile by sorting them: the nearest rank `⌈window × (1000 − load) / 1000⌉`,
//! reported as the real histogram reports it (restated here on `u128` bounds: the midpoint of
//! the bucket of the rank-th value at 3 sub-bucket bits, clamped to the window's extremes kept
//! at 26 bits, the extremes themselves at the first and last rank). The delay is that value
//! raised by the histogram's error bound (×16/15, rounded up, at most the window's
//! maximum), rounded up to a microsecond,
//! at least the floor. The local cap is a `u64` of thousandths of
//! a hedge. The shared budget is a [`BudgetModel`], so a hedge twin over a token bucket or a
//! ratio budget checks the hedge's charges and records against the budget's own model too.
//!
//! [`HedgeTwin`] is a driver's part: each arriving call begins on both sides (idempotent
//! seven times out of eight, with a deadline one time in four); at every step every open
//! call is polled at `now` on both sides and the answers must agree (a copy sent, due later,
//! refused, never); a call ends when its taken copy answers (a random copy among those sent),
//! sometimes after the original answered unacceptably, or is dropped (cancelled). Time stores
//! nothing in either, so the runs only confirm that no gap of any length changes a decision.

use core::time::Duration;

use resilix::call::CallOptions;
use resilix::hedge::{BudgetAccounting, Hedge, HedgeCall, HedgeConfig, HedgeRefusal, NextCopy};
use resilix::random::Random;
use resilix::retry::budget::RetryBudget;
use resilix::time::{Deadline, Instant};
use resilix::verdict::{Verdict, VerdictKind};

use crate::budget::{Books, BudgetModel};
use crate::twin::{Decision, Twin};

/// The bucket of `v` with `p` sub-bucket bits, as `(lower, upper)` inclusive bounds: values
/// below `2^p` alone, each octave `[2^e, 2^(e+1))` above in `2^p` equal parts.
fn bucket(v: u64, p: u32) -> (u128, u128) {
    let v = u128::from(v);
    if v < 1u128 << p {
        return (v, v);
    }
    let e = 127 - v.leading_zeros();
    let width = 1u128 << (e - p);
    let lower = v / width * width;
    (lower, lower + width - 1)
}

/// The histogram's readout of the nearest-rank value `rank` (1-based) of `sorted`.
fn histogram_readout(sorted: &[u64], rank: usize) -> u64 {
    let n = sorted.len();
    let min = bucket(sorted[0], 26).0;
    let max = bucket(sorted[n - 1], 26).1;
    let v = if rank == 1 {
        min
    } else if rank == n {
        max
    } else {
        let (lo, hi) = bucket(sorted[rank - 1], 3);
        (lo + (hi - lo) / 2).clamp(min, max)
    };
    v as u64
}

fn micros_ceil(nanos: u128) -> u128 {
    nanos.div_ceil(1000)
}

/// The hedge policy's semantics, with `&mut self` and wide numbers.
#[derive(Clone, Debug)]
pub struct HedgeModel<M: BudgetModel> {
    config: HedgeConfig,
    floor_us: u64,
    /// The window's original latencies so far, in ns.
    window: Vec<u64>,
    /// The delay in force, in µs.
    delay_us: Option<u64>,
    /// The local cap in thousandths of a hedge.
    credit: u64,
    cap: u64,
    budget: M,
}

/// One call's plan in the model.
#[derive(Clone, Debug)]
pub struct CallModel {
    started: Instant,
    delay: Option<Duration>,
    deadline: Option<Instant>,
    sent: u32,
    hedgeable: bool,
    stopped: bool,
    /// `None` while running; `Some(latency)` once answered (`latency` is `None` for a fast
    /// failure).
    original: Option<Option<u64>>,
}

impl<M: BudgetModel> HedgeModel<M> {
    /// The model of `Hedge::new(config, budget)` (a config the real policy accepts).
    pub fn new(config: HedgeConfig, budget: M) -> Self {
        let floor_us = micros_ceil(config.min_delay.as_nanos()).clamp(1, u128::from(u32::MAX));
        let delay_us = config
            .fixed_delay
            .map(|d| micros_ceil(d.as_nanos()).clamp(floor_us, u128::from(u32::MAX)) as u64);
        let cap = u64::from(config.burst) * 1000;
        HedgeModel {
            config,
            floor_us: floor_us as u64,
            window: Vec::new(),
            delay_us,
            credit: cap,
            cap,
            budget,
        }
    }

    /// The delay in force.
    pub fn delay(&self) -> Option<Duration> {
        self.delay_us.map(Duration::from_micros)
    }

    /// The local cap's balance, in thousandths of a hedge.
    pub fn credit(&self) -> u64 {
        self.credit
    }

    /// Samples in the current window.
    pub fn filled(&self) -> usize {
        self.window.len()
    }

    /// The budget's model.
    pub fn budget(&self) -> &M {
        &self.budget
    }

    /// A call begins at `now`.
    pub fn begin(&mut self, now: Instant, options: CallOptions) -> CallModel {
        let hedgeable = options.is_idempotent();
        if hedgeable {
            let earn = u64::from(self.config.max_extra_load_permille);
            self.credit = (self.credit + earn).min(self.cap);
        }
        CallModel {
            started: now,
            delay: if hedgeable { self.delay() } else { None },
            deadline: options.deadline_value().map(|d| d.instant()),
            sent: 1,
            hedgeable,
            stopped: false,
            original: None,
        }
    }

    /// The next copy of `call` at `now`.
    pub fn poll(&mut self, call: &mut CallModel, now: Instant) -> NextCopy {
        let Some(delay) = call.delay else {
            return NextCopy::Never;
        };
        if call.stopped || call.sent > self.config.max_hedges {
            return NextCopy::Never;
        }
        let due_ns = u128::from(call.started.as_nanos()) + delay.as_nanos() * u128::from(call.sent);
        let due = Instant::from_nanos(due_ns.min(u128::from(u64::MAX)) as u64);
        if call.deadline.is_some_and(|d| due >= d) {
            call.stopped = true;
            return NextCopy::Never;
        }
        if now < due {
            return NextCopy::Wait { until: due };
        }
        let refusal = if self.credit < 1000 {
            Some(HedgeRefusal::LocalCap)
        } else if self.budget.try_spend(now, VerdictKind::Timeout) {
            self.credit -= 1000;
            None
        } else {
            Some(HedgeRefusal::Budget)
        };
        match refusal {
            None => {
                call.sent += 1;
                NextCopy::Send { copy: call.sent }
            }
            Some(r) => {
                call.stopped = true;
                NextCopy::Refused(r)
            }
        }
    }

    fn latency(call: &CallModel, now: Instant, verdict: &Verdict) -> Option<u64> {
        matches!(
            verdict.kind(),
            VerdictKind::Success | VerdictKind::Answered | VerdictKind::Timeout
        )
        .then(|| now.as_nanos().saturating_sub(call.started.as_nanos()))
    }

    /// Copy `copy` of `call` answered unacceptably at `now`.
    pub fn answered(&mut self, call: &mut CallModel, copy: u32, now: Instant, verdict: &Verdict) {
        if copy == 1 && call.original.is_none() {
            call.original = Some(Self::latency(call, now, verdict));
        }
    }

    /// `call` ends at `now` with copy `taken`'s answer.
    pub fn finish(&mut self, mut call: CallModel, now: Instant, taken: u32, verdict: &Verdict) {
        if !call.hedgeable {
            return;
        }
        if taken == 1 {
            self.answered(&mut call, 1, now, verdict);
        }
        let sample = match call.original {
            None => Some(now.as_nanos().saturating_sub(call.started.as_nanos())),
            Some(latency) => latency,
        };
        if let Some(ns) = sample
            && self.config.fixed_delay.is_none()
        {
            self.window.push(ns);
            if self.window.len() == self.config.window as usize {
                let mut sorted = core::mem::take(&mut self.window);
                sorted.sort_unstable();
                let q = u64::from(self.config.quantile_permille());
                let rank = (u64::from(self.config.window) * q).div_ceil(1000).max(1) as usize;
                // Raised by the histogram's error bound (x ≤ 16e/15), never below the exact.
                // and never past the window's maximum as the histogram keeps it.
                let max = bucket(sorted[sorted.len() - 1], 26).1;
                let v = (u128::from(histogram_readout(&sorted, rank)) * 16)
                    .div_ceil(15)
                    .min(u128::from(u64::MAX))
                    .min(max);
                let us = micros_ceil(v).min(u128::from(u32::MAX)) as u64;
                self.delay_us = Some(us.max(self.floor_us));
            }
        }
        if self.config.accounting == BudgetAccounting::Calls && verdict.is_counted() {
            self.budget.record_first_attempt(now);
            match verdict.kind() {
                VerdictKind::Success => self
                    .budget
                    .record_success(now, (taken > 1).then_some(VerdictKind::Timeout)),
                VerdictKind::Answered | VerdictKind::Rejected => {}
                kind => self.budget.record_unretried_failure(now, kind),
            }
        }
    }
}

/// One open call on both sides.
struct Open {
    real: HedgeCall,
    model: CallModel,
}

/// A real hedge policy (over a borrowed real budget) beside its model.
pub struct HedgeTwin<'a, R: RetryBudget + Books, M: BudgetModel> {
    real: Hedge<&'a R>,
    budget: &'a R,
    model: HedgeModel<M>,
    open: Vec<Open>,
    sent: u64,
    refused: u64,
}

impl<'a, R: RetryBudget + Books, M: BudgetModel> HedgeTwin<'a, R, M> {
    /// Twins `Hedge::new(config, budget)` with the model over `budget_model` (both fresh).
    pub fn new(config: HedgeConfig, budget: &'a R, budget_model: M) -> Result<Self, String> {
        let real = Hedge::new(config, budget).map_err(|e| format!("refused: {e}"))?;
        Ok(HedgeTwin {
            real,
            budget,
            model: HedgeModel::new(config, budget_model),
            open: Vec::new(),
            sent: 0,
            refused: 0,
        })
    }

    /// Hedges (sent, refused) by both so far.
    pub fn hedges(&self) -> (u64, u64) {
        (self.sent, self.refused)
    }

    /// The real policy.
    pub fn real(&self) -> &Hedge<&'a R> {
        &self.real
    }

    /// Polls every open call on both sides at `now`.
    fn poll_all(&mut self, now: Instant) -> Result<(), String> {
        for (i, o) in self.open.iter_mut().enumerate() {
            let real = o.real.poll(&self.real, now, &());
            let model = self.model.poll(&mut o.model, now);
            if real != model {
                return Err(format!("call {i}: real {real:?}, model {model:?}"));
            }
            match real {
                NextCopy::Send { .. } => self.sent += 1,
                NextCopy::Refused(_) => self.refused += 1,
                _ => {}
            }
        }
        Ok(())
    }
}

impl<R: RetryBudget + Books, M: BudgetModel> Twin for HedgeTwin<'_, R, M> {
    fn open(&self) -> usize {
        self.open.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let mut options = CallOptions::default().idempotent(rng.below(8) != 0);
        if rng.below(4) == 0 {
            let within = Duration::from_nanos(rng.below(50_000_000));
            options = options.deadline(Deadline::after(now, within));
        }
        let real = self.real.begin(now, options);
        let model = self.model.begin(now, options);
        self.open.push(Open { real, model });
        self.poll_all(now)?;
        Ok(Decision::Admitted)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        self.poll_all(now)?;
        let Open {
            mut real,
            mut model,
        } = self.open.remove(index);
        let Some(verdict) = verdict else {
            return Ok(()); // the caller gave up: both drop their plans
        };
        let taken = 1 + rng.below(u64::from(real.sent())) as u32;
        if taken > 1 && rng.below(2) == 0 {
            let early = Verdict::Transient;
            real.answered(1, now, &early);
            self.model.answered(&mut model, 1, now, &early);
        }
        real.finish(&self.real, now, taken, &verdict, &());
        self.model.finish(model, now, taken, &verdict);
        Ok(())
    }

    fn check(&mut self, now: Instant) -> Result<(), String> {
        let (rd, md) = (self.real.delay(), self.model.delay());
        if rd != md {
            return Err(format!("delay: real {rd:?}, model {md:?}"));
        }
        let (rc, mc) = (
            u64::from(self.real.local_balance_milli()),
            self.model.credit(),
        );
        if rc != mc {
            return Err(format!("local cap: real {rc}, model {mc}"));
        }
        let (rf, mf) = (self.real.window_filled() as usize, self.model.filled());
        if rf != mf {
            return Err(format!("window: real {rf}, model {mf}"));
        }
        let (rb, mb) = (self.budget.books(now), self.model.budget().books(now));
        if rb != mb {
            return Err(format!("budget books: real {rb:?}, model {mb:?}"));
        }
        Ok(())
    }
}
