//! Every event as a `tracing` event, and a span per call (feature `tracing`).
//!
//! Refusals and fallbacks are `warn` (someone was turned away or got a degraded answer),
//! breaker transitions `info`, retries and executions `debug`. Waits are durations from now
//! (`retry_in = 1.5s`), never instants on the process's timeline.
//!
//! **Refusals are summarised**, so an incident does not flood the logs when they are read: the
//! first refusal of a burst (per reason) is logged at once in full; the rest are counted, and
//! one line per interval states the count (`refused 9,999 more calls: circuit-open`), at the
//! first refusal after the interval or on [`TracingObserver::flush`]. Fallbacks are summarised
//! the same way. The level and the interval are [`RefusalLog`]'s (default `warn`, 10 s).
//!
//! ```
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix_tokio::Resilience;
//! use resilix_tokio::tracing::{call_span, TracingObserver};
//! use tracing::Instrument;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let pipeline = Pipeline::new();
//! let resilience = Resilience::new(&pipeline).observer(TracingObserver::new("inventory"));
//! let out = resilience
//!     .execute(CallOptions::default(), || async { Ok::<_, ()>(1) })
//!     .instrument(call_span("inventory"))
//!     .await;
//! assert!(out.is_ok());
//! # });
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use resilix::RejectReason;
use resilix::observe::{Event, Observer};
use resilix::time::Instant;
use tracing::Level;

use crate::gauges::{Gauge, Gauged};

/// How bursts of refusals and fallbacks are logged: the first at once, then one line per
/// `interval` with the count, at `level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusalLog {
    /// The level of every refusal and fallback line.
    pub level: Level,
    /// How often a burst's count is written (at most): also the quiet time after which the
    /// next refusal starts a new burst and is logged in full.
    pub interval: Duration,
}

impl RefusalLog {
    /// `warn`, one line per 10 s per reason (ours: short enough that a dashboard-less
    /// incident shows the rate within seconds, long enough that 1,000 refusals a second make
    /// one line, not a page).
    pub const DEFAULT: RefusalLog = RefusalLog {
        level: Level::WARN,
        interval: Duration::from_secs(10),
    };
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog::DEFAULT
    }
}

/// One kind of line being summarised: when its current burst's line was written (nanoseconds
/// on the process's timeline, plus one; 0 when none was), and how many since were not.
#[derive(Debug, Default)]
struct Burst {
    logged_at: AtomicU64,
    unlogged: AtomicU64,
}

/// What a refusal or fallback event should write, if anything.
enum Line {
    /// The first of a burst, in full.
    First,
    /// A burst's count: `count` events, over `over`.
    Count { count: u64, over: Duration },
    /// Nothing: counted for the next line.
    Counted,
}

impl Burst {
    fn on_event(&self, now: Instant, interval: Duration) -> Line {
        let t = now.as_nanos().saturating_add(1);
        let logged = self.logged_at.load(Ordering::Acquire);
        let fresh = logged == 0;
        if !fresh && t.saturating_sub(logged) < interval.as_nanos() as u64 {
            self.unlogged.fetch_add(1, Ordering::Relaxed);
            return Line::Counted;
        }
        if self
            .logged_at
            .compare_exchange(logged, t, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another thread writes this interval's line.
            self.unlogged.fetch_add(1, Ordering::Relaxed);
            return Line::Counted;
        }
        match self.unlogged.swap(0, Ordering::AcqRel) {
            0 => Line::First,
            n => Line::Count {
                count: n + 1,
                over: Duration::from_nanos(t - logged),
            },
        }
    }

    /// The count not yet written, taken (for [`TracingObserver::flush`]).
    fn take(&self, now: Instant) -> Option<(u64, Duration)> {
        let n = self.unlogged.swap(0, Ordering::AcqRel);
        let logged = self.logged_at.swap(0, Ordering::AcqRel);
        let over = Duration::from_nanos(now.as_nanos().saturating_add(1).saturating_sub(logged));
        (n > 0).then_some((n, over))
    }
}

/// The bursts an observer tracks: one per refusal reason, one for fallbacks, one per reason
/// of a policy in shadow mode.
const FALLBACKS: usize = 6;
const SHADOW: usize = 7;

