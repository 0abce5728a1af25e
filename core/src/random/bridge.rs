//! Bridges from the `rand_core` generations to [`Random`], each behind its own feature.
//!
//! The embedded ecosystem is split across `rand_core` 0.6 (most HALs), 0.9 and 0.10 (`rand`
//! 0.9/0.10), and HALs implement several side by side. Blanket impls for two generations would
//! conflict, so each bridge is a newtype: wrap any generator and pass it where a [`Random`] is
//! wanted.
//!
//! ```
//! # #[cfg(feature = "rand_core_09")] {
//! use resilix::random::{Random, bridge::RandCore09};
//!
//! struct Counter(u32);
//! impl rand_core_09::RngCore for Counter {
//!     fn next_u32(&mut self) -> u32 { self.0 += 1; self.0 }
//!     fn next_u64(&mut self) -> u64 { self.next_u32() as u64 }
//!     fn fill_bytes(&mut self, dst: &mut [u8]) { dst.fill(0) }
//! }
//! let mut rng = RandCore09(Counter(0));
//! assert_eq!(rng.next_u32(), 1);
//! # }
//! ```

#[allow(unused_imports)]
use super::Random;

/// Any `rand_core` 0.6 `RngCore` as a [`Random`].
#[cfg(feature = "rand_core_06")]
#[derive(Clone, Debug)]
pub struct RandCore06<R>(pub R);

#[cfg(feature = "rand_core_06")]
impl<R: rand_core_06::RngCore> Random for RandCore06<R> {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
}

/// Any `rand_core` 0.9 `RngCore` as a [`Random`].
#[cfg(feature = "rand_core_09")]
#[derive(Clone, Debug)]
pub struct RandCore09<R>(pub R);

#[cfg(feature = "rand_core_09")]
impl<R: rand_core_09::RngCore> Random for RandCore09<R> {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
}

/// Any `rand_core` 0.10 `Rng` (formerly `RngCore`) as a [`Random`].
#[cfg(feature = "rand_core_010")]
#[derive(Clone, Debug)]
pub struct RandCore010<R>(pub R);

#[cfg(feature = "rand_core_010")]
impl<R: rand_core_010::Rng> Random for RandCore010<R> {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
}

/// [`SeededRandom`](super::SeededRandom) as a `rand_core` 0.9 generator, for code that
/// wants to share one seeded stream with the `rand` ecosystem.
#[cfg(feature = "rand_core_09")]
impl rand_core_09::RngCore for super::SeededRandom {
    fn next_u32(&mut self) -> u32 {
        Random::next_u32(self)
    }
    fn next_u64(&mut self) -> u64 {
        Random::next_u64(self)
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(4) {
            let bytes = Random::next_u32(self).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[allow(unused_imports)]
    use super::*;

    /// One generator implementing all three generations, counting up from 1.
    #[allow(dead_code)]
    struct Counter(u32);

    #[cfg(feature = "rand_core_06")]
    impl rand_core_06::RngCore for Counter {
        fn next_u32(&mut self) -> u32 {
            self.0 += 1;
            self.0
        }
        fn next_u64(&mut self) -> u64 {
            rand_core_06::RngCore::next_u32(self) as u64
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0)
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), rand_core_06::Error> {
            dst.fill(0);
            Ok(())
        }
    }

    #[cfg(feature = "rand_core_09")]
    impl rand_core_09::RngCore for Counter {
        fn next_u32(&mut self) -> u32 {
            self.0 += 10;
            self.0
        }
        fn next_u64(&mut self) -> u64 {
            rand_core_09::RngCore::next_u32(self) as u64
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0)
        }
    }

    #[cfg(feature = "rand_core_010")]
    impl rand_core_010::TryRng for Counter {
        type Error = core::convert::Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
            self.0 += 100;
            Ok(self.0)
        }
        fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
            self.try_next_u32().map(u64::from)
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
            dst.fill(0);
            Ok(())
        }
    }

    #[cfg(feature = "rand_core_06")]
    #[test]
    fn rand_core_06_generators_serve() {
        let mut r = RandCore06(Counter(0));
        assert_eq!((r.next_u32(), r.next_u32()), (1, 2));
    }

    #[cfg(feature = "rand_core_09")]
    #[test]
    fn rand_core_09_generators_serve_and_seeded_random_is_one() {
        let mut r = RandCore09(Counter(0));
        assert_eq!((r.next_u32(), r.next_u32()), (10, 20));
        let mut ours = super::super::SeededRandom::new(9);
        let mut copy = ours.clone();
        let mut buf = [0u8; 6];
        rand_core_09::RngCore::fill_bytes(&mut ours, &mut buf);
        let first = Random::next_u32(&mut copy).to_le_bytes();
        assert_eq!(&buf[..4], &first);
    }

    #[cfg(feature = "rand_core_010")]
    #[test]
    fn rand_core_010_generators_serve() {
        let mut r = RandCore010(Counter(0));
        assert_eq!((r.next_u32(), r.next_u32()), (100, 200));
    }
}
