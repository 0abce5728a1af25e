//! What both footprint programs share: the exit path. The panic handler does not format its
//! message (that would pull in `core::fmt` and measure the formatter, not resilix).
#![no_std]

pub mod pipeline;

use cortex_m_semihosting::debug;

/// Ends the QEMU run with the program's verdict.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop)]
    loop {}
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(false)
}
