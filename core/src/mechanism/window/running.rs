//! The sliding window kept as running totals: the meaning of `TimeWindow`
//! (the counts of the last `B` bucket periods, the current one included), read in O(1) instead
//! of a sum over the buckets, for a policy that reads its window on every call (the throttler
//! reads it at every admit).
//!
//! # Prefix sums, not per-bucket counts
//!
//! Each counter is one running sum of everything ever added to it (`sums`, modulo 2^32), and a
//! ring of `B + 1` slots holds, for each of the last `B + 1` bucket periods `p`, the sums as they
//! stood when the window first moved into `p` ("the start of `p`"). The window at period `t`
//! is then `sums − start(t − B + 1)`: one subtraction per counter, whatever `B` is. An add is one
//! `fetch_add` on the running sum, as an add to a bucket was; a read is two loads per counter.
//!
//! Nothing is ever subtracted from a stored word. The totals are differences of two reads of
//! the same monotone counter, so they cannot drift: an add racing anything is in the running
//! sum exactly once, and at worst counted in a later period than its own (see the design notes). There is
//! nothing to underflow either: a start is a value the sum held before the reader read the sum.
//!
//! Single-threaded the window is exact across any idle gap; under concurrency an add can count
//! one period late at a boundary, never early, never lost or counted twice.
//!
//! Design notes (moving the window, what concurrency may misplace, saturation, time going
//! backwards): docs/design/time-and-eras.md#the-running-window

use core::time::Duration;

use super::{CLAIM_TRIES, CLAIMING, FAST_ADD_BELOW, PERIOD_BITS, bucket_nanos, low_bits};
use crate::sync::{AtomicU32, Ordering};
use crate::time::Instant;
use crate::time::divide::Divisor;
use crate::time::era::{Era, widen};

/// The head word's top bit: a move is writing starts; the low bits are the head it moves from.
const MOVING: u32 = CLAIMING;

/// The starts of one period: each counter's running sum when the window moved into it.
#[derive(Debug)]
struct Starts<const C: usize>([AtomicU32; C]);

impl<const C: usize> Starts<C> {
    crate::sync::const_fn_unless_loom! {
        fn new() -> Self {
            Starts(super::zeroed_counters())
        }
    }
}

#[cfg(not(loom))]
const fn new_ring<const B: usize, const C: usize>() -> [Starts<C>; B] {
    [const { Starts::new() }; B]
}

#[cfg(loom)]
fn new_ring<const B: usize, const C: usize>() -> [Starts<C>; B] {
    core::array::from_fn(|_| Starts::new())
}

/// `C` counters over a sliding window of `B` buckets, kept as running totals (module docs).
#[derive(Debug)]
pub(crate) struct RunningWindow<const B: usize, const C: usize> {
    bucket_nanos: u64,
    /// Division by `bucket_nanos`, by multiplication (`time::divide`).
    per_bucket: Divisor,
    /// The low 31 bits of the newest period the window has moved into, and [`MOVING`] while a
    /// move writes starts.
    head: AtomicU32,
    /// The era of `head`, raised by a move after its mark and before it publishes.
    era: Era,
    /// Everything ever added to each counter, modulo 2^32.
    sums: [AtomicU32; C],
    /// Slots `0..B` of the ring of `B + 1` starts (`[_; B + 1]` is not a type on stable Rust).
    ring: [Starts<C>; B],
    /// Slot `B` of the ring.
    last: Starts<C>,
}

/// Where a window at some period starts: a ring slot, or nowhere (it is empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    Slot(usize),
    Empty,
}

#[allow(dead_code)] // each policy uses the part it needs
impl<const B: usize, const C: usize> RunningWindow<B, C> {
    /// The ring's length.
    const RING: u64 = B as u64 + 1;

    crate::sync::const_fn_unless_loom! {
        /// A window `window` long in `B` buckets of `window / B`, rounded up, at least 8 ns
        /// (as `TimeWindow::new`); `B` zero reads zero always.
        pub(crate) fn new(window: Duration) -> Self {
            RunningWindow {
                bucket_nanos: bucket_nanos(window, B),
                per_bucket: Divisor::new(bucket_nanos(window, B)),
                head: AtomicU32::new(0),
                era: Era::new(),
                sums: super::zeroed_counters(),
                ring: new_ring(),
                last: Starts::new(),
            }
        }
    }

    /// The length of one bucket.
    pub(crate) const fn bucket_length(&self) -> Duration {
        Duration::from_nanos(self.bucket_nanos)
    }

    #[inline]
    fn period(&self, now: Instant) -> u64 {
        self.per_bucket.divide(now.as_nanos())
    }

    /// The ring slot of period `p`.
    #[inline]
    fn slot(&self, p: u64) -> &Starts<C> {
        let i = (p % Self::RING) as usize;
        self.ring.get(i).unwrap_or(&self.last)
    }

