//! A scripted source of randomness (the spec's `FakeRandom`): the values you give, in order,
//! so a test decides exactly which jitter, shed or injection decision happens.

use std::collections::VecDeque;

use resilix::random::Random;

/// Returns the scripted 32-bit values in order, then panics (by default: a test that draws
/// more than it scripted is told so) or repeats the script.
///
/// [`Random::unit`] takes two draws (53 bits); [`FakeRandom::units`] scripts the two draws
/// that make `unit()` return each given value (to 2^-53), so jitter can be pinned as
/// fractions of its range. [`Random::below`] takes a pair too and returns `⌊u · n⌋`, unless
/// its rejection test refuses the pair (the low 64 bits of `u · 2^64 · n` below
/// `2^64 mod n`, which never happens for a power-of-two `n`, and happens for `u = 0` whenever
/// `n` is not one): it then draws the next pair.
///
/// ```
/// use resilix::random::Random;
/// use resilix_testkit::random::FakeRandom;
///
/// let mut rng = FakeRandom::units([0.0, 0.5, 0.75]);
/// assert_eq!(rng.unit(), 0.0);
/// assert_eq!(rng.unit(), 0.5);
/// assert_eq!(rng.below(1_024), 768);
/// assert_eq!(rng.drawn(), 6);
/// assert!(rng.is_done());
/// ```
#[derive(Clone, Debug)]
pub struct FakeRandom {
    script: Vec<u32>,
    left: VecDeque<u32>,
    cycle: bool,
    drawn: u64,
}

impl FakeRandom {
    /// These values, in order, then a panic.
    pub fn new(values: impl IntoIterator<Item = u32>) -> Self {
        let script: Vec<u32> = values.into_iter().collect();
        FakeRandom {
            left: script.iter().copied().collect(),
            script,
            cycle: false,
            drawn: 0,
        }
    }

    /// The draws that make each `unit()` return `u` (each in `[0, 1)`, kept to 53 bits).
    ///
    /// # Panics
    /// If a value is outside `[0, 1)`.
    pub fn units(values: impl IntoIterator<Item = f64>) -> Self {
        let mut raw = Vec::new();
        for u in values {
            assert!((0.0..1.0).contains(&u), "a unit value is in [0, 1): {u}");
            let bits = ((u * (1u64 << 53) as f64) as u64) << 11;
            raw.push((bits >> 32) as u32);
            raw.push(bits as u32);
        }
        FakeRandom::new(raw)
    }

    /// Starts the script again when it runs out, instead of panicking.
    pub fn cycle(mut self) -> Self {
        self.cycle = true;
        self
    }

    /// 32-bit draws taken so far.
    pub fn drawn(&self) -> u64 {
        self.drawn
    }

    /// Whether every scripted value has been drawn (in this cycle).
    pub fn is_done(&self) -> bool {
        self.left.is_empty()
    }
}

impl Random for FakeRandom {
    fn next_u32(&mut self) -> u32 {
        if self.left.is_empty() && self.cycle && !self.script.is_empty() {
            self.left.extend(self.script.iter().copied());
        }
        match self.left.pop_front() {
            Some(v) => {
                self.drawn += 1;
                v
            }
            None => panic!(
                "FakeRandom: draw {} asked for, but only {} were scripted",
                self.drawn + 1,
                self.script.len()
            ),
        }
    }
}
