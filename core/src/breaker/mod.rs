//! A circuit breaker: stop sending calls to an upstream that looks wholly down, then let a
//! bounded number of probes find out when it has recovered.
//!
//! ```text
//!            failure rate, slow-call rate or consecutive failures
//!   Closed ──────────────────────────────────────────────────────▶ Open
//!     ▲                                                           │ wait (growing, jittered)
//!     │ enough probes succeeded          too many probes failed   ▼
//!     └─────────────────────────── HalfOpen ─────────────────────▶ Open
//!
//!   any state ──operator──▶ ForcedOpen (refuses all) · Disabled (admits all, counts nothing)
//!   any state ──reset─────▶ Closed (window, streaks and probes forgotten)
//! ```
//!
//! **Accounting** follows the verdict (docs/design/contracts.md §6): `Overload`, `Transient` and `Timeout` are
//! failures; `Success` and `Answered` are successes; `Rejected` and dropped permits (cancelled
//! calls) count for nothing. A call is also *slow* when [`SlowCalls`] is configured and it
//! settled at least `slower_than` after admission.
//!
//! **Thresholds**: the circuit opens when, with at least `minimum_calls` in the window, the
//! failure rate (or the slow-call rate) is strictly above its threshold; or, optionally, after
//! a run of consecutive failures. The defaults are the essay's (docs/design/essay.md) "at least twenty requests in the
//! window and a failure rate above half" over Hystrix's 10-second window ([`Config`] lists
//! every default and its source). The window is time-based ([`TimeBuckets`], the default) or
//! the last N calls ([`CallRing`]).
//!
//! **Open** refuses with [`RejectReason::CircuitOpen`] and the instant of the next probe
//! ([`Rejection::retry_at`]). The wait can grow on consecutive re-opens ([`OpenBackoff`]) and
//! is shortened by a random share drawn from the caller's randomness, so a fleet that opened
//! together does not probe together.
//!
//! **Half-open** admits exactly `half_open_probes` probes under any concurrency; everyone else
//! is refused with `circuit-open` and no retry-at (the probes may answer in milliseconds). It
//! closes as soon as `probes_to_close` probes succeeded and re-opens as soon as that has become
//! impossible. A dropped probe, or one settled `Rejected`, frees its slot, so a cancelled call
//! never leaves the breaker stuck half-open; a probe that hangs holds its slot only until the
//! half-open period ends ([`Config::max_half_open_wait`]), and the next call then re-opens the
//! circuit as a failed probe would ([`TransitionCause::ProbesFailed`]).
//!
//! **Epochs**: a permit carries the epoch of the state that issued it; an outcome that arrives
//! after a transition is late and ignored, so a call admitted before the circuit opened cannot
//! count against the half-open probes (Polly #217, resilience4j #1432).
//!
//! **Concurrency**: `&self`, `Sync`, lock-free, and only 32-bit atomics. Every transition
//! happens once (one [`Event::CircuitTransition`] each) and the probe count is exact; the
//! window's counts and the failure streak are approximate only where two outcomes settle
//! together (see [`TimeBuckets`] and [`CallRing`]).
//!
//! **Time**: no idle gap of any length, a second or ten years, changes a decision. Time going
//! backwards makes the breaker probe early, never wait longer; nothing panics. A permit leaked
//! with `mem::forget` holds its probe slot until [`Breaker::reset`].
//!
//! Design notes (who writes an end, epochs, eras): docs/design/breaker.md
//!
//! # Example: open, wait, probe, close, on a manual clock
//!
//! ```
//! use core::time::Duration;
//! use resilix::breaker::{Breaker, CircuitState, Config};
//! use resilix::permit::{Env, Permit, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::{RejectReason, Verdict};
//!
//! let config = Config { minimum_calls: 4, open_jitter_percent: 0, ..Config::DEFAULT };
//! let breaker = Breaker::new(config).unwrap();
//! let mut rng = SeededRandom::new(7);
//! let mut env = Env::new(Instant::from_secs(1), &mut rng);
//!
//! for _ in 0..4 {
//!     let permit = breaker.admit(&mut env).unwrap();
//!     permit.settle(&Verdict::Transient, &mut env);
//! }
//! assert_eq!(breaker.state(), CircuitState::Open);
//! let refused = breaker.admit(&mut env).unwrap_err();
//! assert_eq!(refused.reason(), RejectReason::CircuitOpen);
//! assert_eq!(refused.retry_at(), Some(Instant::from_secs(6))); // the 5 s default wait
//!
//! env.now = Instant::from_secs(6);
//! let probe = breaker.admit(&mut env).unwrap();
//! assert!(probe.is_probe());
//! assert_eq!(breaker.state(), CircuitState::HalfOpen);
//! assert!(breaker.admit(&mut env).is_err(), "one probe at a time");
//! probe.settle(&Verdict::Success, &mut env);
//! assert_eq!(breaker.state(), CircuitState::Closed);
//! ```
//!
//! # Example: one breaker in a `static`
//!
//! ```
//! use resilix::breaker::Breaker;
//! use resilix::permit::{Env, Permit, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! static UPSTREAM: Breaker = Breaker::with_defaults();
//!
//! let mut rng = SeededRandom::new(1);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let permit = UPSTREAM.admit(&mut env).unwrap();
//! permit.settle(&Verdict::Success, &mut env);
//! ```

