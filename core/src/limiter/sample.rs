//! Windowed sampling, as Netflix's `WindowedLimit`: outcomes accumulate in a window, and the
//! limit algorithm runs once per window on its summary, never per call.
//!
//! A window closes at the first settle that finds it both old enough and full enough: at least
//! `window length` since it opened and at least `window_samples` outcomes (latency samples plus
//! drops). Its length is `clamp(2 · average RTT, min_window, max_window)` (Netflix; defaults
//! 1 s, 1 s, 10 samples). Latency samples below `min_rtt` (Netflix: 100 µs) are discarded, as
//! upstream does: such a call did no real work upstream (a cache hit, a local error).
//!
//! Unlike upstream, a window that is old but not yet full keeps accumulating instead of being
//! thrown away, so a low-traffic limiter still updates (more slowly) instead of never.
//!
//! The window's counters are approximate only at the close race (a racing settle skews one
//! window's average by at most one sample), the limit and baseline have a single writer (the
//! thread that wins the close), and no idle gap of any length keeps a window open or closes it
//! early.
//!
//! Design notes (the close race, the opening tick and its era):
//! docs/design/limiter.md#the-sample-window
//!
//! # The baseline and its refresh (concurrency-limits #165)
//!
//! Gradient2 compares with a long-term RTT, Vegas with a no-load RTT: a [`Baseline`]. Left
//! alone, a long-lived limiter keeps a stale one: Vegas's minimum never rises after the upstream
//! permanently slows (the limit then sits at its floor forever), and Gradient2's average creeps
//! up under sustained overload (the limit then grows without bound, #134). So every
//! `U[0.5, 1) · probe_multiplier · limit` windows (Netflix Vegas's probe schedule, 30 by
//! default, jittered from the caller's randomness) the baseline is reset to the lowest window RTT
//! seen since the previous refresh: a measured no-load latency from the recent past, not the
//! all-time minimum nor a possibly loaded current value.

use super::fixed::Rtt;
use crate::sync::{AtomicBool, AtomicU32, Ordering};
use crate::time::era::{Era, widen};

/// The opening tick is a full 32-bit word.
const TICK_BITS: u32 = 32;

/// The latency a limit algorithm compares each window with, and how many windows formed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Baseline {
    pub(crate) rtt: Rtt,
    pub(crate) count: u32,
}

/// What one window tells a limit algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WindowSummary {
    /// Average latency of the window's samples; `None` if it had only drops.
    pub(crate) rtt: Option<Rtt>,
    /// The most calls in flight at any admission whose outcome the window holds.
    pub(crate) max_in_flight: u32,
    /// Latency samples in the window.
    pub(crate) samples: u32,
    /// Drops in the window (`Overload`, `Timeout`).
    pub(crate) drops: u32,
}

impl WindowSummary {
    /// Whether any call in the window was a drop.
    pub(crate) const fn dropped(&self) -> bool {
        self.drops > 0
    }
}

/// A latency sum at which a window closes regardless of age (half of `u32::MAX` µs).
const SUM_CLOSE_US: u32 = 1 << 31;

/// How many ticks a window opened at full tick count `opened` has been open at `now`: the
/// plain 64-bit difference, or `u64::MAX` when `now` is before the opening (time went
/// backwards: the window reads as old, so it closes rather than sticking).
pub(crate) const fn age(opened: u64, now: u64) -> u64 {
    if now >= opened {
        now - opened
    } else {
        u64::MAX
    }
}

/// Whether a window may close: the pure rule, apart from the atomics.
pub(crate) const fn is_ready(
    elapsed_ticks: u64,
    length_ticks: u32,
    outcomes: u32,
    min_outcomes: u32,
    rtt_sum_us: u32,
) -> bool {
    outcomes > 0
        && ((elapsed_ticks >= length_ticks as u64 && outcomes >= min_outcomes)
            || rtt_sum_us >= SUM_CLOSE_US)
}

/// The average of `samples` latencies summing to `sum_us` microseconds.
pub(crate) const fn average(sum_us: u32, samples: u32) -> Option<Rtt> {
    if samples == 0 {
        None
    } else {
        Some(Rtt(super::fixed::sat(sum_us as u64 * 16 / samples as u64)))
    }
}

/// Below this, a sum plus a sample cannot wrap a `u32`.
const FAST_ADD_BELOW: u32 = 1 << 31;

/// The accumulating window, in atomics.
#[derive(Debug)]
pub(crate) struct SampleWindow {
    /// The low 32 bits of the tick the window opened at; written only under `closing`.
    opened: AtomicU32,
    /// The era of `opened` (see `time::era`), set by the closer before it publishes `opened`.
    opened_era: Era,
    length: AtomicU32,
    rtt_sum_us: AtomicU32,
    samples: AtomicU32,
    drops: AtomicU32,
    max_in_flight: AtomicU32,
    closing: AtomicBool,
}

