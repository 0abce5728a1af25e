//! What every std async adapter of resilix shares, written once: `resilix-tokio` and
//! `resilix-async-std` re-export it with their timer plugged in.
//!
//! The runtime-agnostic logic (the `Resilience` front end, the waiting gate, fallbacks) is in
//! the `no_std` core; this crate supplies only what needs `std`:
//!
//! * [`SlotWaiters`]: a policy's waiter list behind a `std::sync::Mutex` ([`StdLock`]).
//! * [`LastKnownGood`]: a fallback store on a `Mutex`.
//! * [`thread_seed`] and [`StdSeeds`]: per-call seeds from a per-thread generator seeded
//!   lazily from the platform's entropy (never at start-up), or from your seed.
//! * [`timeline`]: the process's one origin, which every std adapter's clock reads, so any
//!   two clock handles give the same instant for the same moment.
//!
//! ```
//! use resilix::resilience::SeedSource;
//! use resilix_std::{LastKnownGood, StdSeeds};
//!
//! let seeds = StdSeeds::default();
//! assert_ne!(seeds.call_seed(), seeds.call_seed());
//! let cache = LastKnownGood::new();
//! cache.set("v1");
//! assert_eq!(cache.get(), Some("v1"));
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
mod fallback;
mod lock;
mod seed;
pub mod timeline;

pub use fallback::LastKnownGood;
pub use lock::{SlotWaiters, StdLock};
pub use seed::{StdSeeds, thread_seed};

pub use resilix::fallback::{Fallback, Served};
