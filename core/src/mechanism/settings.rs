//! A block of `W` settings words that a running policy reads on its hot path and an operator
//! replaces at runtime, all at once: the mechanism for a `reconfigure` whose settings span
//! several words read together by threads that hold no right of their own (the ratio budget's
//! ratio and floor, read by every spend). Where one word suffices (the bulkhead's cap) a swap
//! does; where every reader already holds an exclusive right (the limiter's bounds, read by
//! the window's closer) the right orders them; the rate limiter folds its slot bit into its
//! state word instead, which saves it the control loads.
//!
//! **Layout.** Two slots of `W` atomic words and one control word: bit 0 is the writer flag,
//! bits 1–31 count the swaps (wrapping). Slot `swaps & 1` is in force; a writer fills the
//! other one and publishes it by bumping the count.
//!
//! Readers never wait and never see two configurations mixed; writers do not queue (a writer
//! that finds another at work gets [`SettingsBusy`]). Only 32-bit atomics, no lock.
//!
//! Design notes (why readers never wait, the orderings): docs/design/time-and-eras.md#settings-blocks

use crate::sync::{AtomicU32, Ordering};

const WRITING: u32 = 1;

/// `W` settings words, swapped whole. See the [module docs](self).
#[derive(Debug)]
pub struct Settings<const W: usize> {
    /// Bit 0: a writer holds the block. Bits 1–31: swaps so far; slot `(control >> 1) & 1`
    /// is in force.
    control: AtomicU32,
    slots: [[AtomicU32; W]; 2],
}

impl<const W: usize> Settings<W> {
    crate::sync::const_fn_unless_loom! {
        /// A block holding `initial` in force.
        pub fn new(initial: [u32; W]) -> Self {
            Settings {
                control: AtomicU32::new(0),
                slots: [words(initial), words(initial)],
            }
        }
    }

    /// The block in force: all `W` words from one write, never a mix of two. Never waits for
    /// a writer; retries only when two swaps raced it (see the module docs).
    #[inline]
    pub fn read(&self) -> [u32; W] {
        let mut before = self.control.load(Ordering::Acquire);
        loop {
            match self.read_from(before) {
                Ok(words) => return words,
                Err(after) => before = after,
            }
        }
    }

    /// [`read`](Self::read) into `words`, for a block of many words: returned by value it
    /// would be copied (a `memcpy` call on a small target); here each word is stored once.
    pub fn read_into(&self, words: &mut [u32; W]) {
        let mut before = self.control.load(Ordering::Acquire);
        loop {
            let slot = &self.slots[((before >> 1) & 1) as usize];
            for (word, stored) in words.iter_mut().zip(slot) {
                *word = stored.load(Ordering::Acquire);
            }
            match self.check(before) {
                Ok(()) => return,
                Err(after) => before = after,
            }
        }
    }

    /// `load` over the slot in force: what it loads is one write's, never a mix of two, as
    /// with [`read`](Self::read), for a reader that needs only some of the words (the
    /// breaker's success path reads the slow-call rule's three of fifteen). `load` may run
    /// more than once (once more per retry of the read) and must only load.
    #[inline]
    pub fn read_with<T>(&self, load: impl Fn(&[AtomicU32; W]) -> T) -> T {
        let mut before = self.control.load(Ordering::Acquire);
        loop {
            let value = load(&self.slots[((before >> 1) & 1) as usize]);
            match self.check(before) {
                Ok(()) => return value,
                Err(after) => before = after,
            }
        }
    }

    /// One attempt at [`read`](Self::read): `None` when two swaps raced it. A single swap,
    /// finished or preempted half-way, never makes it fail. (For the models that check it.)
    #[cfg(any(test, loom))]
    pub fn try_read(&self) -> Option<[u32; W]> {
        self.read_from(self.control.load(Ordering::Acquire)).ok()
    }

    #[inline(always)]
    fn read_from(&self, before: u32) -> Result<[u32; W], u32> {
        let slot = &self.slots[((before >> 1) & 1) as usize];
        let words = core::array::from_fn(|i| slot[i].load(Ordering::Acquire));
        self.check(before).map(|()| words)
    }

    /// After a slot's words were loaded from the control word `before`: whether they are one
    /// write's, or the control word to try again from.
    #[inline(always)]
    fn check(&self, before: u32) -> Result<(), u32> {
        let after = self.control.load(Ordering::Acquire);
        // From the count at the first load (flag cleared), `after` may have moved by: 0 (the
        // slot untouched), 1 (a writer took the flag: it fills the other slot) or 2 (that swap
        // done, no writer now). Three or more: the second writer may have written this slot.
        // One subtraction, wrapping with the count; on the hot path of every reader, where
        // the flash counts.
        if after.wrapping_sub(before & !WRITING) <= 2 {
            Ok(())
        } else {
            Err(after)
        }
    }

