//! Runs every scenario of `resilix-firmware-checks` on the device, prints one line per check,
//! and exits through semihosting: status 0 when every check passed, 1 otherwise (a panic too).
#![no_std]
#![no_main]

#[cfg(target_arch = "arm")]
use cortex_m_semihosting::{debug, hprintln};
#[cfg(target_arch = "riscv32")]
use riscv_semihosting::{debug, hprintln};

include!("../../link/panic.rs");

fn run() -> ! {
    hprintln!("resilix on-device checks ({})", TARGET);
    let failed = resilix_firmware_checks::run_all(|check, result| match result {
        Ok(()) => hprintln!("check {} ... ok", check.name),
        Err(why) => hprintln!("check {} ... FAILED: {}", check.name, why),
    });
    for (policy, bytes) in resilix_firmware_checks::sizes() {
        hprintln!("size_of {}: {} B", policy, bytes);
    }
    let total = resilix_firmware_checks::ALL.len() as u32;
    hprintln!("{} passed, {} failed", total - failed, failed);
    debug::exit(if failed == 0 {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop)]
    loop {}
}

#[cfg(all(target_arch = "arm", target_has_atomic = "32"))]
const TARGET: &str = "Cortex-M, native 32-bit CAS";
#[cfg(all(target_arch = "arm", not(target_has_atomic = "32")))]
const TARGET: &str = "Cortex-M0, no CAS: portable-atomic as the firmware chose";
#[cfg(target_arch = "riscv32")]
const TARGET: &str = "RISC-V 32 (A extension: native 32-bit CAS)";

#[cfg(target_arch = "arm")]
#[cortex_m_rt::entry]
fn main() -> ! {
    run()
}

#[cfg(target_arch = "riscv32")]
#[riscv_rt::entry]
fn main() -> ! {
    run()
}
