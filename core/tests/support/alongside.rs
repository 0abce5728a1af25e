//! The harness the keyed tables' stress tests share: seeded workers racing one background
//! thread (an evictor, or a resetter). `churn.rs` beside it counts what they did.

use std::sync::atomic::{AtomicU64, Ordering};

use resilix::random::SeededRandom;

/// Workers per run.
pub const THREADS: u64 = 4;

/// Runs `worker(t, SeededRandom::new(t))` for each `t` in `0..THREADS`, each on its own
/// thread, while `background` runs over and over on one more (yielding in between) until every
/// worker has ended. A worker that panics is counted out too, so the background stops and the
/// panic fails the test instead of hanging it.
pub fn alongside(mut background: impl FnMut() + Send, worker: impl Fn(u64, SeededRandom) + Sync) {
    let finished = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while finished.load(Ordering::Relaxed) < THREADS {
                background();
                std::thread::yield_now();
            }
        });
        let (worker, finished) = (&worker, &finished);
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    let _out = Finished(finished);
                    worker(t, SeededRandom::new(t));
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Counts a worker out when it ends, by return or by panic.
struct Finished<'a>(&'a AtomicU64);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}
