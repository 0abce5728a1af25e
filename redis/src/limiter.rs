//! The fleet-wide rate limiter: one script call per decision, bounded by a backend timeout,
//! a breaker on the backend and a bound on the calls in flight, with a failure mode for every
//! call Redis did not decide.

use core::fmt;
use core::time::Duration;

use std::sync::Arc;

use redis::IntoConnectionInfo;
use resilix::rate_limit::{AcquireError, KeyedRateLimiter, RateLimitConfig, RateLimiter};
use resilix::rejection::Rejection;
use resilix::time::Clock;
use resilix_tokio::TokioClock;

use crate::backend::Backend;
use crate::batch::{Batcher, Outcome, Why};
use crate::config::{Admitted, ConnectError, FleetConfig, OnBackendError, local_share};
use crate::events::{Counters, FleetEvent, FleetStats, Observer, bump};
use crate::guard::{Guard, NotSent};
use crate::script::{FleetConfigError, GcraParams, GcraScript};

/// Buckets of the local fallback for keyed calls (a fixed table; keys beyond it share one
/// overflow bucket, which can only refuse more).
const LOCAL_KEYS: usize = 1024;

/// This node's share of the quota, for the calls Redis did not decide: the fail-open cap
/// ([`OnBackendError::Allow`]) or the local share ([`OnBackendError::Local`]); the core's
/// GCRA, global and keyed.
pub(crate) struct Local {
    pub(crate) global: RateLimiter,
    pub(crate) keyed: Box<KeyedRateLimiter<LOCAL_KEYS>>,
}

impl Local {
    fn new(share: RateLimitConfig) -> Result<Local, FleetConfigError> {
        Ok(Local {
            global: RateLimiter::new(share).map_err(FleetConfigError::Rate)?,
            keyed: Box::new(KeyedRateLimiter::new(share).map_err(FleetConfigError::Rate)?),
        })
    }
}

