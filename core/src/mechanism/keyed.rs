//! The fixed, lock-free table behind the keyed policies: which entry a key lives in, how a
//! caller pins an entry so it cannot be evicted under it, and how a new key takes a free or
//! idle entry. What "idle" means is the policy's own (a full bucket, a closed breaker with a
//! clean window); the table only guarantees that an entry is judged idle while nobody can
//! use it, so the judgement is final.
//!
//! * **Placement.** A key (`u64`) may live in any of the [`PROBES`] consecutive entries from
//!   its home, `⌊key × 2^64/φ / 2^32⌋ mod N` (Fibonacci hashing: sequential ids spread).
//! * **Tags.** Each entry has one 32-bit tag: its state (free, live, reserved) in the top two
//!   bits and the number of pins below. Users pin a live entry by compare-and-swap and unpin
//!   with one `fetch_sub`; the key words change only while the entry is reserved with no pins.
//! * **One writer at a time.** Inserting and evicting take a writer flag with a single try; a
//!   caller that finds it taken does not wait, it is told `None` (the policy then serves the
//!   call from its overflow state). Nothing in the table ever waits.
//!
//! Design notes: docs/design/keyed-tables.md

use crate::sync::{AtomicBool, AtomicU32, Ordering};

/// How many consecutive entries, from a key's home entry, may hold that key.
pub(crate) const PROBES: usize = 8;

const STATE_MASK: u32 = 0b11 << 30;
const FREE: u32 = 0;
const LIVE: u32 = 1 << 30;
/// Being written or evicted by the holder of the table's writer flag.
const RESERVED: u32 = 2 << 30;
const MAX_PINS: u32 = (1 << 30) - 1;

/// An entry's state and pin count, and the key it holds.
#[derive(Debug)]
pub(crate) struct Tag {
    tag: AtomicU32,
    key_lo: AtomicU32,
    key_hi: AtomicU32,
}

impl Tag {
    crate::sync::const_fn_unless_loom! {
        pub(crate) fn new() -> Self {
            Tag { tag: AtomicU32::new(FREE), key_lo: AtomicU32::new(0), key_hi: AtomicU32::new(0) }
        }
    }

    fn key(&self) -> u64 {
        let lo = self.key_lo.load(Ordering::Acquire) as u64;
        let hi = self.key_hi.load(Ordering::Acquire) as u64;
        (hi << 32) | lo
    }

    fn is_live(&self) -> bool {
        self.tag.load(Ordering::Acquire) & STATE_MASK == LIVE
    }

