//! The adaptive inbound limit: how many requests the handler really runs at once, found from
//! its own latency (issue 36: Gradient2's limit never went below 20 for a handler of 2).
//!
//! A handler that runs `C` requests at once in `S` each answers a request admitted with `n`
//! in flight in `S` while `n ≤ C`, and in about `n × S / C` once the excess waits inside it (a
//! pool, a semaphore, the CPU's run queue). So a window of requests admitted under a limit
//! `L` with a peak of `m` in flight and an average latency `r` says, given the no-load
//! latency `S` (the *floor*): if `r` is more than 10 % above the floor, the handler runs
//! `m × S / r` at once (Vegas's `L − queue`, Little's law over the handler's slots), and the
//! limit becomes that, in one window; if not, and the window filled the limit (three
//! quarters of it at least: a criticality may fill only its share, 80 % for SHEDDABLE), there
//! may be more room: the limit grows by a quarter (at least one), after holding three windows once a
//! growth has failed, so a limit at the capacity spends four windows in five there.
//!
//! **The floor** can only be seen with no more than `C` in flight, and a limit above the
//! capacity never shows it (every request waits inside the handler). So the limit is probed
//! down (BBR's ProbeRTT): at the first window, then every 4 windows while the probes teach
//! something (the floor moved by more than 10 %), doubling up to every 32 windows while they
//! do not, one window runs at a quarter of the limit, and its average latency becomes the
//! floor until the next probe (which forgets a floor grown stale because the handler got
//! slower; a floor lowered by every lucky window would ratchet down with noise, and the
//! limit with it). Then the limit comes back and the next window judges it against the new
//! floor. A limit at its minimum still probes: its own window becomes the floor.
//!
//! **Windows** are the limiter's (`limiter::sample`): at least `window_samples` settled
//! requests (or twice the limit, if fewer, but at least 16) and `clamp(2 × average latency, min_window, max_window)` long. Only requests
//! admitted under the limit in force count: a request admitted under another limit says
//! nothing about this one. A window's latency is a request's time in its slot, admission to
//! settle, for the verdicts that carry a latency (`Success`, `Answered`).
//!
//! **How fast.** From a limit above the capacity: the first probe and each after it cut the
//! limit to at most the latency-implied concurrency of a quarter of it, so from `L` to `C`
//! takes about `log₄(L / C)` probe cycles (about 5 windows each while it is learning). From
//! below: a quarter more, then doubling per window, about `log₂(C / L) + 2` windows. A window at a 2 ms handler is
//! about 100 ms (`min_window`); at a 1 s handler about 2 s. The simulator's `inbound_capacity`
//! check and the load harness (`scripts/inbound-load.sh --converge`) measure it.
//!
//! The rule is a pure function on plain integers ([`CapacityRule::next`]), shared by the
//! admission (which stores its state in atomics, one writer: the window's closer) and the
//! reference model, as the CoDel controller is.

use core::time::Duration;

use crate::limiter::sample::SampleWindow;
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::ticks::TickScale;

/// No floor yet.
const NONE: u32 = u32::MAX;
/// Windows held at a limit after a growth that made the handler queue.
const HOLD: u32 = 3;
/// The probe-down period's bounds, in windows.
const PROBE_MIN: u32 = 4;
const PROBE_MAX: u32 = 32;

/// The adaptive inbound limit's parameters ([`InboundConfig::adaptive`](super::InboundConfig::adaptive)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CapacityConfig {
    /// The limit before any window. Default 20 (Netflix's initial limit).
    pub initial: u32,
    /// The lowest limit. Default 1 (a handler may run one request at a time).
    pub min: u32,
    /// The highest limit. Default 4,096 (ours: above the 1,000 in flight the harness checks,
    /// below what one process's sockets hold comfortably).
    pub max: u32,
    /// The shortest window. Default 100 ms (CoDel's interval: long enough for 30 requests of
    /// a 3 ms handler with a limit of 1).
    pub min_window: Duration,
    /// The longest window. Default 10 s (Netflix's `maxWindowTime`... ours: 10× their 1 s, so
    /// a 1 s handler still fills a window).
    pub max_window: Duration,
    /// Settled requests a window needs. Default 64 (ours: the average of 64 exponential
    /// latencies is within about 12 % of their mean; of deterministic ones, exact).
    pub window_samples: u32,
}

impl CapacityConfig {
    /// The defaults above.
    pub const DEFAULT: CapacityConfig = CapacityConfig {
        initial: 20,
        min: 1,
        max: 4_096,
        min_window: Duration::from_millis(100),
        max_window: Duration::from_secs(10),
        window_samples: 64,
    };
}

