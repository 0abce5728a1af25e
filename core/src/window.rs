//! A sliding window of counters in time buckets: the one mechanism behind the breaker's
//! time-based failure rate, the throttler's two-minute request/accept counts and the retry
//! budget's ratio.
//!
//! The window is a ring of `B` buckets, each `window / B` long, each holding `C` counters and
//! the sequence number of the bucket period it counts. Adding to a counter finds the bucket
//! for `now`, and if that bucket still holds an older period, claims it with a compare-and-swap
//! on its sequence number and zeroes it first. Reading sums the buckets whose period lies in the
//! last `B` periods, so the window covers between `B - 1` and `B` bucket lengths.
//!
//! How it is approximate, exactly: increments themselves are exact (`fetch_add` while the
//! counter and the delta are below 2^31, a saturating compare-and-swap above, so counts
//! saturate at `u32::MAX`; a wrap would need 2^31 added by adds racing one another between one
//! add's read of the counter and its `fetch_add`). Only at a
//! bucket boundary can a few be lost: an increment that lands on a bucket between another
//! thread's claim of it and that thread's zeroing is erased, so at most the increments of the
//! threads crossing the same boundary at the same moment. A reader concurrent with a writer
//! may see a counter of a bucket before its companion (calls before failures). Statistical
//! windows may be approximate (DESIGN.md §4); nothing that must be exact lives here.
//!
//! Period numbers are stored in 32-bit words, each beside its own [`Era`] (see `time::era`), and
//! widened back to full 64-bit period numbers before any comparison: a bucket last written any
//! number of circles (2^32 periods) ago reads as old, never as current, so no idle gap of any
//! length changes what the window counts. The hot path pays one more load (the bucket's era)
//! and widens only when the era differs from `now`'s. Buckets are at least 4 ns long, so the
//! era protocol keeps its slack.
//!
//! Time going backwards re-claims the bucket for the earlier period (the later buckets become
//! invisible until time catches up).

use core::time::Duration;

use crate::sync::{AtomicU32, Ordering};
use crate::time::era::{Era, widen};
use crate::time::{Instant, duration_as_nanos_saturating};

/// Period numbers are stored in full 32-bit words.
const PERIOD_BITS: u32 = 32;

/// The shortest bucket: 4 ns, so a period number's era fits in a `u32` (see `time::era`).
const MIN_BUCKET_NANOS: u64 = 4;

/// Below this, a counter and a delta are added with a plain `fetch_add`: two values under
/// 2^31 cannot wrap, and neither can the adds racing this one unless together they add
/// another 2^31 between its read and its add (billions of calls in flight at once).
const FAST_ADD_BELOW: u32 = 1 << 31;

/// `B` buckets of `C` counters over a sliding window.
#[derive(Debug)]
pub(crate) struct TimeWindow<const B: usize, const C: usize> {
    bucket_nanos: u64,
    buckets: [Bucket<C>; B],
}

#[derive(Debug)]
struct Bucket<const C: usize> {
    /// The low 32 bits of the period this bucket counts.
    period: AtomicU32,
    /// The era of `period` (see `time::era`): raised before a claim publishes a new period.
    era: Era,
    counts: [AtomicU32; C],
}

impl<const C: usize> Bucket<C> {
    crate::sync::const_fn_unless_loom! {
        fn new() -> Self {
            Bucket { period: AtomicU32::new(0), era: Era::new(), counts: zeroed_counters() }
        }
    }
}

#[cfg(not(loom))]
const fn zeroed_counters<const C: usize>() -> [AtomicU32; C] {
    [const { AtomicU32::new(0) }; C]
}

#[cfg(loom)]
fn zeroed_counters<const C: usize>() -> [AtomicU32; C] {
    core::array::from_fn(|_| AtomicU32::new(0))
}

#[cfg(not(loom))]
const fn new_buckets<const B: usize, const C: usize>() -> [Bucket<C>; B] {
    [const { Bucket::new() }; B]
}

#[cfg(loom)]
fn new_buckets<const B: usize, const C: usize>() -> [Bucket<C>; B] {
    core::array::from_fn(|_| Bucket::new())
}

#[allow(dead_code)] // each policy uses the part it needs
impl<const B: usize, const C: usize> TimeWindow<B, C> {
    crate::sync::const_fn_unless_loom! {
        /// A window `window` long. Each bucket is `window / B`, rounded up, and at least 4 ns.
        /// `B` must be at least 1 (checked by the policies' config validation; a zero here is
        /// treated as one bucket-less window that always reads zero).
        pub(crate) fn new(window: Duration) -> Self {
            let nanos = duration_as_nanos_saturating(window);
            let b = if B == 0 { 1 } else { B as u64 };
            let mut bucket_nanos = nanos.div_ceil(b);
            if bucket_nanos < MIN_BUCKET_NANOS {
                bucket_nanos = MIN_BUCKET_NANOS;
            }
            TimeWindow {
                bucket_nanos,
                buckets: new_buckets(),
            }
        }
    }

