//! Hedged requests: when a call is slower than nearly all calls, send a copy and take the
//! first acceptable answer ("The Tail at Scale", Dean & Barroso, CACM 2013).
//!
//! This module is the decision, never the sending: a [`Hedge`] is a `&self`, lock-free,
//! allocation-free policy shared by every call to one upstream; [`Hedge::begin`] starts a
//! [`HedgeCall`], the per-call plan that a driver (the tokio adapter's `hedged`, the
//! simulator, a firmware loop) polls to learn when the next copy is due and whether it may go.
//! The driver sends the copies, races them, cancels the losers and reports the answer.
//!
//! # The design (Finagle's `BackupRequestFilter`, on our shared budget)
//!
//! * **One knob**, [`max_extra_load_permille`](HedgeConfig::max_extra_load_permille). The
//!   delay is the latency quantile at `1 − load`: at 5%, the p95, so about 5% of calls
//!   outlive it and get a copy (the paper: hedging at the p95 "limits the additional load to
//!   approximately 5%"). The quantile comes from the crate's [`DurationHistogram`] (log-linear,
//!   6.25% error) over windows of [`window`](HedgeConfig::window) original latencies,
//!   refreshed each time a window fills, and raised by that error bound so that it is never
//!   below the exact quantile (a short delay would ask for more hedges than the cap supplies). A delay is never below
//!   [`min_delay`](HedgeConfig::min_delay) (1 ms, Finagle) nor below one tick of its storage
//!   (1 µs), so a copy never leaves with its original. The histogram covers every duration up
//!   to 584 years: there is no fixed bound to fall off (tower #475: its histogram had a fixed
//!   10 s bound, fixed in tower PR #484).
//! * **A local cap on extra load.** Each hedgeable call earns `load` of a hedge, a hedge costs
//!   one, and the balance holds at most [`burst`](HedgeConfig::burst) hedges: over any run of
//!   calls, hedges ≤ load × calls + burst, exactly, under any concurrency (a compare-and-swap
//!   on one word). When the upstream degrades and every call outlives the old delay, hedges
//!   stay at the configured share instead of doubling the load: no hedge storm.
//! * **The shared budget.** Every hedge is also charged to the *same* [`RetryBudget`] object
//!   as the retries (a `&TokenBucket` or `&RatioBudget` given to both), as a retry after a
//!   `Timeout` (gRPC charges hedges to the retry throttle): retries and hedges together stay
//!   within the process's bound (docs/design/spec.md §4). The local cap is asked first; if the budget then
//!   refuses, the local hedge is given back.
//! * **A refused hedge cancels nothing.** Refusal only means no copy: the original (and any
//!   copy already sent) runs on, and the call sends no further copies (failsafe-go #141:
//!   budget exhaustion cancelled attempts already in flight; here the type cannot express it).
//! * **Only idempotent calls** are hedged ([`CallOptions::idempotent`]); a copy due at or
//!   after the call's deadline is not sent.
//!
//! Only the original's latency is measured (answers, timeouts, and the time until it was
//! cancelled when a copy won); the local cap is exact under any concurrency, and nothing
//! stores an instant, so no idle gap changes a decision.
//!
//! Design notes (what is measured and why, concurrency): docs/design/hedge.md
//!
//! ```
//! use core::time::Duration;
//! use resilix::call::CallOptions;
//! use resilix::hedge::{Hedge, HedgeConfig, NextCopy};
//! use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! // The budget the retries use; hedges are charged to the same object.
//! let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD)?;
//! let config = HedgeConfig { fixed_delay: Some(Duration::from_millis(10)), ..HedgeConfig::DEFAULT };
//! let hedge = Hedge::new(config, &budget)?;
//!
//! let t0 = Instant::from_secs(1);
//! let mut call = hedge.begin(t0, CallOptions::default().idempotent(true));
//! assert_eq!(call.poll(&hedge, t0, &()), NextCopy::Wait { until: t0 + Duration::from_millis(10) });
//! // 10 ms later the original has not answered: send copy 2.
//! let t1 = t0 + Duration::from_millis(10);
//! assert_eq!(call.poll(&hedge, t1, &()), NextCopy::Send { copy: 2 });
//! assert_eq!(call.poll(&hedge, t1, &()), NextCopy::Never, "one hedge per call");
//! // The copy answers first; the driver cancels the original.
//! call.finish(&hedge, t1 + Duration::from_millis(2), 2, &Verdict::Success, &());
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

