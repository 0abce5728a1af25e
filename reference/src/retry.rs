//! The retry policy's decision, written plainly: `u128` nanoseconds, no `Duration`, no
//! `Instant`, the backoff formulas restated, and every budget call written down.
//!
//! After an attempt settles at `now`, in this order, the first "no" being the reason
//! (`resilix::retry::Retry`'s module docs):
//!
//! 1. the verdict: `Success` and `Answered` are done (a `Success` tells the budget);
//!    `Overload` and `Transient` may be retried; `Timeout` only for an idempotent call;
//!    `Uncertain` like `Transient`, or, when the config says idempotent-only, like `Timeout`;
//!    `Rejected` never;
//! 2. attempts: the attempt just made is the last allowed;
//! 3. the Retry-After, if any: longer than the cap → `RetryAfterTooLong`; ending at or after
//!    the deadline → `RetryAfterBeyondDeadline`;
//! 4. the delay, `max(backoff, Retry-After)`: the next attempt would start at or after the
//!    deadline → `DeadlineWouldPass`;
//! 5. the budget: refused → `BudgetExceeded`; granted → retry at `now + delay`.
//!
//! Failures stopped by 2–4 are recorded with the budget as unretried. Instants live on the
//! core's `u64` nanosecond timeline, so a sum past its end is the end (`u64::MAX`), and a
//! Retry-After or cap past it (584 years) is compared as the end too: the places the model
//! narrows, said where they happen.
//!
//! **The backoff.** `attempt` is the number of attempts made so far, `previous` the backoff
//! drawn last in this call (`base` at the start), `uniform(a, b)` a uniform integer of
//! `[a, b]`:
//!
//! ```text
//! ceiling       = min(cap, base · 2^attempt)
//! none          = 0
//! exponential   = ceiling
//! full jitter   = uniform(0, ceiling)
//! equal jitter  = ⌊ceiling/2⌋ + uniform(0, ⌊ceiling/2⌋)
//! decorrelated  = min(cap, uniform(base, min(3 · max(previous, base), 2^64 − 1)))
//! ```
//!
//! Restating the *draw* of `uniform` independently would mean a second generator; instead the
//! model consumes the same draws in the same order as the real policy: `uniform(a, b)` is
//! `a + rng.below(b − a + 1)`, or one `rng.next_u64()` when `b − a + 1` is 2^64. A model and a
//! real policy fed generators in the same state therefore draw the same delay, and a formula
//! that differs (a bound off by one, a halving in the wrong place) differs in the result.

use core::cell::{Cell, RefCell};
use core::time::Duration;

use resilix::permit::Env;
use resilix::random::{Random, SeededRandom};
use resilix::rejection::RejectReason;
use resilix::retry::budget::RetryBudget;
use resilix::retry::{
    AttemptOutcome, GiveUpReason, Retry, RetryConfig, RetryDecision, RetryPolicy, RetryState,
    Strategy, UncertainRetry,
};
use resilix::time::{Deadline, Instant};
use resilix::verdict::{Verdict, VerdictKind};

use crate::timeline::Gaps;
use crate::twin::{Decision, Twin};

/// The end of the core's timeline, in nanoseconds.
const END: u128 = u64::MAX as u128;

/// One call on the retry policy's budget, as the real policy makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetCall {
    /// `record_first_attempt(now)`.
    FirstAttempt(u64),
    /// `try_spend(now, after)`.
    Spend(u64, VerdictKind),
    /// `record_unretried_failure(now, after)`.
    Unretried(u64, VerdictKind),
    /// `record_success(now, retried_after)`.
    Success(u64, Option<VerdictKind>),
}

/// The retry configuration, in plain numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryModel {
    /// The most attempts a call makes, the first included.
    pub max_attempts: u32,
    /// The backoff formula.
    pub strategy: Strategy,
    /// Backoff base, ns.
    pub base: u128,
    /// Backoff cap, ns.
    pub cap: u128,
    /// The longest Retry-After waited for, ns.
    pub max_retry_after: u128,
    /// Whether an `Uncertain` failure is retried only for an idempotent call (false: for any
    /// call, the default).
    pub uncertain_only_if_idempotent: bool,
}

