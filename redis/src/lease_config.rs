//! How a node leases: sizes, the carry, and its counters.

use core::time::Duration;

use resilix::rate_limit::Rate;
use resilix::time::Instant;

#[allow(unused_imports)]
use crate::LeasedRateLimiter;

/// How a node leases cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Cells reserved from the fleet bucket per renewal (1 ≤ cells ≤ the burst).
    pub cells: u32,
    /// How long reserved cells stay spendable, counted from when the renewal was *sent*
    /// (before Redis decided it), so a lease never outlives its fleet-side reservation.
    pub period: Duration,
    /// Renew when fewer than this many leased cells are left (counting only those that stay
    /// spendable for at least `carry` more).
    pub low_water: u32,
    /// How long an outage the pool must carry: cells with less than this left of their lease
    /// no longer count toward the low water (they are still spent first). Zero for
    /// [`new`](Self::new); half the period for [`for_share`](Self::for_share).
    pub carry: Duration,
}

impl LeaseConfig {
    /// `cells` per renewal, spendable for `period`, renewed below half. Such a node holds
    /// between half and one and a half leases: through an outage it admits that many cells,
    /// then refuses. To carry traffic through an outage, size by
    /// [`for_share`](Self::for_share).
    pub const fn new(cells: u32, period: Duration) -> LeaseConfig {
        LeaseConfig {
            cells,
            period,
            low_water: cells.div_ceil(2),
            carry: Duration::ZERO,
        }
    }

    /// Leases that carry this node's `share` of the quota through an outage of up to half
    /// the `period`: the node keeps at least `share × period / 2` cells (the low water) that
    /// stay spendable for at least `period / 2` more (the carry), renewing a quarter of that
    /// at a time. When an outage starts, it holds that many cells (less what was spent while
    /// the last renewal was in flight), each valid for the carry: it admits at its share,
    /// or below, for that long.
    ///
    /// The price is the reservation: a cell with less than the carry left no longer counts,
    /// so a node below its share renews before its cells are spent, and those expire unspent
    /// (counted): an idle node takes up to its share from the fleet bucket. At the share,
    /// nothing expires (a cell waits period / 2 in the pool). Carrying the whole period
    /// would double the reservation. The fleet fills everyone's pool only while demand
    /// leaves room: keep `nodes × (low_water + cells)` within what the quota grants over a
    /// period.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilix::rate_limit::Rate;
    /// use resilix_redis::LeaseConfig;
    ///
    /// // 8 nodes sharing 1,000/s: 125/s each, carried through outages of up to 500 ms.
    /// let lease = LeaseConfig::for_share(Rate::per_second(125), Duration::from_secs(1));
    /// assert_eq!(lease.low_water, 63);
    /// assert_eq!(lease.cells, 16);
    /// ```
    pub fn for_share(share: Rate, period: Duration) -> LeaseConfig {
        let per = share.period().as_nanos().max(1);
        let carry = (u128::from(share.count()) * (period.as_nanos() / 2)).div_ceil(per);
        let low_water = u32::try_from(carry).unwrap_or(u32::MAX).max(1);
        LeaseConfig {
            cells: low_water.div_ceil(4),
            period,
            low_water,
            carry: period / 2,
        }
    }
}

/// A cell spent from a lease, which [`LeasedRateLimiter::refund`] can put back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeasedCell {
    pub(crate) until: Instant,
}

/// Counters of a leased limiter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseStats {
    /// Calls admitted from a lease.
    pub admitted: u64,
    /// Calls refused: no leased cell left.
    pub refused: u64,
    /// Renewals Redis granted.
    pub renewals: u64,
    /// Renewals the fleet bucket refused (not enough cells yet).
    pub renewals_refused: u64,
    /// Renewals that failed (error or timeout).
    pub renewal_failures: u64,
    /// Leased cells that expired unspent.
    pub expired_cells: u64,
    /// Cells given back to the pool ([`LeasedRateLimiter::refund`]).
    pub refunded: u64,
}