    /// The length of one bucket.
    pub(crate) const fn bucket_length(&self) -> Duration {
        Duration::from_nanos(self.bucket_nanos)
    }

    /// The full period number of `now`.
    #[inline]
    fn period(&self, now: Instant) -> u64 {
        now.as_nanos() / self.bucket_nanos
    }

    /// The full period number `bucket` counts, from its stored low bits and era.
    #[inline]
    fn stored_period(bucket: &Bucket<C>) -> u64 {
        let low = bucket.period.load(Ordering::Acquire);
        widen(low, PERIOD_BITS, bucket.era.read(), 0)
    }

    /// The bucket for `now`, claimed for its period: if it still holds another period, the
    /// thread that wins the compare-and-swap on its period number zeroes it first.
    #[inline]
    fn claim(&self, now: Instant) -> &Bucket<C> {
        let period = self.period(now);
        let bucket = &self.buckets[(period % B as u64) as usize];
        let low = bucket.period.load(Ordering::Acquire);
        // The hot path: the bucket already counts this period (equal low bits, in `now`'s own
        // era, cannot be another period: see `time::era`).
        if low != period as u32 || !bucket.era.read().is_era_of(period, PERIOD_BITS) {
            Self::claim_slow(bucket, period, low);
        }
        bucket
    }

    #[cold]
    #[inline(never)]
    fn claim_slow(bucket: &Bucket<C>, period: u64, low: u32) {
        let seen = bucket.era.read();
        if widen(low, PERIOD_BITS, seen, 0) == period {
            return; // this period, claimed in an earlier era of its own
        }
        // Era first, so every reader of the new period number widens it correctly. Equal low
        // bits (the same slot one whole circle later) make the swap a no-op that still
        // succeeds: such a claim may zero twice, as any boundary race may.
        bucket.era.cover(seen, period, PERIOD_BITS);
        if bucket
            .period
            .compare_exchange(low, period as u32, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            for c in &bucket.counts {
                c.store(0, Ordering::Release);
            }
        }
    }