/// One call's memory in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallModel {
    /// Attempts settled so far.
    pub attempts: u32,
    /// The backoff drawn last, ns.
    pub previous: u128,
    /// The kind of failure that caused the last retry.
    pub last_retry_after: Option<VerdictKind>,
}

/// What one settled attempt looks like to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled {
    /// When it settled, ns.
    pub now: u64,
    /// Its verdict.
    pub verdict: Verdict,
    /// The attempt's number as the driver counts it (1 for the first).
    pub attempt: u32,
    /// Whether the call is declared idempotent.
    pub idempotent: bool,
    /// The call's deadline, ns, if it has one.
    pub deadline: Option<u64>,
}

impl RetryModel {
    /// The model of `config`, read through its public getters.
    pub fn of(config: &RetryConfig) -> RetryModel {
        let backoff = config.backoff();
        RetryModel {
            max_attempts: config.max_attempts(),
            strategy: backoff.strategy(),
            base: backoff.base().as_nanos(),
            cap: backoff.cap().as_nanos(),
            max_retry_after: config.max_retry_after().as_nanos(),
            uncertain_only_if_idempotent: config.uncertain_retry()
                == UncertainRetry::IdempotentOnly,
        }
    }

    /// A call starts.
    pub fn begin(&self) -> CallModel {
        CallModel {
            attempts: 0,
            previous: self.base,
            last_retry_after: None,
        }
    }

    /// The decision after `s`; every budget call goes through `budget`, which answers
    /// `try_spend` (its answer to the other calls is ignored).
    pub fn decide(
        &self,
        call: &mut CallModel,
        s: Settled,
        rng: &mut dyn Random,
        budget: &mut dyn FnMut(BudgetCall) -> bool,
    ) -> RetryDecision {
        let now = u128::from(s.now);
        // A driver that repeats an attempt number cannot stall the count.
        let attempt = s.attempt.max(call.attempts.saturating_add(1));
        call.attempts = attempt;
        let kind = s.verdict.kind();
        if attempt == 1 && kind != VerdictKind::Rejected {
            budget(BudgetCall::FirstAttempt(s.now));
        }
        // 1. The verdict.
        let retryable = match kind {
            VerdictKind::Success => {
                budget(BudgetCall::Success(s.now, call.last_retry_after));
                return RetryDecision::Done;
            }
            VerdictKind::Answered => return RetryDecision::Done,
            VerdictKind::Overload | VerdictKind::Transient => true,
            VerdictKind::Timeout => s.idempotent,
            VerdictKind::Uncertain => s.idempotent || !self.uncertain_only_if_idempotent,
            VerdictKind::Rejected => false,
        };
        if !retryable {
            return RetryDecision::GiveUp(GiveUpReason::NotRetryable(kind));
        }
        let give_up = |budget: &mut dyn FnMut(BudgetCall) -> bool, reason| {
            budget(BudgetCall::Unretried(s.now, kind));
            RetryDecision::GiveUp(reason)
        };
        // 2. Attempts.
        if attempt >= self.max_attempts {
            return give_up(
                budget,
                GiveUpReason::AttemptsExhausted { attempts: attempt },
            );
        }
        let deadline = s.deadline.map(u128::from);
        // The instant `now + wait` on the u64 timeline: its end if the sum runs past it.
        let at = |wait: u128| (now + wait).min(END);
        // 3. The Retry-After, against the cap, then the deadline.
        let retry_after = s.verdict.retry_after().map(|d| d.as_nanos());
        if let Some(wait) = retry_after {
            // Both on the u64 timeline: a wait past its end is its end.
            if wait.min(END) > self.max_retry_after.min(END) {
                return give_up(budget, GiveUpReason::RetryAfterTooLong);
            }
            if deadline.is_some_and(|d| at(wait) >= d) {
                return give_up(budget, GiveUpReason::RetryAfterBeyondDeadline);
            }
        }
        // 4. The delay, against the deadline.
        let drawn = self.backoff(attempt, call.previous, rng);
        let delay = match retry_after {
            Some(wait) if wait > drawn => wait,
            _ => drawn,
        };
        let start = at(delay);
        if deadline.is_some_and(|d| start >= d) {
            return give_up(budget, GiveUpReason::DeadlineWouldPass);
        }
        // 5. The budget, last.
        if !budget(BudgetCall::Spend(s.now, kind)) {
            return RetryDecision::GiveUp(GiveUpReason::BudgetExceeded);
        }
        call.previous = drawn;
        call.last_retry_after = Some(kind);
        RetryDecision::RetryAt(Instant::from_nanos(start as u64))
    }

