//! Whether a standing queue exists: Fail at Scale's "the queue has not been empty in the last
//! N ms" (Maurer, 2015), read lock-free at every arrival.
//!
//! The queue's length is an exact counter elsewhere; this keeps one instant, *busy since*:
//! when the queue last went from empty to one waiter. The queue stands at `now` when it holds
//! a waiter and has done so for at least `interval` (N = 100 ms): then a queued request may
//! wait at most `target` (M = 5 ms) and the freed slot goes to the newest waiter (adaptive
//! LIFO); otherwise it may wait `interval` and the oldest is served first.
//!
//! The instant is a 32-bit tick word with its [`Era`] (see `time::era`), on the finest scale
//! on which `interval` is below 2^31 ticks, so no idle gap of any length makes an old busy
//! period look recent or a recent one old: the word is widened to its full 64-bit count and
//! compared in 64 bits.
//!
//! How it is approximate: the writer is whichever thread took the queue from empty to one
//! waiter, and two such threads (the queue emptied and refilled between them) may publish in
//! either order, so *busy since* may be older than the true start of the current busy period
//! by the later writer's descheduling lag. The cost is switching to LIFO that much early.

use core::time::Duration;

use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::era::{Era, widen};
use crate::time::ticks::TickScale;

const BITS: u32 = 32;

/// When the queue last became non-empty.
#[derive(Debug)]
pub(crate) struct BusySince {
    scale: TickScale,
    /// `interval` in ticks, rounded up.
    interval: u64,
    word: AtomicU32,
    era: Era,
}

impl BusySince {
    crate::sync::const_fn_unless_loom! {
        /// Never busy yet; `interval` is how long the queue must stay busy to stand.
        pub(crate) fn new(interval: Duration) -> BusySince {
            let scale = TickScale::covering(interval);
            BusySince {
                scale,
                interval: scale.ticks_in(interval) as u64,
                word: AtomicU32::new(0),
                era: Era::new(),
            }
        }
    }

    /// The queue went from empty to one waiter at `now`.
    pub(crate) fn mark(&self, now: Instant) {
        let seen = self.era.read();
        let ticks = self.scale.wide(now);
        self.era.cover(seen, ticks, BITS);
        self.word.store(ticks as u32, Ordering::Release);
    }

    /// The full tick count of the last [`Self::mark`] (0, the origin, before any).
    pub(crate) fn since(&self) -> u64 {
        let low = self.word.load(Ordering::Acquire);
        widen(low, BITS, self.era.read(), 0)
    }

    /// Whether a queue busy since the last mark has been busy for an interval at `now`.
    /// Time gone backwards (a `now` before the mark) reads as not yet.
    pub(crate) fn stood(&self, now: Instant) -> bool {
        self.scale.wide(now).saturating_sub(self.since()) >= self.interval
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn stands_after_an_interval_of_being_busy() {
        let b = BusySince::new(Duration::from_millis(100));
        let t = Instant::from_secs(7);
        b.mark(t);
        assert!(!b.stood(t));
        assert!(!b.stood(t + Duration::from_millis(99)));
        assert!(b.stood(t + Duration::from_millis(100)));
        assert!(!b.stood(t - Duration::from_millis(1)), "backwards: not yet");
    }

    #[test]
    fn no_idle_gap_aliases_the_mark() {
        let interval = Duration::from_millis(100);
        let b = BusySince::new(interval);
        // One circle of the word is 2^32 ticks; marks after gaps of whole circles must still
        // read as "just now".
        let tick = b.scale.resolution().as_nanos() as u64;
        let circle = Duration::from_nanos(tick << 32);
        let mut t = Instant::from_secs(1);
        for k in 0..6u32 {
            t = t + circle * (k + 1) + Duration::from_nanos(tick * 3);
            b.mark(t);
            assert!(!b.stood(t + Duration::from_millis(50)), "gap {k}");
            assert!(b.stood(t + interval));
            assert!(b.stood(t + circle), "a circle later it has stood long");
        }
    }
}
