//! The two windows a breaker counts its closed-state outcomes in: the last stretch of time
//! ([`TimeBuckets`]) or the last N calls ([`CallRing`]).
//!
//! Both are approximate only under concurrency, and only in the ways written on each type; a
//! breaker's trip decision reads them, and an error of one call in a rate over twenty is
//! within what a statistical threshold can mean (docs/design/contracts.md §4).

use core::time::Duration;

use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::window::TimeWindow;

pub(crate) use sealed::Totals;

pub(crate) mod sealed {
    use crate::time::Instant;

    /// The sums a trip decision reads (public only inside this private module).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Totals {
        pub calls: u32,
        pub failures: u32,
        pub slow: u32,
    }

    /// The window operations, hidden so only this crate implements them.
    pub trait Counts {
        fn record(&self, now: Instant, failed: bool, slow: bool);
        fn totals(&self, now: Instant) -> Totals;
        fn clear(&self);
        /// The calls a count window holds (what `minimum_calls` must not exceed); `None`
        /// for a time window.
        fn calls(&self) -> Option<u32> {
            None
        }
    }
}

/// A window of recent outcomes a [`Breaker`](super::Breaker) can count in: [`TimeBuckets`] or
/// [`CallRing`]. Sealed: the breaker's docs state exactly how each is approximate, which an
/// outside implementation could not promise.
pub trait OutcomeWindow: sealed::Counts {}

/// The outcomes of the last stretch of time, in `B` buckets (the shared sliding time window).
///
/// A window of length `L` counts the calls of the last `L - L/B` to `L`: the oldest bucket
/// slides out whole. Under concurrency a call is lost only when it lands on a bucket at the
/// instant another thread claims that bucket for a new period and zeroes it (at most the calls
/// crossing the same bucket boundary at the same moment); a reader may see one call's count
/// before its failure bit. Time going backwards hides the later buckets until time catches
/// up: the rate then reads low, so the circuit does not open on stale counts.
#[derive(Debug)]
pub struct TimeBuckets<const B: usize> {
    window: TimeWindow<B, 3>,
}

impl<const B: usize> TimeBuckets<B> {
    crate::sync::const_fn_unless_loom! {
        pub(crate) fn new(length: Duration) -> Self {
            TimeBuckets { window: TimeWindow::new(length) }
        }
    }
}

impl<const B: usize> sealed::Counts for TimeBuckets<B> {
    #[inline]
    fn record(&self, now: Instant, failed: bool, slow: bool) {
        self.window.add(now, [1, failed as u32, slow as u32]);
    }

    fn totals(&self, now: Instant) -> Totals {
        let [calls, failures, slow] = self.window.totals(now);
        Totals {
            calls,
            failures,
            slow,
        }
    }

    fn clear(&self) {
        self.window.clear();
    }
}

impl<const B: usize> OutcomeWindow for TimeBuckets<B> {}

/// The outcomes of the last `calls` calls, two bits each, sixteen to a word: capacity
/// `16 × WORDS` (resilience4j's default window of 100 calls needs `WORDS = 7`).
///
/// Approximate only under concurrency: a reader concurrent with a writer may see a call
/// before its outcome (a failure read as a success, at most one per concurrent writer), more
/// than `calls` records in progress at once may lose one outcome, and a record racing a clear
/// may leave its outcome in the fresh window. A ring that has filled once reads as full for
/// ever.
// Why (the cursor, the slot writes, the lap taken back): docs/design/breaker.md#the-call-ring
#[derive(Debug)]
pub struct CallRing<const WORDS: usize> {
    calls: u32,
    cursor: AtomicU32,
    slots: [AtomicU32; WORDS],
}

const FAILED_BITS: u32 = 0x5555_5555;
const SLOW_BITS: u32 = 0xAAAA_AAAA;

#[cfg(not(loom))]
const fn zeroed_words<const WORDS: usize>() -> [AtomicU32; WORDS] {
    [const { AtomicU32::new(0) }; WORDS]
}

#[cfg(loom)]
fn zeroed_words<const WORDS: usize>() -> [AtomicU32; WORDS] {
    core::array::from_fn(|_| AtomicU32::new(0))
}

impl<const WORDS: usize> CallRing<WORDS> {
    /// How many calls the ring can hold.
    pub const CAPACITY: u32 = (WORDS as u32).saturating_mul(16);

    crate::sync::const_fn_unless_loom! {
        /// A ring over the last `calls` calls; `calls` is checked by the breaker's constructor.
        pub(crate) fn new(calls: u32) -> Self {
            CallRing { calls, cursor: AtomicU32::new(0), slots: zeroed_words() }
        }
    }
}

impl<const WORDS: usize> sealed::Counts for CallRing<WORDS> {
    fn calls(&self) -> Option<u32> {
        Some(self.calls)
    }

