//! A sliding window of counters in time buckets: the one mechanism behind the breaker's
//! time-based failure rate and the retry budgets' ratios, and (kept as running totals in
//! `window/running.rs`: the same meaning, read in O(1)) the throttler's request/accept counts.
//!
//! The window is a ring of `B` buckets, each `window / B` long, each holding `C` counters and
//! the number of the bucket period it counts. Adding to a counter finds the bucket for `now`,
//! and if that bucket still holds another period, claims it (below) and zeroes it first.
//! Reading sums the buckets whose period lies in the last `B` periods, so the window covers
//! between `B - 1` and `B` bucket lengths: that is its documented meaning, and the reference
//! models (`resilix-reference`) are bucketed the same way.
//!
//! How it is approximate, exactly: increments themselves are exact (`fetch_add` while the
//! counter and the delta are below 2^31, a saturating compare-and-swap above, so counts
//! saturate at `u32::MAX`; a wrap would need 2^31 added by adds racing one another between one
//! add's read of the counter and its `fetch_add`). Only at a bucket boundary can a few be
//! lost, and only while a claim runs (see below). A reader
//! concurrent with a writer may see a counter of a bucket before its companion (calls before
//! failures). Statistical windows may be approximate (docs/design/contracts.md §4); nothing that must be
//! exact lives here. Single-threaded, the window is exact.
//!
//! Period numbers are stored in 31-bit words, each beside its own [`Era`] (see `time::era`),
//! and widened back to full 64-bit period numbers before any comparison: a bucket last written
//! any number of circles (2^31 periods) ago reads as old, never as current, so no idle gap of
//! any length changes what the window counts. The word's top bit marks a claim in progress.
//! Buckets are at least 8 ns long, so a 31-bit period word's era fits in a `u32` for the whole
//! timeline and the era protocol keeps its slack.
//!
//! A claim of a bucket is three steps (mark, zero, publish), so a bucket's old counts never
//! appear in a new period, even to a concurrent reader; the loss at a boundary is the
//! increments that land between a claim's mark and its zeroing.
//!
//! Design notes (the claim protocol and what it may lose):
//! docs/design/time-and-eras.md#claiming-a-bucket

use core::time::Duration;

mod running;
pub(crate) use running::RunningWindow;

use crate::sync::{AtomicU32, Ordering};
use crate::time::divide::Divisor;
use crate::time::era::{Era, EraSeen, widen};
use crate::time::{Instant, duration_as_nanos_saturating};

/// Period numbers are stored in the low 31 bits of their word.
const PERIOD_BITS: u32 = 31;

/// The low 31 bits of a period word.
const PERIOD_MASK: u32 = (1 << PERIOD_BITS) - 1;

/// The period word's top bit: the bucket is being claimed (zeroed) for the period in the low
/// bits, and readers skip it.
const CLAIMING: u32 = 1 << PERIOD_BITS;

/// The shortest bucket: 8 ns, so a 31-bit period number's era fits in a `u32` (see
/// `time::era`).
pub(crate) const MIN_BUCKET_NANOS: u64 = 8;

/// How many times a claim retries after losing a compare-and-swap (each loss is another
/// thread's progress). A claimer that still has not seen its period published adds to the
/// bucket as it stands: one increment misfiled, never a loop.
const CLAIM_TRIES: u32 = 4;

/// Below this, a counter and a delta are added with a plain `fetch_add`: two values under
/// 2^31 cannot wrap, and neither can the adds racing this one unless together they add
/// another 2^31 between its read and its add (billions of calls in flight at once).
const FAST_ADD_BELOW: u32 = 1 << 31;

/// `B` buckets of `C` counters over a sliding window.
#[derive(Debug)]
pub(crate) struct TimeWindow<const B: usize, const C: usize> {
    bucket_nanos: u64,
    /// Division by `bucket_nanos`, by multiplication (`time::divide`): every add needs the
    /// period of `now`.
    per_bucket: Divisor,
    buckets: [Bucket<C>; B],
}

#[derive(Debug)]
struct Bucket<const C: usize> {
    /// The low 31 bits of the period this bucket counts, and [`CLAIMING`] while a claim
    /// zeroes it.
    period: AtomicU32,
    /// The era of `period` (see `time::era`): raised by a claim after its mark and before it
    /// publishes the new period.
    era: Era,
    counts: [AtomicU32; C],
}

impl<const C: usize> Bucket<C> {
    crate::sync::const_fn_unless_loom! {
        fn new() -> Self {
            Bucket { period: AtomicU32::new(0), era: Era::new(), counts: zeroed_counters() }
        }
    }

    /// The full period an unmarked word `word` means, with the era `seen`.
    #[inline]
    fn widened(word: u32, seen: EraSeen, now_period: u64) -> u64 {
        // Shortcut: in `now`'s own era, equal low bits are `now`'s period.
        if seen.is_era_of(now_period, PERIOD_BITS) && word == low_bits(now_period) {
            now_period
        } else {
            widen(word, PERIOD_BITS, seen, 0)
        }
    }

