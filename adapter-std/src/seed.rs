//! Per-call seeds from a per-thread generator, itself seeded lazily from platform entropy.

use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use resilix::random::{Random, SeededRandom};
use resilix::resilience::{FixedSeeds, SeedSource};

thread_local! {
    // Seeded on a thread's first call, never at program start-up (docs/design/contracts.md §3): a process
    // that never calls pays nothing, and a Workers-style host without entropy at init is fine.
    static THREAD_RNG: RefCell<Option<SeededRandom>> = const { RefCell::new(None) };
}

/// A fresh seed for one call, drawn from this thread's generator.
///
/// The generator is seeded on the thread's first use from `RandomState` (std's per-process
/// random keys, from the OS), the thread id and the time, so two threads, two processes and
/// two devices jitter differently. [`StdSeeds::Entropy`] uses it.
///
/// ```
/// let a = resilix_std::thread_seed();
/// let b = resilix_std::thread_seed();
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

/// Where a std adapter's calls get their seeds: per-thread entropy (the default), or one
/// number (`Resilience::seed`), reproducible for a given order of calls.
///
/// ```
/// use resilix::resilience::{FixedSeeds, SeedSource};
/// use resilix_std::StdSeeds;
///
/// let a = StdSeeds::from(FixedSeeds::new(4));
/// let b = StdSeeds::from(FixedSeeds::new(4));
/// assert_eq!(a.call_seed(), b.call_seed());
/// ```
#[derive(Debug, Default)]
pub enum StdSeeds {
    /// [`thread_seed`].
    #[default]
    Entropy,
    /// Call `n` gets a seed mixed from the seed and `n`.
    Fixed(FixedSeeds),
}

impl From<FixedSeeds> for StdSeeds {
    fn from(seeds: FixedSeeds) -> Self {
        StdSeeds::Fixed(seeds)
    }
}

impl SeedSource for StdSeeds {
    fn call_seed(&self) -> u64 {
        match self {
            StdSeeds::Entropy => thread_seed(),
            StdSeeds::Fixed(seeds) => seeds.call_seed(),
        }
    }
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
