//! Google SRE's per-client retry budget: retries at most a fixed share of requests over a
//! sliding window, with a floor so a quiet service can still retry.
//!
//! Design notes: docs/design/retry-and-budgets.md

use core::time::Duration;

use crate::control::emit_reconfigured;
use crate::observe::{Observer, PolicyKind};
use crate::permit::Env;
use crate::random::Random;
use crate::retry::budget::{BudgetConfigError, RetryBudget};
use crate::settings::Settings;
use crate::time::Instant;
use crate::verdict::VerdictKind;
use crate::window::{MIN_BUCKET_NANOS, RunningWindow};

const FIRSTS: usize = 0;
const RETRIES: usize = 1;
/// Granted retries given back ([`RatioBudget::refund_retry`]): a counter of its own, so the
/// running sums only ever grow (`window/running.rs`); the window's retries are
/// `RETRIES − REFUNDS`.
const REFUNDS: usize = 2;

/// The ratio budget's settings.
///
/// ```
/// use core::time::Duration;
/// use resilix::retry::budget::RatioBudgetConfig;
///
/// let config = RatioBudgetConfig { max_retry_permille: 200, ..RatioBudgetConfig::DEFAULT };
/// assert_eq!(config.window, Duration::from_secs(10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RatioBudgetConfig {
    /// Retries allowed per thousand first attempts in the window. Default 100 (10%, Google
    /// SRE: "a request will only be retried as long as this ratio is below 10%").
    ///
    /// At most 1000 (one retry per first attempt, twice the load), or
    /// [`BudgetConfigError::RatioAboveOne`]: more retries than calls is a budget that bounds
    /// nothing a per-call attempt cap would not. No source recommends more: the SRE book uses
    /// 10%, Finagle's and Linkerd's default budgets 20% (Finagle and tower accept up to
    /// 1000×, as a percentage of up to 100,000), Envoy's retry budget is a percentage of at
    /// most 100, and gRPC A6 bounds retries by its token bucket instead.
    pub max_retry_permille: u32,
    /// Retries always allowed per window, whatever the ratio. Default 3 (ours, after
    /// failsafe-go's `minConcurrency` of 3, read here as retries per window rather than
    /// concurrent retries). Without a floor a service with a few requests per window could
    /// never retry at all. A floor of `u32::MAX` grants every retry, like
    /// [`Unlimited`](super::Unlimited) but counted: that is its meaning, tested.
    pub min_retries_per_window: u32,
    /// How far back the ratio looks. Default 10 s (ours; Finagle's retry budget credits
    /// expire after 10 s; the SRE book gives no window for its budget). Counted in the
    /// budget's `B` buckets of `window / B` (rounded up to a nanosecond), so the counts cover
    /// between `B − 1` and `B` bucket lengths. At least `B × 8 ns` (the shortest bucket), or
    /// [`BudgetConfigError::WindowShorterThanBuckets`].
    pub window: Duration,
}

impl RatioBudgetConfig {
    /// The largest ratio: one retry per first attempt (see
    /// [`max_retry_permille`](Self::max_retry_permille)).
    pub const MAX_RETRY_PERMILLE: u32 = 1000;

    /// 10% of first attempts, at least 3 retries per 10 s window.
    pub const DEFAULT: RatioBudgetConfig = RatioBudgetConfig {
        max_retry_permille: 100,
        min_retries_per_window: 3,
        window: Duration::from_secs(10),
    };
}

impl Default for RatioBudgetConfig {
    fn default() -> Self {
        RatioBudgetConfig::DEFAULT
    }
}