    /// The backoff after `attempt` attempts, ns (see the module docs).
    pub fn backoff(&self, attempt: u32, previous: u128, rng: &mut dyn Random) -> u128 {
        let ceiling = || {
            let grown = if attempt >= 64 {
                // base · 2^64 is beyond every cap, unless base is 0.
                if self.base == 0 { 0 } else { self.cap }
            } else {
                self.base << attempt
            };
            grown.min(self.cap)
        };
        match self.strategy {
            Strategy::None => 0,
            Strategy::Exponential => ceiling(),
            Strategy::FullJitter => uniform(rng, 0, ceiling()),
            Strategy::EqualJitter => {
                let half = ceiling() / 2;
                half + uniform(rng, 0, half)
            }
            Strategy::Decorrelated => {
                let previous = previous.max(self.base);
                // `3 · previous` is held on u64 nanoseconds, as every delay is.
                let high = (3 * previous).min(END);
                uniform(rng, self.base, high).min(self.cap)
            }
            _ => unreachable!("a backoff strategy the reference does not model: model it"),
        }
    }
}

/// Uniform over `[low, high]` by the same draws as the real policy (see the module docs).
fn uniform(rng: &mut dyn Random, low: u128, high: u128) -> u128 {
    let count = high - low + 1;
    if count > END {
        return u128::from(rng.next_u64());
    }
    low + u128::from(rng.below(count as u64))
}

/// A budget that answers `try_spend` as told and writes every call down, so the real policy's
/// budget calls can be compared with the model's one by one.
#[derive(Debug, Default)]
pub struct ScriptedBudget {
    grant: Cell<bool>,
    log: RefCell<Vec<BudgetCall>>,
}

impl ScriptedBudget {
    /// A budget that grants until told otherwise.
    pub fn new() -> ScriptedBudget {
        ScriptedBudget {
            grant: Cell::new(true),
            log: RefCell::new(Vec::new()),
        }
    }

    /// What the next `try_spend` answers.
    pub fn set_grant(&self, grant: bool) {
        self.grant.set(grant);
    }

    /// The calls since the last take.
    pub fn take(&self) -> Vec<BudgetCall> {
        self.log.take()
    }
}

impl RetryBudget for ScriptedBudget {
    fn record_first_attempt(&self, now: Instant) {
        self.log
            .borrow_mut()
            .push(BudgetCall::FirstAttempt(now.as_nanos()));
    }

    fn try_spend(&self, now: Instant, after: VerdictKind) -> bool {
        self.log
            .borrow_mut()
            .push(BudgetCall::Spend(now.as_nanos(), after));
        self.grant.get()
    }

    fn record_unretried_failure(&self, now: Instant, after: VerdictKind) {
        self.log
            .borrow_mut()
            .push(BudgetCall::Unretried(now.as_nanos(), after));
    }

    fn record_success(&self, now: Instant, retried_after: Option<VerdictKind>) {
        self.log
            .borrow_mut()
            .push(BudgetCall::Success(now.as_nanos(), retried_after));
    }
}

/// One call in flight through a [`RetryTwin`].
#[derive(Debug)]
struct OpenCall {
    real: RetryState,
    model: CallModel,
    idempotent: bool,
    deadline: Option<Deadline>,
    attempts: u32,
}

/// The real `Retry` (borrowed, over a [`ScriptedBudget`]) beside its [`RetryModel`].
///
/// Retry admits nothing, so in the [`Twin`] shape a call *arriving* is a call beginning (always
/// admitted), and a call *ending* is one attempt settling: the twin decides with both, and
/// when the decision is to retry, the call stays open for its next attempt (so `open` counts
/// calls in progress). Each arrival draws whether the call is idempotent and its deadline
/// (none, or 1 ns to ten years ahead, log-uniform); each settle turns the mix's verdict into
/// one of all seven kinds, draws a Retry-After for an overload from 1 ns to ten years (or none,
/// or the end of time), whether the budget grants, and one seed that both sides' jitter draws
/// from, so both consume the same draws.
pub struct RetryTwin<'a> {
    real: &'a Retry<&'a ScriptedBudget>,
    budget: &'a ScriptedBudget,
    model: RetryModel,
    calls: Vec<OpenCall>,
    /// Decisions compared, by outcome: done, retry, give up.
    pub decisions: [u64; 3],
}