    /// The full period this bucket counts, as a reader sees it: `None` while it is being
    /// claimed. The era is read first (see the module docs for why that order).
    #[inline]
    fn published_period(&self, now_period: u64) -> Option<u64> {
        let seen = self.era.read();
        let word = self.period.load(Ordering::Acquire);
        if word & CLAIMING != 0 {
            None
        } else {
            Some(Self::widened(word, seen, now_period))
        }
    }
}

/// The low 31 bits of a full period number, as stored.
#[inline]
const fn low_bits(period: u64) -> u32 {
    period as u32 & PERIOD_MASK
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

/// The bucket length of a window `window` long in `buckets` buckets: `window / buckets`
/// rounded up, and at least [`MIN_BUCKET_NANOS`] (the policies refuse windows shorter than
/// `buckets × MIN_BUCKET_NANOS`, so the floor never lengthens a configured window).
pub(crate) const fn bucket_nanos(window: Duration, buckets: usize) -> u64 {
    let nanos = duration_as_nanos_saturating(window);
    let b = if buckets == 0 { 1 } else { buckets as u64 };
    let bucket = nanos.div_ceil(b);
    if bucket < MIN_BUCKET_NANOS {
        MIN_BUCKET_NANOS
    } else {
        bucket
    }
}

#[allow(dead_code)] // each policy uses the part it needs
impl<const B: usize, const C: usize> TimeWindow<B, C> {
    crate::sync::const_fn_unless_loom! {
        /// A window `window` long. Each bucket is `window / B`, rounded up, and at least 8 ns.
        /// `B` must be at least 1 (checked by the policies' config validation; a zero here is
        /// treated as one bucket-less window that always reads zero).
        pub(crate) fn new(window: Duration) -> Self {
            TimeWindow {
                bucket_nanos: bucket_nanos(window, B),
                per_bucket: Divisor::new(bucket_nanos(window, B)),
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
        self.per_bucket.divide(now.as_nanos())
    }

    /// The index of the bucket that counts `period`.
    #[inline]
    const fn index(period: u64) -> usize {
        (period % B as u64) as usize
    }

    /// The bucket for `now`, claimed for its period (see the module docs): if it still holds
    /// another period, the thread that wins the mark zeroes it and publishes the period.
    #[inline]
    fn claim(&self, now: Instant) -> &Bucket<C> {
        let period = self.period(now);
        let bucket = &self.buckets[Self::index(period)];
        let low = low_bits(period);
        let word = bucket.period.load(Ordering::Acquire);
        // The hot path: the bucket already counts this period, published (no mark) in `now`'s
        // own era, where equal low bits cannot be another period (see `time::era`).
        if word == low && bucket.era.read().is_era_of(period, PERIOD_BITS) {
            return bucket;
        }
        Self::claim_slow(bucket, period, low, word);
        bucket
    }

    #[cold]
    #[inline(never)]
    fn claim_slow(bucket: &Bucket<C>, period: u64, low: u32, mut word: u32) {
        for _ in 0..CLAIM_TRIES {
            if word & CLAIMING != 0 {
                if word & PERIOD_MASK == low {
                    // Being zeroed for this period: add beside the claim.
                    return;
                }
            } else if Bucket::<C>::widened(word, bucket.era.read(), period) == period {
                return;
            }
            match bucket.period.compare_exchange(
                word,
                CLAIMING | low,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    let seen = bucket.era.read();
                    if word == low && Bucket::<C>::widened(word, seen, period) == period {
                        // The same slot a whole circle later, and an earlier claim of this
                        // very period published it after we read the era: put it back.
                        let _ = bucket.period.compare_exchange(
                            CLAIMING | low,
                            word,
                            Ordering::AcqRel,
                            Ordering::Relaxed,
                        );
                        return;
                    }
                    bucket.era.cover(seen, period, PERIOD_BITS);
                    // Swaps, not stores: the same effect, once per bucket period, and loom
                    // (0.7, issue #254) can model a plain store between the read and the
                    // write of a racing `fetch_add`, which no hardware does.
                    for c in &bucket.counts {
                        c.swap(0, Ordering::AcqRel);
                    }
                    // Fails only if a claim of another period took the mark over meanwhile.
                    let _ = bucket.period.compare_exchange(
                        CLAIMING | low,
                        low,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    );
                    return;
                }
                Err(actual) => word = actual,
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

    /// The sums of each counter over the window ending at `now`, leaving out bucket `skip`
    /// (`B` or more to leave out none).
    fn totals_except(&self, now: Instant, skip: usize) -> [u32; C] {
        let mut sums = [0u32; C];
        let current = self.period(now);
        for (i, bucket) in self.buckets.iter().enumerate() {
            if i == skip {
                continue;
            }
            // A bucket "from the future" (time went backwards) is not in the window; nor is one
            // being claimed.
            let Some(period) = bucket.published_period(current) else {
                continue;
            };
            if period <= current && current - period < B as u64 {
                for (s, c) in sums.iter_mut().zip(&bucket.counts) {
                    *s = s.saturating_add(c.load(Ordering::Acquire));
                }
            }
        }
        sums
    }

    /// The sums of each counter over the window ending at `now`.
    pub(crate) fn totals(&self, now: Instant) -> [u32; C] {
        if B == 0 {
            return [0; C];
        }
        self.totals_except(now, B)
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
mod tests;
