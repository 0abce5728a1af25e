//! What the fleet types report: events for observers, counters for `stats()`.

use core::time::Duration;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::RedisError;

#[allow(unused_imports)]
use crate::OnBackendError;

/// Something a fleet limiter, lease or budget saw, for logs and metrics (the `metrics`
/// feature's `metrics::observer` records each one).
///
/// Every counter in [`FleetStats`], [`LeaseStats`](crate::LeaseStats) and
/// [`RetryBudgetStats`](crate::RetryBudgetStats) that concerns Redis has its event, emitted
/// once per count, so a log or a metric never disagrees with the stats.
#[derive(Debug)]
#[non_exhaustive]
pub enum FleetEvent<'a> {
    /// Redis answered with an error, or the connection failed (a decision, a lease renewal
    /// or a budget settlement).
    BackendError(&'a RedisError),
    /// No answer within the backend timeout (a decision, a renewal or a settlement).
    BackendTimeout(Duration),
    /// The script was not cached (a restart, failover or `SCRIPT FLUSH`) and was sent again.
    ScriptLoaded,
    /// The fleet-wide bucket decided a call: admitted (with `remaining` cells left) or
    /// refused.
    Decided {
        /// Whether the call was admitted.
        admitted: bool,
        /// Whole cells left in the bucket after the decision.
        remaining: u32,
    },
    /// The backend failed and the call was admitted anyway ([`OnBackendError::Allow`]).
    FailedOpen,
    /// The backend failed, the failure mode is [`OnBackendError::Allow`], and this node's
    /// fail-open cap was spent: refused.
    FailOpenCapped,
    /// The call was not sent: the backend breaker is open (Redis failed repeatedly), so the
    /// failure mode decided at once.
    BreakerOpen,
    /// The call was not sent: every in-flight slot was taken, so the failure mode decided at
    /// once instead of queueing.
    InFlightFull,
    /// The script ran after the caller's deadline and decided nothing (stale work, spending
    /// nothing).
    Expired,
    /// The backend failed and the call was refused ([`OnBackendError::Deny`]).
    FailedClosed,
    /// The backend failed and this node's local share decided the call
    /// ([`OnBackendError::Local`]).
    LocalDecision {
        /// Whether the local share admitted it.
        admitted: bool,
    },
    /// A lease was granted: `cells` more spendable for `period`.
    LeaseRenewed {
        /// Cells granted.
        cells: u32,
        /// How long they stay spendable, from when the renewal was sent.
        period: Duration,
    },
    /// The fleet bucket had too few cells for a lease; the next try is after `wait`.
    LeaseRefused {
        /// How long until the bucket holds a lease's worth of cells (on Redis's clock).
        wait: Duration,
    },
    /// Leased cells expired unspent.
    LeaseExpired {
        /// How many.
        cells: u32,
    },
    /// A retry budget settled with the fleet balance.
    BudgetSettled {
        /// Retries' worth sent to the fleet, in thousandths of a retry.
        deposited_milli: u64,
        /// Retries' worth withdrawn from the fleet, in thousandths of a retry.
        withdrawn_milli: u64,
    },
}

pub(crate) type Observer = Arc<dyn Fn(&FleetEvent<'_>) + Send + Sync>;

/// Counters since the limiter was built (each a snapshot; they only grow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FleetStats {
    /// Calls the fleet-wide bucket admitted.
    pub fleet_admitted: u64,
    /// Calls the fleet-wide bucket refused.
    pub fleet_refused: u64,
    /// Calls whose backend call failed with an error.
    pub backend_errors: u64,
    /// Calls whose backend call timed out.
    pub backend_timeouts: u64,
    /// Calls admitted because the backend failed ([`OnBackendError::Allow`]).
    pub failed_open: u64,
    /// Calls refused because the backend failed ([`OnBackendError::Deny`]).
    pub failed_closed: u64,
    /// Calls the local share admitted while the backend failed.
    pub local_admitted: u64,
    /// Calls the local share refused while the backend failed.
    pub local_refused: u64,
    /// Times the script had to be sent again after `NOSCRIPT`.
    pub script_loads: u64,
    /// Calls refused because the fail-open cap was spent ([`OnBackendError::Allow`]).
    pub failed_open_capped: u64,
    /// Calls not sent because the backend breaker was open.
    pub breaker_open: u64,
    /// Calls not sent because every in-flight slot was taken.
    pub in_flight_full: u64,
    /// Calls whose script ran past their deadline (decided nothing, spent nothing).
    pub expired: u64,
    /// Calls that found every in-flight slot taken and joined a batch (decided by Redis in
    /// one script call with the batch's other calls, unless the batch failed or filled).
    pub batched: u64,
}

impl FleetStats {
    /// Calls Redis did not decide, each decided by the failure mode: errors, timeouts,
    /// expired decisions, and calls not sent.
    pub fn not_decided(&self) -> u64 {
        self.backend_errors
            + self.backend_timeouts
            + self.expired
            + self.breaker_open
            + self.in_flight_full
    }

    /// Calls the failure mode decided: always equal to [`not_decided`](Self::not_decided).
    pub fn fallback_decisions(&self) -> u64 {
        self.failed_open
            + self.failed_open_capped
            + self.failed_closed
            + self.local_admitted
            + self.local_refused
    }

    /// Every call answered so far.
    pub fn calls(&self) -> u64 {
        self.fleet_admitted + self.fleet_refused + self.fallback_decisions()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) fleet_admitted: AtomicU64,
    pub(crate) fleet_refused: AtomicU64,
    pub(crate) backend_errors: AtomicU64,
    pub(crate) backend_timeouts: AtomicU64,
    pub(crate) failed_open: AtomicU64,
    pub(crate) failed_closed: AtomicU64,
    pub(crate) local_admitted: AtomicU64,
    pub(crate) local_refused: AtomicU64,
    pub(crate) script_loads: AtomicU64,
    pub(crate) failed_open_capped: AtomicU64,
    pub(crate) breaker_open: AtomicU64,
    pub(crate) in_flight_full: AtomicU64,
    pub(crate) expired: AtomicU64,
    pub(crate) batched: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> FleetStats {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FleetStats {
            fleet_admitted: r(&self.fleet_admitted),
            fleet_refused: r(&self.fleet_refused),
            backend_errors: r(&self.backend_errors),
            backend_timeouts: r(&self.backend_timeouts),
            failed_open: r(&self.failed_open),
            failed_closed: r(&self.failed_closed),
            local_admitted: r(&self.local_admitted),
            local_refused: r(&self.local_refused),
            script_loads: r(&self.script_loads),
            failed_open_capped: r(&self.failed_open_capped),
            breaker_open: r(&self.breaker_open),
            in_flight_full: r(&self.in_flight_full),
            expired: r(&self.expired),
            batched: r(&self.batched),
        }
    }
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