fn slot(reason: RejectReason) -> usize {
    match reason {
        RejectReason::CircuitOpen => 0,
        RejectReason::LimiterFull => 1,
        RejectReason::Throttled => 2,
        RejectReason::BulkheadFull => 3,
        RejectReason::RateLimited => 4,
        RejectReason::BudgetExceeded => 5,
    }
}

const REASONS: [RejectReason; 6] = [
    RejectReason::CircuitOpen,
    RejectReason::LimiterFull,
    RejectReason::Throttled,
    RejectReason::BulkheadFull,
    RejectReason::RateLimited,
    RejectReason::BudgetExceeded,
];

/// A `tracing` event at a level chosen when the program runs.
macro_rules! event_at {
    ($level:expr, $($rest:tt)+) => {
        match $level {
            Level::ERROR => tracing::error!($($rest)+),
            Level::WARN => tracing::warn!($($rest)+),
            Level::INFO => tracing::info!($($rest)+),
            Level::DEBUG => tracing::debug!($($rest)+),
            _ => tracing::trace!($($rest)+),
        }
    };
}

/// Reports each event to `tracing`, tagged with the upstream's name, summarising bursts of
/// refusals and fallbacks (see the [module docs](self)).
#[derive(Debug)]
pub struct TracingObserver {
    upstream: &'static str,
    refusals: RefusalLog,
    bursts: [Burst; 13],
}

impl TracingObserver {
    /// Events are tagged `upstream = name`; refusals summarised by [`RefusalLog::DEFAULT`].
    pub fn new(upstream: &'static str) -> Self {
        TracingObserver::with_refusal_log(upstream, RefusalLog::DEFAULT)
    }

    /// Events are tagged `upstream = name`; refusals and fallbacks logged at `log`'s level and
    /// summarised over its interval.
    pub fn with_refusal_log(upstream: &'static str, log: RefusalLog) -> Self {
        TracingObserver {
            upstream,
            refusals: log,
            bursts: Default::default(),
        }
    }

    /// Writes the count of every burst whose refusals or fallbacks were counted but not yet
    /// written (at shutdown, or from a periodic task), and starts afresh.
    ///
    /// ```
    /// use resilix_tokio::tracing::TracingObserver;
    /// let observer = TracingObserver::new("inventory");
    /// observer.flush(); // nothing was refused: nothing to write
    /// ```
    pub fn flush(&self) {
        let now = crate::now();
        let upstream = self.upstream;
        for (i, reason) in REASONS.iter().enumerate() {
            if let Some((count, over)) = self.bursts[i].take(now) {
                event_at!(
                    self.refusals.level,
                    upstream,
                    reason = reason.code(),
                    refused = count,
                    ?over,
                    "refused {count} more calls: {reason} (summarised)"
                );
            }
        }
        for (i, reason) in REASONS.iter().enumerate() {
            if let Some((count, over)) = self.bursts[SHADOW + i].take(now) {
                event_at!(
                    self.refusals.level,
                    upstream,
                    reason = reason.code(),
                    shadow = true,
                    refused = count,
                    ?over,
                    "would refuse {count} more calls (shadow mode, let through): {reason} (summarised)"
                );
            }
        }
        if let Some((count, over)) = self.bursts[FALLBACKS].take(now) {
            event_at!(
                self.refusals.level,
                upstream,
                fallbacks = count,
                ?over,
                "degraded: the fallback answered {count} more calls (summarised)"
            );
        }
    }

    /// Reports every gauge `policy` has (a policy, a whole pipeline, a shared budget) as it
    /// reads at `now`: one `info` event per gauge with target `resilix::gauge`, fields
    /// `upstream`, `gauge` (the metric name in [`crate::metrics`]) and `value`. Call it at
    /// start for the initial values, then as often as the logs need (see [`crate::gauges`]).
    ///
    /// ```
    /// use resilix::breaker::Breaker;
    /// use resilix_tokio::tracing::TracingObserver;
    ///
    /// let breaker = Breaker::default();
    /// // resilix::gauge: upstream="inventory" gauge="resilix_circuit_state" value=0.0
    /// TracingObserver::new("inventory").sample(&breaker, resilix_tokio::now());
    /// ```
    pub fn sample<P: Gauged + ?Sized>(&self, policy: &P, now: Instant) {
        let upstream = self.upstream;
        policy.gauges(now, &mut |g: Gauge| {
            tracing::info!(
                target: "resilix::gauge",
                upstream,
                gauge = g.name(),
                value = g.value(),
                "gauge"
            )
        });
    }
}

