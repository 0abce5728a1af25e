//! Every policy in one pipeline, driven by the retry loop, with no observer.
#![no_std]
#![no_main]

#[cortex_m_rt::entry]
fn main() -> ! {
    resilix_footprint::exit(resilix_footprint::pipeline::drive(&()))
}
