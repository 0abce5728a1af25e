//! Google SRE's per-client retry budget: retries at most a fixed share of requests over a
//! sliding window, with a floor so a quiet service can still retry.
//!
//! Design notes: docs/design/retry-and-budgets.md

use core::fmt;
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

/// Why [`RatioBudget::reconfigure`] changed nothing.
///
/// ```
/// use resilix::retry::budget::ratio::RatioReconfigureError;
///
/// let e = RatioReconfigureError::Fixed { field: "window" };
/// assert!(e.to_string().contains("build a new budget"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RatioReconfigureError {
    /// The new config is invalid; the old one stays in force.
    Config(BudgetConfigError),
    /// The new config changes a setting that cannot change in place; named here.
    Fixed {
        /// The field.
        field: &'static str,
    },
    /// Another reconfiguration of this budget is running; try again (none waits).
    Busy,
}

impl fmt::Display for RatioReconfigureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "invalid ratio budget config: {e}"),
            Self::Fixed { field } => write!(
                f,
                "ratio budget: {field} cannot change in a running budget (only \
                 max_retry_permille and min_retries_per_window can); build a new budget"
            ),
            Self::Busy => {
                f.write_str("another reconfiguration of this ratio budget is running; try again")
            }
        }
    }
}

impl core::error::Error for RatioReconfigureError {}

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
mod tests {
    use super::*;

    const T: VerdictKind = VerdictKind::Transient;

    fn budget(permille: u32, floor: u32) -> RatioBudget<10> {
        RatioBudget::new(RatioBudgetConfig {
            max_retry_permille: permille,
            min_retries_per_window: floor,
            window: Duration::from_secs(10),
        })
        .unwrap()
    }

    fn spend_all(b: &RatioBudget<10>, now: Instant) -> usize {
        (0..10_000).take_while(|_| b.try_spend(now, T)).count()
    }

    #[test]
    fn a_reset_forgets_the_window() {
        let b = budget(100, 0);
        for _ in 0..50 {
            b.record_first_attempt(Instant::ZERO);
        }
        assert_eq!(spend_all(&b, Instant::ZERO), 5);
        assert_eq!(b.counts(Instant::ZERO), (50, 5));
        let mut rng = crate::random::SeededRandom::new(1);
        b.reset(&mut Env::new(Instant::ZERO, &mut rng));
        assert_eq!(b.counts(Instant::ZERO), (0, 0));
        assert_eq!(
            spend_all(&b, Instant::ZERO),
            0,
            "no first attempts: no share"
        );
    }

    #[test]
    fn invalid_configs_are_refused() {
        let zero_window = RatioBudgetConfig {
            window: Duration::ZERO,
            ..RatioBudgetConfig::DEFAULT
        };
        assert_eq!(
            RatioBudget::new(zero_window).err(),
            Some(BudgetConfigError::EmptyWindow)
        );
        assert_eq!(
            RatioBudget::<0>::with_buckets(RatioBudgetConfig::DEFAULT).err(),
            Some(BudgetConfigError::EmptyWindow)
        );
        let never = RatioBudgetConfig {
            max_retry_permille: 0,
            min_retries_per_window: 0,
            ..RatioBudgetConfig::DEFAULT
        };
        assert_eq!(
            RatioBudget::new(never).err(),
            Some(BudgetConfigError::NeverRetries)
        );
    }

    #[test]
    fn a_ratio_above_one_is_refused() {
        // The issue's case: 50,000 per mille, 500 retries per 10 first attempts.
        let config = |permille| RatioBudgetConfig {
            max_retry_permille: permille,
            ..RatioBudgetConfig::DEFAULT
        };
        assert_eq!(
            RatioBudget::new(config(50_000)).err(),
            Some(BudgetConfigError::RatioAboveOne)
        );
        assert_eq!(
            RatioBudget::new(config(1_001)).err(),
            Some(BudgetConfigError::RatioAboveOne)
        );
        let one = RatioBudget::new(config(RatioBudgetConfig::MAX_RETRY_PERMILLE)).unwrap();
        for _ in 0..10 {
            one.record_first_attempt(Instant::ZERO);
        }
        assert_eq!(
            (0..100)
                .take_while(|_| one.try_spend(Instant::ZERO, T))
                .count(),
            10,
            "one retry per first attempt"
        );
    }

