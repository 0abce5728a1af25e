//! The mechanisms the policies are built from, each written once: the atomics shim
//! (`sync`), exact capped counters (`slots`), bucketed time windows (`window`), the one
//! fixed key table (`keyed`), release signals ([`release`]) and swappable settings blocks
//! (`settings`, what runtime reconfiguration stores). Nothing here
//! knows a policy: the policies import these, never the other way.

pub(crate) mod keyed;
pub mod release;
pub mod settings;
pub(crate) mod slots;
pub(crate) mod sync;
pub(crate) mod window;
