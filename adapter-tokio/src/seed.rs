//! Per-call seeds from a per-thread generator, itself seeded lazily from platform entropy.

use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use resilix::random::{Random, SeededRandom};

thread_local! {
    // Seeded on a thread's first call, never at program start-up (DESIGN.md §3): a process
    // that never calls pays nothing, and a Workers-style host without entropy at init is fine.
    static THREAD_RNG: RefCell<Option<SeededRandom>> = const { RefCell::new(None) };
}

/// A fresh seed for one call, drawn from this thread's generator.
///
/// The generator is seeded on the thread's first use from `RandomState` (std's per-process
/// random keys, from the OS), the thread id and the time, so two threads, two processes and
/// two devices jitter differently. Used by [`Resilience`](crate::Resilience) unless you give
/// it a seed.
///
/// ```
/// let a = resilix_tokio::thread_seed();
/// let b = resilix_tokio::thread_seed();
/// assert_ne!(a, b);
/// ```
pub fn thread_seed() -> u64 {
    THREAD_RNG.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| SeededRandom::new(entropy()))
            .next_u64()
    })
}

fn entropy() -> u64 {
    let mut h = RandomState::new().build_hasher();
    std::thread::current().id().hash(&mut h);
    std::time::Instant::now().hash(&mut h);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        t.hash(&mut h);
    }
    h.finish()
}

/// SplitMix64's finaliser: spreads a counter into well-mixed seeds.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_draw_different_seeds() {
        let here = thread_seed();
        let there = std::thread::spawn(thread_seed).join().unwrap();
        assert_ne!(here, there);
    }
}
