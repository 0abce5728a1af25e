//! The fleet-wide rate limiter: one script call per decision, bounded by a backend timeout,
//! with a failure mode for when Redis is slow or down.

use core::fmt;
use core::time::Duration;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::{IntoConnectionInfo, RedisError};
use resilix::rate_limit::{AcquireError, KeyedRateLimiter, Rate, RateLimitConfig, RateLimiter};
use resilix::rejection::{RejectReason, Rejection};
use resilix::time::Clock;
use resilix_tokio::TokioClock;

use crate::backend::Backend;
use crate::script::{FleetConfigError, GcraParams, GcraScript, ServerClock};

/// Buckets of the local fallback for keyed calls (a fixed table; keys beyond it share one
/// overflow bucket, which can only refuse more).
const LOCAL_KEYS: usize = 1024;

/// What a call does when Redis does not answer within the backend timeout, or answers with an
/// error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OnBackendError {
    /// Admit (fail open), counted in [`FleetStats::failed_open`]. The default, as Envoy's
    /// rate-limit filter (`failure_mode_deny: false`) and Stripe's limiters: a limiter outage
    /// should not become an outage of the service it protects.
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
}

/// How an admitted call was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Admitted {
    /// By the fleet-wide bucket in Redis; `remaining` whole cells were left.
    Fleet {
        /// Cells left after this call (for `X-RateLimit-Remaining`).
        remaining: u32,
    },
    /// The backend failed and the failure mode is [`OnBackendError::Allow`].
    FailedOpen,
    /// The backend failed and this node's local share admitted it.
    Local,
}

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
}

