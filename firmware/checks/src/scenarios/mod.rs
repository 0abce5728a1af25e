//! One module per part of the core. Each scenario records numbers, never text, so a trace is
//! cheap on a Cortex-M0 and compares exactly.

pub(crate) mod breaker;
pub(crate) mod classify;
pub(crate) mod embassy;
pub(crate) mod histogram;
pub(crate) mod limiter;
pub(crate) mod pipeline;
pub(crate) mod random;
pub(crate) mod retry;
pub(crate) mod time;

use core::time::Duration;

/// An inline assertion: what the scenario means, independent of the host's vector.
pub(crate) fn ensure(condition: bool, what: &'static str) -> Result<(), &'static str> {
    if condition { Ok(()) } else { Err(what) }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Bytes as numbers: the length, then 8 bytes per word, little-endian.
pub(crate) fn push_bytes(t: &mut crate::Trace, bytes: &[u8]) {
    t.push(bytes.len() as u64);
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        t.push(u64::from_le_bytes(word));
    }
}