impl<'a> RetryTwin<'a> {
    /// A twin of `real`, whose budget must be `budget`.
    pub fn new(real: &'a Retry<&'a ScriptedBudget>, budget: &'a ScriptedBudget) -> Self {
        RetryTwin {
            real,
            budget,
            model: RetryModel::of(real.config()),
            calls: Vec::new(),
            decisions: [0; 3],
        }
    }

    /// The same twin holding `model` instead of the one read from the real config: for
    /// checking that a wrong model is caught.
    pub fn with_model(self, model: RetryModel) -> Self {
        RetryTwin { model, ..self }
    }
}

/// A duration drawn log-uniformly from 1 ns to ten years.
fn long_gap(rng: &mut dyn Random) -> Duration {
    Gaps {
        zero_in_256: 8,
        ..Gaps::LONG
    }
    .draw(&mut &mut *rng)
}

/// The mix's verdict, widened to every kind with waits from nanoseconds to years.
fn widen(verdict: Verdict, rng: &mut dyn Random) -> Verdict {
    match verdict {
        Verdict::Transient => match rng.below(8) {
            0 | 1 => Verdict::Uncertain,
            2 => Verdict::Rejected(RejectReason::ALL[rng.below(6) as usize]),
            _ => Verdict::Transient,
        },
        Verdict::Overload { retry_after } => Verdict::Overload {
            retry_after: match rng.below(8) {
                0 => None,
                1 => retry_after,
                2 => Some(Duration::MAX),
                _ => Some(long_gap(rng)),
            },
        },
        other => other,
    }
}

