//! The mechanisms the policies are built from, each written once: the atomics shim
//! (`sync`), exact capped counters (`slots`), bucketed time windows (`window`), the one
//! fixed key table (`keyed`) and release signals ([`release`]). Nothing here
//! knows a policy: the policies import these, never the other way.

pub(crate) mod keyed;
pub mod release;
pub(crate) mod slots;
pub(crate) mod sync;
pub(crate) mod window;
