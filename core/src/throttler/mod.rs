//! Adaptive throttling: Google SRE client-side throttling (SRE book, ch. 21).
//!
//! Each client keeps, for the last two minutes, how many requests it made and how many the
//! upstream accepted, and sheds new calls locally with probability
//!
//! ```text
//! P = max(0, (requests − K × accepts) / (requests + 1))      capped at max_rejection_rate
//! ```
//!
//! Unlike a breaker it never stops learning: it sheds a fraction, traffic keeps flowing, and
//! recovery is seen as it happens. The refusal is [`RejectReason::Throttled`].
//!
//! # What counts
//!
//! * An **accept** is a call settled [`Verdict::Success`] or [`Verdict::Answered`] (the
//!   upstream did the work). Overload, transient and timeout are requests but not accepts.
//! * Counting happens **at settle, never at admit**. A call that an inner policy refused drops
//!   its throttler permit unsettled, and a call settled [`Verdict::Rejected`] is invisible: it
//!   is neither a request nor an accept. This is the spec's regression (§9): counting at admit
//!   made a bulkhead's shedding read as upstream distress and pinned rejection at the cap
//!   while the upstream answered everything it received.
//! * The throttler's **own** refusals: the SRE book counts them as requests, failsafe-go does
//!   not. [`LocalRejections`] chooses; SRE's is the default. Below is why it matters.
//! * **Low traffic** (docs/design/spec.md §9): below [`ThrottlerConfig::min_requests`] requests in the window
//!   (default 10, ours) nothing is shed; a client that sporadic cannot overload anyone and its
//!   few samples say little.
//!
//! # Steady states
//!
//! Under an upstream of capacity C and offered load R > C, SRE's rule (local refusals
//! counted, the default) sheds `1 − KC/R` and holds the traffic reaching the upstream at
//! **K × C** whatever R is; failsafe-go's (refusals ignored) lets it grow as `√(KCR)`. Under
//! failures that do not depend on load, SRE's rule pushes P to the cap while failsafe-go's is
//! smooth in the failure rate. At R = 10 C and K = 2: SRE sheds 80% and sends 2 C;
//! failsafe-go sheds 55% and sends 4.5 C.
//!
//! Design notes (the derivations; the window): docs/design/throttler.md
//!
//! # Concurrency and time
//!
//! The counts live in a two-minute sliding window (20 buckets by default); an admit reads two
//! counters. Under contention a call that crosses a bucket boundary is counted once, in its own
//! period or the next; single-threaded the counts are exact. Time going backwards or jumping
//! forward neither panics nor sticks.
//!
//! # Randomness
//!
//! The draw is [`Random::chance`] on the exact fraction P, from `env.rng`: integer-only, and
//! the same seed gives the same shed decisions on every target. While P is zero no random
//! number is drawn at all.
//!
//! ```
//! use resilix::permit::{Env, Permit, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::throttler::{Throttler, ThrottlerConfig};
//! use resilix::time::Instant;
//! use resilix::{RejectReason, Verdict};
//!
//! let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
//! let mut rng = SeededRandom::new(7);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! // Ten calls that the upstream failed (ten is the low-traffic floor)...
//! for _ in 0..10 {
//!     let permit = throttler.admit(&mut env).unwrap();
//!     permit.settle(&Verdict::Transient, &mut env);
//! }
//! // ...and it sheds with probability min(0.9, 10/11).
//! assert_eq!(throttler.rejection_probability(env.now).as_f64(), 0.9);
//! let refusals: Vec<_> = (0..100).filter_map(|_| throttler.admit(&mut env).err()).collect();
//! assert!(refusals.len() > 70, "{}", refusals.len());
//! assert!(refusals.iter().all(|r| r.reason() == RejectReason::Throttled));
//! ```

pub(crate) mod config;
mod control;
mod formula;
mod reconfigure;

pub use config::{LocalRejections, ThrottlerConfig, ThrottlerConfigError};
pub use formula::Probability;
pub use reconfigure::ThrottlerReconfigureError;

use formula::Formula;

