//! Fleet-wide resilix limits on Redis: one quota shared by every process that names it.
//!
//! A [`FleetRateLimiter`] is the core's GCRA rate limiter carried into a Lua script that runs
//! atomically in Redis: read the bucket's theoretical arrival time (TAT), decide, write the new
//! TAT with a TTL, in one `EVALSHA` (`EVAL` when the server answers `NOSCRIPT`). Global
//! ([`acquire`](FleetRateLimiter::acquire)) and keyed
//! ([`acquire_key`](FleetRateLimiter::acquire_key)) quotas; a refusal is the local limiter's,
//! [`RejectReason::RateLimited`](resilix::RejectReason::RateLimited) with the instant on this
//! process's clock at which the cells would be admitted.
//!
//! # When fleet-wide beats local
//!
//! A local limiter bounds one process: a quota of 100/s on 10 pods is 1,000/s, and it changes
//! every time the fleet scales. Use this crate when the quota is the *fleet's*: a tenant's
//! contract, an upstream's published limit, a paid plan. Keep the local limiter when the
//! limit protects this process (its CPU, its pool), or when a round trip per call is too
//! dear.
//!
//! # The decision
//!
//! Exactly the GCRA that [`resilix::rate_limit`] documents, in wide time: emission interval
//! T = ⌈period / count⌉ ns (rounded up, so never faster than asked), a span of burst × T, a
//! call of n cells admitted when the debt after it is at most the span, and over any span of
//! time at most `burst + elapsed / T` cells admitted fleet-wide. A TAT more than
//! span + max(span, 1 s) ahead reads as an idle bucket (a clock that stepped back refills the
//! bucket instead of refusing for as long as the step). The differential test runs the script
//! in Redis beside a plain wide-time model over random timelines of gaps from 1 ns to
//! 10 years and requires identical decisions.
//!
//! # Pitfalls, and what this crate does about them
//!
//! * **Clocks.** Every decision reads Redis's `TIME`, the one clock all clients share; no
//!   client's wall clock is ever compared with another's. The retry instant is mapped onto the
//!   caller's timeline as *reply instant + wait*: never early, late by at most the reply's
//!   transit.
//! * **Replicas.** Never point a limiter at a replica: a replica cannot run the script's
//!   writes, and replicas that lag give inconsistent answers (GitHub's 2021 limiter). After a
//!   failover to a server whose clock is behind, stored TATs lie ahead of its `now`: up to
//!   span + max(span, 1 s) they are honoured as debt, further they read as idle.
//! * **Cluster slots.** Each decision touches one key, `prefix{name}` or `prefix{name:key}`,
//!   hash-tagged so any companion key of the same bucket lands on the same slot: each
//!   tenant's bucket lives on one master and is decided on that master's clock (feature
//!   `cluster`, `Backend::cluster`). A global bucket is one hot key on one master whatever
//!   the cluster's size. An asynchronous replica promoted after a crash may lack the last
//!   writes: for up to the replication lag the fleet can admit that much again.
//! * **TTL.** Each admission sets the key's TTL to the time until its TAT, rounded up, plus a
//!   millisecond, on the same Redis clock: a key never expires while it still holds debt.
//! * **Precision.** Lua's numbers are doubles; the script does integer arithmetic only below
//!   2^53 (spans up to 2^51 ns, about 26 days; longer is refused at construction).
//! * **Fail open or closed.** Every call is bounded by the backend timeout (default 20 ms);
//!   a call Redis did not decide is decided by [`OnBackendError`]: allow up to this node's
//!   fail-open cap (the default; the cap is the quota unless set), deny, or this node's share
//!   of the quota decided locally. Every admission Redis did not decide counts against the
//!   node's cap or share, so the fleet's admissions have a bound in every mode
//!   ([`FleetConfig::bound`], derived in `docs/fleet.md`). Fail open when a limiter outage
//!   must not become yours (the upstream sheds load itself); fail closed when the quota
//!   protects something fragile or costly; decide locally when the number of nodes is known
//!   and kept current. The connection reconnects in the background, so decisions return to
//!   Redis when it does, without a restart.
//! * **Slow is not down.** A breaker on the backend (the core's `resilix::breaker`) opens on
//!   errors and on timeouts during which no reply at all arrived; while it is open no call is
//!   sent and the failure mode decides at once, in nanoseconds, and the breaker probes with its
//!   own background `PING`. At most [`FleetConfig::max_in_flight`] calls per connection are in
//!   flight; a call finding them taken joins its bucket's batch, decided by Redis in one script
//!   call. The script learns each caller's deadline and decides nothing past it, so a decision
//!   nobody waits for never spends the bucket.
//! * **Failover.** [`Backend::sentinel`] follows Redis Sentinel's promotions; a promotion can
//!   forget at most one burst of debt, which the bound counts.
//!
//! # Observability
//!
//! Each type counts every outcome (`stats()`), and reports a [`FleetEvent`] for each count
//! that concerns Redis to an observer ([`FleetRateLimiter::with_observer`],
//! [`LeasedRateLimiter::spawn_with_observer`], [`FleetRetryBudget::spawn_with_observer`]):
//! decisions, fail-open and fail-closed calls, backend errors and timeouts, lease renewals and
//! expiries, settlements. The `metrics` feature's `metrics::observer` records them as
//! counters.
//!
//! # Lease mode (static stability)
//!
//! [`LeasedRateLimiter`] takes the round trip off the call path: a background task reserves
//! [`LeaseConfig::cells`] at a time from the same fleet bucket (one script call of n cells)
//! and each call spends one leased cell locally. A lease is spendable for
//! [`LeaseConfig::period`] from when its renewal was *sent*, so every admitted call spends a
//! cell the fleet bucket admitted at most `period` earlier: over any window W the fleet admits
//! at most `burst + (W + period) / T`. Through a Redis outage a node admits what it holds:
//! [`LeaseConfig::for_share`] keeps enough, valid long enough, to admit the node's share for
//! half the period. Unspent cells expire (counted): the price of leasing is admitting less,
//! never more.
//!
//! # Fleet-wide retry budget
//!
//! [`FleetRetryBudget`] bounds retries across the fleet by a share of first attempts across
//! the fleet (default 20%). Tokens are conserved and batched: a first attempt deposits into
//! this node's pool, a retry spends from it, and a background task settles with one Redis key
//! every `flush_every`, sending the excess to the fleet and withdrawing when low. Calls never
//! wait on Redis; a token is only ever in one place and failures drop tokens rather than
//! resend them, so fleet retries ≤ share × fleet first attempts exactly.
//!
//! # Example
//!
//! ```no_run
//! use resilix::rate_limit::{Rate, RateLimitConfig};
//! use resilix_redis::{FleetConfig, FleetRateLimiter, OnBackendError};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = FleetConfig::new("api", RateLimitConfig::new(Rate::per_second(100)))
//!     .on_backend_error(OnBackendError::Local { nodes: 10 });
//! let limiter = FleetRateLimiter::connect("redis://127.0.0.1:6379/0", config)?;
//! match limiter.acquire_key("tenant-42").await {
//!     Ok(how) => println!("admitted ({how:?})"),
//!     Err(refused) => println!("{refused}; retry at {:?}", refused.retry_at()),
//! }
//! println!("{:?}", limiter.stats());
//! # Ok(())
//! # }
//! ```
//!
//! `examples/fleet_quota.rs` runs the same against a real server (`redis/scripts/with-redis.sh
//! cargo run -p resilix-redis --example fleet_quota`); `benches/fleet.rs` measures the
//! latency and throughput of each path (`redis/scripts/with-redis.sh cargo bench -p
//! resilix-redis`).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backend;
mod batch;
mod bound;
mod budget;
mod config;
mod decide;
mod events;
mod guard;
mod lease;
mod lease_config;
mod limiter;
mod managed;
#[cfg(feature = "metrics")]
pub mod metrics;
mod refund;
pub mod script;

pub use backend::Backend;
pub use budget::{FleetRetryBudget, RetryBudgetConfig, RetryBudgetStats};
pub use config::{Admitted, ConnectError, FleetConfig, OnBackendError};
pub use events::{FleetEvent, FleetStats};
pub use lease::{LeaseConfig, LeaseStats, LeasedCell, LeasedRateLimiter};
pub use limiter::FleetRateLimiter;
pub use managed::Managed;
pub use refund::Grant;
pub use script::FleetConfigError;