mod config;
mod decide;
mod keyed;
mod live;
mod reconfigure;
mod window;
mod word;

#[cfg(all(test, not(loom)))]
mod tests;

use core::fmt;
use core::time::Duration;

pub use self::config::{Config, ConfigError, OpenBackoff, SlowCalls};
pub use self::keyed::{ForKey, KeyedBreaker, KeyedPermit, Unplaced};
pub use self::reconfigure::BreakerReconfigureError;
pub use self::window::{CallRing, OutcomeWindow, TimeBuckets};
pub use crate::observe::{CircuitState, TransitionCause};

use self::decide::{Admission, Clock, Transition};
use self::live::{Live, SlowRule, WORDS};
use self::word::Word;
use crate::observe::{Event, Observer};
use crate::permit::{Detach, Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::{RejectReason, Rejection};
use crate::settings::Settings;
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::era::{Era, EraSeen, widen};
use crate::time::ticks::TickScale;
use crate::verdict::Verdict;

/// The default time window: 10 seconds (Hystrix's rolling statistics window), in 10 buckets.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(10);

/// A circuit breaker counting outcomes in the window `W`.
///
/// `W` is [`TimeBuckets<B>`] (the last stretch of time in `B` buckets; the default is ten) or
/// [`CallRing<WORDS>`] (the last N calls, 16 per word). Construct with [`Breaker::new`],
/// [`Breaker::time_based`] or [`Breaker::count_based`]; all are `const fn`, so a breaker can
/// live in a `static`.
///
/// ```
/// use resilix::breaker::{Breaker, CallRing, Config};
///
/// // resilience4j's shape: the last 100 calls, at least 100 of them.
/// let config = Config { minimum_calls: 100, ..Config::DEFAULT };
/// let breaker: Breaker<CallRing<7>> = Breaker::count_based(config, 100).unwrap();
/// assert!(Breaker::<CallRing<6>>::count_based(config, 100).is_err(), "6 words hold 96 calls");
/// # let _ = breaker;
/// ```
pub struct Breaker<W = TimeBuckets<10>> {
    /// The configuration in force (thresholds, waits, probe counts, and the two timers'
    /// lengths in ticks), read once per decision; replaced whole by
    /// [`reconfigure`](Self::reconfigure).
    settings: Settings<WORDS>,
    /// The open wait's scale: the finest on which the longest open wait built with is under
    /// 2^31 ticks. Fixed: the stored ends are counted in it.
    scale: TickScale,
    /// The maximum half-open wait's scale (the open wait's when there is none). Fixed.
    half_scale: TickScale,
    state: AtomicU32,
    /// Where the current open wait ends; meaningful only while open.
    open_until: TimeWord,
    /// Where the current half-open period ends; meaningful only while half-open with a
    /// maximum half-open wait.
    probe_until: TimeWord,
    /// Consecutive re-opens since the circuit last closed: how far the wait has grown.
    reopens: AtomicU32,
    consecutive_failures: AtomicU32,
    window: W,
}

// By hand: the settings block's raw words say nothing, so `Debug` shows the configuration
// in force, decoded (what `resilix-testkit`'s `Description` reads).
impl<W: fmt::Debug> fmt::Debug for Breaker<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut live = Live([0; WORDS]);
        self.settings.read_into(&mut live.0);
        f.debug_struct("Breaker")
            .field("config", &live.config())
            .field("scale", &self.scale)
            .field("half_scale", &self.half_scale)
            .field("state", &self.state)
            .field("open_until", &self.open_until)
            .field("probe_until", &self.probe_until)
            .field("reopens", &self.reopens)
            .field("consecutive_failures", &self.consecutive_failures)
            .field("window", &self.window)
            .finish()
    }
}

