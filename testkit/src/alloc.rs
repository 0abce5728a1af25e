//! A global allocator that counts this thread's allocations, for the allocation proofs.
//!
//! Each test or bench binary installs it with
//! `#[global_allocator] static GLOBAL: CountingAllocator = CountingAllocator;` and reads
//! [`allocations`] before and after the code under test. Frees are not counted: a call that
//! allocates and frees still allocated.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator, counting `alloc`, `alloc_zeroed` and `realloc` calls
/// made by the current thread.
pub struct CountingAllocator;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// How many allocations the current thread has made so far.
pub fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: every method forwards to the system allocator unchanged; the counter is a
// const-initialised thread-local `Cell` with no destructor, so updating it neither allocates
// nor re-enters the allocator.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}