    #[test]
    fn a_window_shorter_than_its_buckets_is_refused() {
        let config = |nanos| RatioBudgetConfig {
            window: Duration::from_nanos(nanos),
            ..RatioBudgetConfig::DEFAULT
        };
        assert_eq!(
            RatioBudget::new(config(79)).err(),
            Some(BudgetConfigError::WindowShorterThanBuckets)
        );
        assert!(RatioBudget::new(config(80)).is_ok());
    }

    #[test]
    fn a_floor_of_u32_max_grants_every_retry() {
        let b = budget(0, u32::MAX);
        assert_eq!(spend_all(&b, Instant::ZERO), 10_000);
        assert_eq!(b.counts(Instant::ZERO), (0, 10_000));
    }

    #[test]
    fn the_floor_lets_a_quiet_service_retry() {
        let b = budget(100, 3);
        assert_eq!(
            spend_all(&b, Instant::from_secs(1)),
            3,
            "no traffic: the floor"
        );
        assert_eq!(b.counts(Instant::from_secs(1)), (0, 3));
    }

    #[test]
    fn ten_percent_of_first_attempts_above_the_floor() {
        let b = budget(100, 3);
        let now = Instant::from_secs(1);
        for _ in 0..250 {
            b.record_first_attempt(now);
        }
        assert_eq!(spend_all(&b, now), 25);
        // One more first attempt is not enough for another (25.1 rounds down)...
        b.record_first_attempt(now);
        assert!(!b.try_spend(now, T));
        // ...ten more are.
        for _ in 0..9 {
            b.record_first_attempt(now);
        }
        assert!(b.try_spend(now, T));
    }

    #[test]
    fn zero_ratio_means_only_the_floor() {
        let b = budget(0, 2);
        for _ in 0..1_000 {
            b.record_first_attempt(Instant::ZERO);
        }
        assert_eq!(spend_all(&b, Instant::ZERO), 2);
    }

    #[test]
    fn spent_retries_slide_out_of_the_window() {
        let b = budget(100, 1);
        assert!(b.try_spend(Instant::from_secs(0), T));
        assert!(!b.try_spend(Instant::from_secs(5), T));
        assert!(
            b.try_spend(Instant::from_secs(10), T),
            "the first retry has slid out"
        );
        assert_eq!(
            spend_all(&b, Instant::from_secs(365 * 86_400)),
            1,
            "a year later"
        );
    }

    #[test]
    fn time_backwards_and_the_end_of_time_never_panic_nor_overspend() {
        let b = budget(100, 1);
        assert!(b.try_spend(Instant::MAX, T));
        assert!(!b.try_spend(Instant::MAX, T));
        assert!(
            b.try_spend(Instant::ZERO, T),
            "an earlier period is its own bucket"
        );
        assert!(!b.try_spend(Instant::ZERO, T));
    }

    #[test]
    fn allowance_saturates_and_takes_the_larger() {
        assert_eq!(allowance(u32::MAX, 1000, 0), u32::MAX);
        assert_eq!(allowance(u32::MAX, u32::MAX, 0), u32::MAX);
        assert_eq!(allowance(9, 100, 0), 0);
        assert_eq!(allowance(10, 100, 0), 1);
        assert_eq!(allowance(10, 100, 5), 5);
        assert_eq!(budget(100, 3).allowance(1_000), 100);
    }

    #[test]
    fn only_first_attempts_and_granted_retries_are_counted() {
        let b = budget(100, 3);
        b.record_unretried_failure(Instant::ZERO, T);
        b.record_success(Instant::ZERO, Some(T));
        assert_eq!(b.counts(Instant::ZERO), (0, 0));
        b.record_first_attempt(Instant::ZERO);
        assert!(b.try_spend(Instant::ZERO, T));
        assert_eq!(b.counts(Instant::ZERO), (1, 1));
    }

    mod reconfigure {
        extern crate std;
        use super::*;
        use crate::observe::Event;
        use crate::random::SeededRandom;
        use core::cell::RefCell;
        use std::vec::Vec;

        struct Log(RefCell<Vec<Event>>);
        impl Observer for Log {
            fn on_event(&self, e: &Event) {
                self.0.borrow_mut().push(*e);
            }
        }

        fn config(permille: u32, floor: u32) -> RatioBudgetConfig {
            RatioBudgetConfig {
                max_retry_permille: permille,
                min_retries_per_window: floor,
                window: Duration::from_secs(10),
            }
        }

