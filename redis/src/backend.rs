//! Where the decisions run: one Redis server (through redis-rs's reconnecting connection
//! manager) or, with the `cluster` feature, a Redis Cluster.
//!
//! Every decision touches one key, hash-tagged (`prefix{name}`, `prefix{name:key}`), so in a
//! cluster each bucket lives on one slot and its script runs on that slot's master, atomically,
//! on that master's clock. Buckets of different keys spread over the masters; no decision ever
//! needs two of them.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, IntoConnectionInfo, Pipeline, RedisError, RedisFuture, Value};

use crate::managed::{Managed, ManagedCalls};

/// A connection the fleet limiters decide on: cheap to clone (clones share the connection).
///
/// Built from a [`ConnectionManager`] (`.into()`), or by [`Backend::single`]; with the
/// `cluster` feature, from a `redis::cluster_async::ClusterConnection` or by
/// `Backend::cluster`.
///
/// ```no_run
/// use std::time::Duration;
/// use resilix_redis::Backend;
///
/// let backend = Backend::single("redis://127.0.0.1:6379/0", Duration::from_millis(20))?;
/// # Ok::<(), redis::RedisError>(())
/// ```
#[derive(Clone)]
pub enum Backend {
    /// One server (a primary: never a replica).
    Single(ConnectionManager),
    /// A Redis Cluster: each command is routed to the master of its key's slot.
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
    /// Several connections to one primary, used in turn ([`Backend::pool`]), found either at
    /// a fixed address or through Redis Sentinel ([`Backend::sentinel`]), which is asked
    /// again whenever calls fail, so the limiters follow a promotion.
    Managed(Arc<Managed>),
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backend::Single(_) => f.write_str("Backend::Single"),
            Backend::Managed(m) => fmt::Debug::fmt(m, f),
            #[cfg(feature = "cluster")]
            Backend::Cluster(_) => f.write_str("Backend::Cluster"),
        }
    }
}

impl Backend {
    /// One server on `url`, connecting lazily: built during an outage, calls fail (and the
    /// limiters apply their failure mode) until the server answers.
    ///
    /// Each response and each connection attempt is bounded by `timeout`; a connection is
    /// retried twice (10 ms, then up to 200 ms apart) before the waiting calls fail, and the
    /// next call starts a new attempt.
    pub fn single<T: IntoConnectionInfo>(url: T, timeout: Duration) -> Result<Self, RedisError> {
        let client = redis::Client::open(url)?;
        Ok(Backend::Single(manager(client, timeout)?))
    }

    /// `connections` connections (at least 1) to the server on `url`, used in turn, each as
    /// [`Backend::single`]'s. One connection pipelines every call on one task; more spread a
    /// heavy offered load over more tasks and sockets.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use resilix_redis::Backend;
    ///
    /// let backend = Backend::pool("redis://127.0.0.1:6379/0", Duration::from_millis(20), 4)?;
    /// assert_eq!(backend.connections(), 4);
    /// # Ok::<(), redis::RedisError>(())
    /// ```
    pub fn pool<T: IntoConnectionInfo>(
        url: T,
        timeout: Duration,
        connections: u32,
    ) -> Result<Self, RedisError> {
        Ok(Backend::Managed(Arc::new(Managed::fixed(
            url.into_connection_info()?,
            timeout,
            connections,
        )?)))
    }

    /// The primary that Redis Sentinel names `service`, asked of `sentinels` (any of them
    /// answering), with `connections` connections to it. Connecting lazily: the sentinels are
    /// asked on the first call, and again (at most every 50 ms) whenever a call fails or
    /// times out; when they name another primary (a promotion), new connections replace the
    /// old ones. `db` is the database on the primary.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use resilix_redis::Backend;
    ///
    /// let sentinels = ["redis://127.0.0.1:26379", "redis://127.0.0.1:26380"];
    /// let backend = Backend::sentinel(sentinels, "mymaster", 0, Duration::from_millis(20), 1)?;
    /// # Ok::<(), redis::RedisError>(())
    /// ```
    pub fn sentinel<T: IntoConnectionInfo>(
        sentinels: impl IntoIterator<Item = T>,
        service: &str,
        db: i64,
        timeout: Duration,
        connections: u32,
    ) -> Result<Self, RedisError> {
        let sentinels = sentinels
            .into_iter()
            .map(|s| s.into_connection_info())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Backend::Managed(Arc::new(Managed::sentinel(
            sentinels,
            service,
            db,
            timeout,
            connections,
        )?)))
    }

    /// How many connections carry the calls (1 but for [`Backend::pool`] and
    /// [`Backend::sentinel`]).
    pub fn connections(&self) -> u32 {
        match self {
            Backend::Managed(m) => m.count(),
            _ => 1,
        }
    }

    /// A call failed or timed out: a Sentinel-found backend asks the sentinels again (at most
    /// every 50 ms, in the background).
    pub(crate) fn suspect(&self) {
        if let Backend::Managed(m) = self {
            m.suspect();
        }
    }

    /// A Redis Cluster found from `seeds` (any of its masters), connecting lazily. Each
    /// response and connection attempt is bounded by `timeout`; a command is retried once
    /// after a redirection or a failed connection (the limiters bound the whole call by their
    /// own backend timeout anyway).
    #[cfg(feature = "cluster")]
    pub fn cluster<T: IntoConnectionInfo>(
        seeds: impl IntoIterator<Item = T>,
        timeout: Duration,
    ) -> Result<Self, RedisError> {
        let client = redis::cluster::ClusterClient::builder(seeds)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(1)
            .min_retry_wait(5)
            .max_retry_wait(50)
            .build()?;
        Ok(Backend::Cluster(
            client.get_pending_async_connection_with_config(redis::cluster::ClusterConfig::new()),
        ))
    }
}

/// A connection manager bounding each response and connection attempt by `timeout`, retrying
/// a connection twice (10 ms, then up to 200 ms apart) before failing the waiting calls.
pub(crate) fn manager(
    client: redis::Client,
    timeout: Duration,
) -> Result<ConnectionManager, RedisError> {
    let cm = ConnectionManagerConfig::new()
        .set_response_timeout(Some(timeout))
        .set_connection_timeout(Some(timeout))
        .set_number_of_retries(2)
        .set_min_delay(Duration::from_millis(10))
        .set_max_delay(Duration::from_millis(200));
    ConnectionManager::new_lazy_with_config(client, cm)
}

impl From<ConnectionManager> for Backend {
    fn from(c: ConnectionManager) -> Backend {
        Backend::Single(c)
    }
}

#[cfg(feature = "cluster")]
impl From<redis::cluster_async::ClusterConnection> for Backend {
    fn from(c: redis::cluster_async::ClusterConnection) -> Backend {
        Backend::Cluster(c)
    }
}

impl ConnectionLike for Backend {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Backend::Single(c) => c.req_packed_command(cmd),
            #[cfg(feature = "cluster")]
            Backend::Cluster(c) => c.req_packed_command(cmd),
            Backend::Managed(m) => m.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Backend::Single(c) => c.req_packed_commands(pipeline, offset, count),
            #[cfg(feature = "cluster")]
            Backend::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Backend::Managed(m) => m.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Backend::Single(c) => c.get_db(),
            #[cfg(feature = "cluster")]
            Backend::Cluster(c) => c.get_db(),
            Backend::Managed(m) => m.db(),
        }
    }
}