/// One quota shared by every process that names it: GCRA in a Lua script on Redis.
///
/// Each decision is one `EVALSHA` (see [`script`](crate::script)), bounded by the backend
/// timeout, carrying the caller's deadline so that a decision nobody waits for any more spends
/// nothing. A call is sent only when the backend breaker is closed (or this call is its
/// probe) and an in-flight slot is free; otherwise, and on a timeout or an error, the
/// [`OnBackendError`] mode decides at once. Every admission Redis did not decide counts
/// against this node's share (the fail-open cap, or the local share), so the fleet's
/// over-admission is bounded in every mode (`docs/fleet.md` derives the bound). The connection (a
/// [`Backend`]) is redis-rs's connection manager, or its cluster connection; both reconnect
/// in the background, so decisions return to Redis without a restart once it answers again.
///
/// Refusals are the local limiter's: [`RejectReason::RateLimited`](resilix::RejectReason::RateLimited) with a retry instant on
/// this process's timeline (the clock `C`). The script answers how long after *its* decision
/// the cells would be admitted; the limiter adds that wait to its own clock reading taken
/// when the reply arrived. The decision happened on Redis between sending and the reply, so
/// the instant is never early, and late by at most the reply's transit time. No absolute
/// instant crosses between the two clocks, so their origins and offsets never matter.
pub struct FleetRateLimiter<C = TokioClock> {
    pub(crate) conn: Backend,
    pub(crate) script: GcraScript,
    pub(crate) params: GcraParams,
    pub(crate) key_global: String,
    pub(crate) key_prefix: String,
    pub(crate) timeout: Duration,
    pub(crate) mode: OnBackendError,
    pub(crate) local: Option<Local>,
    pub(crate) guard: Arc<Guard>,
    pub(crate) batcher: Batcher,
    pub(crate) clock: C,
    pub(crate) counters: Counters,
    pub(crate) observer: Option<Observer>,
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
    /// [`FleetConfig::connections`] connections ([`Backend::pool`]), each timing out each
    /// response and each connection attempt at the backend timeout and retrying a connection
    /// twice before failing the waiting calls (the next call starts a new attempt).
    pub fn connect<T: IntoConnectionInfo>(
        url: T,
        config: FleetConfig,
    ) -> Result<Self, ConnectError> {
        let conn = Backend::pool(url, config.backend_timeout, config.connections)
            .map_err(ConnectError::Redis)?;
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
        if config.max_in_flight == 0 || config.connections == 0 {
            return Err(FleetConfigError::Backend);
        }
        let local = match config.on_backend_error {
            OnBackendError::Local { nodes } => {
                Some(Local::new(local_share(&config.limit, nodes)?)?)
            }
            OnBackendError::Allow => {
                Some(Local::new(config.fail_open_limit.unwrap_or(config.limit))?)
            }
            OnBackendError::Deny => None,
        };
        let conn = conn.into();
        let slots = config.max_in_flight.saturating_mul(conn.connections());
        let guard = Guard::new(config.breaker, slots, conn.clone(), config.backend_timeout)
            .map_err(|()| FleetConfigError::Backend)?;
        Ok(FleetRateLimiter {
            conn,
            script: GcraScript::new(),
            params,
            // The hash tag holds the name (and the key): one decision touches one key, and a
            // cluster spreads tenants over slots.
            key_global: format!("{}{{{}}}", config.prefix, config.name),
            key_prefix: format!("{}{{{}:", config.prefix, config.name),
            timeout: config.backend_timeout,
            mode: config.on_backend_error,
            local,
            guard,
            batcher: Batcher::default(),
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
        self.counters.snapshot()
    }

    /// Calls in flight to Redis at this instant.
    pub fn in_flight(&self) -> u32 {
        self.guard.in_flight()
    }

    /// One cell of the global quota.
    pub async fn acquire(&self) -> Result<Admitted, Rejection> {
        single(self.decide(None, 1).await.0)
    }

    /// One cell of `key`'s quota (each key its own bucket at the configured limit).
    pub async fn acquire_key(&self, key: &str) -> Result<Admitted, Rejection> {
        single(self.decide(Some(key), 1).await.0)
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
        self.decide(key, cells).await.0
    }

    pub(crate) fn emit(&self, event: FleetEvent<'_>) {
        if let Some(o) = &self.observer {
            o(&event);
        }
    }

    pub(crate) fn conn(&self) -> Backend {
        self.conn.clone()
    }

    pub(crate) fn script(&self) -> &GcraScript {
        &self.script
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn guard(&self) -> &Arc<Guard> {
        &self.guard
    }

    pub(crate) fn batcher(&self) -> &Batcher {
        &self.batcher
    }

    pub(crate) fn now(&self) -> resilix::time::Instant {
        self.clock.now()
    }

    pub(crate) fn script_loaded(&self) {
        bump(&self.counters.script_loads);
        self.emit(FleetEvent::ScriptLoaded);
    }

    pub(crate) fn conn_suspect(&self) {
        self.conn.suspect();
    }

    /// The decision, and the TAT it left when Redis admitted (for a refund).
    pub(crate) async fn decide(
        &self,
        key: Option<&str>,
        cells: u32,
    ) -> (Result<Admitted, AcquireError>, Option<Duration>) {
        if cells > self.params.burst() {
            let e = AcquireError::ExceedsBurst {
                requested: cells,
                burst: self.params.burst(),
            };
            return (Err(e), None);
        }
        let owned;
        let redis_key = match key {
            None => self.key_global.as_str(),
            Some(k) => {
                owned = self.key_for(k);
                owned.as_str()
            }
        };
        let sent = self.clock.now();
        let outcome = match self.guard.pass(sent) {
            Ok(ticket) => self.alone(redis_key, cells, sent, ticket).await,
            Err(NotSent::InFlightFull) => {
                bump(&self.counters.batched);
                self.batched(redis_key, cells, sent).await
            }
            Err(why) => Outcome::NotDecided(Why::NotSent(why)),
        };
        self.apply(key, cells, outcome)
    }
}

fn single(r: Result<Admitted, AcquireError>) -> Result<Admitted, Rejection> {
    // burst ≥ 1 is validated, so one cell always fits: only `Limited` comes here.
    r.map_err(|e| e.rejection())
}