mod config;
mod decide;

pub use config::{BudgetAccounting, HedgeConfig, HedgeConfigError};

use core::fmt;
use core::time::Duration;

use crate::call::CallOptions;
use crate::observe::{DurationHistogram, Event, Observer};
use crate::retry::budget::RetryBudget;
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::verdict::{Verdict, VerdictKind};

// Defined with the events that report it, below this policy (no upward import).
pub use crate::observe::HedgeRefusal;

/// What a [`HedgeCall`] says about its next copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NextCopy {
    /// Send copy number `copy` now (2 for the first hedge); it has been paid for.
    Send {
        /// The copy's number: the original is 1.
        copy: u32,
    },
    /// The next copy is due at `until`, if no acceptable answer comes first: poll again then.
    Wait {
        /// When it is due.
        until: Instant,
    },
    /// The copy that was due was refused; no further copy will be sent. Nothing in flight is
    /// cancelled.
    Refused(HedgeRefusal),
    /// No (further) copy for this call: not idempotent, no delay known yet, every hedge
    /// sent, refused earlier, or due at or after the deadline.
    Never,
}

/// The hedge policy for one upstream: the delay, the local cap and the shared budget. `&self`
/// and lock-free; share it by reference, `Arc` or `static`.
///
/// ```
/// use resilix::hedge::{Hedge, HedgeConfig};
/// use resilix::retry::budget::Unlimited;
///
/// let hedge = Hedge::new(HedgeConfig::DEFAULT, Unlimited)?;
/// assert_eq!(hedge.delay(), None, "no delay before the first window of latencies");
/// assert_eq!(hedge.local_balance_milli(), 100_000, "the local cap starts full: 100 hedges");
/// # Ok::<(), resilix::hedge::HedgeConfigError>(())
/// ```
pub struct Hedge<B: RetryBudget> {
    config: HedgeConfig,
    /// The floor under every delay, in µs.
    floor: u32,
    /// The nearest rank of the quantile within one window.
    rank: u64,
    /// The local cap, in thousandths of a hedge.
    cap: u32,
    budget: B,
    latency: DurationHistogram,
    /// Samples in the current window (exact: one refresher per window).
    filled: AtomicU32,
    /// The delay in force, in µs; 0 = none known yet.
    delay: AtomicU32,
    /// The local cap's balance, in thousandths of a hedge.
    credit: AtomicU32,
}

impl<B: RetryBudget> Hedge<B> {
    /// A hedge policy with `config`, charging hedges to `budget` (pass `&budget` to share the
    /// one the retries use). Refuses an invalid configuration.
    ///
    /// ```
    /// use resilix::hedge::{Hedge, HedgeConfig, HedgeConfigError};
    /// use resilix::retry::budget::Unlimited;
    ///
    /// let bad = HedgeConfig { window: 10, ..HedgeConfig::DEFAULT }; // 10 × 5% < 1 sample
    /// assert_eq!(Hedge::new(bad, Unlimited).err(), Some(HedgeConfigError::WindowTooShort));
    /// ```
    pub fn new(config: HedgeConfig, budget: B) -> Result<Self, HedgeConfigError> {
        config.validate()?;
        let floor = decide::floor_micros(config.min_delay);
        let delay = match config.fixed_delay {
            Some(d) => decide::delay_word(d, floor),
            None => 0,
        };
        let cap = config.burst * decide::ONE_HEDGE;
        Ok(Hedge {
            config,
            floor,
            rank: decide::quantile_rank(config.window, config.quantile_permille()),
            cap,
            budget,
            latency: DurationHistogram::new(),
            filled: AtomicU32::new(0),
            delay: AtomicU32::new(delay),
            credit: AtomicU32::new(cap),
        })
    }

    /// The configuration.
    pub const fn config(&self) -> &HedgeConfig {
        &self.config
    }

    /// The shared budget.
    pub const fn budget(&self) -> &B {
        &self.budget
    }