impl SampleWindow {
    crate::sync::const_fn_unless_loom! {
        /// An empty window opened at tick 0, `length` ticks long.
        pub(crate) fn new(length: u32) -> Self {
            SampleWindow {
                opened: AtomicU32::new(0),
                opened_era: Era::new(),
                length: AtomicU32::new(length),
                rtt_sum_us: AtomicU32::new(0),
                samples: AtomicU32::new(0),
                drops: AtomicU32::new(0),
                max_in_flight: AtomicU32::new(0),
                closing: AtomicBool::new(false),
            }
        }
    }

    /// Adds one latency sample.
    pub(crate) fn add_latency(&self, micros: u32, in_flight: u32) {
        // One locked add, not a compare-and-swap loop that retries under contention: while both
        // the sum and the sample are below 2^31 the add cannot wrap (a window closes as soon as
        // its sum passes 2^31 µs). Above that, the saturating loop.
        if micros < FAST_ADD_BELOW && self.rtt_sum_us.load(Ordering::Relaxed) < FAST_ADD_BELOW {
            self.rtt_sum_us.fetch_add(micros, Ordering::Relaxed);
        } else {
            let _ = self
                .rtt_sum_us
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                    Some(s.saturating_add(micros))
                });
        }
        self.samples.fetch_add(1, Ordering::Relaxed);
        self.note_in_flight(in_flight);
    }

    /// Adds one drop.
    pub(crate) fn add_drop(&self, in_flight: u32) {
        self.drops.fetch_add(1, Ordering::Relaxed);
        self.note_in_flight(in_flight);
    }

    /// Raises the window's peak in-flight count. Most settles are not a new peak, so a plain
    /// load spares the cache line a read-modify-write.
    fn note_in_flight(&self, in_flight: u32) {
        if in_flight > self.max_in_flight.load(Ordering::Relaxed) {
            self.max_in_flight.fetch_max(in_flight, Ordering::Relaxed);
        }
    }

    /// The full tick count the window opened at (see the module docs on the era).
    fn opened(&self, now: u64) -> u64 {
        let low = self.opened.load(Ordering::Acquire);
        let seen = self.opened_era.read();
        // Shortcut: in `now`'s own era, equal low bits are `now` itself.
        if seen.is_era_of(now, TICK_BITS) && low == now as u32 {
            now
        } else {
            widen(low, TICK_BITS, seen, 0)
        }
    }

    fn ready(&self, now: u64, min_outcomes: u32) -> bool {
        let outcomes = self
            .samples
            .load(Ordering::Relaxed)
            .saturating_add(self.drops.load(Ordering::Relaxed));
        if outcomes == 0 {
            return false; // the common settle of an empty window skips the widening
        }
        is_ready(
            age(self.opened(now), now),
            self.length.load(Ordering::Relaxed),
            outcomes,
            min_outcomes,
            self.rtt_sum_us.load(Ordering::Relaxed),
        )
    }

    /// If the window may close at full tick count `now` and this thread wins the right to
    /// close it, empties it, reopens it at `now` and returns its summary with the close guard.
    /// Never waits: a loser returns `None` and the winner does the work.
    pub(crate) fn try_close(
        &self,
        now: u64,
        min_outcomes: u32,
    ) -> Option<(WindowSummary, Closing<'_>)> {
        if !self.ready(now, min_outcomes) {
            return None;
        }
        // Acquire: see the limit and baseline the previous closer stored before releasing.
        if self
            .closing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        let guard = Closing { window: self };
        if !self.ready(now, min_outcomes) {
            return None; // another closer got here first; the guard releases the flag
        }
        // The single writer of the opening tick: era first, then the word, so a reader that
        // sees the new word widens it with its own era.
        self.opened_era.set(now, TICK_BITS);
        self.opened.store(now as u32, Ordering::Release);
        let sum = self.rtt_sum_us.swap(0, Ordering::Relaxed);
        let samples = self.samples.swap(0, Ordering::Relaxed);
        let drops = self.drops.swap(0, Ordering::Relaxed);
        let max_in_flight = self.max_in_flight.swap(0, Ordering::Relaxed);
        let summary = WindowSummary {
            rtt: average(sum, samples),
            max_in_flight,
            samples,
            drops,
        };
        Some((summary, guard))
    }
}

impl SampleWindow {
    /// An operator's reset: takes the right to close (one try, never waited on), empties the
    /// window and reopens it at full tick count `now`, `length` ticks long. `None` when a
    /// closer holds the right. Settles racing with it land in the old or the new window, as at
    /// any close.
    pub(crate) fn try_restart(&self, now: u64, length: u32) -> Option<Closing<'_>> {
        self.closing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        let guard = Closing { window: self };
        self.opened_era.set(now, TICK_BITS);
        self.opened.store(now as u32, Ordering::Release);
        self.length.store(length, Ordering::Relaxed);
        for counter in [
            &self.rtt_sum_us,
            &self.samples,
            &self.drops,
            &self.max_in_flight,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        Some(guard)
    }
}

impl SampleWindow {
    /// Takes the right to close (one try, never waited on) without touching the window: for a
    /// reconfiguration, which must not race the closer's store of the limit but keeps what
    /// the window has gathered. `None` when a closer holds the right.
    pub(crate) fn try_hold(&self) -> Option<Closing<'_>> {
        self.closing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(Closing { window: self })
    }
}