    /// Pins a live entry so it cannot be evicted while it is used.
    fn pin(&self) -> bool {
        self.tag
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |t| {
                (t & STATE_MASK == LIVE && t & !STATE_MASK < MAX_PINS).then_some(t + 1)
            })
            .is_ok()
    }

    /// Gives back one pin taken by [`KeyTable::find`] or [`KeyTable::insert`].
    pub(crate) fn unpin(&self) {
        // Release: what the pin holder wrote is seen by whoever reserves the entry next.
        self.tag.fetch_sub(1, Ordering::Release);
    }

    fn reserve_free(&self) -> bool {
        self.tag
            .compare_exchange(FREE, RESERVED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Reserves a live entry with no pins: nobody can pin it until it is released.
    fn reserve_unpinned(&self) -> bool {
        self.tag
            .compare_exchange(LIVE, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
}

/// An entry of a keyed table: anything with a [`Tag`].
pub(crate) trait Slot {
    fn tag(&self) -> &Tag;
}

/// `N` entries and the writer flag.
#[derive(Debug)]
pub(crate) struct KeyTable<S, const N: usize> {
    writer: AtomicBool,
    entries: [S; N],
}

impl<S: Slot, const N: usize> KeyTable<S, N> {
    crate::sync::const_fn_unless_loom! {
        /// A table over `entries`, all of whose tags are new (free).
        pub(crate) fn new(entries: [S; N]) -> Self {
            KeyTable { writer: AtomicBool::new(false), entries }
        }
    }

    fn candidates(&self, key: u64) -> impl Iterator<Item = &S> {
        let home = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize) % N.max(1);
        (0..PROBES.min(N)).map(move |i| &self.entries[(home + i) % N])
    }

    /// The entry holding `key`, pinned: unpin with [`Tag::unpin`].
    pub(crate) fn find(&self, key: u64) -> Option<&S> {
        for e in self.candidates(key) {
            let t = e.tag();
            if !t.is_live() || t.key() != key {
                continue;
            }
            if t.pin() {
                // Keys change only while an entry is reserved with no pins: now stable.
                if t.key() == key {
                    return Some(e);
                }
                t.unpin();
            }
        }
        None
    }

    /// Gives `key` an entry, pinned: a free one, else one that `idle` accepts, which `init`
    /// then renews for its new key. `None` when every candidate is live and not idle, or
    /// another thread holds the writer flag. `init` runs on an entry nobody else can reach.
    pub(crate) fn insert(
        &self,
        key: u64,
        idle: impl Fn(&S) -> bool,
        init: impl FnOnce(&S),
    ) -> Option<&S> {
        if !self.lock_writer() {
            return None;
        }
        // Another writer may have inserted it between our search and the flag.
        let found = self.find(key).or_else(|| {
            let entry = self
                .candidates(key)
                .find(|e| e.tag().reserve_free())
                .or_else(|| self.candidates(key).find(|e| Self::reserve_idle(e, &idle)))?;
            let t = entry.tag();
            t.key_lo.store(key as u32, Ordering::Release);
            t.key_hi.store((key >> 32) as u32, Ordering::Release);
            init(entry);
            // Live, with our own pin.
            t.tag.store(LIVE | 1, Ordering::Release);
            Some(entry)
        });
        self.writer.store(false, Ordering::Release);
        found
    }

    /// Frees every entry that `idle` accepts; returns how many. Returns 0 without doing
    /// anything if another thread is inserting or evicting at this moment.
    pub(crate) fn evict(&self, idle: impl Fn(&S) -> bool) -> usize {
        if !self.lock_writer() {
            return 0;
        }
        let mut evicted = 0;
        for e in &self.entries {
            if Self::reserve_idle(e, &idle) {
                e.tag().tag.store(FREE, Ordering::Release);
                evicted += 1;
            }
        }
        self.writer.store(false, Ordering::Release);
        evicted
    }

    /// How many keys hold an entry now (a snapshot).
    pub(crate) fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.tag().is_live()).count()
    }

    /// Reserves a live, unpinned entry that `idle` accepts. Writer flag held.
    fn reserve_idle(e: &S, idle: &impl Fn(&S) -> bool) -> bool {
        if !idle(e) || !e.tag().reserve_unpinned() {
            return false;
        }
        // A user may have pinned, changed and unpinned it between the look and the swap; with
        // the entry reserved nobody can pin it any more, so this second look is final.
        if idle(e) {
            true
        } else {
            e.tag().tag.store(LIVE, Ordering::Release);
            false
        }
    }

    fn lock_writer(&self) -> bool {
        self.writer
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Entry(Tag);

    impl Slot for Entry {
        fn tag(&self) -> &Tag {
            &self.0
        }
    }

    fn table() -> KeyTable<Entry, 16> {
        KeyTable::new(core::array::from_fn(|_| Entry(Tag::new())))
    }

    #[test]
    fn keys_above_32_bits_are_told_apart_by_their_high_half() {
        let t = table();
        let (a, b) = (0x1_0000_0002_u64, 0x2_0000_0002_u64);
        t.insert(a, |_| false, |_| {}).unwrap().tag().unpin();
        assert!(t.find(b).is_none(), "same low half, another key");
        let found = t.find(a).expect("found by its whole key");
        assert_eq!(found.tag().key(), a);
        found.tag().unpin();
    }

    #[test]
    fn only_a_live_entry_below_the_pin_ceiling_takes_a_pin() {
        let tag = Tag::new();
        assert!(!tag.pin(), "a free entry");
        tag.tag.store(RESERVED, Ordering::Relaxed);
        assert!(!tag.pin(), "a reserved entry");
        tag.tag.store(LIVE | (MAX_PINS - 1), Ordering::Relaxed);
        assert!(tag.pin(), "one pin below the ceiling");
        assert_eq!(tag.tag.load(Ordering::Relaxed), LIVE | MAX_PINS);
        assert!(
            !tag.pin(),
            "at the ceiling: a pin would carry into the state bits"
        );
        assert_eq!(tag.tag.load(Ordering::Relaxed), LIVE | MAX_PINS);
        assert_eq!(
            MAX_PINS,
            (1 << 30) - 1,
            "every pin count fits below the state bits"
        );
    }
}
