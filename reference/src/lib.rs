//! Reference models of the resilix policies, and the differential runs that hold the real
//! policies to them.
//!
//! The real policies keep their state in 32-bit atomic words (tick words beside their eras,
//! packed state words, fixed-point limits) so that they are lock-free on every target. A
//! *reference model* is the same semantics written plainly: wide time (`u64` nanoseconds, no
//! ticks, no packing), ordinary fields, `&mut self`, no atomics, no cleverness. It is what a
//! policy means; the real policy is how it is stored. Nothing here is used by the library.
//!
//! A [`Twin`] drives one real policy and its model with the same calls at the same instants
//! and reports the first decision on which they differ ([`Mismatch`]). [`drive`] runs a twin
//! over a random [`timeline`] whose gaps are drawn log-uniformly from 1 ns to ten years, so a
//! run crosses every tick word's circle many times, interleaved with busy stretches. The same
//! driver serves the property tests (`core/tests/differential_*.rs`), the fuzz targets
//! (`fuzz/fuzz_targets/differential_*.rs`, with a [`timeline::Bytes`] source).
//!
//! [`drive_scenario`] runs the same twins on the other kind of timeline: the one a service
//! lives on. [`traffic`] generates a seeded week (or one day) of diurnal traffic with quiet
//! nights, an idle day, bursts and an outage; the simulator's `long-timeline` experiment drives
//! every twin through it and fails under `--check` on any mismatch.
//!
//! Where a real policy is documented as approximate (a statistical window under concurrency),
//! the twin is driven single-threaded, where it is exact; where it is approximate even then, the
//! twin states and checks the bound.

#![forbid(unsafe_code)]

pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod chaos;
pub mod configs;
mod draws;
pub mod hedge;
pub mod inbound;
pub mod keyed;
pub mod keyed_breaker;
pub mod keyed_budget;
pub mod keyed_bulkhead;
pub mod keyed_throttler;
pub mod limiter;
pub mod pipeline;
pub mod rate_limit;
pub mod retry;
pub mod retry_breaker;
pub mod throttler;
pub mod timeline;
pub mod traffic;
pub mod twin;
mod window;

pub use timeline::{Gaps, Timeline};
pub use traffic::Scenario;
pub use twin::{Mismatch, Report, Twin, drive, drive_scenario, drive_scenario_with};
