//! `execute` allocates nothing per call beyond the operation's own future: a counting global
//! allocator, after warm-up (the runtime's timer wheel and the per-thread generator are set up
//! on first use), over calls that time out, retry and sleep.
//!
//! Paused time: the sleeps and timeouts are virtual, exact, and order nothing by how long they
//! take on the machine.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix_testkit::{Counting, FixedRetry};
use resilix_tokio::Resilience;

struct CountingAlloc;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Only this thread's allocations count (the test harness has threads of its own).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn counted<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCATIONS.load(Ordering::Relaxed) - before)
}

#[test]
fn execute_allocates_nothing_per_call() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let gate = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: Duration::from_millis(5),
        })
        .bulkhead(&gate)
        .attempt_timeout(Duration::from_millis(20));
    // Per-thread entropy for one, a fixed seed for the other: both seed paths are covered.
    let resilience = &Resilience::new(&pipeline);
    let seeded = &Resilience::new(&pipeline).seed(1);

    // Per round: one slow attempt cut off by the timeout (not idempotent: not retried), and
    // one call that fails twice and then succeeds, sleeping between attempts.
    let calls = |n: u32| async move {
        for i in 0..n {
            let slow = resilience
                .execute(CallOptions::default(), || async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok::<u32, ()>(i)
                })
                .await;
            assert!(slow.is_err());
            let mut k = 0;
            let flaky = seeded
                .execute(CallOptions::default(), || {
                    k += 1;
                    let ok = k == 3;
                    async move { if ok { Ok(i) } else { Err(()) } }
                })
                .await;
            assert_eq!(flaky, Ok(i));
        }
    };

    // The counter does count: a control.
    let (_boxed, control) = counted(|| Box::new(7u64));
    assert_eq!(control, 1);

    runtime.block_on(calls(3)); // warm-up
    let ((), allocations) = counted(|| runtime.block_on(calls(100)));
    assert_eq!(
        allocations, 0,
        "allocations in 200 calls (400 attempts, 100 timeouts, 200 retry sleeps)"
    );
    assert_eq!(gate.counts().held, 0);
    assert_eq!(gate.counts().admitted, 103 * 4);
    assert_eq!(
        resilience.pipeline().attempt_timeout_value(),
        Some(Duration::from_millis(20))
    );
}