#[derive(Debug, Default)]
struct Counters {
    fleet_admitted: AtomicU64,
    fleet_refused: AtomicU64,
    backend_errors: AtomicU64,
    backend_timeouts: AtomicU64,
    failed_open: AtomicU64,
    failed_closed: AtomicU64,
    local_admitted: AtomicU64,
    local_refused: AtomicU64,
    script_loads: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// This node's share of the quota, for the local fallback.
struct Local {
    global: RateLimiter,
    keyed: Box<KeyedRateLimiter<LOCAL_KEYS>>,
}

/// One quota shared by every process that names it: GCRA in a Lua script on Redis.
///
/// Each decision is one `EVALSHA` (see [`script`](crate::script)), bounded by the backend
/// timeout; on a timeout or an error the [`OnBackendError`] mode decides. The connection (a
/// [`Backend`]) is redis-rs's connection manager, or its cluster connection; both reconnect
/// in the background, so decisions return to Redis without a restart once it answers again.
///
/// Refusals are the local limiter's: [`RejectReason::RateLimited`] with a retry instant on
/// this process's timeline (the clock `C`). The script answers how long after *its* decision
/// the cells would be admitted; the limiter adds that wait to its own clock reading taken
/// when the reply arrived. The decision happened on Redis between sending and the reply, so
/// the instant is never early, and late by at most the reply's transit time. No absolute
/// instant crosses between the two clocks, so their origins and offsets never matter.
pub struct FleetRateLimiter<C = TokioClock> {
    conn: Backend,
    script: GcraScript,
    params: GcraParams,
    key_global: String,
    key_prefix: String,
    timeout: Duration,
    mode: OnBackendError,
    local: Option<Local>,
    clock: C,
    counters: Counters,
    observer: Option<Observer>,
}

impl<C: Clock> fmt::Debug for FleetRateLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetRateLimiter")
            .field("key", &self.key_global)
            .field("params", &self.params)
            .field("timeout", &self.timeout)
            .field("mode", &self.mode)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl FleetRateLimiter<TokioClock> {
    /// A limiter on `url` (e.g. `redis://127.0.0.1:6379/0`), connecting lazily: built during
    /// a Redis outage it applies the failure mode until Redis answers.
    ///
    /// The connection ([`Backend::single`]) times out each response and each connection
    /// attempt at the backend timeout and retries a connection twice before failing the
    /// waiting calls (the next call starts a new attempt).
    pub fn connect<T: IntoConnectionInfo>(
        url: T,
        config: FleetConfig,
    ) -> Result<Self, ConnectError> {
        let conn = Backend::single(url, config.backend_timeout).map_err(ConnectError::Redis)?;
        FleetRateLimiter::with_clock(conn, config, TokioClock::new()).map_err(ConnectError::Config)
    }

    /// A limiter on a Redis Cluster found from `seeds` (feature `cluster`), connecting
    /// lazily ([`Backend::cluster`]). Each bucket is one hash-tagged key, so each decision runs
    /// on the master of that key's slot, atomically and on that master's clock.
    ///
    /// ```no_run
    /// use resilix::rate_limit::{Rate, RateLimitConfig};
    /// use resilix_redis::{FleetConfig, FleetRateLimiter};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = FleetConfig::new("api", RateLimitConfig::new(Rate::per_second(100)));
    /// let seeds = ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"];
    /// let limiter = FleetRateLimiter::connect_cluster(seeds, config)?;
    /// let _ = limiter.acquire_key("tenant-42").await;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "cluster")]
    pub fn connect_cluster<T: IntoConnectionInfo>(
        seeds: impl IntoIterator<Item = T>,
        config: FleetConfig,
    ) -> Result<Self, ConnectError> {
        let conn = Backend::cluster(seeds, config.backend_timeout).map_err(ConnectError::Redis)?;
        FleetRateLimiter::with_clock(conn, config, TokioClock::new()).map_err(ConnectError::Config)
    }

    /// A limiter on an existing connection: a [`ConnectionManager`](redis::aio::ConnectionManager)
    /// or any [`Backend`].
    pub fn new(conn: impl Into<Backend>, config: FleetConfig) -> Result<Self, FleetConfigError> {
        FleetRateLimiter::with_clock(conn, config, TokioClock::new())
    }
}

/// Why [`FleetRateLimiter::connect`] failed.
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

fn local_share(limit: &RateLimitConfig, nodes: u32) -> Result<RateLimitConfig, FleetConfigError> {
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

impl<C: Clock> FleetRateLimiter<C> {
    /// A limiter reading `clock` for the instants in its refusals.
    pub fn with_clock(
        conn: impl Into<Backend>,
        config: FleetConfig,
        clock: C,
    ) -> Result<Self, FleetConfigError> {
        let params = GcraParams::new(&config.limit)?;
        let braces = |s: &str| s.contains('{') || s.contains('}');
        if braces(&config.name) || braces(&config.prefix) {
            return Err(FleetConfigError::BraceInName);
        }
        if config.backend_timeout.is_zero() {
            return Err(FleetConfigError::ZeroTimeout);
        }
        let local = match config.on_backend_error {
            OnBackendError::Local { nodes } => {
                let share = local_share(&config.limit, nodes)?;
                Some(Local {
                    global: RateLimiter::new(share).map_err(FleetConfigError::Rate)?,
                    keyed: Box::new(KeyedRateLimiter::new(share).map_err(FleetConfigError::Rate)?),
                })
            }
            _ => None,
        };
        Ok(FleetRateLimiter {
            conn: conn.into(),
            script: GcraScript::new(),
            params,
            // The hash tag holds the name (and the key): one decision touches one key, and a
            // cluster spreads tenants over slots.
            key_global: format!("{}{{{}}}", config.prefix, config.name),
            key_prefix: format!("{}{{{}:", config.prefix, config.name),
            timeout: config.backend_timeout,
            mode: config.on_backend_error,
            local,
            clock,
            counters: Counters::default(),
            observer: None,
        })
    }

    /// Calls `observer` on every [`FleetEvent`] (keep it cheap: it runs on the caller's task).
    pub fn with_observer(
        mut self,
        observer: impl Fn(&FleetEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The Redis key of the global bucket.
    pub fn global_key(&self) -> &str {
        &self.key_global
    }

    /// The Redis key of `key`'s bucket: `prefix{name:key}`.
    pub fn key_for(&self, key: &str) -> String {
        format!("{}{key}}}", self.key_prefix)
    }

    /// The script parameters in force.
    pub fn params(&self) -> &GcraParams {
        &self.params
    }

    /// The counters.
    pub fn stats(&self) -> FleetStats {
        let c = &self.counters;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FleetStats {
            fleet_admitted: r(&c.fleet_admitted),
            fleet_refused: r(&c.fleet_refused),
            backend_errors: r(&c.backend_errors),
            backend_timeouts: r(&c.backend_timeouts),
            failed_open: r(&c.failed_open),
            failed_closed: r(&c.failed_closed),
            local_admitted: r(&c.local_admitted),
            local_refused: r(&c.local_refused),
            script_loads: r(&c.script_loads),
        }
    }

    /// One cell of the global quota.
    pub async fn acquire(&self) -> Result<Admitted, Rejection> {
        single(self.decide(None, 1).await)
    }

    /// One cell of `key`'s quota (each key its own bucket at the configured limit).
    pub async fn acquire_key(&self, key: &str) -> Result<Admitted, Rejection> {
        single(self.decide(Some(key), 1).await)
    }

    /// `cells` at once from the global bucket (`None`) or `key`'s, or none. Zero cells always
    /// succeeds without a round trip (its `remaining` is then the burst, not a reading of the
    /// bucket); more than the burst is [`AcquireError::ExceedsBurst`].
    pub async fn acquire_n(&self, key: Option<&str>, cells: u32) -> Result<Admitted, AcquireError> {
        if cells == 0 {
            return Ok(Admitted::Fleet {
                remaining: self.params.burst(),
            });
        }
        self.decide(key, cells).await
    }

    fn emit(&self, event: FleetEvent<'_>) {
        if let Some(o) = &self.observer {
            o(&event);
        }
    }

    async fn decide(&self, key: Option<&str>, cells: u32) -> Result<Admitted, AcquireError> {
        if cells > self.params.burst() {
            return Err(AcquireError::ExceedsBurst {
                requested: cells,
                burst: self.params.burst(),
            });
        }
        let owned;
        let redis_key = match key {
            None => self.key_global.as_str(),
            Some(k) => {
                owned = self.key_for(k);
                owned.as_str()
            }
        };
        let mut conn = self.conn.clone();
        let mut loaded = false;
        let call = self.script.eval(
            &mut conn,
            redis_key,
            &self.params,
            cells,
            ServerClock::Redis,
            &mut loaded,
        );
        let outcome = tokio::time::timeout(self.timeout, call).await;
        if loaded {
            bump(&self.counters.script_loads);
            self.emit(FleetEvent::ScriptLoaded);
        }
        match outcome {
            Ok(Ok(reply)) if reply.admitted => {
                bump(&self.counters.fleet_admitted);
                self.emit(FleetEvent::Decided {
                    admitted: true,
                    remaining: reply.remaining,
                });
                Ok(Admitted::Fleet {
                    remaining: reply.remaining,
                })
            }
            Ok(Ok(reply)) => {
                bump(&self.counters.fleet_refused);
                self.emit(FleetEvent::Decided {
                    admitted: false,
                    remaining: reply.remaining,
                });
                // The wait counts from the decision, which came before this reading.
                let at = self.clock.now().saturating_add(reply.wait);
                Err(AcquireError::Limited(Rejection::until(
                    RejectReason::RateLimited,
                    at,
                )))
            }
            // The connection manager's own response timeout is the backend timeout too.
            Ok(Err(e)) if e.is_timeout() => {
                bump(&self.counters.backend_timeouts);
                self.emit(FleetEvent::BackendTimeout(self.timeout));
                self.fail(key, cells)
            }
            Ok(Err(e)) => {
                bump(&self.counters.backend_errors);
                self.emit(FleetEvent::BackendError(&e));
                self.fail(key, cells)
            }
            Err(_) => {
                bump(&self.counters.backend_timeouts);
                self.emit(FleetEvent::BackendTimeout(self.timeout));
                self.fail(key, cells)
            }
        }
    }

    fn fail(&self, key: Option<&str>, cells: u32) -> Result<Admitted, AcquireError> {
        match (self.mode, &self.local) {
            (OnBackendError::Local { .. }, Some(local)) => {
                let now = self.clock.now();
                let r = match key {
                    None => local.global.try_acquire_n(now, cells),
                    Some(k) => {
                        let mut h = std::hash::DefaultHasher::new();
                        k.hash(&mut h);
                        local.keyed.try_acquire_n(h.finish(), now, cells)
                    }
                };
                self.emit(FleetEvent::LocalDecision {
                    admitted: r.is_ok(),
                });
                match r {
                    Ok(()) => {
                        bump(&self.counters.local_admitted);
                        Ok(Admitted::Local)
                    }
                    Err(e) => {
                        bump(&self.counters.local_refused);
                        Err(e)
                    }
                }
            }
            (OnBackendError::Deny, _) => {
                bump(&self.counters.failed_closed);
                self.emit(FleetEvent::FailedClosed);
                Err(AcquireError::Limited(Rejection::new(
                    RejectReason::RateLimited,
                )))
            }
            _ => {
                bump(&self.counters.failed_open);
                self.emit(FleetEvent::FailedOpen);
                Ok(Admitted::FailedOpen)
            }
        }
    }
}

fn single(r: Result<Admitted, AcquireError>) -> Result<Admitted, Rejection> {
    // burst ≥ 1 is validated, so one cell always fits: only `Limited` comes here.
    r.map_err(|e| e.rejection())
}
