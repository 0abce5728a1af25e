//! The stated bound: the most a fleet can admit in a window, in each failure mode.

use core::time::Duration;

use resilix::rate_limit::RateLimitConfig;

use crate::config::{FleetConfig, OnBackendError, local_share};

/// Cells a GCRA of `limit` can admit in any window of `window`: burst + ⌈W / T⌉, with
/// T = ⌈period / count⌉ ns.
fn gcra(limit: &RateLimitConfig, window: Duration) -> u64 {
    let per = limit.rate.period().as_nanos();
    let count = u128::from(limit.rate.count().max(1));
    let t = per.div_ceil(count).max(1);
    u64::from(limit.burst) + u64::try_from(window.as_nanos().div_ceil(t)).unwrap_or(u64::MAX)
}

impl FleetConfig {
    /// The most cells `nodes` processes sharing this quota admit in any window of length
    /// `window`, through any mix of Redis answering, slow, paused, down, and `promotions`
    /// failovers to a replica (`docs/fleet.md` derives it):
    ///
    /// * decided by Redis: burst + ⌈W / T⌉ (one GCRA on one clock), plus one burst per
    ///   promotion (a promoted replica can lack at most the bucket's whole debt, the span);
    /// * decided by the failure mode, on each node: nothing ([`OnBackendError::Deny`]), the
    ///   fail-open cap's burst + ⌈W / T⌉ + 1 ([`OnBackendError::Allow`], the quota itself by
    ///   default), or the local share's ([`OnBackendError::Local`]); the + 1 covers the local
    ///   clock's rounding.
    ///
    /// Measured admissions are compared with it by time of *reply*: a decision lies between
    /// the call's send and its reply, so count them over `window` plus the longest call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilix::rate_limit::{Rate, RateLimitConfig};
    /// use resilix_redis::{FleetConfig, OnBackendError};
    ///
    /// let quota = RateLimitConfig::new(Rate::per_second(1_000)).with_burst(100);
    /// let deny = FleetConfig::new("api", quota).on_backend_error(OnBackendError::Deny);
    /// assert_eq!(deny.bound(8, Duration::from_secs(1), 0), 1_100);
    /// let local = FleetConfig::new("api", quota).on_backend_error(OnBackendError::Local { nodes: 8 });
    /// assert_eq!(local.bound(8, Duration::from_secs(1), 0), 1_100 + 8 * (12 + 125 + 1));
    /// ```
    pub fn bound(&self, nodes: u32, window: Duration, promotions: u32) -> u64 {
        let fleet = gcra(&self.limit, window) + u64::from(promotions) * u64::from(self.limit.burst);
        let per_node = match self.on_backend_error {
            OnBackendError::Deny => 0,
            OnBackendError::Allow => gcra(&self.fail_open_limit.unwrap_or(self.limit), window) + 1,
            OnBackendError::Local { nodes: n } => match local_share(&self.limit, n) {
                Ok(share) => gcra(&share, window) + 1,
                Err(_) => 0,
            },
        };
        fleet + u64::from(nodes) * per_node
    }
}
