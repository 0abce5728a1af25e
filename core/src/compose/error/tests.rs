//! `Error`'s one line, for an error type of any kind, and its source.

extern crate std;

use std::format;
use std::string::ToString;

use core::fmt;

use super::Error;
use crate::rejection::{RejectReason, Rejection};
use crate::retry::GiveUpReason;
use crate::verdict::VerdictKind;

/// An upstream error with a message the line must not repeat.
#[derive(Debug)]
struct Reset;

impl fmt::Display for Reset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection reset by peer")
    }
}

impl core::error::Error for Reset {}

#[test]
fn an_error_that_cannot_print_itself_is_still_displayed() {
    let answered: Error<u32, ()> = Error::Upstream {
        error: (),
        gave_up: None,
    };
    assert_eq!(
        answered.to_string(),
        "the upstream answered with an error, passed on as is"
    );
    let failed: Error<u32, ()> = Error::Upstream {
        error: (),
        gave_up: Some(GiveUpReason::NotRetryable(VerdictKind::Answered)),
    };
    let line = failed.to_string();
    assert!(
        line.starts_with("the upstream failed and the call was not retried ("),
        "{line}"
    );
}

#[test]
fn the_upstream_error_is_the_source_not_part_of_the_line() {
    let failed: Error<u32, Reset> = Error::Upstream {
        error: Reset,
        gave_up: Some(GiveUpReason::AttemptsExhausted { attempts: 3 }),
    };
    let line = failed.to_string();
    assert!(!line.contains("connection reset"), "{line}");
    let source = core::error::Error::source(&failed).expect("the upstream's error");
    assert_eq!(source.to_string(), "connection reset by peer");
}

#[test]
fn a_refusal_after_a_failure_has_that_failure_as_its_source() {
    let refused: Error<u32, Reset> = Error::Refused {
        rejection: Rejection::new(RejectReason::CircuitOpen),
        retry_in: None,
        attempts: 1,
        last_error: Some(Reset),
    };
    assert!(core::error::Error::source(&refused).is_some());
    let line = refused.to_string();
    assert_eq!(
        line,
        format!(
            "refused by the circuit-open policy after 1 attempt(s): {}",
            RejectReason::CircuitOpen
        )
    );
    let first: Error<u32, Reset> = Error::Refused {
        rejection: Rejection::new(RejectReason::BulkheadFull),
        retry_in: None,
        attempts: 0,
        last_error: None,
    };
    assert!(core::error::Error::source(&first).is_none());
    let passed: Error<u32, Reset> = Error::DeadlinePassed {
        attempts: 2,
        last_error: Some(Reset),
    };
    assert!(core::error::Error::source(&passed).is_some());
    let out_of_time: Error<u32, Reset> = Error::TimedOut {
        reason: GiveUpReason::AttemptsExhausted { attempts: 2 },
        attempts: 2,
    };
    assert!(core::error::Error::source(&out_of_time).is_none());
}