    fn record(&self, _now: Instant, failed: bool, slow: bool) {
        let n = self.calls;
        if n == 0 {
            return;
        }
        let lap_end = n.saturating_mul(2);
        let claimed = self.cursor.fetch_add(1, Ordering::AcqRel);
        if claimed.wrapping_add(1) == lap_end {
            // Exactly one record per lap reaches the lap's end and takes the cursor back one
            // lap (positions are kept modulo `calls`). Conditional, because a clear may have
            // reset the cursor since.
            let _ = self
                .cursor
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| {
                    (c >= lap_end).then(|| c - n)
                });
        }
        // `claimed` is below 2 × calls unless a lap's end is still being taken back.
        let index = if claimed < n {
            claimed
        } else if claimed < lap_end {
            claimed - n
        } else {
            claimed % n
        } as usize;
        let shift = (index % 16) * 2;
        let mask = 0b11 << shift;
        let bits = (failed as u32 | ((slow as u32) << 1)) << shift;
        let word = &self.slots[index / 16];
        let seen = word.load(Ordering::Acquire);
        if seen & mask == bits {
            // The slot already holds these bits: writing them is a no-op (the swap would
            // replace `seen` with itself), so the common success-after-success costs no write.
            return;
        }
        if bits == 0 {
            word.fetch_and(!mask, Ordering::AcqRel);
        } else {
            let _ = word.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |w| {
                Some((w & !mask) | bits)
            });
        }
    }

    fn totals(&self, _now: Instant) -> Totals {
        let mut t = Totals {
            calls: self.cursor.load(Ordering::Acquire).min(self.calls),
            failures: 0,
            slow: 0,
        };
        for word in &self.slots {
            let w = word.load(Ordering::Acquire);
            t.failures += (w & FAILED_BITS).count_ones();
            t.slow += (w & SLOW_BITS).count_ones();
        }
        // A reader that sees bits before the cursor (a concurrent clear) must not report a
        // rate above one.
        t.failures = t.failures.min(t.calls);
        t.slow = t.slow.min(t.calls);
        t
    }

    fn clear(&self) {
        self.cursor.store(0, Ordering::Release);
        for word in &self.slots {
            word.store(0, Ordering::Release);
        }
    }
}

impl<const WORDS: usize> OutcomeWindow for CallRing<WORDS> {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::sealed::Counts;
    use super::*;

    const T: Instant = Instant::ZERO;

    #[test]
    fn ring_keeps_only_the_last_n_outcomes() {
        let r: CallRing<1> = CallRing::new(3);
        r.record(T, true, false);
        r.record(T, true, true);
        assert_eq!(
            r.totals(T),
            Totals {
                calls: 2,
                failures: 2,
                slow: 1
            }
        );
        r.record(T, false, false);
        r.record(T, false, false); // overwrites the first failure
        assert_eq!(
            r.totals(T),
            Totals {
                calls: 3,
                failures: 1,
                slow: 1
            }
        );
        r.record(T, false, false);
        assert_eq!(
            r.totals(T),
            Totals {
                calls: 3,
                failures: 0,
                slow: 0
            }
        );
    }

    #[test]
    fn ring_of_one_and_of_full_capacity() {
        let one: CallRing<1> = CallRing::new(1);
        one.record(T, true, false);
        assert_eq!(one.totals(T).failures, 1);
        one.record(T, false, false);
        assert_eq!(
            one.totals(T),
            Totals {
                calls: 1,
                failures: 0,
                slow: 0
            }
        );

        let full: CallRing<2> = CallRing::new(CallRing::<2>::CAPACITY);
        for i in 0..100u32 {
            full.record(T, i % 2 == 0, i % 4 == 0);
        }
        // The last 32 of 0..100 are 68..100: 16 even, 8 divisible by four.
        assert_eq!(
            full.totals(T),
            Totals {
                calls: 32,
                failures: 16,
                slow: 8
            }
        );
    }

    #[test]
    fn cursor_cycles_and_never_forgets_that_the_ring_is_full() {
        let r: CallRing<1> = CallRing::new(5);
        for i in 0..1_000u32 {
            r.record(T, true, false);
            assert_eq!(r.totals(T).calls, (i + 1).min(5));
            assert!(r.cursor.load(Ordering::Relaxed) < 10);
        }
        assert_eq!(r.totals(T).failures, 5);
    }

    #[test]
    fn clear_forgets_everything() {
        let r: CallRing<1> = CallRing::new(4);
        r.record(T, true, true);
        r.clear();
        assert_eq!(r.totals(T), Totals::default());
    }

    #[test]
    fn time_buckets_count_and_expire() {
        let w: TimeBuckets<10> = TimeBuckets::new(Duration::from_secs(10));
        w.record(Instant::from_secs(1), true, false);
        w.record(Instant::from_secs(2), false, true);
        assert_eq!(
            w.totals(Instant::from_secs(3)),
            Totals {
                calls: 2,
                failures: 1,
                slow: 1
            }
        );
        assert_eq!(w.totals(Instant::from_secs(30)), Totals::default());
        w.clear();
        assert_eq!(w.totals(Instant::from_secs(3)), Totals::default());
    }
}