        fn apply(
            b: &RatioBudget<10>,
            c: RatioBudgetConfig,
        ) -> (Result<(), RatioReconfigureError>, Vec<Event>) {
            let log = Log(RefCell::new(Vec::new()));
            let mut rng = SeededRandom::new(1);
            let mut env = Env::new(Instant::from_secs(2), &mut rng).with_observer(&log);
            let r = b.reconfigure(c, &mut env);
            (r, log.0.into_inner())
        }

        #[test]
        fn a_reconfiguration_is_an_event_and_keeps_the_counts() {
            let b = budget(100, 0);
            let now = Instant::from_secs(1);
            for _ in 0..100 {
                b.record_first_attempt(now);
            }
            assert_eq!(spend_all(&b, now), 10);
            let (r, events) = apply(&b, config(300, 0));
            assert_eq!(r, Ok(()));
            assert_eq!(
                events,
                [Event::PolicyReconfigured {
                    policy: PolicyKind::RetryBudget,
                    at: Instant::from_secs(2)
                }]
            );
            assert_eq!(b.counts(now), (100, 10), "the window is kept");
            assert_eq!(
                spend_all(&b, now),
                20,
                "a raised ratio grants at once, over the same counts"
            );
        }

        #[test]
        fn a_lowered_ratio_under_the_spent_retries_grants_nothing_until_firsts_catch_up() {
            let b = budget(500, 0);
            let now = Instant::from_secs(1);
            for _ in 0..100 {
                b.record_first_attempt(now);
            }
            assert_eq!(spend_all(&b, now), 50);
            assert_eq!(apply(&b, config(100, 0)).0, Ok(()));
            assert_eq!(spend_all(&b, now), 0, "50 spent, 10 allowed now");
            for _ in 0..400 {
                b.record_first_attempt(now);
            }
            assert_eq!(spend_all(&b, now), 0, "500 firsts allow 50: all spent");
            for _ in 0..10 {
                b.record_first_attempt(now);
            }
            assert_eq!(spend_all(&b, now), 1);
        }

        #[test]
        fn the_floor_changes_with_the_ratio() {
            let b = budget(0, 2);
            assert_eq!(b.allowance(0), 2);
            assert_eq!(apply(&b, config(0, 9)).0, Ok(()));
            assert_eq!((b.allowance(0), spend_all(&b, Instant::ZERO)), (9, 9));
        }

        #[test]
        fn a_new_window_an_invalid_config_and_a_racing_writer_change_nothing() {
            let b = budget(100, 3);
            let longer = RatioBudgetConfig {
                window: Duration::from_secs(11),
                ..config(200, 3)
            };
            assert_eq!(
                apply(&b, longer),
                (
                    Err(RatioReconfigureError::Fixed { field: "window" }),
                    Vec::new()
                )
            );
            assert_eq!(
                apply(&b, config(1001, 3)).0,
                Err(RatioReconfigureError::Config(
                    BudgetConfigError::RatioAboveOne
                ))
            );
            let writer = b.settings.write().unwrap();
            assert_eq!(
                apply(&b, config(200, 3)),
                (Err(RatioReconfigureError::Busy), Vec::new())
            );
            drop(writer);
            assert_eq!(b.allowance(1000), 100, "nothing changed");
            assert_eq!(apply(&b, config(200, 3)).0, Ok(()));
            assert_eq!(b.allowance(1000), 200);
        }

        /// The ratio and the floor change together: with `(1000, 0)` and `(0, 5)` alternating
        /// under readers, `allowance(100)` is 100 or 5; a torn pair `(0, 0)` would read 0.
        #[test]
        fn many_threads_never_see_the_ratio_of_one_config_with_the_floor_of_another() {
            use std::sync::atomic::{AtomicBool, Ordering as O};
            let b = budget(1000, 0);
            let done = AtomicBool::new(false);
            std::thread::scope(|scope| {
                let (b, done) = (&b, &done);
                scope.spawn(move || {
                    let mut rng = SeededRandom::new(1);
                    let mut env = Env::new(Instant::ZERO, &mut rng);
                    for i in 0..20_000 {
                        let c = if i % 2 == 0 {
                            config(0, 5)
                        } else {
                            config(1000, 0)
                        };
                        b.reconfigure(c, &mut env).unwrap();
                    }
                    done.store(true, O::Release);
                });
                for _ in 0..2 {
                    scope.spawn(move || {
                        let mut reads = 0u32;
                        while !done.load(O::Acquire) || reads < 1000 {
                            let a = b.allowance(100);
                            assert!(a == 100 || a == 5, "a torn pair: allowance {a}");
                            reads += 1;
                        }
                    });
                }
            });
        }
    }
}