/// The scales of a valid configuration's two timers.
#[derive(Clone, Copy)]
struct Timers {
    scale: TickScale,
    half_scale: TickScale,
}

impl Timers {
    crate::sync::const_fn_unless_loom! {
        /// The settings block of `config` (checked) on these scales.
        fn settings(self, config: &Config) -> Settings<WORDS> {
            Settings::new(Live::encode(config, self.scale, self.half_scale).0)
        }
    }
}

const fn checked(config: &Config) -> Result<Timers, ConfigError> {
    if let Err(e) = config.validate() {
        return Err(e);
    }
    let scale = TickScale::covering(config.longest_open_wait());
    let half_scale = match config.max_half_open_wait {
        Some(w) => TickScale::covering(w),
        None => scale,
    };
    Ok(Timers { scale, half_scale })
}

/// A stored end of a timer: the low 32 bits of its full tick count, beside their [`Era`]
/// (see `time::era`). Written only by compare-and-swap from a value read *before* the writer
/// re-checked the state word (see [`Breaker::publish`]).
#[derive(Debug)]
struct TimeWord {
    low: AtomicU32,
    era: Era,
}

impl TimeWord {
    crate::sync::const_fn_unless_loom! {
        fn new() -> TimeWord {
            TimeWord { low: AtomicU32::new(0), era: Era::new() }
        }
    }

    /// The stored end: its low bits and era as read (for a writer's compare-and-swap) and
    /// the full count, widened as pointing up to 2^31 ticks past its writer's own `now`: the
    /// most any run on the timer's scale can last (under 2^31 whole ticks, rounded up),
    /// whatever configuration wrote it. Whether an end that far ahead is believed is the
    /// reader's `clock` check, against the longest run of any configuration so far.
    #[inline]
    fn read(&self) -> (u32, EraSeen, u64) {
        let low = self.low.load(Ordering::Acquire);
        let seen = self.era.read();
        (low, seen, widen(low, 32, seen, 1 << 31))
    }
}

impl Breaker<TimeBuckets<10>> {
    crate::sync::const_fn_unless_loom! {
        /// A breaker over the default window ([`DEFAULT_WINDOW`] in ten buckets), or the reason
        /// `config` is invalid.
        ///
        /// ```
        /// use resilix::breaker::{Breaker, CircuitState, Config};
        ///
        /// let breaker = Breaker::new(Config::DEFAULT).unwrap();
        /// assert_eq!(breaker.state(), CircuitState::Closed);
        /// ```
        pub fn new(config: Config) -> Result<Self, ConfigError> {
            Self::time_based(config, DEFAULT_WINDOW)
        }
    }

    crate::sync::const_fn_unless_loom! {
        /// A breaker with [`Config::DEFAULT`] over the default window: valid by construction,
        /// so no `Result` (`const`, for a `static`). Also [`Default::default`].
        ///
        /// ```
        /// use resilix::breaker::{Breaker, CircuitState};
        ///
        /// static UPSTREAM: Breaker = Breaker::with_defaults();
        /// assert_eq!(UPSTREAM.state(), CircuitState::Closed);
        /// ```
        pub fn with_defaults() -> Self {
            match Self::new(Config::DEFAULT) {
                Ok(breaker) => breaker,
                Err(_) => panic!("the default config is valid (its doctest checks it)"),
            }
        }
    }
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker::with_defaults()
    }
}