use crate::observe::Observer;
use crate::permit::{Detach, Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::settings::Settings;
use crate::time::Instant;
use crate::verdict::Verdict;
use crate::window::{MIN_BUCKET_NANOS, RunningWindow};

const REQUESTS: usize = 0;
const ACCEPTS: usize = 1;

/// The SRE client-side throttler over a window of `BUCKETS` time buckets (default 20).
///
/// `Sync` and lock-free: one instance per upstream, shared by every caller. See the
/// [module docs](self) for what is counted and the steady states. K and the cap change in
/// place, keeping the window: [`Throttler::reconfigure`].
#[derive(Debug)]
pub struct Throttler<const BUCKETS: usize = 20> {
    /// K and the cap (`Formula::words`), read together once per admit and replaced together
    /// by [`Throttler::reconfigure`].
    settings: Settings<3>,
    min_requests: u32,
    local_rejections: LocalRejections,
    window: RunningWindow<BUCKETS, 2>,
}

impl Throttler {
    crate::sync::const_fn_unless_loom! {
        /// A throttler over the default 20 buckets with an empty window, or the reason `config`
        /// is refused. Other bucket counts: [`Throttler::with_buckets`].
        ///
        /// ```
        /// use std::time::Duration;
        /// use resilix::pipeline::Pipeline;
        /// use resilix::throttler::{Throttler, ThrottlerConfig};
        ///
        /// // Inline, no annotation: the default instantiation.
        /// let config = ThrottlerConfig { window: Duration::from_secs(60), ..ThrottlerConfig::DEFAULT };
        /// let pipeline = Pipeline::new().throttler(Throttler::new(config)?);
        /// # let _ = pipeline;
        /// # Ok::<(), resilix::throttler::ThrottlerConfigError>(())
        /// ```
        pub fn new(config: ThrottlerConfig) -> Result<Self, ThrottlerConfigError> {
            Self::with_buckets(config)
        }
    }

    crate::sync::const_fn_unless_loom! {
        /// [`ThrottlerConfig::DEFAULT`] (Google SRE's) over 20 buckets: valid by construction,
        /// so no `Result` (`const`, for a `static`). Also [`Default::default`].
        ///
        /// ```
        /// use resilix::throttler::Throttler;
        ///
        /// static THROTTLER: Throttler = Throttler::with_defaults();
        /// assert_eq!(THROTTLER.counts(resilix::time::Instant::ZERO), (0, 0));
        /// ```
        pub fn with_defaults() -> Self {
            match Self::new(ThrottlerConfig::DEFAULT) {
                Ok(throttler) => throttler,
                Err(_) => panic!("the default config is valid (its doctest checks it)"),
            }
        }
    }
}

impl Default for Throttler {
    fn default() -> Self {
        Throttler::with_defaults()
    }
}

impl<const BUCKETS: usize> Throttler<BUCKETS> {
    crate::sync::const_fn_unless_loom! {
        /// A throttler over `BUCKETS` buckets with an empty window, or the reason `config` is
        /// refused.
        ///
        /// ```
        /// use resilix::throttler::{Throttler, ThrottlerConfig};
        /// let throttler = Throttler::<8>::with_buckets(ThrottlerConfig::DEFAULT)?;
        /// # let _ = throttler;
        /// # Ok::<(), resilix::throttler::ThrottlerConfigError>(())
        /// ```
        pub fn with_buckets(config: ThrottlerConfig) -> Result<Self, ThrottlerConfigError> {
            let formula = match Self::check(&config) {
                Ok(f) => f,
                Err(e) => return Err(e),
            };
            Ok(Throttler {
                settings: Settings::new(formula.words()),
                min_requests: formula.min_requests,
                local_rejections: config.local_rejections,
                window: RunningWindow::new(config.window),
            })
        }
    }

    /// Every rule a config must meet for `BUCKETS` buckets; its formula if it does.
    const fn check(config: &ThrottlerConfig) -> Result<Formula, ThrottlerConfigError> {
        if BUCKETS == 0 {
            return Err(ThrottlerConfigError::ZeroBuckets);
        }
        let formula = match config.formula() {
            Ok(f) => f,
            Err(e) => return Err(e),
        };
        if crate::time::duration_as_nanos_saturating(config.window)
            < (BUCKETS as u64).saturating_mul(MIN_BUCKET_NANOS)
        {
            return Err(ThrottlerConfigError::WindowShorterThanBuckets);
        }
        Ok(formula)
    }

    /// The probability with which a call admitted at `now` would be shed.
    pub fn rejection_probability(&self, now: Instant) -> Probability {
        // One settings read per decision: K and the cap of one configuration, never a mix.
        let formula = self.formula();
        let totals = self.window.totals(now);
        formula.probability(totals[REQUESTS], totals[ACCEPTS])
    }

    /// The formula in force.
    #[inline(always)]
    fn formula(&self) -> Formula {
        Formula::from_words(self.settings.read(), self.min_requests)
    }

    /// `(requests, accepts)` in the window ending at `now` (a snapshot, for metrics).
    pub fn counts(&self, now: Instant) -> (u32, u32) {
        let totals = self.window.totals(now);
        (totals[REQUESTS], totals[ACCEPTS])
    }
}

impl<const BUCKETS: usize> Policy for Throttler<BUCKETS> {
    type Permit<'a> = ThrottlerPermit<'a, BUCKETS>;

    #[inline]
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<ThrottlerPermit<'a, BUCKETS>, Rejection> {
        let p = self.rejection_probability(env.now);
        if !p.is_zero() && env.rng.chance(p.numerator(), p.denominator()) {
            if self.local_rejections == LocalRejections::CountAsRequests {
                // A request the application attempted, not one the upstream accepted.
                self.window.add(env.now, [1, 0]);
            }
            return Err(Rejection::new(RejectReason::Throttled));
        }
        Ok(ThrottlerPermit { throttler: self })
    }
}

impl<const BUCKETS: usize> Detach for Throttler<BUCKETS> {
    /// A throttler's permit holds nothing but the way back to its throttler.
    type Detached = ();

    #[inline(always)]
    fn detach(_permit: ThrottlerPermit<'_, BUCKETS>) {}

    #[inline(always)]
    fn attach(&self, _detached: ()) -> ThrottlerPermit<'_, BUCKETS> {
        ThrottlerPermit { throttler: self }
    }
}

/// An admitted call's claim on a [`Throttler`]: settling counts it, dropping does not.
///
/// Nothing is counted at admit, so a call refused by an inner policy (whose permit is simply
/// dropped) or cancelled is neither a request nor an accept.
#[must_use = "settle the permit with the call's verdict, or drop it to cancel"]
#[derive(Debug)]
pub struct ThrottlerPermit<'a, const BUCKETS: usize> {
    throttler: &'a Throttler<BUCKETS>,
}

impl<const BUCKETS: usize> Permit for ThrottlerPermit<'_, BUCKETS> {
    #[inline]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if verdict.is_counted() {
            let accept = u32::from(verdict.is_accept());
            self.throttler.window.add(env.now, [1, accept]);
        }
    }
}

mod keyed;
pub use keyed::{ForKey, KeyedPermit, KeyedThrottler};

impl<const BUCKETS: usize> Throttler<BUCKETS> {
    /// Empties the window without an event: for the keyed table, renewing an idle entry
    /// (nobody else can reach it) for a new key.
    pub(crate) fn forget(&self) {
        self.window.clear();
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
