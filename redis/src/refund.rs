//! Giving back a cell a call did not use.

use core::time::Duration;

use redis::RedisError;
use resilix::rate_limit::AcquireError;
use resilix::time::Clock;

use crate::FleetRateLimiter;
use crate::config::Admitted;

/// An admission that can be given back ([`FleetRateLimiter::acquire_refundable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    how: Admitted,
    key: Option<String>,
    cells: u32,
    /// The TAT the fleet admission left, on the server's clock (`None`: not decided by
    /// Redis).
    tat: Option<Duration>,
}

impl Grant {
    /// How the call was admitted.
    pub fn admitted(&self) -> Admitted {
        self.how
    }

    /// Cells granted.
    pub fn cells(&self) -> u32 {
        self.cells
    }
}

impl<C: Clock> FleetRateLimiter<C> {
    /// As [`acquire_n`](Self::acquire_n), keeping what a refund needs.
    ///
    /// ```no_run
    /// use resilix::rate_limit::{Rate, RateLimitConfig};
    /// use resilix_redis::{FleetConfig, FleetRateLimiter};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = FleetConfig::new("api", RateLimitConfig::new(Rate::per_second(100)));
    /// let limiter = FleetRateLimiter::connect("redis://127.0.0.1:6379/0", config)?;
    /// let grant = limiter.acquire_refundable(Some("tenant-42"), 1).await?;
    /// // The request was served from a cache after all: the cell goes back to the fleet.
    /// let given_back = limiter.refund(grant).await?;
    /// println!("{given_back} cell(s) given back");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_refundable(
        &self,
        key: Option<&str>,
        cells: u32,
    ) -> Result<Grant, AcquireError> {
        let (r, tat) = if cells == 0 {
            (self.acquire_n(key, 0).await, None)
        } else {
            self.decide(key, cells).await
        };
        r.map(|how| Grant {
            how,
            key: key.map(str::to_owned),
            cells,
            tat,
        })
    }

    /// Gives back the cells of `grant`; answers how many whole cells' worth of debt the fleet
    /// bucket dropped.
    ///
    /// A cell Redis admitted goes back to the fleet bucket in one script call, bounded by the
    /// backend timeout, and only as far as keeps the bucket no more permissive than if the
    /// cell had never been admitted (the rule is [`script::REFUND_SOURCE`](crate::script::REFUND_SOURCE)):
    /// used cells stay within `burst + W / T` in every window W. The later the refund, the
    /// less it can give back (nothing once the bucket has refilled past the admission).
    /// A cell admitted by the failure mode (fail-open cap or local share) is not given back:
    /// the core's local GCRA never returns a cell (a refund there would let a caller that
    /// cancels in a loop exceed the local rate), so such a refund answers 0 and admits less,
    /// never more.
    pub async fn refund(&self, grant: Grant) -> Result<u32, RedisError> {
        let (Admitted::Fleet { .. }, Some(tat)) = (grant.how, grant.tat) else {
            return Ok(0);
        };
        let key = match &grant.key {
            None => self.global_key().to_owned(),
            Some(k) => self.key_for(k),
        };
        let mut conn = self.conn();
        let call = self
            .script()
            .refund(&mut conn, &key, self.params(), grant.cells, tat);
        let removed = tokio::time::timeout(self.timeout(), call)
            .await
            .map_err(|_| RedisError::from((redis::ErrorKind::Io, "refund timed out")))??;
        Ok((removed.as_nanos() / u128::from(self.params().emission_ns())) as u32)
    }
}