impl Default for CapacityConfig {
    fn default() -> Self {
        CapacityConfig::DEFAULT
    }
}

/// The adaptive limit's state and rule: see [`InboundConfig::adaptive`](super::InboundConfig::adaptive)
/// and docs/inbound.md.
///
/// ```
/// use resilix::inbound::{CapacityConfig, CapacityRule};
///
/// // A handler of 2 slots, 3.3 ms each (latencies in sixteenths of a microsecond).
/// let s = 3_300 * 16;
/// let mut rule = CapacityRule::new(&CapacityConfig::DEFAULT);
/// // First window at 20: every request waits inside the handler, 10 × S.
/// rule = rule.next(10 * s, 20);
/// assert_eq!((rule.limit(), rule.probing()), (5, true), "probe down to a quarter");
/// rule = rule.next(s * 5 / 2, 5); // at 5: 2.5 × S, which becomes the floor
/// assert_eq!(rule.limit(), 20);
/// rule = rule.next(10 * s, 20); // back at 20: 20 × 2.5 / 10 = 5 at once
/// assert_eq!(rule.limit(), 5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CapacityRule {
    pub(super) limit: u32,
    pub(super) floor: u32,
    pub(super) hold: u32,
    pub(super) probe_in: u32,
    pub(super) probe_every: u32,
    pub(super) restore: u32,
    pub(super) streak: u32,
    pub(super) min: u32,
    pub(super) max: u32,
}

impl CapacityRule {
    /// The state before any window: the initial limit, no floor, a probe due at the first
    /// window.
    pub const fn new(c: &CapacityConfig) -> CapacityRule {
        CapacityRule {
            limit: c.initial,
            floor: NONE,
            hold: 0,
            probe_in: 1,
            probe_every: PROBE_MIN,
            restore: 0,
            streak: 0,
            min: c.min,
            max: c.max,
        }
    }

    /// The limit in force.
    pub const fn limit(&self) -> u32 {
        self.limit
    }

    /// The no-load latency in sixteenths of a microsecond, once a window has shown one.
    pub const fn floor(&self) -> Option<u32> {
        if self.floor == NONE {
            None
        } else {
            Some(self.floor)
        }
    }

    /// Whether the limit in force is a probe (a quarter of the limit to come back to).
    pub const fn probing(&self) -> bool {
        self.restore != 0
    }

    /// The state after a window of requests admitted under [`Self::limit`] with average
    /// latency `rtt` (sixteenths of a microsecond) and at most `max_in_flight` in flight.
    pub const fn next(self, rtt: u32, max_in_flight: u32) -> CapacityRule {
        let mut s = self;
        let r = if rtt == 0 { 1 } else { rtt };
        if s.restore != 0 {
            // The probe window: its latency is the floor now.
            let (old, new) = (s.floor as u64, r as u64);
            let learned = s.floor == NONE || new * 10 < old * 9 || new * 10 > old * 11;
            s.probe_every = if learned {
                PROBE_MIN
            } else if s.probe_every * 2 > PROBE_MAX {
                PROBE_MAX
            } else {
                s.probe_every * 2
            };
            s.floor = r;
            s.probe_in = s.probe_every;
            s.limit = s.restore;
            s.restore = 0;
            s.streak = 0;
            return s;
        }
        if s.floor == NONE {
            // The first window only shows a latency to start from.
            s.floor = r;
        } else {
            s = s.judge(r, max_in_flight);
        }
        s.probe_in = s.probe_in.saturating_sub(1);
        if s.probe_in == 0 {
            // Probe: a quarter of the limit (at least the floor of the limit, which still
            // measures afresh at a limit that cannot go lower).
            s.restore = s.limit;
            s.limit = if s.limit / 4 > s.min {
                s.limit / 4
            } else {
                s.min
            };
        }
        s
    }

    /// A window at or above the floor: shrink to what the handler runs at once, or grow.
    const fn judge(self, r: u32, max_in_flight: u32) -> CapacityRule {
        let mut s = self;
        let (floor, r64, limit) = (s.floor as u64, r as u64, s.limit);
        if r64 * 10 > floor * 11 {
            // Requests queued inside the handler: it runs `m × floor / r` at once (rounded).
            let est = (max_in_flight as u64 * floor * 2 + r64) / (2 * r64);
            s.limit = if est < s.min as u64 {
                s.min
            } else if est > limit as u64 {
                limit
            } else {
                est as u32
            };
            s.hold = HOLD;
            s.streak = 0;
        } else if max_in_flight as u64 * 4 >= limit as u64 * 3 {
            if s.hold > 0 {
                s.hold -= 1;
            } else {
                // A quarter more; the whole limit more after a growth that did not queue (a
                // search that doubles, as BBR's startup, and one window back if it overshoots).
                let step = if s.streak > 0 {
                    limit
                } else if limit / 4 > 1 {
                    limit / 4
                } else {
                    1
                };
                s.streak = 1;
                let grown = limit as u64 + step as u64;
                s.limit = if grown > s.max as u64 {
                    s.max
                } else {
                    grown as u32
                };
            }
        } else {
            s.streak = 0;
        }
        s
    }
}

