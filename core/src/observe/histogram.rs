//! An allocation-free, lock-free histogram of call durations.
//!
//! It is an [`Observer`]: put it in a pipeline's observer slot and it records the duration of
//! every settled call ([`Event::Executed`]) and nothing else, so shed requests never reach it
//! (docs/design/spec.md §8: "the latency of load shedding a request should be extremely low compared with
//! other requests", and would drag every percentile down).
//!
//! # Layout and error
//!
//! Log-linear buckets over nanoseconds, in the manner of HdrHistogram: every duration below
//! `2^(P+1)` ns has a bucket of its own, and each power-of-two octave above is split into `2^P`
//! equal buckets. All of `0..=u64::MAX` ns (≈ 584 years) is covered; a longer duration
//! (up to [`Duration::MAX`]) is recorded as `u64::MAX` ns, in the top bucket, so it still counts.
//! A bucket is reported by its midpoint, so a quantile differs from the exact one by at most
//! `exact / 2^(P+1)` ([`RELATIVE_ERROR`](DurationHistogram::RELATIVE_ERROR)), and so does the
//! mean (give or take the rounding to whole nanoseconds).
//!
//! | `P` | buckets | `size_of` | relative error |
//! |---|---|---|---|
//! | 2 | 252 | 1016 B | 12.5 % |
//! | **3 (default)** | **496** | **1992 B** | **6.25 %** |
//! | 4 | 976 | 3912 B | 3.13 % |
//! | 5 | 1920 | 7688 B | 1.56 % |
//!
//! The default `P = 3` is ours: about 2 KB, affordable in a Cortex-M4's RAM, for a 6.25 % bound
//! that still shows a p99 moving by a tenth. Pick another `P` (0 to 16) with
//! `DurationHistogram<P, { bucket_count(P) }>`; `P = 6` (≈ 15 KB, 0.78 %) comes close to
//! HdrHistogram's common two-significant-digit setting.
//!
//! # Concurrency and the 32-bit rule
//!
//! Every word is an `AtomicU32` (docs/design/contracts.md §4: no 64-bit atomics on 32-bit MCUs). A bucket
//! count saturates at `u32::MAX` instead of wrapping; [`count`](DurationHistogram::count) is
//! the sum of the buckets, in a `u64`. The minimum and maximum are kept as order-preserving
//! 32-bit codes (the same log-linear layout with 26 sub-bucket bits), so they are exact below
//! `2^27` ns (≈ 134 ms) and within `2^-26` (≈ 15 parts per billion) above: a 10 s maximum is
//! off by less than 128 ns. Readouts taken while other threads record are approximate
//! snapshots (each word is read once, not all at one instant); once recording stops they are
//! consistent and within the bounds above. All accesses are `Relaxed`: the histogram publishes no other memory.
//!
//! ```
//! use core::time::Duration;
//! use resilix::observe::DurationHistogram;
//!
//! static LATENCY: DurationHistogram = DurationHistogram::new();
//!
//! for ms in 1..=100 {
//!     LATENCY.record(Duration::from_millis(ms));
//! }
//! assert_eq!(LATENCY.count(), 100);
//! let p99 = LATENCY.quantile(0.99).unwrap();
//! assert!(p99.abs_diff(Duration::from_millis(99)) <= Duration::from_millis(99) / 16);
//! assert_eq!(LATENCY.max(), Some(Duration::from_millis(100)));
//! ```
//!
//! Design notes: docs/design/observe.md

mod buckets;

use core::fmt;
use core::time::Duration;

use super::{Event, Observer};
use crate::sync::{AtomicU32, Ordering};

/// Sub-bucket bits of the min/max codes: the finest layout whose indexes, plus one sentinel,
/// fit in a `u32` ((65 − 26)·2^26 < 2^32).
const EXTREMES_BITS: u32 = 26;
/// `min_code` before anything is recorded: above every real code.
const NO_MIN: u32 = u32::MAX;
/// `max_code` before anything is recorded; real codes are stored plus one.
const NO_MAX: u32 = 0;
/// The largest `P` accepted: finer layouts cost megabytes, and `P` must stay below the
/// min/max precision for the readouts to stay within the stated error.
const MAX_PRECISION: u32 = 16;

/// How many buckets (each one `AtomicU32`) a histogram with `precision` sub-bucket bits needs:
/// `(65 − precision)·2^precision`. Used as the second parameter of [`DurationHistogram`].
///
/// ```
/// use resilix::observe::histogram::{DurationHistogram, bucket_count};
///
/// // 3.1 % error in 3.9 KB instead of the default 6.25 % in 2 KB.
/// static FINE: DurationHistogram<4, { bucket_count(4) }> = DurationHistogram::with_precision();
/// assert_eq!(bucket_count(4), 976);
/// ```
pub const fn bucket_count(precision: u32) -> usize {
    buckets::count(precision)
}

