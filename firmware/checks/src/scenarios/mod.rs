//! One module per part of the core. Each scenario records numbers, never text, so a trace is
//! cheap on a Cortex-M0 and compares exactly.

pub(crate) mod breaker;
pub(crate) mod classify;
pub(crate) mod histogram;
pub(crate) mod limiter;
pub(crate) mod pipeline;
pub(crate) mod random;
pub(crate) mod retry;
pub(crate) mod time;

use core::time::Duration;
use resilix::{RejectReason, Verdict, VerdictKind};

/// An inline assertion: what the scenario means, independent of the host's vector.
pub(crate) fn ensure(condition: bool, what: &'static str) -> Result<(), &'static str> {
    if condition { Ok(()) } else { Err(what) }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A verdict as one number: its kind in the low byte, the Retry-After (ms, plus one so that
/// zero means "none") or the rejection reason above it.
pub(crate) fn verdict_code(v: &Verdict) -> u64 {
    let kind = match v.kind() {
        VerdictKind::Success => 1,
        VerdictKind::Answered => 2,
        VerdictKind::Overload => 3,
        VerdictKind::Transient => 4,
        VerdictKind::Timeout => 5,
        VerdictKind::Rejected => 6,
    };
    let extra = match v {
        Verdict::Overload {
            retry_after: Some(d),
        } => d.as_millis() as u64 + 1,
        Verdict::Rejected(reason) => reason_code(*reason),
        _ => 0,
    };
    kind | extra << 8
}

pub(crate) fn reason_code(r: RejectReason) -> u64 {
    match r {
        RejectReason::CircuitOpen => 1,
        RejectReason::LimiterFull => 2,
        RejectReason::Throttled => 3,
        RejectReason::BulkheadFull => 4,
        RejectReason::RateLimited => 5,
        RejectReason::BudgetExceeded => 6,
    }
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