/// Retries bounded as a share of first attempts over a sliding window (Google SRE), with a
/// floor per window (failsafe-go's idea).
///
/// **Which ratio.** We bound retries ÷ *first attempts* (requests the application made), not
/// retries ÷ all attempts. A budget of `r` then means exactly "at most `r` extra load": the
/// attempts reaching the upstream in any window are at most
/// `first_attempts · (1 + r) + min_retries_per_window`, so with the defaults the
/// amplification is bounded by 1.1× (the SRE book's "just 1.1x") plus 3 retries per 10 s.
/// (Bounding retries ÷ all attempts below `r` would give `1 / (1 − r)` = 1.11×.)
///
/// A retry is granted while `retries + 1 ≤ max(floor, ⌊first_attempts · permille / 1000⌋)`.
/// First attempts are counted when they settle, retries when they are granted. Refused calls
/// (`Rejected`) count for nothing.
///
/// **Exactness.** The window is kept as running totals (`mechanism/window/running.rs`): a
/// first attempt is one `fetch_add`, and a grant is a compare-and-swap on the one running sum
/// of retries from the value the limit was checked against, so concurrent callers never
/// overspend, whatever their periods. At a bucket boundary a caller whose `now` is a period
/// behind reads the window as the move left it (once); the window of first attempts is
/// approximate as every windowed statistic is. `B` is the number of buckets (default 10:
/// one-second buckets for the 10 s window); a spend reads three counters whatever `B` is.
///
/// ```
/// use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, RetryBudget};
/// use resilix::time::Instant;
/// use resilix::VerdictKind;
///
/// let budget: RatioBudget = RatioBudget::new(RatioBudgetConfig::DEFAULT)?;
/// let now = Instant::from_secs(1);
/// for _ in 0..100 {
///     budget.record_first_attempt(now);
/// }
/// // 10% of 100 first attempts: ten retries, then no more.
/// let granted = (0..20).filter(|_| budget.try_spend(now, VerdictKind::Transient)).count();
/// assert_eq!(granted, 10);
/// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
/// ```
#[derive(Debug)]
pub struct RatioBudget<const B: usize = 10> {
    pub(super) window: RunningWindow<B, 3>,
    /// `[max_retry_permille, min_retries_per_window]`, read together by every spend and
    /// replaced together by [`RatioBudget::reconfigure`].
    settings: Settings<2>,
}

impl RatioBudget {
    crate::sync::const_fn_unless_loom! {
        /// A budget with `config` over the default ten buckets, refusing an empty window and a
        /// budget that never retries. Other bucket counts: [`RatioBudget::with_buckets`].
        ///
        /// ```
        /// use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
        /// use resilix::retry::{Retry, RetryConfig};
        ///
        /// // Inline, no annotation: the default instantiation.
        /// let retry = Retry::new(RetryConfig::DEFAULT, RatioBudget::new(RatioBudgetConfig::DEFAULT)?);
        /// # let _ = retry;
        /// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
        /// ```
        pub fn new(config: RatioBudgetConfig) -> Result<Self, BudgetConfigError> {
            Self::with_buckets(config)
        }
    }

    crate::sync::const_fn_unless_loom! {
        /// [`RatioBudgetConfig::DEFAULT`] over ten buckets: valid by construction, so no
        /// `Result` (`const`, for a `static`). Also [`Default::default`].
        ///
        /// ```
        /// use resilix::retry::budget::RatioBudget;
        /// static BUDGET: RatioBudget = RatioBudget::with_defaults();
        /// assert_eq!(BUDGET.counts(resilix::time::Instant::ZERO), (0, 0));
        /// ```
        pub fn with_defaults() -> Self {
            match Self::new(RatioBudgetConfig::DEFAULT) {
                Ok(budget) => budget,
                Err(_) => panic!("the default config is valid (its doctest checks it)"),
            }
        }
    }
}

impl Default for RatioBudget {
    fn default() -> Self {
        RatioBudget::with_defaults()
    }
}

impl<const B: usize> RatioBudget<B> {
    crate::sync::const_fn_unless_loom! {
        /// A budget with `config` over `B` buckets, refusing an empty window and a budget that
        /// never retries.
        ///
        /// ```
        /// use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
        /// let budget = RatioBudget::<4>::with_buckets(RatioBudgetConfig::DEFAULT)?;
        /// # let _ = budget;
        /// # Ok::<(), resilix::retry::budget::BudgetConfigError>(())
        /// ```
        pub fn with_buckets(config: RatioBudgetConfig) -> Result<Self, BudgetConfigError> {
            if B == 0 || config.window.is_zero() {
                return Err(BudgetConfigError::EmptyWindow);
            }
            if crate::time::duration_as_nanos_saturating(config.window)
                < (B as u64).saturating_mul(MIN_BUCKET_NANOS)
            {
                return Err(BudgetConfigError::WindowShorterThanBuckets);
            }
            if config.max_retry_permille == 0 && config.min_retries_per_window == 0 {
                return Err(BudgetConfigError::NeverRetries);
            }
            if config.max_retry_permille > RatioBudgetConfig::MAX_RETRY_PERMILLE {
                return Err(BudgetConfigError::RatioAboveOne);
            }
            Ok(RatioBudget {
                window: RunningWindow::new(config.window),
                settings: Settings::new([config.max_retry_permille, config.min_retries_per_window]),
            })
        }
    }

    /// Gives back one retry granted at `now` and not made (a per-key budget's reservation that
    /// its shared budget refused). Counted as a refund in `now`'s period, the grant's own, so
    /// the two leave the window together; a refund whose period a move has just left counts in
    /// the next one, and the window then holds one retry too few for at most one bucket
    /// period after the grant ages out (one spare retry, never a missing one).
    pub(super) fn refund_retry(&self, now: Instant) {
        self.window.add(now, [0, 0, 1]);
    }

