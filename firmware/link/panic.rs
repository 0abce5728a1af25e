// The panic handler of every semihosting firmware here, `include!`d so that `hprintln` and
// `debug` are whichever semihosting crate the including crate uses (Cortex-M or RISC-V):
// report the panic, then exit QEMU with failure.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("PANIC: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}
