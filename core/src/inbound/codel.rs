//! CoDel, RFC 8289: a queue-delay controller over sojourn times, as a pure state machine.
//!
//! CoDel watches how long each request waited (its *sojourn*) as it leaves the queue. A
//! queue whose *minimum* sojourn stays above `target` (5 ms) for a whole `interval` (100 ms)
//! is a standing queue, not a burst: CoDel then drops the request at the head and enters the
//! dropping state, dropping the next at `interval / √count` after the previous (the control
//! law), faster the longer the queue stands, until a sojourn below `target` (or a nearly
//! empty queue) ends the state. Facebook's "Fail at Scale" (Maurer, 2015) carries the same
//! two numbers into request queues; the inbound admission uses both (see the module docs).
//!
//! This is RFC 8289 §5's pseudocode state for state, made per request: RFC `dequeue()` is a
//! loop that may drop several packets at one instant; here each request leaving the queue is
//! one [`Codel::pop`], and a [`Pop::Drop`] must be followed by the next pop (or
//! [`Codel::empty`]) at the same instant, which is what the loop does. The control law is
//! computed exactly in integers: `⌊interval / √count⌋` ns. The simulator's `inbound`
//! experiment replays random queues through this controller and through a line-by-line
//! transcription of the RFC and compares every drop.
//!
//! The state is plain wide time (`Instant`s, no tick words): it is only ever touched by the
//! one thread that holds the queue it controls, under that queue's lock, so no atomic word
//! stores it and no wrap-around can alias.
//!
//! ```
//! use core::time::Duration;
//! use resilix::inbound::{Codel, CodelConfig, Pop};
//! use resilix::time::Instant;
//!
//! let mut codel = Codel::new(CodelConfig::RFC_8289);
//! let ms = Instant::from_millis;
//! // Sojourns of 20 ms with a backlog behind: above target, but not yet for an interval.
//! assert_eq!(codel.pop(ms(0), Duration::from_millis(20), 10), Pop::Serve);
//! assert_eq!(codel.pop(ms(99), Duration::from_millis(20), 10), Pop::Serve);
//! // Still above target 100 ms later: drop, and the next request at this instant is served.
//! assert_eq!(codel.pop(ms(100), Duration::from_millis(20), 10), Pop::Drop);
//! assert_eq!(codel.pop(ms(100), Duration::from_millis(20), 9), Pop::Serve);
//! assert!(codel.dropping());
//! // The next drop is due at 100 + 100/√1 ms.
//! assert_eq!(codel.drop_next(), ms(200));
//! ```

use core::time::Duration;

use crate::time::{Instant, duration_as_nanos_saturating};

/// CoDel's two parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CodelConfig {
    /// The acceptable standing delay. RFC 8289 §4.4: 5 ms; Fail at Scale's M: 5 ms.
    pub target: Duration,
    /// How long the delay must stand before acting, and the control law's base. RFC 8289
    /// §4.3: 100 ms; Fail at Scale's N: 100 ms.
    pub interval: Duration,
}

impl CodelConfig {
    /// RFC 8289's values (target 5 ms, interval 100 ms), which Fail at Scale found to work
    /// "without per-service tuning".
    pub const RFC_8289: CodelConfig = CodelConfig {
        target: Duration::from_millis(5),
        interval: Duration::from_millis(100),
    };
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig::RFC_8289
    }
}

/// What to do with the request leaving the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Pop {
    /// Serve it.
    Serve,
    /// Drop it, and pop the next at the same instant.
    Drop,
}

/// Where in RFC 8289's `dequeue()` the next pop happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum Stage {
    /// The first pop of a dequeue.
    Head,
    /// Inside the dropping loop, after a drop.
    Loop,
    /// Right after entering the dropping state: served whatever its sojourn.
    AfterEntry,
}

/// The controller's state (RFC 8289 §5.3's variables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Codel {
    target: u64,
    interval: u64,
    /// When the sojourn went above target, plus an interval (RFC `first_above_time`).
    first_above: Option<Instant>,
    drop_next: Instant,
    count: u32,
    last_count: u32,
    dropping: bool,
    stage: Stage,
}

impl Codel {
    /// A controller in its initial state (not dropping, no sojourn above target yet).
    pub const fn new(config: CodelConfig) -> Codel {
        Codel {
            target: duration_as_nanos_saturating(config.target),
            interval: duration_as_nanos_saturating(config.interval),
            first_above: None,
            drop_next: Instant::ZERO,
            count: 0,
            last_count: 0,
            dropping: false,
            stage: Stage::Head,
        }
    }

