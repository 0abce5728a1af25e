//! Several connections to one primary, at a fixed address or found through Redis Sentinel.
//!
//! Sentinel is asked for the primary (`SENTINEL get-master-addr-by-name`) on the first call
//! and again, at most every 50 ms and in the background, whenever a call fails or times out;
//! when it names another address (a promotion), fresh connections replace the old ones, whose
//! calls in flight fail. The limiters' breaker keeps calls local meanwhile.

use core::fmt;
use core::time::Duration;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, Pipeline, RedisError,
    RedisFuture, Value,
};

use crate::backend::manager;

/// Where the primary is.
enum Source {
    Fixed,
    Sentinel {
        sentinels: Vec<ConnectionInfo>,
        service: String,
    },
}

/// The connections behind [`Backend::Managed`](crate::Backend::Managed): opaque.
pub struct Managed {
    source: Source,
    db: i64,
    timeout: Duration,
    count: u32,
    /// The primary's address and its connections (empty until Sentinel has named one).
    conns: RwLock<(Option<ConnectionAddr>, Arc<[ConnectionManager]>)>,
    next: AtomicUsize,
    resolving: Arc<AtomicBool>,
    /// Milliseconds since `epoch` of the last resolution started.
    last: AtomicU64,
    epoch: std::time::Instant,
    resolutions: AtomicU64,
}

impl fmt::Debug for Managed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let primary = self.conns.read().ok().and_then(|c| c.0.clone());
        f.debug_struct("Backend::Managed")
            .field("sentinel", &matches!(self.source, Source::Sentinel { .. }))
            .field("primary", &primary)
            .field("connections", &self.count)
            .finish_non_exhaustive()
    }
}

const RESOLVE_EVERY_MS: u64 = 50;

impl Managed {
    fn new(source: Source, db: i64, timeout: Duration, count: u32) -> Managed {
        Managed {
            source,
            db,
            timeout,
            count: count.max(1),
            conns: RwLock::new((None, Arc::from(Vec::new()))),
            next: AtomicUsize::new(0),
            resolving: Arc::new(AtomicBool::new(false)),
            last: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
            resolutions: AtomicU64::new(0),
        }
    }

    pub(crate) fn fixed(
        info: ConnectionInfo,
        timeout: Duration,
        count: u32,
    ) -> Result<Managed, RedisError> {
        let db = info.redis_settings().db();
        let m = Managed::new(Source::Fixed, db, timeout, count);
        m.install(info)?;
        Ok(m)
    }

    pub(crate) fn sentinel(
        sentinels: Vec<ConnectionInfo>,
        service: &str,
        db: i64,
        timeout: Duration,
        count: u32,
    ) -> Result<Managed, RedisError> {
        if sentinels.is_empty() {
            return Err(RedisError::from((
                ErrorKind::InvalidClientConfig,
                "no sentinel given",
            )));
        }
        Ok(Managed::new(
            Source::Sentinel {
                sentinels,
                service: service.to_owned(),
            },
            db,
            timeout,
            count,
        ))
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn db(&self) -> i64 {
        self.db
    }

    /// How many times Sentinel named a new primary and the connections were replaced.
    pub fn resolutions(&self) -> u64 {
        self.resolutions.load(Ordering::Relaxed)
    }

    /// Replaces the connections with `count` new ones to `info`.
    fn install(&self, info: ConnectionInfo) -> Result<(), RedisError> {
        let addr = info.addr().clone();
        let conns = (0..self.count)
            .map(|_| manager(redis::Client::open(info.clone())?, self.timeout))
            .collect::<Result<Vec<_>, _>>()?;
        let mut w = self.conns.write().unwrap_or_else(|e| e.into_inner());
        *w = (Some(addr), Arc::from(conns));
        Ok(())
    }

    fn pick(&self) -> Option<ConnectionManager> {
        let r = self.conns.read().unwrap_or_else(|e| e.into_inner());
        if r.1.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % r.1.len();
        Some(r.1[i].clone())
    }

    /// A call failed: ask Sentinel again, unless asked within the last 50 ms or a question
    /// is out.
    pub(crate) fn suspect(self: &Arc<Self>) {
        if matches!(self.source, Source::Fixed) {
            return;
        }
        let now = self.epoch.elapsed().as_millis() as u64;
        let last = self.last.load(Ordering::Relaxed);
        if now.saturating_sub(last) < RESOLVE_EVERY_MS && last != 0 {
            return;
        }
        if self.resolving.swap(true, Ordering::AcqRel) {
            return;
        }
        self.last.store(now.max(1), Ordering::Relaxed);
        let me = self.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = me.resolve().await;
                me.resolving.store(false, Ordering::Release);
            });
        } else {
            self.resolving.store(false, Ordering::Release);
        }
    }

    /// Asks the sentinels in turn for the primary; installs new connections if it moved.
    async fn resolve(&self) -> Result<(), RedisError> {
        let Source::Sentinel { sentinels, service } = &self.source else {
            return Ok(());
        };
        let mut last_err = None;
        for s in sentinels {
            let ask = async {
                let client = redis::Client::open(s.clone())?;
                let mut c = client.get_multiplexed_async_connection().await?;
                let (host, port): (String, u16) = redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(service)
                    .query_async(&mut c)
                    .await?;
                Ok::<_, RedisError>((host, port))
            };
            let ask = tokio::time::timeout(self.timeout.max(Duration::from_millis(100)), ask);
            match ask.await {
                Ok(Ok((host, port))) => {
                    let addr = ConnectionAddr::Tcp(host.clone(), port);
                    let current = self
                        .conns
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                        .clone();
                    if current.as_ref() != Some(&addr) {
                        let info =
                            format!("redis://{host}:{port}/{}", self.db).into_connection_info()?;
                        self.install(info)?;
                        self.resolutions.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                Ok(Err(e)) => last_err = Some(e),
                Err(_) => last_err = Some(RedisError::from((ErrorKind::Io, "sentinel timed out"))),
            }
        }
        Err(last_err.unwrap_or_else(|| RedisError::from((ErrorKind::Io, "no sentinel"))))
    }

    fn unknown() -> RedisError {
        RedisError::from((ErrorKind::Io, "no primary known yet (asking Sentinel)"))
    }
}

/// Whether an error says the primary may have moved: the connection failed, or the server
/// answered as a replica (`READONLY`) or as a node that is not the primary any more.
fn moved(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
                | ErrorKind::Server(redis::ServerErrorKind::MasterDown)
        )
}

/// The calls of a managed backend; each picks the next connection.
pub(crate) trait ManagedCalls {
    fn req_packed_command<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value>;
    fn req_packed_commands<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>>;
}

impl ManagedCalls for Arc<Managed> {
    fn req_packed_command<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let conn = self.pick();
        Box::pin(async move {
            let Some(mut c) = conn else {
                self.suspect();
                return Err(Managed::unknown());
            };
            let r = c.req_packed_command(cmd).await;
            if r.as_ref().is_err_and(moved) {
                self.suspect();
            }
            r
        })
    }

    fn req_packed_commands<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let conn = self.pick();
        Box::pin(async move {
            let Some(mut c) = conn else {
                self.suspect();
                return Err(Managed::unknown());
            };
            let r = c.req_packed_commands(pipeline, offset, count).await;
            if r.as_ref().is_err_and(moved) {
                self.suspect();
            }
            r
        })
    }
}
