//! Wide time from 32-bit words: how a stored count (a tick word, a window bucket's period
//! number) tells "long ago" from "just now" after an idle gap of any length.
//!
//! A policy keeps its instants in 32-bit words so that every target updates them with one
//! native atomic (docs/design/contracts.md §4). A word that holds a count modulo 2^bits cannot, by itself,
//! tell a value written a moment ago from one written exactly one circle (2^bits counts) ago:
//! after an idle gap of a circle a policy would read a stale open wait, a drained bucket or an
//! old window bucket as current. So every stored count has a companion [`Era`]: the count's
//! high part in eras of a quarter circle (2^(bits−2) counts), which a `u32` holds for the
//! whole `u64` timeline as long as a count is at least 4 ns (`ticks::MIN_SHIFT`).
//!
//! The protocol, the same for every word:
//!
//! * **writer**: read the era ([`Era::read`]) with the stored word; before publishing a count
//!   written at its `now` (the compare-and-swap or release-store that others read),
//!   [`Era::cover`] its own count for `now`, which raises the era with `fetch_max` only when
//!   `now` is in a later era than the one read (once per quarter circle at most: the hot path
//!   pays a load and a compare);
//! * **reader**: load the word with `Acquire`, then [`Era::read`]; [`widen`] turns the low bits
//!   back into the full count, which is compared with the reader's own full count in 64-bit
//!   arithmetic.
//!
//! With that protocol a stored count is read back exactly after an idle gap of any length, and
//! for a writer lagging the newest era by up to three quarter circles (one quarter for a count
//! that points up to half a circle ahead, such as a GCRA arrival time); a writer lagging
//! further is read at most one circle late, never stuck.
//!
//! Design notes (why it is exact): docs/design/time-and-eras.md#why-it-is-exact
//!
//! A word never written reads as count 0 in era 0, the timeline's origin: "long ago" for every
//! `now` of a real timeline, which is what every policy's initial state means.

use crate::sync::{AtomicU32, Ordering};

/// The era of a count held in `bits` bits (2..=32): its quarter circle, saturating at
/// `u32::MAX` (never reached by a count of at least 4 ns in 32 bits, or 8 ns in 31).
#[inline]
pub(crate) const fn era_of(count: u64, bits: u32) -> u32 {
    let era = count >> (bits - 2);
    if era > u32::MAX as u64 {
        u32::MAX
    } else {
        era as u32
    }
}

/// How many eras behind the era it read a writer's `now` may lie before [`Era::cover`] takes it
/// for time gone backwards and sets the era to its own: three, the lag up to which a stamp is
/// still read exactly (see the module docs).
pub(crate) const BACKWARD_ERAS: u32 = 3;

/// The companion of a stored count: the newest era any writer of it has published from.
#[derive(Debug)]
pub(crate) struct Era(AtomicU32);

/// An era as read by [`Era::read`], to pass to [`Era::cover`] and [`widen`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EraSeen(u32);

impl Era {
    crate::sync::const_fn_unless_loom! {
        /// The era of the timeline's origin (a fresh, never-written word).
        pub(crate) fn new() -> Era {
            Era(AtomicU32::new(0))
        }
    }

    /// The era, read after the word it covers (load the word with `Acquire` first).
    #[inline]
    pub(crate) fn read(&self) -> EraSeen {
        EraSeen(self.0.load(Ordering::Acquire))
    }

    /// Makes the era cover `now` (the writer's own full count) before a word written at
    /// `now` is published. `seen` is the era read with the word; the read-modify-write
    /// happens only when `now` is in a later era, at most once per era per word.
    ///
    /// A writer whose `now` lies more than [`BACKWARD_ERAS`] eras *behind* the era read (time
    /// went backwards that far) sets the era to its own instead.
    // Why: docs/design/time-and-eras.md#time-going-backwards
    #[inline]
    pub(crate) fn cover(&self, seen: EraSeen, now: u64, bits: u32) {
        let era = era_of(now, bits);
        if era > seen.0 {
            self.0.fetch_max(era, Ordering::AcqRel);
        } else if seen.0 - era > BACKWARD_ERAS {
            self.0.store(era, Ordering::Release);
        }
    }

    #[allow(dead_code)] // for policies whose words have a single writer
    /// Sets the era outright to that of `now`, for a writer that owns the word exclusively
    /// (a reset, or a word written under a flag only one thread holds).
    #[inline]
    pub(crate) fn set(&self, now: u64, bits: u32) {
        self.0.store(era_of(now, bits), Ordering::Release);
    }
}

impl EraSeen {
    /// The era of `now` for a word of `bits` bits, as if read (a writer that knows it owns the
    /// word, or a test).
    #[allow(dead_code)]
    pub(crate) const fn of(now: u64, bits: u32) -> EraSeen {
        EraSeen(era_of(now, bits))
    }

    /// The era as a number (for tests and diagnostics).
    #[allow(dead_code)]
    pub(crate) const fn get(self) -> u32 {
        self.0
    }

    /// Whether this is the era of `now` for a word of `bits` bits: then a stored word equal to
    /// `now`'s low bits is `now`'s own count (the hot path's shortcut: no widening needed).
    #[inline]
    pub(crate) const fn is_era_of(self, now: u64, bits: u32) -> bool {
        // Truncating, not saturating (one instruction less on the hot path): exact for every
        // count below 2^(30 + bits), which is every count of a word whose unit is at least
        // 4 ns (32 bits) or 8 ns (31 bits), the only words this module serves.
        self.0 == (now >> (bits - 2)) as u32
    }

    /// The last count of this era for a word of `bits` bits.
    #[inline]
    pub(crate) const fn latest(self, bits: u32) -> u64 {
        let quarter = bits - 2;
        ((self.0 as u64) << quarter) | ((1u64 << quarter) - 1)
    }
}

