//! The host side of the on-device checks.
//!
//! `host_matches_checked_in_vectors` runs every scenario on the host against the vectors in
//! src/expected.rs, the same comparison the firmware and the wasm module make. When the core's
//! behaviour changes on purpose, regenerate the vectors on the host and review the diff:
//!
//! ```text
//! cargo test --manifest-path firmware/Cargo.toml -p resilix-firmware-checks --test vectors \
//!     -- --ignored regenerate
//! ```

use std::fmt::Write as _;

use resilix_firmware_checks::ALL;

#[test]
fn host_matches_checked_in_vectors() {
    let mut failures = String::new();
    for check in ALL {
        if let Err(f) = check.verify() {
            writeln!(failures, "{}: {f}", check.name).unwrap();
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
#[ignore = "rewrites src/expected.rs from a host run; review the diff"]
fn regenerate() {
    let mut out = String::from(
        "//! Vectors computed on the host by the same scenarios (x86_64, std test harness).\n\
         //! Generated: do not edit. Regenerate with\n\
         //! `cargo test --manifest-path firmware/Cargo.toml -p resilix-firmware-checks --test vectors -- --ignored regenerate`\n\
         //! and review the diff: a change means the core decides differently than before.\n\n",
    );
    for check in ALL {
        let trace = check
            .record()
            .unwrap_or_else(|e| panic!("{} fails on the host: {e}", check.name));
        let name = check.name.to_uppercase();
        writeln!(out, "/// `{}`", check.name).unwrap();
        writeln!(out, "pub const {name}: &[u64] = &[").unwrap();
        for v in trace.values() {
            writeln!(out, "    {v},").unwrap();
        }
        out.push_str("];\n\n");
    }
    out.pop();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/expected.rs");
    std::fs::write(path, out).unwrap();
}
