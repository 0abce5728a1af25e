//! The counts that show a keyed table's stress run really churned the table: calls placed,
//! calls in the overflow, entries evicted, from every thread.

use std::sync::atomic::{AtomicU64, Ordering};

use resilix::random::SeededRandom;

use super::alongside::alongside;

/// What a run did to the table, counted from every thread.
#[derive(Default)]
pub struct Churn {
    placed: AtomicU64,
    overflow: AtomicU64,
    evicted: AtomicU64,
}

impl Churn {
    /// A call for `key` was admitted, in the overflow or in the key's own entry, which then
    /// must stay placed (`placed(key)`) while the call is in flight, evictions or not.
    pub fn admitted(&self, key: u64, overflow: bool, placed: impl FnOnce(u64) -> bool) {
        if overflow {
            self.overflow.fetch_add(1, Ordering::Relaxed);
        } else {
            self.placed.fetch_add(1, Ordering::Relaxed);
            assert!(placed(key), "key {key} evicted with a call in flight");
        }
    }

    /// An `evict_idle` freed `n` entries.
    pub fn evicted(&self, n: usize) {
        self.evicted.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Runs `evict` (counting what it frees) before every 64th round, so that workers evict
    /// between their own calls as well as the background thread does.
    pub fn now_and_then(&self, round: u32, evict: impl FnOnce() -> usize) {
        if round.is_multiple_of(64) {
            self.evicted(evict());
        }
    }

    /// Runs `round` `rounds` times on every worker of [`alongside`], each with its own
    /// generator, while `evict` runs in the background and before every 64th round.
    pub fn evicting(
        &self,
        rounds: u32,
        evict: impl Fn() -> usize + Sync,
        round: impl Fn(&mut SeededRandom) + Sync,
    ) {
        alongside(
            || self.evicted(evict()),
            |_, mut rng| {
                for r in 0..rounds {
                    self.now_and_then(r, &evict);
                    round(&mut rng);
                }
            },
        );
    }

    /// The run placed calls, filled the table (calls went to the overflow) and evicted.
    pub fn assert_churned(&self) {
        assert!(self.placed.load(Ordering::Relaxed) > 0);
        assert!(
            self.overflow.load(Ordering::Relaxed) > 0,
            "the table filled"
        );
        assert!(
            self.evicted.load(Ordering::Relaxed) > 0,
            "idle entries were evicted"
        );
    }
}
