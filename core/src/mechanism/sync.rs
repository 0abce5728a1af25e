//! The atomics every policy stores its state in, in one place.
//!
//! Policies import atomics from here, never from `portable-atomic` or `core` directly, so that
//! a `--cfg loom` build swaps every one of them for loom's model-checked atomics at once.
//!
//! Only 32-bit (and smaller) atomics are re-exported for policy state: Cortex-M3/M4 and
//! RISC-V 32 update a `u32` natively, while a `u64` there is portable-atomic's lock-based
//! fallback, which an interrupt that preempted the lock holder could spin on forever
//! (docs/design/contracts.md §4). Time is therefore stored as 32-bit tick words (see `time::ticks`).

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use portable_atomic::{AtomicBool, AtomicU32, Ordering};

/// Declares a constructor `const fn` in ordinary builds and a plain `fn` under `--cfg loom`,
/// whose atomics have no `const fn new`. Policies stay usable in `static`s without giving up
/// model checking.
#[allow(unused_macros)]
macro_rules! const_fn_unless_loom {
    ($(#[$meta:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$meta])* $vis const fn $($rest)*
        #[cfg(loom)]
        $(#[$meta])* $vis fn $($rest)*
    };
}
#[allow(unused_imports)]
pub(crate) use const_fn_unless_loom;