/// The adaptive limit in atomics: the window, the rule's state (one writer, the window's
/// closer, under its close guard), the limit read lock-free by every admission.
#[derive(Debug)]
pub(crate) struct CapacityCell {
    window: SampleWindow,
    scale: TickScale,
    min_window: u32,
    max_window: u32,
    samples: u32,
    min: u32,
    max: u32,
    limit: AtomicU32,
    floor: AtomicU32,
    hold: AtomicU32,
    probe_in: AtomicU32,
    probe_every: AtomicU32,
    restore: AtomicU32,
    streak: AtomicU32,
}

impl CapacityCell {
    crate::sync::const_fn_unless_loom! {
        pub(crate) fn new(c: &CapacityConfig) -> CapacityCell {
            let scale = TickScale::covering(c.max_window);
            let rule = CapacityRule::new(c);
            let min_window = scale.ticks_in(c.min_window);
            CapacityCell {
                window: SampleWindow::new(min_window),
                scale,
                min_window,
                max_window: scale.ticks_in(c.max_window),
                samples: c.window_samples,
                min: c.min,
                max: c.max,
                limit: AtomicU32::new(rule.limit),
                floor: AtomicU32::new(rule.floor),
                hold: AtomicU32::new(rule.hold),
                probe_in: AtomicU32::new(rule.probe_in),
                probe_every: AtomicU32::new(rule.probe_every),
                restore: AtomicU32::new(rule.restore),
                streak: AtomicU32::new(rule.streak),
            }
        }
    }

    pub(crate) fn limit(&self) -> u32 {
        self.limit.load(Ordering::Acquire)
    }

    /// The rule's state (under the close guard, or as a snapshot).
    pub(crate) fn rule(&self) -> CapacityRule {
        let load = |a: &AtomicU32| a.load(Ordering::Relaxed);
        CapacityRule {
            limit: self.limit(),
            floor: load(&self.floor),
            hold: load(&self.hold),
            probe_in: load(&self.probe_in),
            probe_every: load(&self.probe_every),
            restore: load(&self.restore),
            streak: load(&self.streak),
            min: self.min,
            max: self.max,
        }
    }

    /// A request admitted at `admitted_at` with `in_flight` in flight under limit `limit`
    /// settled at `now` with a latency: it joins the window if admitted under the limit in
    /// force, and the window closes if it may.
    pub(crate) fn record(&self, now: Instant, admitted_at: Instant, in_flight: u32, limit: u32) {
        if limit != self.limit() {
            return;
        }
        let micros = now.saturating_duration_since(admitted_at).as_micros();
        self.window
            .add_latency(micros.min(u128::from(u32::MAX)) as u32, in_flight);
        let need = window_need(self.samples, limit);
        let Some((summary, closing)) = self.window.try_close(self.scale.wide(now), need) else {
            return;
        };
        let Some(rtt) = summary.rtt else {
            return;
        };
        let next = self.rule().next(rtt.0, summary.max_in_flight);
        for (cell, value) in [
            (&self.floor, next.floor),
            (&self.hold, next.hold),
            (&self.probe_in, next.probe_in),
            (&self.probe_every, next.probe_every),
            (&self.restore, next.restore),
            (&self.streak, next.streak),
        ] {
            cell.store(value, Ordering::Relaxed);
        }
        self.limit.store(next.limit, Ordering::Release);
        let twice = self.scale.ticks_in(rtt.as_duration()).saturating_mul(2);
        closing.set_length(twice.clamp(self.min_window, self.max_window));
    }
}

/// Settled requests a window under `limit` needs: `window_samples`, or twice the limit if
/// fewer (a limit of 5 on a 1 s handler settles 5 a second: 64 would take 13 s), but at least
/// 16 (or `window_samples` if fewer): the average of 2 noisy latencies would make a floor that
/// drags the limit down to its minimum.
pub(crate) const fn window_need(samples: u32, limit: u32) -> u32 {
    let twice = limit.saturating_mul(2);
    let need = if twice < samples { twice } else { samples };
    let least = if samples < 16 { samples } else { 16 };
    if need < least { least } else { need }
}
