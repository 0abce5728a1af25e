//! Lease mode: reserve cells from the fleet bucket in advance, spend them locally, no round
//! trip per call; traffic keeps flowing through a Redis outage for the lease's length.

use core::time::Duration;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use resilix::rejection::{RejectReason, Rejection};
use resilix::time::{Clock, Instant};

use crate::backend::Backend;
use crate::events::Observer;
pub use crate::lease_config::{LeaseConfig, LeaseStats, LeasedCell};
use crate::script::{FleetConfigError, GcraParams, GcraScript, ServerClock};
use crate::{FleetConfig, FleetEvent};

#[derive(Default)]
struct Counters {
    admitted: AtomicU64,
    refused: AtomicU64,
    renewals: AtomicU64,
    renewals_refused: AtomicU64,
    renewal_failures: AtomicU64,
    expired_cells: AtomicU64,
    refunded: AtomicU64,
}

/// Leased cells: (spendable until, cells left), oldest first.
type Pool = VecDeque<(Instant, u32)>;

struct Shared<C> {
    pool: Mutex<Pool>,
    clock: C,
    counters: Counters,
    wake: tokio::sync::Notify,
    lease: LeaseConfig,
    observer: Option<Observer>,
}

impl<C> Shared<C> {
    fn emit(&self, event: FleetEvent<'_>) {
        if let Some(o) = &self.observer {
            o(&event);
        }
    }

    /// Counts and reports cells `expire` dropped (called once the pool's lock is released).
    fn expired(&self, cells: u32) {
        if cells > 0 {
            self.counters
                .expired_cells
                .fetch_add(u64::from(cells), Ordering::Relaxed);
            self.emit(FleetEvent::LeaseExpired { cells });
        }
    }

    /// Leased cells left after dropping the leases that ended by `now`.
    fn left(&self, now: Instant) -> u64 {
        self.counted(now, Duration::ZERO)
    }

