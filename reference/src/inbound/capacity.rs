//! The adaptive inbound limit's window, plainly, around the core's shared [`CapacityRule`].
//!
//! Written plainly here: the window in wide time (an opening tick as a full `u64` count, ticks
//! of `2^shift` ns, `shift` the finest of at least 2 on which `max_window` is below 2^31
//! ticks), its sums (the latency sum capped at `u32::MAX` µs, as the real one saturates),
//! which requests count (only those admitted under the limit in force), when it closes (at
//! the first settle that finds it at least its length old and holding `max(min(window_samples,
//! 2 × limit), min(window_samples, 16))` samples, or whose sum passed 2^31 µs), its average (sixteenths of a µs) and the
//! next length (twice the average in ticks, rounded up, clamped to the window bounds).
//! Shared rather than re-stated: the rule a closed window feeds ([`CapacityRule::next`]), as
//! the CoDel controller is shared: it is a pure function held to its documentation by the
//! core's unit tests and to its purpose by the simulator's `inbound-capacity` experiment.

use core::time::Duration;

use resilix::inbound::{CapacityConfig, CapacityRule};

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// The window and the rule's state.
#[derive(Clone, Debug)]
pub struct CapacityModel {
    /// The rule's state after the last window.
    pub rule: CapacityRule,
    shift: u32,
    min_window: u64,
    max_window: u64,
    samples: u64,
    opened: u64,
    length: u64,
    sum_us: u64,
    count: u64,
    max_in_flight: u64,
}

impl CapacityModel {
    /// The model of a capacity built from `c`.
    pub fn new(c: &CapacityConfig) -> CapacityModel {
        let max_ns = nanos(c.max_window);
        let mut shift = 2;
        while shift < 63 && (max_ns >> shift) >= 1 << 31 {
            shift += 1;
        }
        let ticks = |ns: u64| ns.div_ceil(1 << shift).min(u64::from(u32::MAX));
        CapacityModel {
            rule: CapacityRule::new(c),
            shift,
            min_window: ticks(nanos(c.min_window)),
            max_window: ticks(max_ns),
            samples: u64::from(c.window_samples),
            opened: 0,
            length: ticks(nanos(c.min_window)),
            sum_us: 0,
            count: 0,
            max_in_flight: 0,
        }
    }

    /// The limit in force.
    pub fn limit(&self) -> u64 {
        u64::from(self.rule.limit())
    }

    /// A request admitted at `admitted` (ns) with `in_flight` in flight under `limit` settled
    /// at `now` (ns) with a latency.
    pub fn record(&mut self, now: u64, admitted: u64, in_flight: u64, limit: u64) {
        if limit != self.limit() {
            return;
        }
        let micros = now.saturating_sub(admitted) / 1_000;
        self.sum_us = (self.sum_us + micros.min(u64::from(u32::MAX))).min(u64::from(u32::MAX));
        self.count += 1;
        self.max_in_flight = self.max_in_flight.max(in_flight);
        let tick = now >> self.shift;
        let age = if tick >= self.opened {
            tick - self.opened
        } else {
            u64::MAX
        };
        let need = self.samples.min(2 * limit).max(self.samples.min(16));
        let ready = (age >= self.length && self.count >= need) || self.sum_us >= 1 << 31;
        if !ready {
            return;
        }
        let average = (self.sum_us * 16 / self.count).min(u64::from(u32::MAX));
        self.rule = self.rule.next(average as u32, self.max_in_flight as u32);
        let average_ticks = (average * 1_000 / 16)
            .div_ceil(1 << self.shift)
            .min(u64::from(u32::MAX));
        self.length = (average_ticks * 2)
            .min(u64::from(u32::MAX))
            .clamp(self.min_window, self.max_window);
        self.opened = tick;
        self.sum_us = 0;
        self.count = 0;
        self.max_in_flight = 0;
    }
}