/// A lock-free, allocation-free histogram of durations, with `2^PRECISION` log-linear
/// sub-buckets per octave of nanoseconds. See the [module docs](self) for the layout, the
/// error bound and the size.
///
/// `BUCKETS` must equal [`bucket_count(PRECISION)`](bucket_count) (checked at compile time);
/// the defaults give `P = 3`: 496 buckets, 1992 bytes, error ≤ 6.25 %.
///
/// ```
/// use core::time::Duration;
/// use resilix::observe::{DurationHistogram, Event, Observer};
/// use resilix::{RejectReason, Rejection, Verdict};
///
/// let h = DurationHistogram::new();
/// h.on_event(&Event::Executed { verdict: Verdict::Success, duration: Duration::from_millis(5) });
/// h.on_event(&Event::Rejected { rejection: Rejection::new(RejectReason::CircuitOpen) });
/// assert_eq!(h.count(), 1, "a refusal is not a latency");
/// assert_eq!(h.quantile(0.5), Some(Duration::from_millis(5)));
/// ```
pub struct DurationHistogram<const PRECISION: u32 = 3, const BUCKETS: usize = 496> {
    counts: [AtomicU32; BUCKETS],
    /// The smallest value's code, or `NO_MIN`.
    min_code: AtomicU32,
    /// The largest value's code plus one, or `NO_MAX`.
    max_code: AtomicU32,
}

impl DurationHistogram {
    crate::sync::const_fn_unless_loom! {
        /// An empty histogram with the default precision (`P = 3`: error ≤ 6.25 %, 1992
        /// bytes). `const`, so it can live in a `static`.
        ///
        /// ```
        /// use resilix::observe::DurationHistogram;
        ///
        /// static H: DurationHistogram = DurationHistogram::new();
        /// assert_eq!(H.count(), 0);
        /// assert_eq!(H.quantile(0.5), None);
        /// ```
        pub fn new() -> Self {
            Self::with_precision()
        }
    }
}

impl Default for DurationHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl<const PRECISION: u32, const BUCKETS: usize> DurationHistogram<PRECISION, BUCKETS> {
    /// The bound on the relative error of [`quantile`](Self::quantile) and
    /// [`mean`](Self::mean): `1 / 2^(PRECISION+1)`. The estimate `e` of an exact value `x`
    /// satisfies `|e − x| ≤ x · RELATIVE_ERROR`.
    pub const RELATIVE_ERROR: f64 = 1.0 / (1u64 << (PRECISION + 1)) as f64;

    crate::sync::const_fn_unless_loom! {
        /// An empty histogram with `2^PRECISION` sub-buckets per octave. A `BUCKETS` other
        /// than [`bucket_count(PRECISION)`](bucket_count), or a `PRECISION` above 16, is a
        /// compile-time error.
        ///
        /// ```
        /// use resilix::observe::histogram::{DurationHistogram, bucket_count};
        ///
        /// // 1 KB, error ≤ 12.5 %: for a tight RAM budget.
        /// let small = DurationHistogram::<2, { bucket_count(2) }>::with_precision();
        /// assert_eq!(core::mem::size_of_val(&small), 1016);
        /// ```
        pub fn with_precision() -> Self {
            const {
                assert!(PRECISION <= MAX_PRECISION, "PRECISION must be at most 16");
                assert!(
                    BUCKETS == buckets::count(PRECISION),
                    "BUCKETS must be bucket_count(PRECISION)"
                );
            }
            DurationHistogram {
                counts: zeroed_counts(),
                min_code: AtomicU32::new(NO_MIN),
                max_code: AtomicU32::new(NO_MAX),
            }
        }
    }

    /// Records one duration. Lock-free, allocation-free, `&self`: call it from any thread or
    /// interrupt handler. A duration longer than `u64::MAX` ns is recorded as `u64::MAX` ns.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::observe::DurationHistogram;
    ///
    /// let h = DurationHistogram::new();
    /// h.record(Duration::from_micros(250));
    /// h.record(Duration::MAX);
    /// assert_eq!(h.count(), 2);
    /// assert_eq!(h.max(), Some(Duration::from_nanos(u64::MAX)));
    /// ```
    pub fn record(&self, duration: Duration) {
        let nanos = saturating_nanos(duration);
        if let Some(count) = self.counts.get(buckets::index(nanos, PRECISION)) {
            saturating_add(count, 1);
        }
        let code = buckets::index(nanos, EXTREMES_BITS) as u32;
        self.note_extremes(code, code + 1);
    }