    /// Adds `deltas[i]` to counter `i` in the bucket for `now` (saturating at `u32::MAX`).
    #[inline]
    pub(crate) fn add(&self, now: Instant, deltas: [u32; C]) {
        if B == 0 {
            return;
        }
        let bucket = self.claim(now);
        for (c, d) in bucket.counts.iter().zip(deltas) {
            if d == 0 {
                continue;
            }
            // One `fetch_add`, never a retry loop, while the sum stays far from the ceiling;
            // near it (or for a huge delta), a saturating compare-and-swap loop.
            if c.load(Ordering::Relaxed) < FAST_ADD_BELOW && d < FAST_ADD_BELOW {
                c.fetch_add(d, Ordering::AcqRel);
            } else {
                let _ = c.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| {
                    Some(v.saturating_add(d))
                });
            }
        }
    }

    /// The sums of each counter over the window ending at `now`.
    pub(crate) fn totals(&self, now: Instant) -> [u32; C] {
        let mut sums = [0u32; C];
        if B == 0 {
            return sums;
        }
        let current = self.period(now);
        for bucket in &self.buckets {
            let period = Self::stored_period(bucket);
            // A bucket "from the future" (time went backwards) is not in the window.
            if period <= current && current - period < B as u64 {
                for (s, c) in sums.iter_mut().zip(&bucket.counts) {
                    *s = s.saturating_add(c.load(Ordering::Acquire));
                }
            }
        }
        sums
    }

    /// Adds one to counter `index` in the bucket for `now` only if the window total of that
    /// counter stays at or below `limit(totals)`; answers whether it did.
    ///
    /// Exact among callers in the same bucket period: the increment is a compare-and-swap on
    /// the current bucket's counter from the value the limit was checked against, and no other
    /// bucket's count can grow meanwhile. Callers passing `now`s in different periods (or a
    /// boundary claim, as in [`add`](Self::add)) can each pass once against a stale view.
    pub(crate) fn try_add_one(
        &self,
        now: Instant,
        index: usize,
        limit: impl Fn(&[u32; C]) -> u32,
    ) -> bool {
        if B == 0 || index >= C {
            return false;
        }
        let bucket = self.claim(now);
        let counter = &bucket.counts[index];
        let mut current = counter.load(Ordering::Acquire);
        loop {
            let totals = self.totals(now);
            // The totals were read after `current`; the others' share excludes this bucket.
            let others = totals[index].saturating_sub(current);
            if u64::from(others) + u64::from(current) + 1 > u64::from(limit(&totals)) {
                return false;
            }
            match counter.compare_exchange_weak(
                current,
                current.saturating_add(1),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// Forgets everything.
    pub(crate) fn clear(&self) {
        for bucket in &self.buckets {
            for c in &bucket.counts {
                c.store(0, Ordering::Release);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn counts_accumulate_then_slide_out() {
        let w: TimeWindow<4, 2> = TimeWindow::new(Duration::from_secs(4));
        assert_eq!(w.bucket_length(), SEC);
        w.add(Instant::from_millis(100), [1, 0]);
        w.add(Instant::from_millis(1_100), [1, 1]);
        assert_eq!(w.totals(Instant::from_millis(1_200)), [2, 1]);
        // At t=4.5 s the buckets for periods 1..=4 are visible; period 0 has slid out.
        assert_eq!(w.totals(Instant::from_millis(4_500)), [1, 1]);
        assert_eq!(w.totals(Instant::from_millis(5_000)), [0, 0]);
    }

    #[test]
    fn a_reused_bucket_is_zeroed_first() {
        let w: TimeWindow<2, 1> = TimeWindow::new(Duration::from_secs(2));
        w.add(Instant::from_secs(0), [5]);
        w.add(Instant::from_secs(2), [1]); // same slot, new period
        assert_eq!(w.totals(Instant::from_secs(2)), [1]);
    }

    #[test]
    fn a_year_later_the_window_is_empty() {
        let w: TimeWindow<10, 1> = TimeWindow::new(Duration::from_secs(120));
        w.add(Instant::from_secs(5), [7]);
        let year = Instant::from_secs(5 + 365 * 86_400);
        assert_eq!(w.totals(year), [0]);
        w.add(year, [1]);
        assert_eq!(w.totals(year), [1]);
    }

    #[test]
    fn a_bucket_whole_circles_old_is_not_current() {
        // 1 ms buckets: the period word repeats every 2^32 ms (49.7 days). A count made at
        // 0.5 ms must not reappear one, two or three circles later, nor after the idle gap is
        // broken by a write to another bucket.
        let w: TimeWindow<10, 1> = TimeWindow::new(Duration::from_millis(10));
        w.add(Instant::from_micros(500), [7]);
        for circles in 1..=3u64 {
            let later = Instant::from_micros(500 + circles * (1u64 << 32) * 1_000);
            assert_eq!(w.totals(later), [0], "{circles} circles later");
            w.add(later + Duration::from_millis(1), [1]);
            assert_eq!(w.totals(later + Duration::from_millis(1)), [1]);
            w.add(later + Duration::from_millis(20), [0]);
            assert_eq!(w.totals(later + Duration::from_millis(20)), [0]);
        }
        // The same slot one circle later is claimed and zeroed, not added to.
        let w: TimeWindow<4, 1> = TimeWindow::new(Duration::from_millis(4));
        w.add(Instant::ZERO, [5]);
        let circle = Instant::from_millis(1u64 << 32);
        w.add(circle, [1]);
        assert_eq!(w.totals(circle), [1]);
    }

    #[test]
    fn time_backwards_hides_future_buckets_and_never_panics() {
        let w: TimeWindow<4, 1> = TimeWindow::new(Duration::from_secs(4));
        w.add(Instant::from_secs(10), [3]);
        assert_eq!(w.totals(Instant::from_secs(2)), [0]);
        w.add(Instant::from_secs(2), [1]);
        assert_eq!(w.totals(Instant::from_secs(2)), [1]);
        w.add(Instant::MAX, [1]);
        assert_eq!(w.totals(Instant::MAX), [1]);
        w.add(Instant::ZERO, [u32::MAX]);
        w.add(Instant::ZERO, [u32::MAX]);
        assert_eq!(w.totals(Instant::ZERO), [u32::MAX], "counts saturate");
    }

    #[test]
    fn tiny_windows_have_four_nanosecond_buckets() {
        let w: TimeWindow<8, 1> = TimeWindow::new(Duration::ZERO);
        assert_eq!(w.bucket_length(), Duration::from_nanos(4));
        w.clear();
        assert_eq!(w.totals(Instant::ZERO), [0]);
    }
}