impl<const B: usize> Breaker<TimeBuckets<B>> {
    crate::sync::const_fn_unless_loom! {
        /// A breaker counting the last `length` of time in `B` buckets (the oldest bucket slides
        /// out whole, so the window covers between `length × (B-1)/B` and `length`).
        ///
        /// ```
        /// use core::time::Duration;
        /// use resilix::breaker::{Breaker, Config, TimeBuckets};
        ///
        /// // Polly's shape: 30 s sampled in 10 windows, at least 100 calls, above 10 %.
        /// let config = Config { failure_rate_above_percent: Some(10), minimum_calls: 100, ..Config::DEFAULT };
        /// let breaker: Breaker<TimeBuckets<10>> =
        ///     Breaker::time_based(config, Duration::from_secs(30)).unwrap();
        /// # let _ = breaker;
        /// ```
        pub fn time_based(config: Config, length: Duration) -> Result<Self, ConfigError> {
            let t = match checked(&config) {
                Ok(t) => t,
                Err(e) => return Err(e),
            };
            if B == 0 || length.is_zero() {
                return Err(ConfigError::WindowEmpty);
            }
            if crate::time::duration_as_nanos_saturating(length)
                < (B as u64).saturating_mul(crate::window::MIN_BUCKET_NANOS)
            {
                return Err(ConfigError::WindowShorterThanBuckets);
            }
            Ok(Breaker {
                settings: t.settings(&config),
                scale: t.scale,
                half_scale: t.half_scale,
                state: AtomicU32::new(Word::INITIAL.pack()),
                open_until: TimeWord::new(),
                probe_until: TimeWord::new(),
                reopens: AtomicU32::new(0),
                consecutive_failures: AtomicU32::new(0),
                window: TimeBuckets::new(length),
            })
        }
    }
}

impl<const WORDS: usize> Breaker<CallRing<WORDS>> {
    crate::sync::const_fn_unless_loom! {
        /// A breaker counting the last `calls` calls, `1..=16 × WORDS`. With a failure or
        /// slow-call rate configured, `calls` must be at least `minimum_calls`.
        pub fn count_based(config: Config, calls: u32) -> Result<Self, ConfigError> {
            let t = match checked(&config) {
                Ok(t) => t,
                Err(e) => return Err(e),
            };
            if calls == 0 {
                return Err(ConfigError::WindowEmpty);
            }
            let capacity = CallRing::<WORDS>::CAPACITY;
            if calls > capacity {
                return Err(ConfigError::WindowAboveCapacity { calls, capacity });
            }
            let rates = config.failure_rate_above_percent.is_some() || config.slow_calls.is_some();
            if rates && calls < config.minimum_calls {
                return Err(ConfigError::WindowBelowMinimumCalls {
                    calls,
                    minimum_calls: config.minimum_calls,
                });
            }
            Ok(Breaker {
                settings: t.settings(&config),
                scale: t.scale,
                half_scale: t.half_scale,
                state: AtomicU32::new(Word::INITIAL.pack()),
                open_until: TimeWord::new(),
                probe_until: TimeWord::new(),
                reopens: AtomicU32::new(0),
                consecutive_failures: AtomicU32::new(0),
                window: CallRing::new(calls),
            })
        }
    }
}

impl<W: OutcomeWindow> Breaker<W> {
    /// The state now (a snapshot: another thread may change it at once).
    pub fn state(&self) -> CircuitState {
        self.word().state
    }

    /// Half-open probes admitted and not yet settled or dropped (zero outside half-open).
    pub fn probes_in_flight(&self) -> u32 {
        self.word().in_flight as u32
    }

    /// The configuration in force: the one built with, or the last one
    /// [`reconfigure`](Self::reconfigure) put in force (durations as the breaker keeps them,
    /// in whole nanoseconds up to `u64::MAX`, 584 years).
    pub fn config(&self) -> Config {
        self.live().config()
    }

    /// The settings block (a snapshot, for what is not a decision).
    fn live(&self) -> Live {
        let mut live = Live([0; WORDS]);
        self.load(&mut live);
        live
    }

    /// Reads the settings block into `live`, once per decision: in place, since a block of
    /// this size returned by value is copied (a `memcpy` call on a small target).
    #[inline(always)]
    fn load(&self, live: &mut Live) {
        self.settings.read_into(&mut live.0);
    }

