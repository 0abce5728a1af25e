//! The runtime alone: reset handler, vector table, semihosting exit, panic handler.
#![no_std]
#![no_main]

#[cortex_m_rt::entry]
fn main() -> ! {
    let x: u32 = core::hint::black_box(7);
    resilix_footprint::exit(x == 7)
}