    /// How many durations were recorded (the sum of the buckets, each saturating at
    /// `u32::MAX`).
    pub fn count(&self) -> u64 {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed) as u64)
            .sum()
    }

    /// The smallest recorded duration (exact below 2^27 ns, else rounded down by less than
    /// 2^-26 of it), or `None` when empty.
    pub fn min(&self) -> Option<Duration> {
        self.min_nanos().map(Duration::from_nanos)
    }

    /// The largest recorded duration (exact below 2^27 ns, else rounded up by less than
    /// 2^-26 of it), or `None` when empty.
    pub fn max(&self) -> Option<Duration> {
        self.max_nanos().map(Duration::from_nanos)
    }

    /// The `q`-quantile of the recorded durations, within
    /// [`RELATIVE_ERROR`](Self::RELATIVE_ERROR) of the exact one.
    ///
    /// The exact `q`-quantile of `n` values is the nearest-rank one: the `r`-th smallest, with
    /// `r = max(1, ⌈q·n⌉)` computed in `f64`. So `0.0` is the minimum, `1.0` the maximum (both
    /// returned as [`min`](Self::min) and [`max`](Self::max)), and `0.5` of `[1, 2, 3, 4]`
    /// is 2. The estimate always lies within `min ..= max`.
    ///
    /// `None` when empty, and when `q` is NaN or outside `0.0..=1.0`: a `q` of `99.0` meant as
    /// "p99" is a mistake that clamping to the maximum would hide.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::observe::DurationHistogram;
    ///
    /// let h = DurationHistogram::new();
    /// assert_eq!(h.quantile(0.5), None, "empty");
    /// for us in [100, 200, 300, 400] {
    ///     h.record(Duration::from_micros(us));
    /// }
    /// let median = h.quantile(0.5).unwrap();
    /// assert!(median.abs_diff(Duration::from_micros(200)) <= Duration::from_micros(200) / 16);
    /// assert_eq!(h.quantile(1.0), Some(Duration::from_micros(400)));
    /// assert_eq!(h.quantile(99.0), None, "a percentile is not a quantile");
    /// ```
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if !(0.0..=1.0).contains(&q) {
            return None;
        }
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = nearest_rank(q, total);
        let (min, max) = (self.min_nanos(), self.max_nanos());
        let exact_end = if rank == 1 {
            min
        } else if rank == total {
            max
        } else {
            None
        };
        let nanos = match exact_end {
            Some(v) => v,
            None => clamp(self.bucket_at_rank(rank)?, min, max),
        };
        Some(Duration::from_nanos(nanos))
    }

    /// The mean of the recorded durations, within [`RELATIVE_ERROR`](Self::RELATIVE_ERROR) of
    /// the exact one (each value counts as its bucket's midpoint), or `None` when empty.
    /// Computed at readout from the buckets, so recording pays nothing for it.
    pub fn mean(&self) -> Option<Duration> {
        let mut total = 0u64;
        let mut sum = 0u128;
        for (i, c) in self.counts.iter().enumerate() {
            let c = c.load(Ordering::Relaxed) as u64;
            total += c;
            sum += c as u128 * buckets::midpoint(i, PRECISION) as u128;
        }
        if total == 0 {
            return None;
        }
        let mean = (sum / total as u128) as u64; // a mean of u64s fits a u64
        Some(Duration::from_nanos(clamp(
            mean,
            self.min_nanos(),
            self.max_nanos(),
        )))
    }

    /// Adds every count of `other` to this histogram (saturating), and widens the minimum and
    /// maximum: afterwards this histogram reads as if it had recorded both streams. For
    /// per-thread or per-core histograms merged at scrape time. `other` is only read.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::observe::DurationHistogram;
    ///
    /// let (a, b, total) = (DurationHistogram::new(), DurationHistogram::new(), DurationHistogram::new());
    /// a.record(Duration::from_millis(1));
    /// b.record(Duration::from_millis(9));
    /// total.merge_from(&a);
    /// total.merge_from(&b);
    /// assert_eq!(total.count(), 2);
    /// assert_eq!((total.min(), total.max()), (a.min(), b.max()));
    /// ```
    pub fn merge_from(&self, other: &Self) {
        for (mine, theirs) in self.counts.iter().zip(&other.counts) {
            let add = theirs.load(Ordering::Relaxed);
            if add != 0 {
                saturating_add(mine, add);
            }
        }
        self.note_extremes(
            other.min_code.load(Ordering::Relaxed),
            other.max_code.load(Ordering::Relaxed),
        );
    }

    /// Empties the histogram. A `record` that runs concurrently may be kept in part (its count
    /// without its extremes, or the reverse); scrape-and-reset from one thread while others
    /// record loses nothing but such in-flight samples.
    pub fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.min_code.store(NO_MIN, Ordering::Relaxed);
        self.max_code.store(NO_MAX, Ordering::Relaxed);
    }

    /// Lowers the stored minimum code and raises the stored maximum code (plus one). The loads
    /// first: once the extremes have settled, recording writes nothing here, so threads do not
    /// contend for these two words.
    fn note_extremes(&self, min_code: u32, max_code_plus_one: u32) {
        if min_code < self.min_code.load(Ordering::Relaxed) {
            self.min_code.fetch_min(min_code, Ordering::Relaxed);
        }
        if max_code_plus_one > self.max_code.load(Ordering::Relaxed) {
            self.max_code
                .fetch_max(max_code_plus_one, Ordering::Relaxed);
        }
    }

    fn min_nanos(&self) -> Option<u64> {
        match self.min_code.load(Ordering::Relaxed) {
            NO_MIN => None,
            code => Some(buckets::lower(code as usize, EXTREMES_BITS)),
        }
    }

    fn max_nanos(&self) -> Option<u64> {
        match self.max_code.load(Ordering::Relaxed) {
            NO_MAX => None,
            code => Some(buckets::upper(code as usize - 1, EXTREMES_BITS)),
        }
    }

    /// The midpoint of the bucket holding the `rank`-th smallest value. Should a concurrent
    /// `reset` have emptied buckets since the total was read, the highest bucket seen serves.
    fn bucket_at_rank(&self, rank: u64) -> Option<u64> {
        let mut seen = 0u64;
        let mut last = None;
        for (i, c) in self.counts.iter().enumerate() {
            let c = c.load(Ordering::Relaxed) as u64;
            if c == 0 {
                continue;
            }
            seen += c;
            last = Some(i);
            if seen >= rank {
                break;
            }
        }
        last.map(|i| buckets::midpoint(i, PRECISION))
    }
}

