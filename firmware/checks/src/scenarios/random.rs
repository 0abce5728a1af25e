//! The seeded generator must give the same numbers on every target: jitter and shed decisions
//! recorded on a laptop replay bit for bit on a Cortex-M0 with soft floats.

use resilix::random::{Random, SeededRandom};

use super::ensure;
use crate::Trace;

/// Core's own host test pins these (core/src/random/seeded.rs, `PINNED_SEED_42`).
const SEED_42: [u32; 4] = [2_643_743_425, 1_762_251_840, 1_632_151_183, 1_417_845_339];

pub(crate) fn pinned(t: &mut Trace) -> Result<(), &'static str> {
    let mut rng = SeededRandom::new(42);
    for want in SEED_42 {
        ensure(
            rng.next_u32() == want,
            "seed 42 differs from the outputs core pins on the host",
        )?;
    }
    let mut rng = SeededRandom::new(0xDEAD_BEEF_0BAD_F00D);
    for _ in 0..8 {
        t.push(u64::from(rng.next_u32()));
    }
    // f64 through soft-float on the M0 and RISC-V: the bits must still match.
    for _ in 0..4 {
        let u = rng.unit();
        ensure((0.0..1.0).contains(&u), "unit() outside [0, 1)")?;
        t.push(u.to_bits());
    }
    for _ in 0..4 {
        let b = rng.below(1000);
        ensure(b < 1000, "below(1000) out of range")?;
        t.push(b);
    }
    // A bound near 2^64 exercises the 128-bit multiply and the rejection loop.
    for _ in 0..2 {
        t.push(rng.below(u64::MAX - 5));
    }
    let mut hits = 0u64;
    for i in 0..64 {
        if rng.chance(1, 3) {
            hits |= 1 << i;
        }
    }
    ensure(
        (10..=35).contains(&hits.count_ones()),
        "chance(1, 3) far from a third",
    )?;
    t.push(hits);
    Ok(())
}

/// xoshiro128++ and SplitMix64 written again here from their published definitions, so the
/// device computes the same stream twice from independent code.
struct Reference([u32; 4]);

impl Reference {
    fn seeded(seed: u64) -> Self {
        let mut state = seed;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let (a, b) = (next(), next());
        Reference([a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32])
    }

    fn next(&mut self) -> u32 {
        let [s0, s1, s2, s3] = self.0;
        let out = s0.wrapping_add(s3).rotate_left(7).wrapping_add(s0);
        let t = s1 << 9;
        let (s2, s3) = (s2 ^ s0, s3 ^ s1);
        let (s1, s0) = (s1 ^ s2, s0 ^ s3);
        self.0 = [s0, s1, s2 ^ t, s3.rotate_left(11)];
        out
    }
}

pub(crate) fn reference(t: &mut Trace) -> Result<(), &'static str> {
    // The published xoshiro128++ outputs from state [1, 2, 3, 4].
    let mut r = Reference([1, 2, 3, 4]);
    for want in [
        641,
        1_573_767,
        3_222_811_527,
        3_517_856_514,
        836_907_274,
        4_247_214_768,
    ] {
        ensure(
            r.next() == want,
            "reference xoshiro128++ differs from the published vector",
        )?;
    }
    for seed in [0, 1, 42, 0x5EED, u64::MAX] {
        let (mut ours, mut reference) = (SeededRandom::new(seed), Reference::seeded(seed));
        let mut fold = 0u64;
        for _ in 0..64 {
            let v = ours.next_u32();
            ensure(
                v == reference.next(),
                "SeededRandom differs from the reference recurrence",
            )?;
            fold = fold.rotate_left(5) ^ u64::from(v);
        }
        t.push(fold);
    }
    Ok(())
}