    /// Where the window of period `t` starts, with the window moved into `head`: at the start
    /// of `t − B + 1`, which is in the ring while `t` is less than `B` periods past `head`. A
    /// `t` behind `head` by less than `B` reads the window at `head`; one further behind, or
    /// `B` or more past it, an empty window (every period in it is after `head`, or the window
    /// is about to restart at `t`).
    #[inline]
    fn view(head: u64, t: u64) -> View {
        let at = if t >= head {
            if t - head >= B as u64 {
                return View::Empty;
            }
            t
        } else {
            if head - t >= B as u64 {
                return View::Empty;
            }
            head
        };
        // t − B + 1 ≡ t + 2 modulo B + 1, without going below zero.
        View::Slot(((at + 2) % Self::RING) as usize)
    }

    /// The head as a reader sees it (era first, then the word: an era raised by a move is only
    /// raised after its mark, so a reader that sees the new era sees the mark or the new head).
    #[inline]
    fn head(&self, t: u64) -> (u64, u32) {
        let seen = self.era.read();
        let word = self.head.load(Ordering::Acquire);
        let head = if word == low_bits(t) && seen.is_era_of(t, PERIOD_BITS) {
            t
        } else {
            widen(word, PERIOD_BITS, seen, 0)
        };
        (head, word)
    }

    /// The window's sums from the starts in `slot`: each start before its sum, so the sum read
    /// is at least the start (a start is a value the sum held before it was written).
    #[inline]
    fn sums_from(&self, slot: usize) -> [u32; C] {
        let starts = self.ring.get(slot).unwrap_or(&self.last);
        let mut out = [0u32; C];
        for ((o, start), sum) in out.iter_mut().zip(&starts.0).zip(&self.sums) {
            let s = start.load(Ordering::Acquire);
            *o = sum.load(Ordering::Acquire).wrapping_sub(s);
        }
        out
    }

    /// The sums of each counter over the window ending at `now`.
    #[inline]
    pub(crate) fn totals(&self, now: Instant) -> [u32; C] {
        if B == 0 {
            return [0; C];
        }
        let t = self.period(now);
        let (head, _) = self.head(t);
        match Self::view(head, t) {
            View::Slot(slot) => self.sums_from(slot),
            View::Empty => [0; C],
        }
    }