    /// Holds the circuit open (isolation) until [`reset`](Self::reset) or
    /// [`disable`](Self::disable): every call is refused with `circuit-open` and no retry-at.
    /// Permits already issued settle as late outcomes (ignored). Emits one transition event
    /// with cause [`TransitionCause::Operator`], unless it was already forced open.
    ///
    /// ```
    /// use resilix::breaker::{Breaker, CircuitState, Config};
    /// use resilix::permit::{Env, Policy};
    /// use resilix::random::SeededRandom;
    /// use resilix::time::Instant;
    ///
    /// let breaker = Breaker::new(Config::DEFAULT).unwrap();
    /// let mut rng = SeededRandom::new(3);
    /// let mut env = Env::new(Instant::ZERO, &mut rng);
    /// breaker.force_open(&mut env);
    /// assert!(breaker.admit(&mut env).is_err());
    /// breaker.reset(&mut env);
    /// assert_eq!(breaker.state(), CircuitState::Closed);
    /// ```
    pub fn force_open<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.operate(CircuitState::ForcedOpen, false, env);
    }

    /// Bypasses the breaker: every call is admitted and nothing is counted, until
    /// [`reset`](Self::reset) or [`force_open`](Self::force_open). Emits one transition event
    /// unless it was already disabled.
    pub fn disable<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.operate(CircuitState::Disabled, false, env);
    }

    /// Closes the circuit afresh from any state: the window, the failure streak, the open-wait
    /// growth and any half-open probes are forgotten (permits already issued become late).
    /// Always emits one transition event, closed to closed included.
    pub fn reset<R: Random + ?Sized, O: Observer + ?Sized>(&self, env: &mut Env<'_, R, O>) {
        self.operate(CircuitState::Closed, true, env);
    }

    fn word(&self) -> Word {
        Word::unpack(self.state.load(Ordering::Acquire))
    }

    fn emit<R: Random + ?Sized, O: Observer + ?Sized>(&self, t: Transition, env: &Env<'_, R, O>) {
        env.observer.on_event(&Event::CircuitTransition {
            from: t.from,
            to: t.to,
            cause: t.cause,
            at: env.now,
        });
    }

    #[inline(never)]
    fn operate<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        to: CircuitState,
        even_if_there: bool,
        env: &mut Env<'_, R, O>,
    ) {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let word = Word::unpack(current);
            if word.state == to && !even_if_there {
                return;
            }
            match self.state.compare_exchange(
                current,
                word.next(to).pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if to == CircuitState::Closed {
                        self.forget_history();
                        self.reopens.store(0, Ordering::Relaxed);
                    }
                    self.emit(
                        Transition {
                            from: word.state,
                            to,
                            cause: TransitionCause::Operator,
                        },
                        env,
                    );
                    return;
                }
                Err(actual) => current = actual,
            }
        }
    }

    fn forget_history(&self) {
        self.window.clear();
        self.consecutive_failures.store(0, Ordering::Relaxed);
    }

    fn is_slow(rule: SlowRule, admitted_at: Instant, now: Instant) -> bool {
        // Time that went backwards reads as no time at all: never slow.
        rule.is_slow(now.as_nanos().saturating_sub(admitted_at.as_nanos()))
    }

    /// Publishes `end` (a full tick count; the writer's own count for now is `now`) in `word`
    /// while the state word still reads `from`; fails with the state word when it no longer
    /// reads `from`.
    // Why: docs/design/breaker.md#who-writes-an-end
    fn publish(&self, word: &TimeWord, from: u32, now: u64, end: u64) -> Result<(), u32> {
        loop {
            let (low, seen, _) = word.read();
            let state = self.state.load(Ordering::Acquire);
            if state != from {
                return Err(state);
            }
            // Era first: every reader that sees the new end widens it with an era covering
            // this writer's `now`.
            word.era.cover(seen, now, 32);
            if word
                .low
                .compare_exchange(low, end as u32, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Ok(());
            }
        }
    }

    /// Publishes the end of an open wait starting at `env.now`, then moves the state from
    /// `from` to `next` (open). The end is written first so that no reader ever sees the new
    /// open state with a stale end. Answers the end (a full tick count), or the state word that
    /// was found instead of `from`.
    fn open<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        live: &Live,
        from: u32,
        next: Word,
        reopens: u32,
        env: &mut Env<'_, R, O>,
    ) -> Result<u64, u32> {
        let wait = decide::open_wait_nanos(live, reopens, &mut *env.rng);
        // At most this configuration's longest wait: clamped to the bound only so that a wait
        // can never outrun what a reader believes.
        let ticks = self
            .scale
            .ticks_in(Duration::from_nanos(wait))
            .clamp(1, live.open_bound().max(1));
        let now = self.scale.wide(env.now);
        // Saturated at the end of the timeline: the wait ends there rather than past a time
        // that can never come.
        let end = (now + ticks as u64).min(self.scale.wide(Instant::MAX));
        self.publish(&self.open_until, from, now, end)?;
        self.state
            .compare_exchange(from, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            .map(|_| end)
    }

    #[inline]
    fn settle_counted<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        epoch: u32,
        admitted_at: Instant,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        let current = self.state.load(Ordering::Acquire);
        // Closed words are never written with codes 5..=7, so the unpacked check
        // (`state == Closed && epoch == epoch`) and this one agree on every stored word.
        if Word::closed_epoch(current) != Some(epoch) || !verdict.is_counted() {
            return;
        }
        let failed = verdict.is_failure();
        // A success needs only the slow-call rule: three words of one write, not the block.
        if !failed
            && !Self::is_slow(
                self.settings.read_with(SlowRule::load),
                admitted_at,
                env.now,
            )
        {
            self.window.record(env.now, false, false);
            self.end_streak();
            return;
        }
        self.settle_not_fast(current, failed, admitted_at, env);
    }

    /// A failure or a slow success: reads the whole block once and judges slowness again
    /// under it, so the outcome's class and the decision it leads to come from one
    /// configuration. Out of line: the fast path is a quick success.
    #[inline(never)]
    fn settle_not_fast<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        current: u32,
        failed: bool,
        admitted_at: Instant,
        env: &mut Env<'_, R, O>,
    ) {
        let mut live = Live([0; WORDS]);
        self.load(&mut live);
        let slow = Self::is_slow(live.slow_rule(), admitted_at, env.now);
        self.window.record(env.now, failed, slow);
        if failed || slow {
            self.counted_badly(&live, current, failed, env);
        } else {
            self.end_streak();
        }
    }

    /// A success ends the failure streak (a store only when there is one to end).
    #[inline(always)]
    fn end_streak(&self) {
        if self.consecutive_failures.load(Ordering::Relaxed) != 0 {
            self.consecutive_failures.store(0, Ordering::Relaxed);
        }
    }

    /// A failed or slow outcome, already in the window: extends or ends the failure streak,
    /// then decides whether to open. Out of line: a success only lowers the rates.
    #[inline(never)]
    fn counted_badly<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        live: &Live,
        current: u32,
        failed: bool,
        env: &mut Env<'_, R, O>,
    ) {
        let streak = if failed {
            self.consecutive_failures
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                    Some(n.saturating_add(1))
                })
                .unwrap_or_else(|n| n)
                .saturating_add(1)
        } else {
            if self.consecutive_failures.load(Ordering::Relaxed) != 0 {
                self.consecutive_failures.store(0, Ordering::Relaxed);
            }
            0
        };
        let totals = self.window.totals(env.now);
        if let Some(cause) = decide::trip_cause(totals, streak, live)
            && self
                .open(
                    live,
                    current,
                    Word::unpack(current).next(CircuitState::Open),
                    0,
                    env,
                )
                .is_ok()
        {
            self.emit(
                Transition {
                    from: CircuitState::Closed,
                    to: CircuitState::Open,
                    cause,
                },
                env,
            );
        }
    }

    #[inline(never)]
    fn settle_probe<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        live: &Live,
        epoch: u32,
        succeeded: bool,
        env: &mut Env<'_, R, O>,
    ) {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let word = Word::unpack(current);
            let Some((next, transition)) = decide::probe_settled(
                word,
                epoch,
                succeeded,
                live.half_open_probes(),
                live.probes_to_close(),
            ) else {
                return;
            };
            let reopens = self.reopens.load(Ordering::Relaxed);
            let swapped = match transition {
                Some(t) if t.to == CircuitState::Open => self
                    .open(live, current, next, reopens.saturating_add(1), env)
                    .map(|_| ()),
                other => {
                    if other.is_some() {
                        // Nothing records while half-open, so clearing before the swap loses no
                        // call of the new closed epoch.
                        self.forget_history();
                    }
                    self.state
                        .compare_exchange(current, next.pack(), Ordering::AcqRel, Ordering::Acquire)
                        .map(|_| ())
                }
            };
            match swapped {
                Ok(()) => {
                    if let Some(t) = transition {
                        let grown = if t.to == CircuitState::Open {
                            reopens.saturating_add(1)
                        } else {
                            0
                        };
                        self.reopens.store(grown, Ordering::Relaxed);
                        self.emit(t, env);
                    }
                    return;
                }
                Err(actual) => current = actual,
            }
        }
    }

    #[inline(never)]
    fn drop_probe(&self, epoch: u32) {
        let mut current = self.state.load(Ordering::Acquire);
        while let Some(next) = decide::probe_dropped(Word::unpack(current), epoch) {
            match self.state.compare_exchange(
                current,
                next.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }
}

impl<W: OutcomeWindow> Policy for Breaker<W> {
    type Permit<'a>
        = BreakerPermit<'a, W>
    where
        Self: 'a;

    #[inline]
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<BreakerPermit<'a, W>, Rejection> {
        let current = self.state.load(Ordering::Acquire);
        // Closed, the common case, needs nothing but the state word: not the time, not the
        // open wait. Everything else goes through the full decision, out of line.
        if let Some(epoch) = Word::closed_epoch(current) {
            return Ok(BreakerPermit {
                breaker: Some(self),
                epoch,
                role: Role::Counted,
                admitted_at: env.now,
            });
        }
        self.admit_other(current, env)
    }
}

