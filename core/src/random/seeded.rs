use super::Random;

/// A small, fast, seeded generator: xoshiro128++ (Blackman and Vigna), with its 128-bit state
/// expanded from a `u64` seed by SplitMix64.
///
/// Same seed, same sequence, on every target: it uses only 32- and 64-bit integer arithmetic.
/// It is not cryptographic and must not be used where an adversary could exploit prediction
/// (jitter and load shedding are not such places). It has no `Default`: pick a seed per device
/// or per process (a serial number, a hardware RNG, the adapters' per-thread entropy).
///
/// ```
/// use resilix::random::{Random, SeededRandom};
///
/// let mut rng = SeededRandom::new(0x5EED);
/// let first = rng.next_u32();
/// assert_eq!(SeededRandom::new(0x5EED).next_u32(), first);
/// assert_ne!(SeededRandom::new(0x5EEE).next_u32(), first);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SeededRandom {
    s: [u32; 4],
}

impl SeededRandom {
    /// A generator whose whole future sequence is determined by `seed`.
    pub const fn new(seed: u64) -> Self {
        let mut sm = seed;
        let a = splitmix64(&mut sm);
        let b = splitmix64(&mut sm);
        let mut s = [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32];
        // xoshiro's one forbidden state; SplitMix64 cannot produce it for two outputs in a
        // row, but the check costs nothing and keeps the invariant local.
        if s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 {
            s[0] = 1;
        }
        SeededRandom { s }
    }
}

const fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Random for SeededRandom {
    fn next_u32(&mut self) -> u32 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(7).wrapping_add(s[0]);
        let t = s[1] << 9;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(11);
        result
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sequence_is_pinned_for_every_target() {
        // Pinned outputs: if these change, every recorded simulation and firmware test vector
        // changes with them. The firmware and wasm checks assert the same values on-device.
        let mut rng = SeededRandom::new(42);
        let got: [u32; 4] = [
            rng.next_u32(),
            rng.next_u32(),
            rng.next_u32(),
            rng.next_u32(),
        ];
        let mut again = SeededRandom::new(42);
        assert_eq!(
            got,
            [
                again.next_u32(),
                again.next_u32(),
                again.next_u32(),
                again.next_u32()
            ]
        );
        assert_eq!(got, PINNED_SEED_42);
    }

    /// The first four outputs for seed 42, computed once by this implementation (whose
    /// recurrence `reference_vector_matches` checks against the published one).
    const PINNED_SEED_42: [u32; 4] = [2_643_743_425, 1_762_251_840, 1_632_151_183, 1_417_845_339];

    #[test]
    fn reference_vector_matches() {
        // The reference implementation's outputs from state [1, 2, 3, 4] (as published with
        // xoshiro128++ and reproduced by rand_xoshiro's tests).
        let mut rng = SeededRandom { s: [1, 2, 3, 4] };
        let expected = [
            641u32,
            1_573_767,
            3_222_811_527,
            3_517_856_514,
            836_907_274,
            4_247_214_768,
        ];
        for e in expected {
            assert_eq!(rng.next_u32(), e);
        }
    }

    #[test]
    fn different_seeds_diverge() {
        let mut a = SeededRandom::new(1);
        let mut b = SeededRandom::new(2);
        let same = (0..64).filter(|_| a.next_u32() == b.next_u32()).count();
        assert!(same < 2);
    }

    #[test]
    fn bits_are_balanced() {
        let mut rng = SeededRandom::new(7);
        let mut ones = [0u32; 32];
        for _ in 0..20_000 {
            let v = rng.next_u32();
            for (bit, count) in ones.iter_mut().enumerate() {
                *count += (v >> bit) & 1;
            }
        }
        for c in ones {
            assert!((9_600..10_400).contains(&c), "bit count {c}");
        }
    }
}
