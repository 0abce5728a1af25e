//! The same pipeline with the duration histogram (P = 3, 1992 B) as its observer.
#![no_std]
#![no_main]

use resilix::observe::DurationHistogram;

static LATENCY: DurationHistogram = DurationHistogram::new();

#[cortex_m_rt::entry]
fn main() -> ! {
    let ok = resilix_footprint::pipeline::drive(&LATENCY);
    resilix_footprint::exit(ok && LATENCY.count() > 0)
}