    /// How many swaps have been published (wrapping at 2^31): a snapshot.
    #[cfg(any(test, loom))]
    pub fn swaps(&self) -> u32 {
        self.control.load(Ordering::Acquire) >> 1
    }

    /// Takes the writer's right, or [`SettingsBusy`] if another writer holds it. Readers go on
    /// reading the block in force until [`SettingsWriter::publish`]; dropping the writer
    /// unpublished changes nothing.
    pub fn write(&self) -> Result<SettingsWriter<'_, W>, SettingsBusy> {
        let control = self.control.load(Ordering::Relaxed);
        if control & WRITING != 0 {
            return Err(SettingsBusy);
        }
        // Acquire: the previous writer's slot stores happen before this one's. Only writers
        // change the control word, so a failure means another writer won: no retry.
        self.control
            .compare_exchange(
                control,
                control | WRITING,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .map_err(|_| SettingsBusy)?;
        Ok(SettingsWriter {
            settings: self,
            control,
            published: false,
        })
    }

    /// Replaces the block with `next` in one step: [`write`](Self::write) then publish.
    pub fn replace(&self, next: [u32; W]) -> Result<(), SettingsBusy> {
        self.write()?.publish(next);
        Ok(())
    }
}

#[cfg(not(loom))]
const fn words<const W: usize>(values: [u32; W]) -> [AtomicU32; W] {
    let mut out = [const { AtomicU32::new(0) }; W];
    let mut i = 0;
    while i < W {
        out[i] = AtomicU32::new(values[i]);
        i += 1;
    }
    out
}

#[cfg(loom)]
fn words<const W: usize>(values: [u32; W]) -> [AtomicU32; W] {
    values.map(AtomicU32::new)
}

/// The writer's right to a [`Settings`] block, from [`Settings::write`]: while it is held,
/// every other writer gets [`SettingsBusy`], so a policy can read the block in force, decide,
/// adjust its state and publish as one reconfiguration.
#[derive(Debug)]
pub struct SettingsWriter<'s, const W: usize> {
    settings: &'s Settings<W>,
    /// The control word when the right was taken (flag clear).
    control: u32,
    published: bool,
}

impl<const W: usize> SettingsWriter<'_, W> {
    /// The block in force (stable: only this writer could change it): for a policy that
    /// derives its next block, or adjusts its state, from the one in force.
    pub fn current(&self) -> [u32; W] {
        let slot = &self.settings.slots[((self.control >> 1) & 1) as usize];
        core::array::from_fn(|i| slot[i].load(Ordering::Relaxed))
    }

    /// Fills the slot not in force with `next` and makes it the one in force, with one store.
    pub fn publish(mut self, next: [u32; W]) {
        let spare = &self.settings.slots[(((self.control >> 1) + 1) & 1) as usize];
        for (word, value) in spare.iter().zip(next) {
            // Release, after the flag: a reader that loads this sees the flag (module docs).
            word.store(value, Ordering::Release);
        }
        // One swap more, flag clear.
        self.settings
            .control
            .store(self.control.wrapping_add(2), Ordering::Release);
        self.published = true;
    }
}

impl<const W: usize> Drop for SettingsWriter<'_, W> {
    fn drop(&mut self) {
        if !self.published {
            self.settings.control.store(self.control, Ordering::Release);
        }
    }
}

