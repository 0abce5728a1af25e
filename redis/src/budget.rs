//! A fleet-wide retry budget: retries across every node bounded by a share of the first
//! attempts across every node, with tokens batched locally so no call waits on Redis.

use core::time::Duration;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use resilix::rejection::{RejectReason, Rejection};

use crate::FleetEvent;
use crate::backend::Backend;
use crate::events::Observer;
use crate::script::FleetConfigError;

/// The fleet side: add a deposit to the balance (capped), then withdraw up to `want` for the
/// caller's local pool. Integers only (milli-tokens, far below 2^53).
const SCRIPT: &str = r#"
local cap = tonumber(ARGV[1])
local deposit = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local bal = tonumber(redis.call('GET', KEYS[1]) or '0') + deposit
if bal > cap then bal = cap end
local grant = want
if bal < grant then grant = bal end
bal = bal - grant
redis.call('SET', KEYS[1], bal, 'PX', ttl)
return grant
"#;

/// A retry costs this many milli-tokens; a first attempt deposits `ratio` × this.
const MILLI: u64 = 1_000;

/// A fleet-wide retry budget's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryBudgetConfig {
    /// Names the budget's key; every node sharing it uses the same name.
    pub name: String,
    /// Prepended to the key (default `resilix:`), outside the hash tag.
    pub prefix: String,
    /// Retries allowed per 1,000 first attempts, fleet-wide. Default 200 (20%: Envoy's and
    /// failsafe-go's budget, Finagle's percentage).
    pub per_mille: u32,
    /// The most retries the fleet balance holds after a quiet period. Default 100 (ours: a
    /// burst of retries that a single incident can spend, not a reservoir).
    pub cap: u32,
    /// The most retries a node holds locally before sending the excess to the fleet, and the
    /// level it withdraws back up to. Default 10 (ours).
    pub local: u32,
    /// How often a node settles with the fleet. Default 100 ms (ours; gubernator batches at
    /// 500 µs for a hot path, a budget needs far less).
    pub flush_every: Duration,
    /// The fleet balance expires after this long without a settlement. Default 10 s: Finagle's
    /// budget TTL.
    pub ttl: Duration,
    /// Bounds each settlement.
    pub backend_timeout: Duration,
}

impl RetryBudgetConfig {
    /// A budget named `name` with the defaults.
    pub fn new(name: impl Into<String>) -> RetryBudgetConfig {
        RetryBudgetConfig {
            name: name.into(),
            prefix: "resilix:".to_owned(),
            per_mille: 200,
            cap: 100,
            local: 10,
            flush_every: Duration::from_millis(100),
            ttl: Duration::from_secs(10),
            backend_timeout: Duration::from_millis(20),
        }
    }
}

/// Counters of a fleet retry budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryBudgetStats {
    /// First attempts recorded here.
    pub first_attempts: u64,
    /// Retries admitted here.
    pub retries_admitted: u64,
    /// Retries refused here.
    pub retries_refused: u64,
    /// Settlements with the fleet that completed.
    pub settlements: u64,
    /// Settlements that failed or timed out (their deposit is lost: never counted twice).
    pub settlement_failures: u64,
}

#[derive(Default)]
struct Counters {
    first_attempts: AtomicU64,
    retries_admitted: AtomicU64,
    retries_refused: AtomicU64,
    settlements: AtomicU64,
    settlement_failures: AtomicU64,
}

struct Shared {
    /// This node's spendable milli-tokens.
    pool: Mutex<u64>,
    per_mille: u64,
    counters: Counters,
    observer: Option<Observer>,
}

impl Shared {
    fn emit(&self, event: FleetEvent<'_>) {
        if let Some(o) = &self.observer {
            o(&event);
        }
    }
}

/// Retries across the fleet bounded by a share of the first attempts across the fleet.
///
/// Tokens are conserved: each first attempt deposits `per_mille` milli-tokens into this node's
/// pool, each retry spends 1,000, and a background task settles with Redis every
/// `flush_every`, sending the pool's excess above `local` retries to the fleet balance and
/// withdrawing back up to `local` when the pool is below half of it. A token is in exactly
/// one place (a pool, the fleet balance, or a settlement in flight), caps and expiry only
/// destroy tokens, and a failed settlement's deposit is dropped rather than resent, so
/// **fleet-wide retries ≤ per_mille × fleet-wide first attempts / 1,000**, exactly, whatever
/// Redis does. Calls never wait on Redis; through an outage each node lives on its own
/// deposits.
pub struct FleetRetryBudget {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FleetRetryBudget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FleetRetryBudget {
    /// Starts the budget on `conn` (a [`ConnectionManager`](redis::aio::ConnectionManager) or
    /// any [`Backend`]; spawns the settling task on the current tokio runtime).
    pub fn spawn(
        conn: impl Into<Backend>,
        config: RetryBudgetConfig,
    ) -> Result<FleetRetryBudget, FleetConfigError> {
        Self::start(conn.into(), config, None)
    }