    /// Leased cells spendable for at least `carry` after `now`.
    fn counted(&self, now: Instant, carry: Duration) -> u64 {
        let mut pool = self.lock();
        let gone = expire(&mut pool, now);
        let left = fresh(&pool, now, carry);
        drop(pool);
        self.expired(gone);
        left
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A node's share of a fleet quota, decided locally from cells leased in advance.
///
/// A background task reserves [`LeaseConfig::cells`] at a time from the same fleet bucket
/// (one script call of n cells) whenever fewer than the low water are left; each call spends
/// one leased cell, with no round trip. Every admitted call spends a cell the fleet bucket
/// admitted, within `period` after the renewal that reserved it was sent, so over any window
/// of length W the fleet admits at most **burst + (W + period) / T** cells (the lease length
/// is the price of static stability; the nodes' clocks are assumed to run at Redis's rate,
/// their offsets do not matter); cells that expire unspent are lost (counted).
/// Through a Redis outage a node admits from what it holds: [`LeaseConfig::for_share`] sizes
/// the pool to carry the node's share for half the period.
///
/// The renewing task runs on the runtime `spawn` was called on. A caller that spends in a
/// loop that never yields can delay it: tokio keeps a task woken from a worker in that
/// worker's LIFO slot, which other workers do not steal, so the renewal waits for the caller's
/// next `.await` and calls are refused meanwhile (the bench gives the renewer a runtime of
/// its own for that reason). Ordinary async handlers yield at every await and never notice.
pub struct LeasedRateLimiter<C> {
    shared: Arc<Shared<C>>,
    task: tokio::task::JoinHandle<()>,
}

impl<C> Drop for LeasedRateLimiter<C> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<C: Clock + Send + Sync + 'static> LeasedRateLimiter<C> {
    /// Starts leasing from `config`'s bucket on `conn` (a
    /// [`ConnectionManager`](redis::aio::ConnectionManager) or any [`Backend`]; spawns the
    /// renewing task on the current tokio runtime). `config.backend_timeout` bounds each
    /// renewal; `config.on_backend_error` does not apply (a call never waits on Redis).
    pub fn spawn(
        conn: impl Into<Backend>,
        config: FleetConfig,
        lease: LeaseConfig,
        clock: C,
    ) -> Result<Self, FleetConfigError> {
        Self::start(conn.into(), config, lease, clock, None)
    }

    /// As [`spawn`](Self::spawn), reporting renewals, refused renewals, backend errors and
    /// timeouts, and expired cells to `observer` (from the renewing task, and from calls
    /// that find a lease expired: keep it cheap).
    pub fn spawn_with_observer(
        conn: impl Into<Backend>,
        config: FleetConfig,
        lease: LeaseConfig,
        clock: C,
        observer: impl Fn(&FleetEvent<'_>) + Send + Sync + 'static,
    ) -> Result<Self, FleetConfigError> {
        Self::start(conn.into(), config, lease, clock, Some(Arc::new(observer)))
    }

    fn start(
        conn: Backend,
        config: FleetConfig,
        lease: LeaseConfig,
        clock: C,
        observer: Option<Observer>,
    ) -> Result<Self, FleetConfigError> {
        let params = GcraParams::new(&config.limit)?;
        if lease.cells == 0 || lease.cells > params.burst() {
            return Err(FleetConfigError::LeaseCells);
        }
        if lease.period.is_zero() {
            return Err(FleetConfigError::ZeroLeasePeriod);
        }
        if config.backend_timeout.is_zero() {
            return Err(FleetConfigError::ZeroTimeout);
        }
        if config.name.contains(['{', '}']) || config.prefix.contains(['{', '}']) {
            return Err(FleetConfigError::BraceInName);
        }
        let key = format!("{}{{{}}}", config.prefix, config.name);
        let shared = Arc::new(Shared {
            pool: Mutex::new(VecDeque::new()),
            clock,
            counters: Counters::default(),
            wake: tokio::sync::Notify::new(),
            lease,
            observer,
        });
        let task = tokio::spawn(renew(
            shared.clone(),
            conn,
            key,
            params,
            config.backend_timeout,
        ));
        Ok(LeasedRateLimiter { shared, task })
    }

    /// One call: spends a leased cell, or refuses (`rate-limited`, no retry instant: the next
    /// renewal's time is not known).
    pub fn try_acquire(&self) -> Result<(), Rejection> {
        self.try_acquire_refundable().map(|_| ())
    }

    /// As [`try_acquire`](Self::try_acquire), answering the cell, which
    /// [`refund`](Self::refund) can put back.
    pub fn try_acquire_refundable(&self) -> Result<LeasedCell, Rejection> {
        let s = &self.shared;
        let now = s.clock.now();
        let (taken, left, gone) = {
            let mut pool = s.lock();
            let gone = expire(&mut pool, now);
            let taken = match pool.front_mut() {
                Some((until, n)) => {
                    let until = *until;
                    *n -= 1;
                    if *n == 0 {
                        pool.pop_front();
                    }
                    Some(until)
                }
                None => None,
            };
            (taken, fresh(&pool, now, s.lease.carry), gone)
        };
        s.expired(gone);
        if left < u64::from(s.lease.low_water) {
            s.wake.notify_one();
        }
        if let Some(until) = taken {
            s.counters.admitted.fetch_add(1, Ordering::Relaxed);
            Ok(LeasedCell { until })
        } else {
            s.counters.refused.fetch_add(1, Ordering::Relaxed);
            Err(Rejection::new(RejectReason::RateLimited))
        }
    }

    /// Puts a cell the call did not use back into the pool, in the lease it came from (it
    /// stays spendable only until that lease ends), so no cell is ever spent outside its
    /// lease and the bound is unchanged. Answers whether it went back (not if its lease has
    /// ended). Local only: the fleet bucket granted the lease, and the lease is still this
    /// node's.
    ///
    /// ```no_run
    /// # fn run(limiter: &resilix_redis::LeasedRateLimiter<resilix_tokio::TokioClock>) {
    /// if let Ok(cell) = limiter.try_acquire_refundable() {
    ///     // ... the call turned out not to need it:
    ///     limiter.refund(cell);
    /// }
    /// # }
    /// ```
    pub fn refund(&self, cell: LeasedCell) -> bool {
        let s = &self.shared;
        let now = s.clock.now();
        if cell.until <= now {
            return false;
        }
        let mut pool = s.lock();
        // Leases are kept in order of their end; the cell goes back into its own.
        let at = pool.partition_point(|&(until, _)| until < cell.until);
        match pool.get_mut(at) {
            Some((until, n)) if *until == cell.until => *n = n.saturating_add(1),
            _ => pool.insert(at, (cell.until, 1)),
        }
        drop(pool);
        s.counters.refunded.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Leased cells spendable at this instant.
    pub fn leased(&self) -> u64 {
        let s = &self.shared;
        s.left(s.clock.now())
    }

    /// Leased cells spendable for at least [`LeaseConfig::carry`] more: what this node can
    /// admit through an outage starting now.
    pub fn carried(&self) -> u64 {
        let s = &self.shared;
        s.counted(s.clock.now(), s.lease.carry)
    }

    /// The counters.
    pub fn stats(&self) -> LeaseStats {
        let c = &self.shared.counters;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LeaseStats {
            admitted: r(&c.admitted),
            refused: r(&c.refused),
            renewals: r(&c.renewals),
            renewals_refused: r(&c.renewals_refused),
            renewal_failures: r(&c.renewal_failures),
            expired_cells: r(&c.expired_cells),
            refunded: r(&c.refunded),
        }
    }
}

/// Drops the leases that ended by `now`; returns their unspent cells.
fn expire(pool: &mut Pool, now: Instant) -> u32 {
    let mut gone = 0u32;
    while let Some(&(until, n)) = pool.front() {
        if until > now {
            break;
        }
        gone = gone.saturating_add(n);
        pool.pop_front();
    }
    gone
}

/// Cells spendable for at least `carry` after `now`.
fn fresh(pool: &Pool, now: Instant, carry: Duration) -> u64 {
    let from = now.saturating_add(carry);
    pool.iter()
        .filter(|(until, _)| *until > from)
        .map(|(_, n)| u64::from(*n))
        .sum()
}

/// The renewing task: keeps at least the low water leased while Redis grants it.
async fn renew<C: Clock>(
    s: Arc<Shared<C>>,
    mut conn: Backend,
    key: String,
    params: GcraParams,
    timeout: Duration,
) {
    let script = GcraScript::new();
    // Ours: how long to wait after a failed renewal before the next, and how often to look
    // at the pool when nobody wakes the task (leases also expire with no traffic).
    // Floors of 1 ms keep a tiny period from spinning the task.
    let floor = Duration::from_millis(1);
    let retry = Duration::from_millis(50).min(s.lease.period / 4).max(floor);
    // A pool that must carry an outage is looked at more often: its cells stop counting
    // while they are still in hand.
    let idle = if s.lease.carry.is_zero() {
        s.lease.period / 4
    } else {
        s.lease.period / 16
    }
    .max(floor);
    loop {
        let left = s.counted(s.clock.now(), s.lease.carry);
        if left >= u64::from(s.lease.low_water) {
            let _ = tokio::time::timeout(idle, s.wake.notified()).await;
            continue;
        }
        // The lease runs from before the request is sent: the fleet's decision comes later.
        let sent = s.clock.now();
        let mut loaded = false;
        let call = script.eval(
            &mut conn,
            &key,
            &params,
            s.lease.cells,
            ServerClock::Redis,
            &mut loaded,
        );
        let outcome = tokio::time::timeout(timeout, call).await;
        if loaded {
            s.emit(FleetEvent::ScriptLoaded);
        }
        match outcome {
            Ok(Ok(reply)) if reply.admitted => {
                s.counters.renewals.fetch_add(1, Ordering::Relaxed);
                let until = sent.saturating_add(s.lease.period);
                s.lock().push_back((until, s.lease.cells));
                s.emit(FleetEvent::LeaseRenewed {
                    cells: s.lease.cells,
                    period: s.lease.period,
                });
            }
            Ok(Ok(reply)) => {
                s.counters.renewals_refused.fetch_add(1, Ordering::Relaxed);
                s.emit(FleetEvent::LeaseRefused { wait: reply.wait });
                tokio::time::sleep(reply.wait.min(s.lease.period)).await;
            }
            failed => {
                s.counters.renewal_failures.fetch_add(1, Ordering::Relaxed);
                // A Sentinel-found backend asks again where the primary is.
                conn.suspect();
                match &failed {
                    Ok(Err(e)) if !e.is_timeout() => s.emit(FleetEvent::BackendError(e)),
                    _ => s.emit(FleetEvent::BackendTimeout(timeout)),
                }
                tokio::time::sleep(retry).await;
            }
        }
    }
}