impl<W: OutcomeWindow> Breaker<W> {
    /// `admit` in any state but closed, or on a word it read as closed only after unpacking.
    #[inline(never)]
    fn admit_other<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        mut current: u32,
        env: &mut Env<'_, R, O>,
    ) -> Result<BreakerPermit<'_, W>, Rejection> {
        let mut live = Live([0; WORDS]);
        self.load(&mut live);
        let half_wait = live.half_ticks();
        loop {
            let word = Word::unpack(current);
            // The timer of the state read, loaded after the state word (Acquire), so it is at
            // least as new as the transition that produced that state.
            let (clock, scale) = match word.state {
                CircuitState::Open => {
                    let (_, _, end) = self.open_until.read();
                    let now = self.scale.wide(env.now);
                    (
                        decide::clock(now, end, live.open_bound() as u64),
                        self.scale,
                    )
                }
                CircuitState::HalfOpen if half_wait != 0 => {
                    let (_, _, end) = self.probe_until.read();
                    let now = self.half_scale.wide(env.now);
                    (
                        decide::clock(now, end, live.half_bound() as u64),
                        self.half_scale,
                    )
                }
                _ => (Clock::Never, self.scale),
            };
            let permit = |role, epoch| BreakerPermit {
                breaker: Some(self),
                epoch,
                role,
                admitted_at: env.now,
            };
            // Counts a reconfiguration left past a line decide before anything else.
            let decided = match word.state {
                CircuitState::HalfOpen => {
                    decide::decided(word, live.half_open_probes(), live.probes_to_close())
                }
                _ => None,
            };
            let admission = match decided {
                Some(t) if t.to == CircuitState::Closed => {
                    self.forget_history();
                    if let Err(actual) = self.state.compare_exchange(
                        current,
                        word.next(CircuitState::Closed).pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        current = actual;
                        continue;
                    }
                    self.reopens.store(0, Ordering::Relaxed);
                    self.emit(t, env);
                    current = self.state.load(Ordering::Acquire);
                    continue;
                }
                Some(transition) => Admission::Expire {
                    next: word.next(CircuitState::Open),
                    transition,
                },
                None => decide::admission(word, clock, live.half_open_probes()),
            };
            match admission {
                Admission::Counted => return Ok(permit(Role::Counted, word.epoch)),
                Admission::Bypass => return Ok(permit(Role::Bypass, word.epoch)),
                Admission::Refuse { until: Some(end) } => {
                    let at = scale.instant_at(end);
                    return Err(Rejection::until(RejectReason::CircuitOpen, at));
                }
                Admission::Refuse { until: None } => {
                    return Err(Rejection::new(RejectReason::CircuitOpen));
                }
                Admission::Expire { next, transition } => {
                    let reopens = self.reopens.load(Ordering::Relaxed);
                    match self.open(&live, current, next, reopens.saturating_add(1), env) {
                        Ok(end) => {
                            self.reopens
                                .store(reopens.saturating_add(1), Ordering::Relaxed);
                            self.emit(transition, env);
                            let at = self.scale.instant_at(end);
                            return Err(Rejection::until(RejectReason::CircuitOpen, at));
                        }
                        Err(actual) => current = actual,
                    }
                }
                Admission::Probe { next, transition } => {
                    // Entering half-open: publish when it ends before the swap that enters.
                    if transition.is_some() && half_wait != 0 {
                        let now = self.half_scale.wide(env.now);
                        let end = (now + half_wait as u64).min(self.half_scale.wide(Instant::MAX));
                        if let Err(actual) = self.publish(&self.probe_until, current, now, end) {
                            current = actual;
                            continue;
                        }
                    }
                    match self.state.compare_exchange(
                        current,
                        next.pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            let p = permit(Role::Probe, next.epoch);
                            if let Some(t) = transition {
                                self.emit(t, env);
                            }
                            return Ok(p);
                        }
                        Err(actual) => current = actual,
                    }
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Closed: the outcome goes into the window.
    Counted,
    /// Half-open: the outcome decides the circuit; a drop frees the slot.
    Probe,
    /// Disabled: nothing is recorded.
    Bypass,
}

/// A call admitted by a [`Breaker`]. Settle it with the call's verdict; drop it to cancel (a
/// probe's slot is freed; nothing is recorded).
///
/// It carries the epoch of the state that issued it: if the breaker has changed state since,
/// its outcome is late and ignored.
#[must_use = "settle the permit with the call's verdict; dropping it records a cancellation"]
#[derive(Debug)]
pub struct BreakerPermit<'a, W: OutcomeWindow> {
    breaker: Option<&'a Breaker<W>>,
    epoch: u32,
    role: Role,
    admitted_at: Instant,
}