/// The right to close the window, held by one thread at a time; dropping it gives it back.
pub(crate) struct Closing<'w> {
    window: &'w SampleWindow,
}

impl Closing<'_> {
    /// Sets the next window's length (the closer decides it from the closed window's RTT).
    pub(crate) fn set_length(&self, ticks: u32) {
        self.window.length.store(ticks, Ordering::Relaxed);
    }
}

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        // Release: the next closer sees the limit and baseline this one stored.
        self.window.closing.store(false, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn readiness_needs_age_and_outcomes_or_a_huge_sum() {
        assert!(!is_ready(100, 100, 0, 0, 0), "an empty window never closes");
        assert!(!is_ready(99, 100, 10, 10, 5));
        assert!(!is_ready(100, 100, 9, 10, 5));
        assert!(is_ready(100, 100, 10, 10, 5));
        assert!(
            is_ready(0, 100, 1, 10, SUM_CLOSE_US),
            "a saturating sum closes it early"
        );
        assert!(is_ready(u64::MAX, 0, 1, 1, 0));
        assert!(is_ready(u64::MAX, u32::MAX, 1, 1, 0));
    }

    #[test]
    fn age_is_plain_and_backwards_reads_old() {
        assert_eq!(age(5, 5), 0);
        assert_eq!(age(5, 1 << 40), (1 << 40) - 5);
        assert_eq!(age(6, 5), u64::MAX);
    }

    #[test]
    fn average_in_sixteenths() {
        assert_eq!(average(0, 0), None);
        assert_eq!(average(30, 3), Some(Rtt::from_micros(10)));
        assert_eq!(average(1, 2), Some(Rtt(8)), "half a microsecond is kept");
        assert_eq!(average(u32::MAX, 1), Some(Rtt(u32::MAX)));
    }

    #[test]
    fn close_summarises_then_reopens_empty() {
        let w = SampleWindow::new(10);
        w.add_latency(100, 3);
        w.add_latency(300, 7);
        w.add_drop(9);
        assert!(w.try_close(5, 3).is_none(), "too young");
        assert!(w.try_close(10, 4).is_none(), "too few");
        let (s, guard) = w.try_close(10, 3).unwrap();
        assert_eq!(
            s,
            WindowSummary {
                rtt: Some(Rtt::from_micros(200)),
                max_in_flight: 9,
                samples: 2,
                drops: 1,
            }
        );
        assert!(s.dropped());
        assert!(
            w.try_close(1_000, 0).is_none(),
            "held by the first closer, and empty"
        );
        guard.set_length(50);
        drop(guard);
        w.add_latency(1, 1);
        assert!(w.try_close(59, 1).is_none(), "reopened at 10, 50 long");
        assert!(w.try_close(60, 1).is_some());
    }

    #[test]
    fn backwards_time_closes_early_never_sticks() {
        let w = SampleWindow::new(10);
        w.add_latency(1, 1);
        let (_, g) = w.try_close(100, 1).unwrap();
        drop(g);
        w.add_latency(1, 1);
        assert!(
            w.try_close(50, 1).is_some(),
            "backwards reads as a long time"
        );
    }

    /// The alias the era removes: a window opened at tick `t` reads as 50 ticks old at
    /// `t + k·2^32 + 50` when compared modulo 2^32. Widened, it is `k` circles old and closes.
    #[test]
    fn a_window_whole_circles_old_closes() {
        const CIRCLE: u64 = 1 << 32;
        for opened in [100u64, CIRCLE - 3, 5 * CIRCLE + 11, (1 << 62) - 4 * CIRCLE] {
            for circles in 0..=3u64 {
                let w = SampleWindow::new(100);
                w.add_latency(1, 1);
                let (_, g) = w.try_close(opened, 1).unwrap();
                drop(g);
                w.add_latency(1, 1);
                let later = opened + circles * CIRCLE + 50;
                assert_eq!(
                    w.try_close(later, 1).is_some(),
                    circles > 0,
                    "opened at {opened}, {circles} circles and 50 ticks later"
                );
            }
        }
    }

    #[test]
    fn sums_saturate() {
        let w = SampleWindow::new(u32::MAX);
        w.add_latency(u32::MAX, 1);
        w.add_latency(u32::MAX, 1);
        let (s, _) = w.try_close(0, 1).unwrap();
        assert_eq!(
            s.rtt,
            Some(Rtt(u32::MAX)),
            "a saturated sum gives the longest RTT"
        );
    }

    #[test]
    fn a_small_sample_onto_a_large_sum_saturates_too() {
        // The plain add is only for a small sum and a small sample: a sum near 2^32 plus even
        // 100 µs would wrap to a few microseconds, the shortest RTT instead of the longest.
        let w = SampleWindow::new(u32::MAX);
        w.add_latency(u32::MAX - 10, 1);
        w.add_latency(100, 1);
        assert_eq!(w.rtt_sum_us.load(Ordering::Relaxed), u32::MAX);
    }
}
