//! Experiment 7: Little's Law (spec §6): a rate limiter does not bound concurrency.

use super::Ctx;
use crate::report::Section;

pub fn run(_ctx: &Ctx) -> Section {
    let mut s = Section::new(
        "little",
        "Little's Law: a rate limiter does not bound concurrency",
        "Planned: open-loop arrivals at a fixed rate through a real rate limiter, while the \
         upstream's latency triples (`upstream::Degrading`); the time-average in-flight count \
         (measured by the engine) must triple with it, and a bulkhead or the adaptive limiter \
         in the same pipeline must bound it.",
    );
    s.not_wired =
        Some("the rate limiter, bulkhead and adaptive limiter have not landed in main".into());
    s
}