/// The full count whose low `bits` bits (2..=32) are `low`: the largest such count that is at
/// most the era's last count plus `ahead`, where `ahead` is how far past its writer's `now`
/// the stored count can point (see the module docs for why this is the written count).
///
/// A stored value above that bound within the first circle (only possible for a writer from
/// the future of its own era) is returned as it is.
#[inline]
pub(crate) const fn widen(low: u32, bits: u32, seen: EraSeen, ahead: u64) -> u64 {
    let mask = if bits >= 32 {
        u32::MAX as u64
    } else {
        (1u64 << bits) - 1
    };
    let low = low as u64 & mask;
    let top = seen.latest(bits).saturating_add(ahead);
    let back = top.wrapping_sub(low) & mask;
    if back <= top { top - back } else { low }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A count `v` stored in `bits` bits, recovered by a reader that loaded era `e`.
    fn recover(v: u64, bits: u32, e: u32, ahead: u64) -> u64 {
        let mask = if bits == 32 {
            u32::MAX as u64
        } else {
            (1 << bits) - 1
        };
        widen((v & mask) as u32, bits, EraSeen(e), ahead)
    }

    const Q: u64 = 1 << 30; // a quarter circle of a 32-bit word

    #[test]
    fn exact_for_every_lag_within_the_slack() {
        for era in [0u32, 1, 7, 1000, u32::MAX - 8, u32::MAX] {
            for lag in 0..=3u32 {
                let writer_era = era - lag.min(era);
                for offset in [0, 1, Q / 2, Q - 1] {
                    let v = ((writer_era as u64) << 30) + offset;
                    assert_eq!(
                        recover(v, 32, era, 0),
                        v,
                        "era {era} lag {lag} offset {offset}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_idle_gap_of_any_length_is_read_exactly() {
        // Written at count 1e9 and never again: the era is the writer's, whatever the reader's
        // own count is now.
        let v = 1_000_000_000u64;
        assert_eq!(recover(v, 32, era_of(v, 32), 0), v);
        // A GCRA arrival time half a circle ahead of its writer, in 31 bits.
        let t = 5 << 29;
        let tat = t + (1 << 30);
        assert_eq!(recover(tat, 31, era_of(t, 31), 1 << 30), tat);
    }

    #[test]
    fn a_count_ahead_of_its_writer_is_read_exactly() {
        let t = 10 * Q + 5;
        for ahead in [0, 1, Q, 2 * Q] {
            for extra in [0, ahead / 2, ahead] {
                let v = t + extra;
                // With `ahead` up to half a circle, one quarter of lag is still exact.
                for lag in 0..=1 {
                    let got = recover(v, 32, era_of(t, 32) + lag, ahead);
                    assert_eq!(got, v, "ahead {ahead} extra {extra} lag {lag}");
                }
            }
        }
    }

    #[test]
    fn a_writer_lagging_past_the_slack_reads_later_never_earlier() {
        // Four quarters of lag is a whole circle: the count reads one circle later, an error
        // no larger than the lag itself.
        let t = 5 * Q + 10;
        assert_eq!(recover(t, 32, era_of(t, 32) + 4, 0), t + 4 * Q);
    }

    #[test]
    fn never_written_reads_as_the_origin() {
        assert_eq!(widen(0, 32, EraSeen(0), 0), 0);
        assert_eq!(widen(0, 31, EraSeen(0), 100), 0);
    }

    #[test]
    fn the_end_of_the_timeline_does_not_overflow() {
        // 4 ns ticks of the last nanosecond: count 2^62 − 1, era u32::MAX.
        let last = u64::MAX >> 2;
        assert_eq!(era_of(last, 32), u32::MAX);
        assert_eq!(recover(last, 32, u32::MAX, 0), last);
        assert_eq!(
            era_of(u64::MAX, 32),
            u32::MAX,
            "saturates for counts finer than 4 ns"
        );
    }

    #[test]
    fn the_hot_path_shortcut_agrees_with_widening() {
        for v in [0u64, 1, Q - 1, Q, 3 * Q + 7, 1 << 40, (1 << 62) - 1] {
            let seen = EraSeen(era_of(v, 32));
            assert!(seen.is_era_of(v, 32));
            assert_eq!(widen(v as u32, 32, seen, 0), v);
        }
    }

    #[test]
    fn cover_raises_only_to_a_later_era() {
        let era = Era::new();
        let seen = era.read();
        era.cover(seen, 3 * Q, 32);
        assert_eq!(era.read().get(), 3);
        era.cover(EraSeen(0), Q, 32); // stale: never lowers
        assert_eq!(era.read().get(), 3);
        era.cover(era.read(), 0, 32); // three eras behind: a lagging writer, left alone
        assert_eq!(era.read().get(), 3);
        era.cover(EraSeen(100), 5 * Q, 32); // 95 eras behind: time went backwards
        assert_eq!(era.read().get(), 5);
        era.set(Q, 32);
        assert_eq!(era.read().get(), 1);
        assert_eq!(EraSeen::of(Q, 32), EraSeen(1));
    }

    #[test]
    fn an_era_past_u32_saturates_instead_of_truncating() {
        // `u64::MAX` alone cannot tell: its era, 2^34 - 1, truncates to u32::MAX as well.
        assert_eq!(
            era_of(1 << 62, 32),
            u32::MAX,
            "era 2^32 would truncate to 0"
        );
        assert_eq!(era_of((1 << 62) + (5 << 30), 32), u32::MAX);
        assert_eq!(
            era_of((1 << 62) - 1, 32),
            u32::MAX,
            "the last era that fits"
        );
    }
}
