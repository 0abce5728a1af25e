//! Why the inbound admission refused a request, and when to come back.
//!
//! Inbound refusals are a server's answers to its own clients, not a client's refusals to call
//! an upstream, so they have their own type rather than a [`RejectReason`](crate::RejectReason):
//! they never enter a [`Pipeline`](crate::pipeline::Pipeline), a retry decision or any
//! statistic, and an adapter turns them into a `503` with `Retry-After` (or gRPC's
//! `RESOURCE_EXHAUSTED`) before the handler runs.

use core::fmt;

use crate::time::Instant;

/// Which rule shed the request.
///
/// ```
/// use resilix::inbound::ShedCause;
/// assert_eq!(ShedCause::QueueFull.code(), "queue-full");
/// assert_eq!(ShedCause::ALL.len(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ShedCause {
    /// No slot under this priority's share of the limit, and no room for it in the queue.
    /// Typical fix: add capacity, or send less (a client retrying after `Retry-After`).
    QueueFull,
    /// It waited in the queue longer than the queue allows (Fail at Scale's M or N).
    /// Typical fix: add capacity; the queue is standing.
    QueueTimeout,
    /// CoDel dropped it: the queue's delay has stood above target for an interval.
    QueueDelay,
    /// Its propagated deadline has passed, or would pass before a typical request is served.
    /// Retrying does not help; the caller has already given up.
    Deadline,
}

impl ShedCause {
    /// Every cause.
    pub const ALL: [ShedCause; 4] = [
        ShedCause::QueueFull,
        ShedCause::QueueTimeout,
        ShedCause::QueueDelay,
        ShedCause::Deadline,
    ];

    /// A stable code for logs, metric labels and response bodies.
    pub const fn code(self) -> &'static str {
        match self {
            ShedCause::QueueFull => "queue-full",
            ShedCause::QueueTimeout => "queue-timeout",
            ShedCause::QueueDelay => "queue-delay",
            ShedCause::Deadline => "deadline",
        }
    }

    /// What it means.
    pub const fn meaning(self) -> &'static str {
        match self {
            ShedCause::QueueFull => "no slot for this priority and no room to wait",
            ShedCause::QueueTimeout => "waited longer than the queue allows",
            ShedCause::QueueDelay => "the queue's delay has stood above target (CoDel)",
            ShedCause::Deadline => "the request's deadline cannot be met",
        }
    }
}

impl fmt::Display for ShedCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.meaning())
    }
}

/// A shed request: why, and when the server expects to have room (none for a deadline: the
/// caller has given up).
///
/// ```
/// use resilix::inbound::{Shed, ShedCause};
/// use resilix::time::Instant;
///
/// let shed = Shed::new(ShedCause::QueueFull, Some(Instant::from_secs(2)));
/// assert_eq!(shed.retry_at(), Some(Instant::from_secs(2)));
/// assert!(shed.to_string().starts_with("shed (queue-full"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shed {
    cause: ShedCause,
    retry_at: Option<Instant>,
}

impl Shed {
    /// A refusal for `cause`, to be retried at `retry_at` if given.
    pub const fn new(cause: ShedCause, retry_at: Option<Instant>) -> Shed {
        Shed { cause, retry_at }
    }

    /// Which rule shed it.
    pub const fn cause(&self) -> ShedCause {
        self.cause
    }

    /// When to come back, if retrying makes sense.
    pub const fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }
}

impl fmt::Display for Shed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shed ({})", self.cause)?;
        if let Some(at) = self.retry_at {
            write!(f, "; room again at {at:?}")?;
        }
        Ok(())
    }
}

impl core::error::Error for Shed {}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::BTreeSet;
    use std::string::ToString;

    #[test]
    fn causes_have_distinct_codes_and_texts() {
        let codes: BTreeSet<_> = ShedCause::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes.len(), ShedCause::ALL.len());
        let texts: BTreeSet<_> = ShedCause::ALL.iter().map(|c| c.to_string()).collect();
        assert_eq!(texts.len(), ShedCause::ALL.len());
        assert_eq!(
            Shed::new(ShedCause::Deadline, None).to_string(),
            "shed (deadline: the request's deadline cannot be met)"
        );
    }
}