/// A span for one call to `upstream`: instrument the `execute` future with it so the
/// policies' events nest under the call.
/// Its `http.request.resend_count` (OpenTelemetry's HTTP client attribute) counts the retries
/// made so far, recorded as each is scheduled.
pub fn call_span(upstream: &'static str) -> tracing::Span {
    tracing::info_span!(
        "resilix.call",
        upstream,
        http.request.resend_count = tracing::field::Empty
    )
}

impl Observer for TracingObserver {
    fn on_event(&self, event: &Event) {
        let upstream = self.upstream;
        match event {
            Event::Rejected { rejection } => {
                let reason = rejection.reason();
                let now = crate::now();
                let level = self.refusals.level;
                match self.bursts[slot(reason)].on_event(now, self.refusals.interval) {
                    Line::First => {
                        let retry_in = rejection
                            .retry_at()
                            .map(|at| at.saturating_duration_since(now));
                        event_at!(
                            level,
                            upstream,
                            reason = reason.code(),
                            ?retry_in,
                            "refused: {reason}"
                        )
                    }
                    Line::Count { count, over } => event_at!(
                        level,
                        upstream,
                        reason = reason.code(),
                        refused = count,
                        ?over,
                        "refused {count} calls: {reason} (summarised)"
                    ),
                    Line::Counted => {}
                }
            }
            Event::ShadowRejected { rejection } => {
                // Summarised with the other shadow refusals of its reason, apart from real
                // refusals (the second half of the bursts).
                let reason = rejection.reason();
                let level = self.refusals.level;
                match self.bursts[SHADOW + slot(reason)]
                    .on_event(crate::now(), self.refusals.interval)
                {
                    Line::First => event_at!(
                        level,
                        upstream,
                        reason = reason.code(),
                        shadow = true,
                        "would refuse (shadow mode, let through): {reason}"
                    ),
                    Line::Count { count, over } => event_at!(
                        level,
                        upstream,
                        reason = reason.code(),
                        shadow = true,
                        refused = count,
                        ?over,
                        "would refuse {count} calls (shadow mode, let through): {reason} (summarised)"
                    ),
                    Line::Counted => {}
                }
            }
            Event::Executed { verdict, duration } => tracing::debug!(
                upstream,
                verdict = verdict.kind().as_str(),
                duration_us = duration.as_micros() as u64,
                "attempt settled"
            ),
            Event::CircuitTransition {
                from, to, cause, ..
            } => tracing::info!(
                upstream,
                ?from,
                ?to,
                cause = cause.as_str(),
                "circuit breaker transition"
            ),
            Event::LimitChanged { from, to } => {
                tracing::debug!(upstream, from, to, "concurrency limit changed")
            }
            Event::RetryScheduled {
                attempt,
                delay,
                after,
            } => {
                // The call's span (if it is one of ours) counts the resends so far.
                tracing::Span::current()
                    .record("http.request.resend_count", attempt.saturating_sub(1));
                tracing::debug!(
                    upstream,
                    attempt,
                    ?delay,
                    after = after.kind().as_str(),
                    "retry scheduled"
                )
            }
            Event::RetryRefused { reason, after } => tracing::info!(
                upstream,
                after = after.kind().as_str(),
                "not retried: {reason}"
            ),
            Event::PolicyReset { policy, .. } => tracing::info!(
                upstream,
                policy = policy.as_str(),
                "policy reset by the operator"
            ),
            Event::PolicyReconfigured { policy, .. } => tracing::info!(
                upstream,
                policy = policy.as_str(),
                "policy reconfigured in place"
            ),
            Event::FallbackServed { cause } => {
                let level = self.refusals.level;
                match self.bursts[FALLBACKS].on_event(crate::now(), self.refusals.interval) {
                    Line::First => {
                        event_at!(level, upstream, ?cause, "degraded: the fallback answered")
                    }
                    Line::Count { count, over } => event_at!(
                        level,
                        upstream,
                        fallbacks = count,
                        ?over,
                        "degraded: the fallback answered {count} calls (summarised)"
                    ),
                    Line::Counted => {}
                }
            }
            other => tracing::debug!(upstream, event = ?other, "resilix event"),
        }
    }
}