    /// Adds `deltas[i]` to counter `i` at `now` (the window's total saturating at `u32::MAX`),
    /// first moving the window into `now`'s period if it is behind.
    // Always inlined where speed is the aim: left to LLVM, the two windows of a pipeline (the
    // throttler's and the ratio budget's) share one out-of-line add, 77 instructions more per
    // `execute` (callgrind). Left to LLVM on bare-metal targets, whose builds are sized for
    // flash: inlined there, the full-pipeline firmware grows by 148 B.
    #[cfg_attr(not(target_os = "none"), inline(always))]
    #[cfg_attr(target_os = "none", inline)]
    pub(crate) fn add(&self, now: Instant, deltas: [u32; C]) {
        if B == 0 {
            return;
        }
        let starts = self.moved_into(now);
        // The last counter first (see the module docs).
        for c in (0..C).rev() {
            let d = deltas[c];
            if d == 0 {
                continue;
            }
            let sum = &self.sums[c];
            // The start before the sum, as a reader does: the difference never wraps.
            let start = starts.map(|s| s.0[c].load(Ordering::Relaxed));
            let current = sum.load(Ordering::Relaxed);
            let used = start.map_or(0, |s| current.wrapping_sub(s));
            if used < FAST_ADD_BELOW && d < FAST_ADD_BELOW {
                sum.fetch_add(d, Ordering::AcqRel);
            } else {
                let _ = sum.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| {
                    let used = start.map_or(0, |s| v.wrapping_sub(s));
                    let room = u32::MAX.saturating_sub(used);
                    (room > 0).then(|| v.wrapping_add(d.min(room)))
                });
            }
        }
    }

    /// Adds one to counter `index` at `now` only if `admits(totals)` holds for the window's
    /// totals as they stand, counter `index` at the value the compare-and-swap then checks;
    /// answers whether it did (the ratio budget's grant). First moves the window into `now`'s
    /// period, as [`add`](Self::add) does.
    ///
    /// All callers compare-and-swap the one running sum of `index`, so none adds against a
    /// total another add has already changed, whatever its period. What stays approximate is
    /// the view while a move runs (module docs): a caller two or more periods behind a move in
    /// progress may read a start the move has just written (a stale view, once); a caller a
    /// whole window ahead of the head while another thread moves it is refused (once).
    pub(crate) fn try_add_one(
        &self,
        now: Instant,
        index: usize,
        admits: impl Fn(&[u32; C]) -> bool,
    ) -> bool {
        if B == 0 || index >= C {
            return false;
        }
        // No view: another thread is moving the window into a period at least a window past
        // the one this caller saw, so where its window starts is not written yet. Refused
        // (once, while that move runs) rather than checked against an empty window, which
        // would grant past the limit.
        let Some(starts) = self.moved_into(now) else {
            return false;
        };
        let sum = &self.sums[index];
        let mut current = sum.load(Ordering::Acquire);
        loop {
            let mut totals = [0u32; C];
            for (c, total) in totals.iter_mut().enumerate() {
                // The start before the sum, as a reader does: the difference never wraps.
                let start = starts.0[c].load(Ordering::Acquire);
                let value = if c == index {
                    current
                } else {
                    self.sums[c].load(Ordering::Acquire)
                };
                *total = value.wrapping_sub(start);
            }
            if totals[index] == u32::MAX || !admits(&totals) {
                return false;
            }
            match sum.compare_exchange_weak(
                current,
                current.wrapping_add(1),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// The starts of the window at `now`'s period, first moving the window into that period
    /// if it is behind; `None` for an empty window (every add then counts from nothing).
    #[inline(always)]
    fn moved_into(&self, now: Instant) -> Option<&Starts<C>> {
        let t = self.period(now);
        let (head, word) = self.head(t);
        // The hot path: the window is in `t`'s period already.
        let view = if head == t {
            Self::view(t, t)
        } else {
            Self::view(self.advance(t, head, word), t)
        };
        match view {
            View::Slot(slot) => Some(self.ring.get(slot).unwrap_or(&self.last)),
            View::Empty => None,
        }
    }

    /// Moves the window into period `t` (forward, or back to an empty window at `t` if `t` is
    /// a window or more behind), unless a slightly stale `t` reads as at the head or another
    /// thread is moving it; answers the head the add then counts at.
    #[cold]
    #[inline(never)]
    fn advance(&self, t: u64, mut head: u64, mut word: u32) -> u64 {
        for _ in 0..CLAIM_TRIES {
            if word & MOVING != 0 || head == t || (head > t && head - t < B as u64) {
                // Being moved (count beside the move), current, or counted as at the head.
                return head;
            }
            // The sums before the mark: every add that sees the mark adds after this read, so
            // it counts in the new period, never in the one the window is leaving.
            let sums = self.read_sums();
            match self.head.compare_exchange(
                word,
                MOVING | word,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // Only a mover raises the era, so what it is now is what the publisher of
                    // `word` left. If that widens `word` to another head, the era read with it
                    // was stale (the head went a whole circle round meanwhile): put the word
                    // back and retry from the head it really is.
                    let now_seen = self.era.read();
                    let actual = widen(word, PERIOD_BITS, now_seen, 0);
                    if actual != head {
                        let _ = self.head.compare_exchange(
                            MOVING | word,
                            word,
                            Ordering::AcqRel,
                            Ordering::Relaxed,
                        );
                        head = actual;
                        continue;
                    }
                    self.write_starts(head, t, &sums);
                    self.era.cover(now_seen, t, PERIOD_BITS);
                    // A marked word is only ever changed by its mover: publish.
                    self.head.swap(low_bits(t), Ordering::AcqRel);
                    return t;
                }
                Err(actual) => {
                    word = actual;
                    head = widen(word, PERIOD_BITS, self.era.read(), 0);
                }
            }
        }
        head
    }

    /// Every running sum, the first counter first (see the module docs).
    fn read_sums(&self) -> [u32; C] {
        let mut now = [0u32; C];
        for (n, sum) in now.iter_mut().zip(&self.sums) {
            *n = sum.load(Ordering::Acquire);
        }
        now
    }

    /// Writes `sums` as the start of every period after `head` up to `t` (of every period in
    /// the ring if `t` is not after `head`: the window restarts empty at `t`).
    fn write_starts(&self, head: u64, t: u64, sums: &[u32; C]) {
        let moved = if t > head { t - head } else { Self::RING };
        if moved >= Self::RING {
            for starts in self.ring.iter().chain(core::iter::once(&self.last)) {
                Self::store(starts, sums);
            }
        } else {
            for p in head + 1..=t {
                Self::store(self.slot(p), sums);
            }
        }
    }

    fn store(starts: &Starts<C>, values: &[u32; C]) {
        for (s, v) in starts.0.iter().zip(values) {
            // Swaps, not stores: see `TimeWindow`'s claim (loom 0.7, issue #254).
            s.swap(*v, Ordering::AcqRel);
        }
    }

    /// Forgets everything: every period starts at the sums as they stand. A clear racing a
    /// move or an add may keep that call (the window then reads it once more).
    pub(crate) fn clear(&self) {
        let now = self.read_sums();
        for starts in self.ring.iter().chain(core::iter::once(&self.last)) {
            Self::store(starts, &now);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