/// Records the duration of every settled call, and nothing else: refusals
/// ([`Event::Rejected`]) and an `Executed` whose verdict is `Rejected` (a nested pipeline's
/// refusal, which never reached the upstream) are not latencies.
impl<const PRECISION: u32, const BUCKETS: usize> Observer
    for DurationHistogram<PRECISION, BUCKETS>
{
    fn on_event(&self, event: &Event) {
        if let Event::Executed { verdict, duration } = event
            && verdict.is_counted()
        {
            self.record(*duration);
        }
    }
}

/// A summary, not the 496 buckets.
impl<const PRECISION: u32, const BUCKETS: usize> fmt::Debug
    for DurationHistogram<PRECISION, BUCKETS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurationHistogram")
            .field("precision", &PRECISION)
            .field("count", &self.count())
            .field("min", &self.min())
            .field("p50", &self.quantile(0.5))
            .field("p99", &self.quantile(0.99))
            .field("max", &self.max())
            .finish()
    }
}

/// `r = max(1, ⌈q·n⌉)` for `q` in `0..=1`, without `f64::ceil` (not in `core`). The casts are
/// exact while `n` < 2^53, which the default layout cannot exceed (496 buckets of `u32`).
fn nearest_rank(q: f64, n: u64) -> u64 {
    let x = q * n as f64;
    let floor = x as u64;
    let ceil = if (floor as f64) < x { floor + 1 } else { floor };
    ceil.clamp(1, n)
}

/// Keeps an estimate within the recorded extremes, which bracket every exact quantile and the
/// exact mean, so this never moves the estimate away from the exact value.
fn clamp(v: u64, min: Option<u64>, max: Option<u64>) -> u64 {
    let v = min.map_or(v, |m| v.max(m));
    max.map_or(v, |m| v.min(m))
}

fn saturating_nanos(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(d.subsec_nanos() as u64)
}

/// A compare-and-swap loop so that a full counter stays full instead of wrapping to zero,
/// which would silently drop four billion samples from a percentile.
fn saturating_add(counter: &AtomicU32, add: u32) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        (c != u32::MAX).then(|| c.saturating_add(add))
    });
}

#[cfg(not(loom))]
const fn zeroed_counts<const BUCKETS: usize>() -> [AtomicU32; BUCKETS] {
    [const { AtomicU32::new(0) }; BUCKETS]
}

#[cfg(loom)]
fn zeroed_counts<const BUCKETS: usize>() -> [AtomicU32; BUCKETS] {
    core::array::from_fn(|_| AtomicU32::new(0))
}

#[cfg(all(test, not(loom)))]
mod tests;
