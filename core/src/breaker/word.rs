//! The breaker's state packed into one 32-bit word, so that every transition and every
//! half-open probe count changes with a single compare-and-swap.
//!
//! ```text
//! bit  31 ............ 15 | 14 .. 11 | 10 .. 7   | 6 .. 3    | 2 .. 0
//!      epoch (17 bits)    | failures | successes | in flight | state
//! ```
//!
//! The three probe counts mean something only in half-open; every other state keeps them at
//! zero. Every transition increments the epoch (wrapping at 2^17), and a permit remembers the
//! epoch that issued it, so an outcome that arrives after a transition is recognised as late.
//! A permit that outlives exactly a multiple of 2^17 transitions would be mistaken for a
//! current one; each open wait separates two of them, so that takes 65,536 open waits during
//! one call.

use crate::observe::CircuitState;

/// The most half-open probes a breaker can be configured for: the probe counts are 4 bits.
pub(crate) const MAX_PROBES: u8 = 15;

const STATE_MASK: u32 = 0b111;
const COUNT_BITS: u32 = 4;
const COUNT_MASK: u32 = (1 << COUNT_BITS) - 1;
const IN_FLIGHT_SHIFT: u32 = 3;
const SUCCESSES_SHIFT: u32 = IN_FLIGHT_SHIFT + COUNT_BITS;
const FAILURES_SHIFT: u32 = SUCCESSES_SHIFT + COUNT_BITS;
const EPOCH_SHIFT: u32 = FAILURES_SHIFT + COUNT_BITS;
/// Epochs count modulo this.
pub(crate) const EPOCH_MODULUS: u32 = 1 << (32 - EPOCH_SHIFT);

/// The unpacked state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) state: CircuitState,
    pub(crate) epoch: u32,
    /// Half-open probes admitted and neither settled nor dropped.
    pub(crate) in_flight: u8,
    /// Half-open probes that settled as successes.
    pub(crate) successes: u8,
    /// Half-open probes that settled as failures.
    pub(crate) failures: u8,
}

const fn state_code(s: CircuitState) -> u32 {
    match s {
        CircuitState::Closed => 0,
        CircuitState::Open => 1,
        CircuitState::HalfOpen => 2,
        CircuitState::ForcedOpen => 3,
        CircuitState::Disabled => 4,
    }
}

const fn state_of(code: u32) -> CircuitState {
    match code {
        1 => CircuitState::Open,
        2 => CircuitState::HalfOpen,
        3 => CircuitState::ForcedOpen,
        4 => CircuitState::Disabled,
        // 5..=7 are never written; reading them as closed keeps the breaker usable.
        _ => CircuitState::Closed,
    }
}

impl Word {
    /// Closed, epoch zero: a new breaker.
    pub(crate) const INITIAL: Word = Word {
        state: CircuitState::Closed,
        epoch: 0,
        in_flight: 0,
        successes: 0,
        failures: 0,
    };

    pub(crate) const fn pack(self) -> u32 {
        state_code(self.state)
            | ((self.in_flight as u32 & COUNT_MASK) << IN_FLIGHT_SHIFT)
            | ((self.successes as u32 & COUNT_MASK) << SUCCESSES_SHIFT)
            | ((self.failures as u32 & COUNT_MASK) << FAILURES_SHIFT)
            | ((self.epoch % EPOCH_MODULUS) << EPOCH_SHIFT)
    }

    pub(crate) const fn unpack(w: u32) -> Word {
        Word {
            state: state_of(w & STATE_MASK),
            in_flight: ((w >> IN_FLIGHT_SHIFT) & COUNT_MASK) as u8,
            successes: ((w >> SUCCESSES_SHIFT) & COUNT_MASK) as u8,
            failures: ((w >> FAILURES_SHIFT) & COUNT_MASK) as u8,
            epoch: w >> EPOCH_SHIFT,
        }
    }