    /// A request that waited `sojourn` leaves the queue at `now`, leaving `backlog` requests
    /// behind it: serve it or drop it (then pop the next at the same `now`).
    pub fn pop(&mut self, now: Instant, sojourn: Duration, backlog: usize) -> Pop {
        let ok_to_drop = self.observe(now, sojourn, backlog);
        match self.stage {
            Stage::AfterEntry => {
                self.stage = Stage::Head;
                Pop::Serve
            }
            Stage::Loop => {
                if ok_to_drop {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                } else {
                    self.dropping = false;
                }
                self.drop_in_loop(now)
            }
            Stage::Head if self.dropping => {
                if !ok_to_drop {
                    self.dropping = false;
                }
                self.drop_in_loop(now)
            }
            Stage::Head if ok_to_drop => {
                self.enter_dropping(now);
                Pop::Drop
            }
            Stage::Head => Pop::Serve,
        }
    }

    /// The queue was found empty at `now` (a dequeue with nothing to pop).
    pub fn empty(&mut self, _now: Instant) {
        self.first_above = None;
        if self.stage != Stage::AfterEntry {
            self.dropping = false;
        }
        self.stage = Stage::Head;
    }

    /// Whether the controller is in the dropping state.
    pub const fn dropping(&self) -> bool {
        self.dropping
    }

    /// Drops so far in the current (or last) dropping state (RFC `count`).
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// When the next drop is due while dropping (RFC `drop_next`).
    pub const fn drop_next(&self) -> Instant {
        self.drop_next
    }

    /// RFC `dodequeue()`'s bookkeeping: whether the sojourn has stood above target for an
    /// interval. `backlog ≤ 1` is RFC's `bytes() ≤ MAXPACKET` for requests of one unit each.
    fn observe(&mut self, now: Instant, sojourn: Duration, backlog: usize) -> bool {
        if duration_as_nanos_saturating(sojourn) < self.target || backlog <= 1 {
            self.first_above = None;
            return false;
        }
        match self.first_above {
            None => {
                self.first_above = Some(self.after(now, self.interval));
                false
            }
            Some(at) => now >= at,
        }
    }

    /// RFC's `while (now >= drop_next && dropping)`, one iteration per pop.
    fn drop_in_loop(&mut self, now: Instant) -> Pop {
        if self.dropping && now >= self.drop_next {
            self.count = self.count.saturating_add(1);
            self.stage = Stage::Loop;
            Pop::Drop
        } else {
            self.stage = Stage::Head;
            Pop::Serve
        }
    }

    /// RFC's entry into the dropping state (Linux's variant of the count's restart).
    fn enter_dropping(&mut self, now: Instant) {
        self.dropping = true;
        let delta = self.count.saturating_sub(self.last_count);
        self.count = 1;
        let since_last = now.as_nanos() as i128 - self.drop_next.as_nanos() as i128;
        if delta > 1 && since_last < 16 * self.interval as i128 {
            self.count = delta;
        }
        self.drop_next = self.control_law(now, self.count);
        self.last_count = self.count;
        self.stage = Stage::AfterEntry;
    }

    /// `t + ⌊interval / √count⌋`, exactly.
    fn control_law(&self, t: Instant, count: u32) -> Instant {
        self.after(t, control_delay(self.interval, count))
    }

    fn after(&self, t: Instant, nanos: u64) -> Instant {
        t.saturating_add(Duration::from_nanos(nanos))
    }
}