    /// As [`spawn`](Self::spawn), reporting each settlement and each failed one (backend
    /// error or timeout) to `observer`, from the settling task.
    pub fn spawn_with_observer(
        conn: impl Into<Backend>,
        config: RetryBudgetConfig,
        observer: impl Fn(&FleetEvent<'_>) + Send + Sync + 'static,
    ) -> Result<FleetRetryBudget, FleetConfigError> {
        Self::start(conn.into(), config, Some(Arc::new(observer)))
    }

    fn start(
        conn: Backend,
        config: RetryBudgetConfig,
        observer: Option<Observer>,
    ) -> Result<FleetRetryBudget, FleetConfigError> {
        if config.name.contains(['{', '}']) || config.prefix.contains(['{', '}']) {
            return Err(FleetConfigError::BraceInName);
        }
        if config.backend_timeout.is_zero() {
            return Err(FleetConfigError::ZeroTimeout);
        }
        if config.per_mille == 0 || config.local == 0 || config.flush_every.is_zero() {
            return Err(FleetConfigError::BudgetConfig);
        }
        let shared = Arc::new(Shared {
            pool: Mutex::new(0),
            per_mille: u64::from(config.per_mille),
            counters: Counters::default(),
            observer,
        });
        let key = format!("{}{{{}}}:retry", config.prefix, config.name);
        let task = tokio::spawn(settle(shared.clone(), conn, key, config));
        Ok(FleetRetryBudget { shared, task })
    }

    /// Records a first attempt: deposits this node's share of a retry.
    pub fn record_first_attempt(&self) {
        let s = &self.shared;
        *s.pool.lock().unwrap_or_else(|e| e.into_inner()) += s.per_mille;
        s.counters.first_attempts.fetch_add(1, Ordering::Relaxed);
    }

    /// Admits one retry, spending a token, or refuses with
    /// [`RejectReason::BudgetExceeded`].
    pub fn try_retry(&self) -> Result<(), Rejection> {
        let s = &self.shared;
        let ok = {
            let mut pool = s.pool.lock().unwrap_or_else(|e| e.into_inner());
            if *pool >= MILLI {
                *pool -= MILLI;
                true
            } else {
                false
            }
        };
        if ok {
            s.counters.retries_admitted.fetch_add(1, Ordering::Relaxed);
            Ok(())
        } else {
            s.counters.retries_refused.fetch_add(1, Ordering::Relaxed);
            Err(Rejection::new(RejectReason::BudgetExceeded))
        }
    }

    /// The counters.
    pub fn stats(&self) -> RetryBudgetStats {
        let c = &self.shared.counters;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RetryBudgetStats {
            first_attempts: r(&c.first_attempts),
            retries_admitted: r(&c.retries_admitted),
            retries_refused: r(&c.retries_refused),
            settlements: r(&c.settlements),
            settlement_failures: r(&c.settlement_failures),
        }
    }
}

async fn settle(s: Arc<Shared>, mut conn: Backend, key: String, config: RetryBudgetConfig) {
    let script = redis::Script::new(SCRIPT);
    let target = u64::from(config.local) * MILLI;
    let cap = u64::from(config.cap) * MILLI;
    let ttl = config.ttl.as_millis().max(1) as u64;
    let mut tick = tokio::time::interval(config.flush_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // Take the excess out of the pool before sending it: from here it is in flight.
        let (deposit, want) = {
            let mut pool = s.pool.lock().unwrap_or_else(|e| e.into_inner());
            if *pool > target {
                let d = *pool - target;
                *pool = target;
                (d, 0)
            } else if *pool < target / 2 {
                (0, target - *pool)
            } else {
                continue;
            }
        };
        let mut inv = script.key(&key);
        inv.arg(cap).arg(deposit).arg(want).arg(ttl);
        let outcome =
            tokio::time::timeout(config.backend_timeout, inv.invoke_async::<u64>(&mut conn)).await;
        match outcome {
            Ok(Ok(grant)) => {
                // The script never grants more than asked.
                let grant = grant.min(want);
                *s.pool.lock().unwrap_or_else(|e| e.into_inner()) += grant;
                s.counters.settlements.fetch_add(1, Ordering::Relaxed);
                s.emit(FleetEvent::BudgetSettled {
                    deposited_milli: deposit,
                    withdrawn_milli: grant,
                });
            }
            failed => {
                // Unknown whether the deposit landed: dropping it can only refuse more.
                s.counters
                    .settlement_failures
                    .fetch_add(1, Ordering::Relaxed);
                // A Sentinel-found backend asks again where the primary is.
                conn.suspect();
                match &failed {
                    Ok(Err(e)) if !e.is_timeout() => s.emit(FleetEvent::BackendError(e)),
                    _ => s.emit(FleetEvent::BackendTimeout(config.backend_timeout)),
                }
            }
        }
    }
}
