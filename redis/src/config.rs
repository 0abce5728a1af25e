//! A fleet limiter's configuration, its failure modes, and how a call was admitted.

use core::fmt;
use core::time::Duration;

use redis::RedisError;
use resilix::breaker::Config as BreakerConfig;
use resilix::rate_limit::{Rate, RateLimitConfig};

#[allow(unused_imports)]
use crate::FleetStats;
use crate::guard::DEFAULT_BREAKER;
use crate::script::FleetConfigError;

/// What a call does when Redis does not answer within the backend timeout, or answers with an
/// error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OnBackendError {
    /// Admit (fail open), counted in [`FleetStats::failed_open`], up to this node's
    /// fail-open cap ([`FleetConfig::fail_open_limit`], by default the whole quota): past the
    /// cap the call is refused as the local limiter refuses ([`FleetStats::failed_open_capped`]).
    /// So even failing open, a node admits at most `burst + W / T` cells in any window W that
    /// Redis did not decide. The default, as Envoy's rate-limit filter
    /// (`failure_mode_deny: false`) and Stripe's limiters: a limiter outage should not become
    /// an outage of the service it protects.
    #[default]
    Allow,
    /// Refuse (fail closed) with `rate-limited` and no retry instant, counted in
    /// [`FleetStats::failed_closed`]: Envoy's `failure_mode_deny: true`, for quotas that
    /// protect something more fragile than your availability.
    Deny,
    /// Decide locally at this node's share of the quota: the rate divided by `nodes`, the
    /// burst divided by `nodes` (rounded down, at least 1). With `nodes` the number of healthy
    /// instances, the fleet stays near the quota through an outage; with a stale `nodes` it is
    /// off by the ratio (three pods each running the whole quota is 3×: kong-scalable-rate-
    /// limiter#14).
    Local {
        /// How many nodes share the quota.
        nodes: u32,
    },
}

/// A fleet-wide limiter's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetConfig {
    /// Names the limiter's keys; every process sharing a quota uses the same name and limit.
    pub name: String,
    /// Prepended to every key (default `resilix:`), outside the hash tag.
    pub prefix: String,
    /// The quota: rate and burst, as for the local limiter.
    pub limit: RateLimitConfig,
    /// The longest a decision waits on Redis, connection included. Default 20 ms: Envoy's
    /// rate-limit filter timeout. A loopback round trip is well under a millisecond.
    pub backend_timeout: Duration,
    /// What a call does when the backend fails. Default: allow (fail open).
    pub on_backend_error: OnBackendError,
    /// This node's cap on fail-open admissions ([`OnBackendError::Allow`]); `None` (the
    /// default) caps at the quota itself.
    pub fail_open_limit: Option<RateLimitConfig>,
    /// The breaker on the backend (the core's [`resilix::breaker`]): while it is open, calls
    /// are not sent and the failure mode decides at once. Default: open after 5 consecutive
    /// failures (errors, timeouts, decisions past the deadline), probe after 10 ms (less up to
    /// half, jittered), one probe at a time.
    pub breaker: BreakerConfig,
    /// Calls in flight per connection at most (default 32); a call finding them all taken is
    /// decided by the failure mode at once instead of queueing behind them.
    pub max_in_flight: u32,
    /// Connections [`FleetRateLimiter::connect`](crate::FleetRateLimiter::connect) opens
    /// (default 1; each pipelines its calls). Raise it when one connection's task cannot
    /// carry the offered load (see the crate's load test).
    pub connections: u32,
}

impl FleetConfig {
    /// `limit` under `name`, with the defaults.
    pub fn new(name: impl Into<String>, limit: RateLimitConfig) -> FleetConfig {
        FleetConfig {
            name: name.into(),
            prefix: "resilix:".to_owned(),
            limit,
            backend_timeout: Duration::from_millis(20),
            on_backend_error: OnBackendError::Allow,
            fail_open_limit: None,
            breaker: DEFAULT_BREAKER,
            max_in_flight: 32,
            connections: 1,
        }
    }

    /// Another key prefix.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> FleetConfig {
        self.prefix = prefix.into();
        self
    }

    /// Another backend timeout.
    pub fn with_backend_timeout(mut self, timeout: Duration) -> FleetConfig {
        self.backend_timeout = timeout;
        self
    }

    /// Another failure mode.
    pub fn on_backend_error(mut self, mode: OnBackendError) -> FleetConfig {
        self.on_backend_error = mode;
        self
    }

    /// Another cap on fail-open admissions (per node).
    pub fn with_fail_open_limit(mut self, limit: RateLimitConfig) -> FleetConfig {
        self.fail_open_limit = Some(limit);
        self
    }

    /// Another breaker on the backend.
    pub fn with_breaker(mut self, breaker: BreakerConfig) -> FleetConfig {
        self.breaker = breaker;
        self
    }

    /// Another bound on the calls in flight per connection (at least 1).
    pub fn with_max_in_flight(mut self, calls: u32) -> FleetConfig {
        self.max_in_flight = calls;
        self
    }

    /// Another number of connections for [`FleetRateLimiter::connect`](crate::FleetRateLimiter::connect) (at least 1).
    pub fn with_connections(mut self, connections: u32) -> FleetConfig {
        self.connections = connections;
        self
    }
}

/// How an admitted call was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Admitted {
    /// By the fleet-wide bucket in Redis; `remaining` whole cells were left.
    Fleet {
        /// Cells left after this call (for `X-RateLimit-Remaining`).
        remaining: u32,
    },
    /// Redis did not decide (error, timeout, breaker open, no free in-flight slot) and the
    /// failure mode is [`OnBackendError::Allow`]: admitted within the fail-open cap.
    FailedOpen,
    /// The backend failed and this node's local share admitted it.
    Local,
}

/// Why [`FleetRateLimiter::connect`](crate::FleetRateLimiter::connect) failed.
#[derive(Debug)]
pub enum ConnectError {
    /// The URL or client was refused by redis-rs.
    Redis(RedisError),
    /// The configuration was refused.
    Config(FleetConfigError),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Redis(e) => write!(f, "redis client: {e}"),
            ConnectError::Config(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ConnectError {}

pub(crate) fn local_share(
    limit: &RateLimitConfig,
    nodes: u32,
) -> Result<RateLimitConfig, FleetConfigError> {
    if nodes == 0 {
        return Err(FleetConfigError::ZeroNodes);
    }
    let period = limit
        .rate
        .period()
        .checked_mul(nodes)
        .ok_or(FleetConfigError::SpanTooLong)?;
    Ok(RateLimitConfig::new(Rate::new(limit.rate.count(), period))
        .with_burst((limit.burst / nodes).max(1)))
}