    /// The delay in force (whole microseconds, at least the floor), or `None` before the
    /// first window of latencies has filled.
    pub fn delay(&self) -> Option<Duration> {
        match self.delay.load(Ordering::Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(u64::from(us))),
        }
    }

    /// The local cap's balance in thousandths of a hedge (1000 = one hedge may go).
    pub fn local_balance_milli(&self) -> u32 {
        self.credit.load(Ordering::Relaxed)
    }

    /// Original latencies recorded in the current window (0 to `window − 1`).
    pub fn window_filled(&self) -> u32 {
        self.filled.load(Ordering::Relaxed)
    }

    /// Starts the plan of one call at `now`. A hedgeable (idempotent) call earns its share of
    /// a hedge in the local cap and reads the delay in force; any other call gets a plan that
    /// never sends a copy and records nothing.
    ///
    /// ```
    /// use resilix::call::CallOptions;
    /// use resilix::hedge::{Hedge, HedgeConfig, NextCopy};
    /// use resilix::retry::budget::Unlimited;
    /// use resilix::time::Instant;
    ///
    /// let hedge = Hedge::new(HedgeConfig::DEFAULT, Unlimited)?;
    /// let mut write = hedge.begin(Instant::ZERO, CallOptions::default()); // not idempotent
    /// assert_eq!(write.poll(&hedge, Instant::MAX, &()), NextCopy::Never);
    /// # Ok::<(), resilix::hedge::HedgeConfigError>(())
    /// ```
    pub fn begin(&self, now: Instant, options: CallOptions) -> HedgeCall {
        let hedgeable = options.is_idempotent();
        let delay = if hedgeable {
            self.earn();
            self.delay()
        } else {
            None
        };
        HedgeCall {
            started: now,
            delay,
            deadline: options.deadline_value().map(|d| d.instant()),
            sent: 1,
            hedgeable,
            stopped: false,
            original: Original::Running,
        }
    }

    /// One call's share of a hedge into the local cap (a load, no write, when it is full).
    fn earn(&self) {
        let earn = self.config.max_extra_load_permille;
        let _ = self
            .credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                decide::deposit(b, earn, self.cap)
            });
    }

    /// Pays for one hedge: the local cap first, then the shared budget; a hedge the budget
    /// refuses goes back to the local cap. The other order would spend the shared budget on a
    /// hedge the local cap then refuses, and a budget has no refund.
    fn charge(&self, now: Instant) -> Result<(), HedgeRefusal> {
        self.credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, decide::take)
            .map_err(|_| HedgeRefusal::LocalCap)?;
        if self.budget.try_spend(now, VerdictKind::Timeout) {
            return Ok(());
        }
        let _ = self
            .credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(decide::refund(b, self.cap))
            });
        Err(HedgeRefusal::Budget)
    }

    /// One original latency into the window; the sample that fills it sets the delay from the
    /// window and starts the next. A fixed delay keeps no window.
    fn record_original(&self, latency: Duration) {
        if self.config.fixed_delay.is_some() {
            return;
        }
        self.latency.record(latency);
        let window = self.config.window;
        let before = self
            .filled
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(if n + 1 >= window { 0 } else { n + 1 })
            })
            .unwrap_or_default();
        if before + 1 >= window {
            self.refresh();
        }
    }

    #[inline(never)]
    fn refresh(&self) {
        let q = decide::histogram_q(self.rank, self.config.window);
        if let Some(v) = self.latency.quantile(q) {
            // Raised to cover the exact quantile, yet never past the window's maximum (which
            // bounds it too).
            let v = decide::never_below_exact(v).min(self.latency.max().unwrap_or(v));
            self.delay
                .store(decide::delay_word(v, self.floor), Ordering::Relaxed);
        }
        self.latency.reset();
    }
}

/// A summary: the settings, the delay in force and the local cap's balance.
impl<B: RetryBudget> fmt::Debug for Hedge<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hedge")
            .field("config", &self.config)
            .field("delay", &self.delay())
            .field("local_balance_milli", &self.local_balance_milli())
            .field("window_filled", &self.window_filled())
            .finish()
    }
}

/// What is known of the original (copy 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Original {
    Running,
    /// It answered; with the latency to record, if its verdict is an answer latency.
    Answered(Option<Duration>),
}

/// One call's hedging plan: when the next copy is due, which copies were sent, and what to
/// record when the call ends. Plain data (the call's own), moved into [`finish`](Self::finish);
/// dropped without finishing (the caller gave up) it records nothing. Not `Clone`: a plan is
/// finished once.
#[derive(Debug, PartialEq, Eq)]
pub struct HedgeCall {
    started: Instant,
    /// The delay read at `begin`; `None`: this call sends no copies.
    delay: Option<Duration>,
    deadline: Option<Instant>,
    /// Copies sent, the original included.
    sent: u32,
    hedgeable: bool,
    /// A due hedge was refused (or is past the deadline): no further copies.
    stopped: bool,
    original: Original,
}