/// Another writer holds the block; nothing was changed. Each policy maps it to the `Busy`
/// variant of its own reconfiguration error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SettingsBusy;

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn a_published_block_is_read_whole() {
        let s = Settings::new([1, 2, 3]);
        assert_eq!(s.read(), [1, 2, 3]);
        s.replace([4, 5, 6]).unwrap();
        assert_eq!((s.read(), s.swaps()), ([4, 5, 6], 1));
        s.replace([7, 8, 9]).unwrap();
        assert_eq!(
            (s.read(), s.swaps()),
            ([7, 8, 9], 2),
            "back in the first slot"
        );
    }

    #[test]
    fn a_partial_read_loads_from_the_slot_in_force() {
        let s = Settings::new([1, 2, 3]);
        let last = |s: &Settings<3>| s.read_with(|slot| slot[2].load(Ordering::Acquire));
        assert_eq!(last(&s), 3);
        s.replace([4, 5, 6]).unwrap();
        assert_eq!(last(&s), 6);
        // A writer half way through fills the other slot: the reader keeps the one in force.
        let w = s.write().unwrap();
        s.slots[0][2].store(9, Ordering::Release);
        assert_eq!(last(&s), 6);
        drop(w);
        // A second write lands in the first slot again: the one in force alternates.
        s.replace([7, 8, 10]).unwrap();
        assert_eq!(last(&s), 10);
        s.replace([7, 8, 11]).unwrap();
        assert_eq!(last(&s), 11);
    }

    #[test]
    fn a_second_writer_is_refused_and_an_unpublished_one_changes_nothing() {
        let s = Settings::new([1]);
        let w = s.write().unwrap();
        assert_eq!(w.current(), [1]);
        assert_eq!(s.write().unwrap_err(), SettingsBusy);
        assert_eq!(s.replace([2]), Err(SettingsBusy));
        drop(w);
        assert_eq!((s.read(), s.swaps()), ([1], 0));
        s.replace([2]).unwrap();
        assert_eq!(s.read(), [2]);
    }

    #[test]
    fn a_writer_sees_the_block_in_force_whichever_slot_holds_it() {
        let s = Settings::new([1, 2]);
        for next in [[3, 4], [5, 6], [7, 8]] {
            let w = s.write().unwrap();
            assert_eq!(w.current(), s.read());
            w.publish(next);
            assert_eq!(s.read(), next);
        }
        assert_eq!(s.write().unwrap().current(), [7, 8]);
    }

    #[test]
    fn a_writer_stopped_half_way_never_makes_a_reader_retry() {
        // Two different words: a block of ones is what a wrong `try_read` would make up.
        let s = Settings::new([3, 4]);
        let w = s.write().unwrap();
        // What a preempted writer leaves: the spare slot half filled, the flag set.
        s.slots[1][0].store(9, Ordering::Release);
        assert_eq!(s.try_read(), Some([3, 4]));
        drop(w);
    }

    #[test]
    fn a_reader_raced_by_the_second_writer_retries() {
        let s = Settings::new([1, 1]);
        let before = s.control.load(Ordering::Acquire);
        s.replace([2, 2]).unwrap();
        assert!(
            s.read_from(before).is_ok(),
            "one finished swap: the other slot"
        );
        let w = s.write().unwrap();
        assert!(
            s.read_from(before).is_err(),
            "the second writer may be in this slot"
        );
        w.publish([3, 3]);
        assert!(s.read_from(before).is_err(), "two swaps");
        assert_eq!(s.read(), [3, 3]);
    }

    #[test]
    fn the_swap_count_wraps() {
        let s = Settings::new([0]);
        s.control.store(u32::MAX - 1, Ordering::Relaxed);
        let before = s.control.load(Ordering::Acquire);
        s.replace([5]).unwrap();
        assert_eq!(s.swaps(), 0);
        // A reader that began before the swap keeps the block it began with: one swap
        // across the wrap is still one swap, not 2^31 of them.
        assert_eq!(s.read_from(before), Ok([0]));
        assert_eq!(s.read(), [5]);
        let w = s.write().unwrap();
        assert!(
            s.read_from(before).is_err(),
            "the second writer, across the wrap"
        );
        drop(w);
    }

    /// Writers publish blocks whose words are tied (`[x, !x, x ^ 0x5a5a_5a5a]`) as fast as
    /// they can; readers on other threads must never see words of two blocks together.
    #[test]
    fn many_threads_never_read_a_torn_block() {
        use std::sync::atomic::{AtomicBool, AtomicU32 as StdU32, Ordering as O};
        let s = Settings::new([0, !0, 0x5a5a_5a5a]);
        let done = AtomicBool::new(false);
        let published = StdU32::new(0);
        std::thread::scope(|scope| {
            for t in 0..2u32 {
                let (s, done, published) = (&s, &done, &published);
                scope.spawn(move || {
                    for i in 0..20_000u32 {
                        let x = (i << 1) | t;
                        if s.replace([x, !x, x ^ 0x5a5a_5a5a]).is_ok() {
                            published.fetch_add(1, O::Relaxed);
                        }
                    }
                    done.store(true, O::Release);
                });
            }
            for _ in 0..2 {
                let (s, done) = (&s, &done);
                scope.spawn(move || {
                    let mut reads = 0u32;
                    while !done.load(O::Acquire) || reads < 1000 {
                        let [a, b, c] = s.read();
                        assert_eq!((b, c), (!a, a ^ 0x5a5a_5a5a), "a torn block");
                        reads += 1;
                    }
                });
            }
        });
        assert_eq!(s.swaps(), published.load(O::Relaxed));
    }
}
