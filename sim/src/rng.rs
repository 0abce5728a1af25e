//! Every random draw of a run comes from a [`SeededRandom`] derived from the master seed, one
//! stream per purpose and per client, so adding a client or a draw in one place never shifts
//! the draws anywhere else.

use std::time::Duration;

use resilix::random::{Random, SeededRandom};

/// What a stream is for; mixed into its seed so two purposes never share a sequence.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    /// A client's arrivals, network hops and policy decisions.
    Client = 1,
    /// The upstream's own randomness (failures, service times).
    Upstream = 2,
}

/// The stream for (`master`, `run`, `purpose`, `index`). SplitMix-style mixing of the parts
/// gives well separated seeds for neighbouring indices.
pub fn stream(master: u64, run: u64, purpose: Purpose, index: u64) -> SeededRandom {
    let mut h = master ^ 0x9E37_79B9_7F4A_7C15;
    for part in [run, purpose as u64, index] {
        h = mix(h ^ part.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    }
    SeededRandom::new(h)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Standard normal by Box–Muller (one of the pair; the other is dropped so each draw costs
/// the same and stays independent of call order).
pub fn standard_normal(rng: &mut SeededRandom) -> f64 {
    // 1 - unit() lies in (0, 1], so the log is finite.
    let u1 = 1.0 - rng.unit();
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Exponential with the given mean.
pub fn exponential(rng: &mut SeededRandom, mean: f64) -> f64 {
    -mean * (1.0 - rng.unit()).ln()
}

/// Seconds (f64) to a `Duration`, negative values read as zero.
pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_by_every_part_and_repeat_exactly() {
        let a = stream(1, 0, Purpose::Client, 0).next_u64();
        assert_eq!(a, stream(1, 0, Purpose::Client, 0).next_u64());
        assert_ne!(a, stream(2, 0, Purpose::Client, 0).next_u64());
        assert_ne!(a, stream(1, 1, Purpose::Client, 0).next_u64());
        assert_ne!(a, stream(1, 0, Purpose::Upstream, 0).next_u64());
        assert_ne!(a, stream(1, 0, Purpose::Client, 1).next_u64());
    }

    #[test]
    fn normal_and_exponential_have_their_moments() {
        let mut rng = SeededRandom::new(9);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| standard_normal(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0).abs() < 0.02, "{var}");
        let e = (0..n).map(|_| exponential(&mut rng, 0.01)).sum::<f64>() / n as f64;
        assert!((e - 0.01).abs() < 0.0002, "{e}");
    }
}