impl HedgeCall {
    /// Copies sent so far, the original included.
    pub const fn sent(&self) -> u32 {
        self.sent
    }

    /// When the call began.
    pub const fn started(&self) -> Instant {
        self.started
    }

    /// What to do about the next copy at `now`: send it (paid for, and reported as
    /// [`Event::HedgeSent`]), wait until it is due, or never. A refusal is reported as
    /// [`Event::HedgeRefused`] once, and then the call sends no more copies; it cancels
    /// nothing. Call it when the call starts and whenever the instant it named arrives (a late
    /// timer is fine: the copy goes at `now`).
    pub fn poll<B: RetryBudget, O: Observer + ?Sized>(
        &mut self,
        hedge: &Hedge<B>,
        now: Instant,
        observer: &O,
    ) -> NextCopy {
        let Some(delay) = self.delay else {
            return NextCopy::Never;
        };
        if self.stopped || self.sent > hedge.config.max_hedges {
            return NextCopy::Never;
        }
        let due = decide::copy_due(self.started, delay, self.sent);
        if self.deadline.is_some_and(|d| due >= d) {
            self.stopped = true;
            return NextCopy::Never;
        }
        if now < due {
            return NextCopy::Wait { until: due };
        }
        let copy = self.sent + 1;
        match hedge.charge(now) {
            Ok(()) => {
                self.sent = copy;
                observer.on_event(&Event::HedgeSent {
                    copy,
                    after: now.saturating_duration_since(self.started),
                });
                NextCopy::Send { copy }
            }
            Err(reason) => {
                self.stopped = true;
                observer.on_event(&Event::HedgeRefused { copy, reason });
                NextCopy::Refused(reason)
            }
        }
    }

    /// Copy `copy` answered at `now` with `verdict`, and the answer is not the one taken (not
    /// acceptable, while other copies are still in flight). Only the original's answer is
    /// remembered, for its latency.
    pub fn answered(&mut self, copy: u32, now: Instant, verdict: &Verdict) {
        if copy == 1 && self.original == Original::Running {
            self.original = Original::Answered(self.answer_latency(now, verdict));
        }
    }

    /// The call ended at `now` with the answer of copy `taken` (the first acceptable one; or,
    /// with none acceptable, the last answer; or the original with `Timeout` when the call's
    /// deadline ended it). The driver cancels every copy still in flight. Records the
    /// original's latency (the time until now for an original cancelled as a loser), the call
    /// on the budget under [`BudgetAccounting::Calls`], and [`Event::HedgeWon`] when a copy
    /// was sent.
    pub fn finish<B: RetryBudget, O: Observer + ?Sized>(
        mut self,
        hedge: &Hedge<B>,
        now: Instant,
        taken: u32,
        verdict: &Verdict,
        observer: &O,
    ) {
        if !self.hedgeable {
            return;
        }
        if taken == 1 {
            self.answered(1, now, verdict);
        }
        let sample = match self.original {
            Original::Running => Some(now.saturating_duration_since(self.started)),
            Original::Answered(latency) => latency,
        };
        if let Some(latency) = sample {
            hedge.record_original(latency);
        }
        if hedge.config.accounting == BudgetAccounting::Calls && verdict.is_counted() {
            let budget = &hedge.budget;
            budget.record_first_attempt(now);
            match verdict.kind() {
                VerdictKind::Success => {
                    budget.record_success(now, (taken > 1).then_some(VerdictKind::Timeout))
                }
                VerdictKind::Answered | VerdictKind::Rejected => {}
                kind => budget.record_unretried_failure(now, kind),
            }
        }
        if self.sent > 1 {
            observer.on_event(&Event::HedgeWon {
                copy: taken,
                copies: self.sent,
            });
        }
    }

    /// An answer's latency if it is one: `Success`, `Answered`, and `Timeout` (a lower bound).
    fn answer_latency(&self, now: Instant, verdict: &Verdict) -> Option<Duration> {
        matches!(
            verdict.kind(),
            VerdictKind::Success | VerdictKind::Answered | VerdictKind::Timeout
        )
        .then(|| now.saturating_duration_since(self.started))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
