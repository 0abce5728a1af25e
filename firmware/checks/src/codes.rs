//! Decisions as numbers, the vocabulary of every trace: the scenarios record these, and the
//! wasm module's C ABI returns them, so the host's vectors read the same on both.

use resilix::breaker::CircuitState;
use resilix::retry::GiveUpReason;
use resilix::{RejectReason, Verdict, VerdictKind};

/// A verdict as one number: its kind in the low byte, the Retry-After (ms, plus one so that
/// zero means "none") or the rejection reason above it.
pub fn verdict_code(v: &Verdict) -> u64 {
    let kind = match v.kind() {
        VerdictKind::Success => 1,
        VerdictKind::Answered => 2,
        VerdictKind::Overload => 3,
        VerdictKind::Transient => 4,
        VerdictKind::Timeout => 5,
        VerdictKind::Rejected => 6,
        VerdictKind::Uncertain => 7,
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

/// A refusal's reason as one number (1 circuit-open .. 6 budget-exceeded).
pub fn reason_code(r: RejectReason) -> u64 {
    match r {
        RejectReason::CircuitOpen => 1,
        RejectReason::LimiterFull => 2,
        RejectReason::Throttled => 3,
        RejectReason::BulkheadFull => 4,
        RejectReason::RateLimited => 5,
        RejectReason::BudgetExceeded => 6,
    }
}

/// A give-up as one number: 100 + the verdict's code when not retryable, 200 + the attempts
/// when they ran out, 300.. for budget, deadline and Retry-After.
pub fn give_up_code(reason: &GiveUpReason) -> u64 {
    match reason {
        GiveUpReason::NotRetryable(kind) => 100 + verdict_code(&kind_verdict(*kind)),
        GiveUpReason::AttemptsExhausted { attempts } => 200 + u64::from(*attempts),
        GiveUpReason::BudgetExceeded => 300,
        GiveUpReason::DeadlineWouldPass => 301,
        GiveUpReason::RetryAfterBeyondDeadline => 302,
        GiveUpReason::RetryAfterTooLong => 303,
        _ => 399,
    }
}

/// A verdict of `kind` (a rejection standing for every reason).
fn kind_verdict(kind: VerdictKind) -> Verdict {
    use VerdictKind as K;
    match kind {
        K::Success => Verdict::Success,
        K::Answered => Verdict::Answered,
        K::Overload => Verdict::Overload { retry_after: None },
        K::Transient => Verdict::Transient,
        K::Uncertain => Verdict::Uncertain,
        K::Timeout => Verdict::Timeout,
        K::Rejected => Verdict::Rejected(RejectReason::BulkheadFull),
    }
}

/// A circuit state as one number.
pub fn state_code(s: CircuitState) -> u64 {
    match s {
        CircuitState::Closed => 1,
        CircuitState::Open => 2,
        CircuitState::HalfOpen => 3,
        CircuitState::ForcedOpen => 4,
        CircuitState::Disabled => 5,
    }
}
