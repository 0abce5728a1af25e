//! What every bench file shares: the criterion configuration, the clock the samples are
//! measured with, and the two-threads-on-one-instance harness.
//!
//! # Why thread CPU time
//!
//! The machine these run on has two cores shared with other work. Wall-clock samples then
//! measure the scheduler as much as the code: a sample in which the bench thread was
//! preempted for a few milliseconds is ten times too slow. The time the kernel charges to
//! the bench thread (`CLOCK_THREAD_CPUTIME_ID`) does not advance while it is preempted, so
//! per-op figures, and above all the ratios between two crates measured in the same run, stay
//! stable under load. Caches and frequency are still shared, so it is not a perfect shield.
//!
//! Set `RESILIX_BENCH_CLOCK=wall` to measure wall-clock time instead (on an idle machine the
//! two agree for one thread).
//!
//! # Two threads on one shared instance
//!
//! [`two_threads`] runs the operation on two threads against the same instance, `iters` times
//! each, and reports the mean of the two threads' own time per op: the per-op cost a caller
//! sees when another core hammers the same cache lines. Contention only happens while both
//! threads are on a core at once; on a loaded machine they often are not, so contended
//! figures taken there understate the contention. Take them on an idle machine.
#![allow(dead_code)] // each bench file uses part of this

pub mod clock;

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Bencher, Criterion};

/// The configuration every bench file uses: many short samples (the summary reads their
/// median, which shrugs off the samples a busy neighbour spoiled), sized so the whole suite
/// (about 80 benchmarks) takes about five minutes on two busy cores, well under the 15.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(2_500))
        .sample_size(200)
        .nresamples(10_000)
        .noise_threshold(0.03)
        .without_plots()
        .configure_from_args()
}

/// Whether samples are measured on the wall clock instead of the thread's CPU time.
fn wall_clock() -> bool {
    std::env::var("RESILIX_BENCH_CLOCK").is_ok_and(|v| v == "wall")
}

/// A point on the measuring clock: this thread's CPU time, or the wall clock.
#[derive(Clone, Copy)]
pub enum Stamp {
    /// Thread CPU time since the thread started.
    Cpu(Duration),
    /// A wall-clock instant.
    Wall(Instant),
}

impl Stamp {
    /// Now, on the configured clock.
    pub fn now() -> Stamp {
        if wall_clock() {
            return Stamp::Wall(Instant::now());
        }
        match thread_cpu_time() {
            Some(t) => Stamp::Cpu(t),
            None => Stamp::Wall(Instant::now()),
        }
    }

    /// Time on the same clock since `self`.
    pub fn elapsed(self) -> Duration {
        match self {
            Stamp::Wall(start) => start.elapsed(),
            Stamp::Cpu(start) => thread_cpu_time()
                .map(|now| now.saturating_sub(start))
                .unwrap_or_default(),
        }
    }
}

/// This thread's CPU time, where the OS offers it.
#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id is a constant the kernel
    // knows; clock_gettime writes only into `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// The next iteration number to hand out. One counter for the whole bench binary, so the
/// time a bench injects (derived from the iteration number) never runs backwards, not even
/// from one benchmark to the next on a shared instance.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The first of `iters` fresh iteration numbers.
fn take(iters: u64) -> u64 {
    NEXT.fetch_add(iters, Ordering::Relaxed)
}

/// One thread: `op(i)` for `iters` rising iteration numbers `i`, timed on the configured clock.
///
/// `op` receives the iteration number so time can be injected without a clock read: the
/// caller turns `i` into an instant. Numbers keep rising across samples, warm-up included.
pub fn one_thread<F: FnMut(u64)>(b: &mut Bencher<'_>, mut op: F) {
    b.iter_custom(|iters| {
        let first = take(iters);
        let start = Stamp::now();
        for i in first..first + iters {
            op(i);
        }
        start.elapsed()
    })
}

/// Two threads on one shared instance: each runs `op(shared, local, i)` for `i` in
/// `0..iters`, both released at once; the sample is the mean of the two threads' own times, so
/// criterion reports the per-op cost each thread saw. Both threads see the same rising
/// iteration numbers, so injected time advances alike on both. `local(thread)` builds what each thread
/// owns (its random generator, its clock offset), outside the timed loop.
pub fn two_threads<S, L, I, F>(b: &mut Bencher<'_>, shared: &S, local: I, op: F)
where
    S: Sync + ?Sized,
    I: Fn(usize) -> L + Sync,
    F: Fn(&S, &mut L, u64) + Sync,
{
    b.iter_custom(|iters| {
        let barrier = Barrier::new(2);
        let first = take(iters);
        let total: Duration = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|t| {
                    let (barrier, op, local) = (&barrier, &op, &local);
                    s.spawn(move || {
                        let mut mine = local(t);
                        barrier.wait();
                        let start = Stamp::now();
                        for i in first..first + iters {
                            op(shared, &mut mine, i);
                        }
                        start.elapsed()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        total / 2
    })
}

/// Counts the calls a bench meant to be admitted that were refused, and fails the bench when
/// they are more than 1 %: the figure would then describe the refusal path, not the one named.
///
/// Why tolerate any: a fresh rate limiter can refuse its first calls at some instants (reported
/// with the figures), and a bench's injected time starts wherever the previous one stopped.
#[derive(Default)]
pub struct Refusals {
    calls: std::cell::Cell<u64>,
    refused: std::cell::Cell<u64>,
}

impl Refusals {
    /// Records one call's outcome; hands back the value when admitted.
    pub fn note<T, E>(&self, result: Result<T, E>) -> Option<T> {
        self.calls.set(self.calls.get() + 1);
        if result.is_err() {
            self.refused.set(self.refused.get() + 1);
        }
        result.ok()
    }

    /// Panics when more than 1 % of the calls were refused.
    pub fn check(&self, bench: &str) {
        let (calls, refused) = (self.calls.get(), self.refused.get());
        assert!(
            refused * 100 <= calls,
            "{bench}: {refused} of {calls} calls refused; the bench no longer measures its path"
        );
    }
}
