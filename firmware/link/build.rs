//! The one build script of every firmware crate here (each names it with
//! `build = "../link/build.rs"` in its Cargo.toml): writes memory.x for the QEMU machine
//! qemu-run.sh picks and passes the linker scripts. Cortex-M (microbit, mps2-an386): flash at
//! 0, RAM at 0x2000_0000, 16 KiB fits both. RISC-V `virt` with `-bios none`: execution starts
//! at 0x8000_0000 in RAM, where everything lives.
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target = env::var("TARGET").unwrap();
    let memory = if target.starts_with("riscv32") {
        let mut m = String::from("MEMORY {\n  RAM : ORIGIN = 0x80000000, LENGTH = 1M\n}\n");
        for region in ["TEXT", "RODATA", "DATA", "BSS", "HEAP", "STACK"] {
            m.push_str(&format!("REGION_ALIAS(\"REGION_{region}\", RAM);\n"));
        }
        m
    } else {
        "MEMORY {\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM : ORIGIN = 0x20000000, LENGTH = 16K\n}\n".into()
    };
    fs::write(out.join("memory.x"), memory).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    if target.starts_with("riscv32") {
        println!("cargo:rustc-link-arg=-Tmemory.x");
    }
    if target.starts_with("thumb") || target.starts_with("riscv32") {
        println!("cargo:rustc-link-arg=-Tlink.x");
    }
    println!("cargo:rerun-if-changed=../link/build.rs");
}