impl Twin for RetryTwin<'_> {
    fn open(&self) -> usize {
        self.calls.len()
    }

    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String> {
        let idempotent = rng.below(2) == 0;
        let deadline = match rng.below(3) {
            0 => None,
            _ => Some(Deadline::after(now, long_gap(rng))),
        };
        self.calls.push(OpenCall {
            real: self.real.begin(now),
            model: self.model.begin(),
            idempotent,
            deadline,
            attempts: 0,
        });
        Ok(Decision::Admitted)
    }

    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String> {
        let Some(verdict) = verdict else {
            // Cancelled: the call is dropped with its state; nothing is decided.
            self.calls.remove(index);
            return Ok(());
        };
        let verdict = widen(verdict, rng);
        let grant = rng.below(4) != 0;
        let seed = rng.next_u64();
        let call = &mut self.calls[index];
        let attempt = call.attempts + 1;
        let outcome = AttemptOutcome {
            verdict,
            attempt,
            idempotent: call.idempotent,
            deadline: call.deadline,
        };
        self.budget.set_grant(grant);
        let mut real_rng = SeededRandom::new(seed);
        let mut env = Env::new(now, &mut real_rng);
        let real = self.real.decide(&mut call.real, &outcome, &mut env);
        let real_budget = self.budget.take();
        let mut model_rng = SeededRandom::new(seed);
        let mut model_budget = Vec::new();
        let settled = Settled {
            now: now.as_nanos(),
            verdict,
            attempt,
            idempotent: call.idempotent,
            deadline: call.deadline.map(|d| d.instant().as_nanos()),
        };
        let model = self
            .model
            .decide(&mut call.model, settled, &mut model_rng, &mut |c| {
                model_budget.push(c);
                match c {
                    BudgetCall::Spend(..) => grant,
                    _ => true,
                }
            });
        let what = || format!("{verdict:?} attempt {attempt} of {outcome:?}");
        if real != model {
            return Err(format!(
                "decision: real {real:?}, model {model:?} after {}",
                what()
            ));
        }
        if real_budget != model_budget {
            return Err(format!(
                "budget calls: real {real_budget:?}, model {model_budget:?} after {}",
                what()
            ));
        }
        if (call.real.attempts(), call.real.previous_delay().as_nanos())
            != (call.model.attempts, call.model.previous)
        {
            return Err(format!(
                "state: real {:?}, model {:?} after {}",
                call.real,
                call.model,
                what()
            ));
        }
        call.attempts = attempt;
        match real {
            RetryDecision::RetryAt(_) => self.decisions[1] += 1,
            RetryDecision::Done => {
                self.decisions[0] += 1;
                self.calls.remove(index);
            }
            RetryDecision::GiveUp(_) => {
                self.decisions[2] += 1;
                self.calls.remove(index);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilix::random::SeededRandom;
    use resilix::retry::Backoff;

    fn model(strategy: Strategy, attempts: u32) -> RetryModel {
        let backoff =
            Backoff::new(strategy, Duration::from_millis(5), Duration::from_secs(2)).unwrap();
        RetryModel::of(&RetryConfig::new(attempts, backoff).unwrap())
    }

    fn settled(verdict: Verdict, attempt: u32, now: u64) -> Settled {
        Settled {
            now,
            verdict,
            attempt,
            idempotent: false,
            deadline: None,
        }
    }

    #[test]
    fn the_exponential_schedule_by_hand() {
        let m = model(Strategy::Exponential, 4);
        let mut c = m.begin();
        let mut rng = SeededRandom::new(1);
        let mut grant = |_| true;
        let mut now = 0u64;
        for (attempt, wait_ms) in [(1, 10u64), (2, 20), (3, 40)] {
            let d = m.decide(
                &mut c,
                settled(Verdict::Transient, attempt, now),
                &mut rng,
                &mut grant,
            );
            assert_eq!(
                d,
                RetryDecision::RetryAt(Instant::from_nanos(now + wait_ms * 1_000_000))
            );
            now += wait_ms * 1_000_000;
        }
        assert_eq!(
            m.decide(
                &mut c,
                settled(Verdict::Transient, 4, now),
                &mut rng,
                &mut grant
            ),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 4 })
        );
    }

    #[test]
    fn uncertain_is_retried_for_a_post_unless_idempotent_only() {
        let default = model(Strategy::Exponential, 3);
        assert!(!default.uncertain_only_if_idempotent);
        let careful = RetryModel {
            uncertain_only_if_idempotent: true,
            ..default
        };
        let post = settled(Verdict::Uncertain, 1, 0);
        let put = Settled {
            idempotent: true,
            ..post
        };
        let retry = RetryDecision::RetryAt(Instant::from_nanos(10_000_000));
        let mut rng = SeededRandom::new(3);
        let mut grant = |_| true;
        for (m, s, want) in [
            (default, post, retry),
            (default, put, retry),
            (
                careful,
                post,
                RetryDecision::GiveUp(GiveUpReason::NotRetryable(VerdictKind::Uncertain)),
            ),
            (careful, put, retry),
        ] {
            assert_eq!(
                m.decide(&mut m.begin(), s, &mut rng, &mut grant),
                want,
                "{m:?} {s:?}"
            );
        }
        let config = RetryConfig::DEFAULT.with_uncertain_retry(UncertainRetry::IdempotentOnly);
        assert!(RetryModel::of(&config).uncertain_only_if_idempotent);
    }

    #[test]
    fn the_order_of_the_checks() {
        let m = RetryModel {
            max_retry_after: 1_000,
            ..model(Strategy::Exponential, 3)
        };
        let mut rng = SeededRandom::new(2);
        let mut log = Vec::new();
        let mut budget = |c| {
            log.push(c);
            false
        };
        let long = Verdict::Overload {
            retry_after: Some(Duration::from_nanos(1_001)),
        };
        let s = Settled {
            deadline: Some(5),
            ..settled(long, 1, 0)
        };
        // The cap before the deadline.
        assert_eq!(
            m.decide(&mut m.begin(), s, &mut rng, &mut budget),
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong)
        );
        // The budget last, and only when a retry would happen.
        let s = settled(Verdict::Transient, 1, 7);
        assert_eq!(
            m.decide(&mut m.begin(), s, &mut rng, &mut budget),
            RetryDecision::GiveUp(GiveUpReason::BudgetExceeded)
        );
        assert_eq!(
            log,
            [
                BudgetCall::FirstAttempt(0),
                BudgetCall::Unretried(0, VerdictKind::Overload),
                BudgetCall::FirstAttempt(7),
                BudgetCall::Spend(7, VerdictKind::Transient),
            ]
        );
    }
}