impl<W: OutcomeWindow> BreakerPermit<'_, W> {
    /// Whether this call is a half-open probe: its outcome decides whether the circuit closes.
    pub fn is_probe(&self) -> bool {
        self.role == Role::Probe
    }

    /// When the call was admitted.
    pub const fn admitted_at(&self) -> Instant {
        self.admitted_at
    }
}

impl<W: OutcomeWindow> Permit for BreakerPermit<'_, W> {
    #[inline]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        // Settling replaces the drop (which would only free a probe's slot): not running it
        // spares the hot path the store and the re-check of `breaker` that `take` costs.
        let this = core::mem::ManuallyDrop::new(self);
        let Some(breaker) = this.breaker else {
            return;
        };
        match this.role {
            Role::Bypass => {}
            Role::Counted => breaker.settle_counted(this.epoch, this.admitted_at, verdict, env),
            // `Rejected` counts for nothing: the probe never reached the upstream.
            Role::Probe if !verdict.is_counted() => breaker.drop_probe(this.epoch),
            Role::Probe => {
                let mut live = Live([0; WORDS]);
                breaker.load(&mut live);
                let succeeded = verdict.is_accept()
                    && !Breaker::<W>::is_slow(live.slow_rule(), this.admitted_at, env.now);
                breaker.settle_probe(&live, this.epoch, succeeded, env);
            }
        }
    }
}