    /// The word after a transition into `state`: the next epoch, no probe counts.
    pub(crate) const fn next(self, state: CircuitState) -> Word {
        Word {
            state,
            epoch: (self.epoch + 1) % EPOCH_MODULUS,
            in_flight: 0,
            successes: 0,
            failures: 0,
        }
    }

    /// The epoch of the packed word `w` if it is closed, read without unpacking: the closed
    /// admit and settle are the hot paths, and need nothing else from the word. Only the code
    /// written for closed (zero) counts; the never-written codes 5..=7, which `unpack` reads as
    /// closed, answer `None` here and take the unpacking path.
    pub(crate) const fn closed_epoch(w: u32) -> Option<u32> {
        if w & STATE_MASK == 0 {
            Some(w >> EPOCH_SHIFT)
        } else {
            None
        }
    }

    /// Probes admitted in this half-open epoch and not dropped.
    pub(crate) const fn probes_taken(self) -> u8 {
        self.in_flight + self.successes + self.failures
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const STATES: [CircuitState; 5] = [
        CircuitState::Closed,
        CircuitState::Open,
        CircuitState::HalfOpen,
        CircuitState::ForcedOpen,
        CircuitState::Disabled,
    ];

    #[test]
    fn every_field_round_trips_at_its_edges() {
        for state in STATES {
            for epoch in [0, 1, EPOCH_MODULUS - 1] {
                for count in [0, 1, MAX_PROBES] {
                    let w = Word {
                        state,
                        epoch,
                        in_flight: count,
                        successes: MAX_PROBES - count,
                        failures: count,
                    };
                    assert_eq!(Word::unpack(w.pack()), w);
                }
            }
        }
    }

    #[test]
    fn next_bumps_the_epoch_wrapping_and_clears_counts() {
        let w = Word {
            state: CircuitState::HalfOpen,
            epoch: EPOCH_MODULUS - 1,
            in_flight: 3,
            successes: 2,
            failures: 1,
        };
        let n = w.next(CircuitState::Open);
        assert_eq!(n.epoch, 0);
        assert_eq!(n.state, CircuitState::Open);
        assert_eq!(n.probes_taken(), 0);
        assert_eq!(w.probes_taken(), 6);
    }

    #[test]
    fn closed_epoch_agrees_with_unpack_on_every_written_word() {
        for state in STATES {
            for epoch in [0, 1, 77, EPOCH_MODULUS - 1] {
                let w = Word::INITIAL.next(state);
                let w = Word { epoch, ..w }.pack();
                let expected = (state == CircuitState::Closed).then_some(epoch);
                assert_eq!(Word::closed_epoch(w), expected, "{state:?} {epoch}");
            }
        }
        assert_eq!(
            Word::closed_epoch(7 | (5 << EPOCH_SHIFT)),
            None,
            "unused codes unpack"
        );
    }

    #[test]
    fn unused_codes_read_as_closed() {
        assert_eq!(Word::unpack(7).state, CircuitState::Closed);
        assert_eq!(Word::INITIAL.pack(), 0);
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        // Round trips cannot see a layout change that stays self-consistent (fields moved or
        // the epoch narrowed): the module docs' bit positions, checked bit by bit.
        let w = Word {
            state: CircuitState::HalfOpen,
            epoch: 1,
            in_flight: 1,
            successes: 2,
            failures: 3,
        };
        assert_eq!(w.pack(), 2 | 1 << 3 | 2 << 7 | 3 << 11 | 1 << 15);
        assert_eq!(EPOCH_MODULUS, 1 << 17, "a permit outlives 2^17 transitions");
        let top = Word {
            epoch: EPOCH_MODULUS - 1,
            ..Word::INITIAL
        };
        assert_eq!(top.pack(), u32::MAX << 15);
    }

    #[test]
    fn pack_keeps_the_epoch_modulo_its_width() {
        for epoch in [EPOCH_MODULUS, EPOCH_MODULUS + 5, u32::MAX] {
            let w = Word {
                epoch,
                ..Word::INITIAL
            };
            assert_eq!(Word::unpack(w.pack()).epoch, epoch % EPOCH_MODULUS);
        }
    }
}