    /// First attempts and granted retries (refunds taken off) in the window ending at `now`
    /// (a snapshot).
    pub fn counts(&self, now: Instant) -> (u32, u32) {
        let t = self.window.totals(now);
        (t[FIRSTS], t[RETRIES].saturating_sub(t[REFUNDS]))
    }

    /// How many retries the window allows in total at these counts: the pure rule.
    pub fn allowance(&self, first_attempts: u32) -> u32 {
        let [permille, floor] = self.settings.read();
        allowance(first_attempts, permille, floor)
    }

    /// Puts `config`'s ratio and floor in force at once, keeping the window's counts, and
    /// emits [`Event::PolicyReconfigured`]. From the next spend on, the allowance is the new
    /// rule over the same counts: a lowered ratio may leave the window already over it (no
    /// retry until first attempts catch up or old retries age out); a raised one grants at
    /// once. A spend racing the change uses the old pair or the new one, never a mix (one
    /// settings block (`mechanism/settings.rs`), read once per spend).
    ///
    /// The window cannot change in place ([`RatioReconfigureError::Fixed`]): its buckets'
    /// length is what its stored periods mean. A change of window needs a new budget.
    /// Reconfigurations do not queue: one racing another is [`RatioReconfigureError::Busy`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::permit::Env;
    /// use resilix::random::SeededRandom;
    /// use resilix::retry::budget::ratio::RatioReconfigureError;
    /// use resilix::retry::budget::{RatioBudget, RatioBudgetConfig};
    /// use resilix::time::Instant;
    ///
    /// let config = RatioBudgetConfig { max_retry_permille: 100, ..RatioBudgetConfig::DEFAULT };
    /// let budget = RatioBudget::new(config).unwrap();
    /// assert_eq!(budget.allowance(1_000), 100);
    /// let mut rng = SeededRandom::new(1);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    /// budget.reconfigure(RatioBudgetConfig { max_retry_permille: 250, ..config }, &mut env).unwrap();
    /// assert_eq!(budget.allowance(1_000), 250);
    /// let longer = RatioBudgetConfig { window: Duration::from_secs(60), ..config };
    /// assert_eq!(
    ///     budget.reconfigure(longer, &mut env),
    ///     Err(RatioReconfigureError::Fixed { field: "window" })
    /// );
    /// ```
    ///
    /// [`Event::PolicyReconfigured`]: crate::observe::Event::PolicyReconfigured
    pub fn reconfigure<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        config: RatioBudgetConfig,
        env: &mut Env<'_, R, O>,
    ) -> Result<(), RatioReconfigureError> {
        let next = Self::with_buckets(config).map_err(RatioReconfigureError::Config)?;
        if next.window.bucket_length() != self.window.bucket_length() {
            return Err(RatioReconfigureError::Fixed { field: "window" });
        }
        self.settings
            .replace(next.settings.read())
            .map_err(|_| RatioReconfigureError::Busy)?;
        emit_reconfigured(PolicyKind::RetryBudget, env);
        Ok(())
    }
}

/// Why [`RatioBudget::reconfigure`] and [`RetryBreaker::reconfigure`](super::RetryBreaker::reconfigure) changed nothing: the one reconfigure error, over this policy's config error.
pub type RatioReconfigureError = crate::control::ReconfigureError<BudgetConfigError>;

/// `max(floor, ⌊firsts · permille / 1000⌋)`, in u64 so it cannot overflow, saturated to u32.
const fn allowance(first_attempts: u32, permille: u32, floor: u32) -> u32 {
    let share = (first_attempts as u64 * permille as u64) / 1000;
    let share = if share > u32::MAX as u64 {
        u32::MAX
    } else {
        share as u32
    };
    if share > floor { share } else { floor }
}

impl<const B: usize> RetryBudget for RatioBudget<B> {
    #[inline]
    fn record_first_attempt(&self, now: Instant) {
        self.window.add(now, [1, 0, 0]);
    }

    fn try_spend(&self, now: Instant, _after: VerdictKind) -> bool {
        // Once per spend, outside the window's loop: one pair for the whole decision.
        let [permille, floor] = self.settings.read();
        self.window.try_add_one(now, RETRIES, |totals| {
            let retries = totals[RETRIES].saturating_sub(totals[REFUNDS]);
            retries < allowance(totals[FIRSTS], permille, floor)
        })
    }

    fn record_unretried_failure(&self, _now: Instant, _after: VerdictKind) {}

    fn record_success(&self, _now: Instant, _retried_after: Option<VerdictKind>) {}
}

#[cfg(all(test, not(loom)))]
mod tests;