/// `⌊interval / √count⌋` in nanoseconds (`count` 0 read as 1): `⌊√⌊interval² / count⌋⌋`,
/// which equals it exactly because `⌊√⌊x⌋⌋ = ⌊√x⌋`.
pub const fn control_delay(interval: u64, count: u32) -> u64 {
    let count = if count == 0 { 1 } else { count as u128 };
    let square = interval as u128 * interval as u128 / count;
    square.isqrt() as u64
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn d(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn below_target_never_drops() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        for t in 0..1_000 {
            assert_eq!(c.pop(ms(t), Duration::from_micros(4_999), 100), Pop::Serve);
        }
        assert!(!c.dropping());
    }

    #[test]
    fn a_short_backlog_never_drops_whatever_the_sojourn() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        for t in 0..1_000 {
            assert_eq!(c.pop(ms(t), d(50), 1), Pop::Serve);
        }
    }

    #[test]
    fn one_sojourn_below_target_restarts_the_interval() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        assert_eq!(c.pop(ms(0), d(20), 10), Pop::Serve);
        assert_eq!(c.pop(ms(50), d(1), 10), Pop::Serve); // below: forget the first
        assert_eq!(c.pop(ms(60), d(20), 10), Pop::Serve); // above again: due at 160
        assert_eq!(c.pop(ms(159), d(20), 10), Pop::Serve);
        assert_eq!(c.pop(ms(160), d(20), 10), Pop::Drop);
    }

    #[test]
    fn an_empty_queue_restarts_the_interval_and_ends_dropping() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        c.pop(ms(0), d(20), 10);
        c.empty(ms(50));
        assert_eq!(
            c.pop(ms(100), d(20), 10),
            Pop::Serve,
            "the interval restarted"
        );
        assert_eq!(c.pop(ms(200), d(20), 10), Pop::Drop);
        assert_eq!(c.pop(ms(200), d(20), 10), Pop::Serve);
        assert!(c.dropping());
        c.empty(ms(201));
        assert!(!c.dropping());
    }

    #[test]
    fn empty_right_after_entry_keeps_dropping_as_the_rfc_does() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        c.pop(ms(0), d(20), 10);
        assert_eq!(c.pop(ms(100), d(20), 10), Pop::Drop);
        c.empty(ms(100)); // RFC: `r = dodequeue(); dropping = true;` with r empty
        assert!(c.dropping());
    }

    #[test]
    fn the_control_law_schedules_drops_at_interval_over_root_count() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        c.pop(ms(0), d(20), 100);
        assert_eq!(c.pop(ms(100), d(20), 100), Pop::Drop);
        assert_eq!(c.pop(ms(100), d(20), 100), Pop::Serve);
        let mut next = 200 * MS;
        for count in 1..10u32 {
            assert_eq!(c.drop_next().as_nanos(), next);
            let just_before = Instant::from_nanos(next - 1);
            assert_eq!(c.pop(just_before, d(20), 100), Pop::Serve);
            assert_eq!(c.pop(Instant::from_nanos(next), d(20), 100), Pop::Drop);
            assert_eq!(c.count(), count + 1);
            // The loop pops the next at the same instant and schedules from drop_next.
            assert_eq!(c.pop(Instant::from_nanos(next), d(20), 100), Pop::Serve);
            next += control_delay(100 * MS, count + 1);
        }
    }

    #[test]
    fn a_large_backlog_drops_several_at_one_instant() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        c.pop(ms(0), d(20), 100);
        assert_eq!(c.pop(ms(100), d(20), 100), Pop::Drop);
        c.pop(ms(100), d(20), 100);
        // Long silence, then one dequeue at 1 s: drop_next is far behind, so the loop drops
        // until the schedule catches up with now.
        let now = ms(1_000);
        let mut drops = 0;
        while c.pop(now, d(20), 100) == Pop::Drop {
            drops += 1;
        }
        assert!(drops > 1, "{drops}");
        assert!(c.drop_next() > now);
    }

    #[test]
    fn a_sojourn_below_target_ends_the_dropping_state() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        c.pop(ms(0), d(20), 10);
        c.pop(ms(100), d(20), 10);
        c.pop(ms(100), d(20), 10);
        assert_eq!(c.pop(ms(300), d(1), 10), Pop::Serve);
        assert!(!c.dropping());
    }

    #[test]
    fn reentry_soon_after_resumes_the_previous_rate() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        c.pop(ms(0), d(20), 10);
        c.pop(ms(100), d(20), 10); // enter, count 1
        c.pop(ms(100), d(20), 10);
        for _ in 0..3 {
            let at = c.drop_next();
            assert_eq!(c.pop(at, d(20), 10), Pop::Drop);
            c.pop(at, d(20), 10);
        }
        assert_eq!(c.count(), 4);
        let left = c.drop_next();
        c.pop(left, d(1), 10); // leave
        // Above again at once; an interval later, re-enter with count = delta = 3.
        let t = left + d(1);
        c.pop(t, d(20), 10);
        assert_eq!(c.pop(t + d(100), d(20), 10), Pop::Drop);
        assert_eq!(c.count(), 3);
        assert_eq!(
            c.drop_next(),
            t + d(100) + Duration::from_nanos(control_delay(100 * MS, 3))
        );
    }

    #[test]
    fn control_delay_is_exact() {
        assert_eq!(control_delay(100 * MS, 1), 100 * MS);
        assert_eq!(control_delay(100 * MS, 4), 50 * MS);
        assert_eq!(control_delay(100 * MS, 0), 100 * MS);
        assert_eq!(control_delay(100 * MS, 2), 70_710_678);
        assert_eq!(control_delay(u64::MAX, 1), u64::MAX);
        for count in 1..2_000u32 {
            let d = control_delay(100 * MS, count) as u128;
            let i = 100 * MS as u128;
            assert!(d * d * count as u128 <= i * i);
            assert!((d + 1) * (d + 1) * count as u128 > i * i);
        }
    }

    #[test]
    fn the_end_of_time_saturates() {
        let mut c = Codel::new(CodelConfig::RFC_8289);
        let end = Instant::MAX;
        c.pop(end, d(20), 10);
        assert_eq!(c.pop(end, d(20), 10), Pop::Drop);
        assert_eq!(c.drop_next(), Instant::MAX);
    }
}
