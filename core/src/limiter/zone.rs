//! The queue zone: between the limit and `limit × queue_factor` calls, a caller may wait for a
//! slot instead of being refused; beyond, it is refused. Waiting is the adapters' job; the core
//! only decides who may wait, with an exact bound on how many do.
//!
//! Within the zone a fraction of arrivals is shed, rising with the waiting room's occupancy on a
//! deterministic ladder (spec: "sheds on a deterministic ladder rather than a coin flip"): with
//! `rungs` rungs, an arrival finding the room `k/rungs` full is on rung `k` and is shed if its
//! ticket (a shared arrival counter) modulo `rungs` is below `k`. So an empty room sheds
//! nothing, a room half full sheds every other arrival, and tests can predict each decision.
//! A shed arrival is refused with `limiter-full`, exactly like one beyond the zone.

/// Where a call stands against the limiter.
///
/// ```
/// use resilix::limiter::Zone;
/// assert_eq!(Zone::Queue { rung: 1, rungs: 4 }.shed_fraction_per_mille(), 250);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Zone {
    /// Fewer calls in flight than the limit: the call may go now.
    Admit,
    /// The limit is reached but the waiting room has space: the call may wait for a slot.
    Queue {
        /// How full the waiting room is, in `0..rungs`.
        rung: u32,
        /// The number of rungs on the ladder.
        rungs: u32,
    },
    /// The limit is reached and the waiting room is full (or there is none): refuse.
    Refuse,
}

impl Zone {
    /// The fraction of arrivals shed on this rung, in thousandths (0 outside the queue zone).
    pub const fn shed_fraction_per_mille(self) -> u32 {
        match self {
            Zone::Queue { rung, rungs } if rungs > 0 => (rung as u64 * 1000 / rungs as u64) as u32,
            _ => 0,
        }
    }
}

/// The zone of a call finding `in_flight` calls admitted and `waiting` waiting, under `limit`
/// with a waiting room of `room` places.
pub(crate) const fn zone(in_flight: u32, waiting: u32, limit: u32, room: u32, rungs: u32) -> Zone {
    if in_flight < limit {
        Zone::Admit
    } else if waiting < room {
        let rung = (waiting as u64 * rungs as u64 / room as u64) as u32;
        Zone::Queue { rung, rungs }
    } else {
        Zone::Refuse
    }
}

/// Whether the arrival holding `ticket` is shed on `rung` of `rungs`.
pub(crate) const fn sheds(rung: u32, rungs: u32, ticket: u32) -> bool {
    rungs > 0 && ticket % rungs < rung
}

/// Waiting places for a limit: `⌊limit × (factor − 1)⌋`, factor in Q24.8.
pub(crate) const fn room(limit: u32, factor_q8: u32) -> u32 {
    let extra = factor_q8.saturating_sub(super::fixed::CALL) as u64;
    super::fixed::sat(limit as u64 * extra / super::fixed::CALL as u64)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn zones_by_occupancy() {
        assert_eq!(zone(9, 0, 10, 10, 4), Zone::Admit);
        assert_eq!(zone(10, 0, 10, 10, 4), Zone::Queue { rung: 0, rungs: 4 });
        assert_eq!(zone(10, 5, 10, 10, 4), Zone::Queue { rung: 2, rungs: 4 });
        assert_eq!(zone(10, 9, 10, 10, 4), Zone::Queue { rung: 3, rungs: 4 });
        assert_eq!(zone(10, 10, 10, 10, 4), Zone::Refuse);
        assert_eq!(
            zone(10, 0, 10, 0, 4),
            Zone::Refuse,
            "no room: no queue zone"
        );
        assert_eq!(
            zone(0, 0, 0, 0, 4),
            Zone::Refuse,
            "a zero limit admits nothing"
        );
        assert_eq!(
            zone(u32::MAX, u32::MAX - 1, 1, u32::MAX, u32::MAX).shed_fraction_per_mille(),
            999
        );
        // A zone built by hand with no rungs sheds nothing (no division by zero).
        let no_ladder = Zone::Queue { rung: 0, rungs: 0 };
        assert_eq!(no_ladder.shed_fraction_per_mille(), 0);
        assert_eq!(Zone::Admit.shed_fraction_per_mille(), 0);
    }

    #[test]
    fn the_ladder_sheds_rung_out_of_rungs_exactly() {
        for rung in 0..4 {
            let shed = (0..400).filter(|&t| sheds(rung, 4, t)).count();
            assert_eq!(shed, rung as usize * 100, "rung {rung}");
        }
        assert!(!sheds(3, 0, 0));
        // Rung 2 of 4: tickets 0, 1 shed; 2, 3 pass; and so on.
        let pattern: [bool; 8] = core::array::from_fn(|t| sheds(2, 4, t as u32));
        assert_eq!(
            pattern,
            [true, true, false, false, true, true, false, false]
        );
    }

    #[test]
    fn room_is_the_limit_times_factor_minus_one() {
        assert_eq!(room(20, 256), 0, "factor 1: no waiting");
        assert_eq!(room(20, 512), 20);
        assert_eq!(room(20, 384), 10);
        assert_eq!(room(3, 384), 1, "⌊1.5⌋");
        assert_eq!(room(u32::MAX, u32::MAX), u32::MAX);
    }
}