/// A [`BreakerPermit`]'s data, apart from its breaker ([`Detach`]).
#[must_use = "attach it to its breaker again: dropping it would leave a probe's slot taken"]
#[derive(Debug)]
pub struct DetachedBreakerPermit {
    /// Whether the permit came from the breaker (`false`: the breaker was disabled).
    from_breaker: bool,
    epoch: u32,
    role: Role,
    admitted_at: Instant,
}

impl<W: OutcomeWindow> Detach for Breaker<W> {
    type Detached = DetachedBreakerPermit;

    #[inline]
    fn detach(permit: BreakerPermit<'_, W>) -> DetachedBreakerPermit {
        // Its drop would free a probe's slot: the detached data still holds it.
        let permit = core::mem::ManuallyDrop::new(permit);
        DetachedBreakerPermit {
            from_breaker: permit.breaker.is_some(),
            epoch: permit.epoch,
            role: permit.role,
            admitted_at: permit.admitted_at,
        }
    }

    #[inline]
    fn attach(&self, detached: DetachedBreakerPermit) -> BreakerPermit<'_, W> {
        BreakerPermit {
            breaker: detached.from_breaker.then_some(self),
            epoch: detached.epoch,
            role: detached.role,
            admitted_at: detached.admitted_at,
        }
    }
}

impl<W: OutcomeWindow> Drop for BreakerPermit<'_, W> {
    fn drop(&mut self) {
        if let Some(breaker) = self.breaker.take()
            && self.role == Role::Probe
        {
            breaker.drop_probe(self.epoch);
        }
    }
}
