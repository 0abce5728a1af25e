//! The GCRA decision as a Lua script, and one call of it.
//!
//! [`SOURCE`] is the whole decision: read the bucket's TAT, decide, write the new TAT with a
//! TTL, all in one atomic script on Redis's clock. [`GcraParams`] turns a
//! [`RateLimitConfig`] into the script's integer arguments, and [`GcraScript::eval`] runs it
//! with `EVALSHA`, falling back to `EVAL` (which also caches the script) when the server
//! answers `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`).
//!
//! The limiter ([`FleetRateLimiter`](crate::FleetRateLimiter)) is built on this; it is
//! public so that tests and other languages' clients can run exactly the same decision.

use core::fmt;
use core::time::Duration;

use redis::aio::ConnectionLike;
use redis::{ErrorKind, RedisError, ServerErrorKind};
use resilix::rate_limit::{RateLimitConfig, RateLimitConfigError};

mod reply;
pub use reply::{Decision, Reply};

/// The Lua source of the decision (its argument layout is documented at its top).
pub const SOURCE: &str = include_str!("../gcra.lua");

/// The Lua source of a refund: the rule that keeps a give-back within the bound.
pub const REFUND_SOURCE: &str = include_str!("../refund.lua");

/// Lua numbers are doubles; keeping span + early at most 2^52 ns keeps every intermediate
/// value of the script an exact integer below 2^53.
const MAX_SPAN_AND_EARLY_NS: u64 = 1 << 52;
/// The most a span (burst × T) may be: half of the above, since `early` can equal the span.
pub const MAX_SPAN: Duration = Duration::from_nanos(1 << 51);
/// How far a TAT may lie beyond the span and still read as debt rather than as an idle
/// bucket under a clock that stepped back: the span, or one second if that is longer. The
/// core's rate limiter documents the same allowance (ours there and here).
const LAG_ALLOWANCE_NS: u64 = 1_000_000_000;

/// Why a configuration cannot be run by the script.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FleetConfigError {
    /// Refused as the local limiter refuses it (zero rate, period or burst), or, with a
    /// local fallback, a rate the local limiter cannot hold.
    Rate(RateLimitConfigError),
    /// burst × T is longer than [`MAX_SPAN`] (about 26 days): the script's exact integer
    /// arithmetic in doubles needs every debt below 2^53 ns.
    SpanTooLong,
    /// The limiter's name or key prefix contains `{` or `}`, which would break the hash tag
    /// that keeps each decision on one cluster slot.
    BraceInName,
    /// A backend timeout of zero would refuse every call before it is sent.
    ZeroTimeout,
    /// A local fallback share of zero nodes.
    ZeroNodes,
    /// A lease of zero cells, or of more than the burst (the fleet bucket could never grant
    /// it).
    LeaseCells,
    /// A lease period of zero: leased cells would expire before they could be spent.
    ZeroLeasePeriod,
    /// A retry budget with a zero share, local pool or settling interval.
    BudgetConfig,
    /// Zero calls in flight or zero connections, or a backend breaker configuration the
    /// core's breaker refuses.
    Backend,
}

impl fmt::Display for FleetConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetConfigError::Rate(e) => fmt::Display::fmt(e, f),
            FleetConfigError::SpanTooLong => f.write_str(
                "burst × emission interval is longer than 2^51 ns (about 26 days): the script's \
                 integer arithmetic would leave the exact range of Lua's doubles; lower the \
                 burst or raise the rate",
            ),
            FleetConfigError::BraceInName => f.write_str(
                "the limiter's name and key prefix may not contain '{' or '}': the key's hash \
                 tag is built from them",
            ),
            FleetConfigError::ZeroTimeout => {
                f.write_str("the backend timeout is zero: every call would fail before it is sent")
            }
            FleetConfigError::ZeroNodes => {
                f.write_str("a local fallback needs the number of nodes sharing the quota (≥ 1)")
            }
            FleetConfigError::LeaseCells => f.write_str(
                "a lease takes between 1 cell and the burst: the fleet bucket never holds more",
            ),
            FleetConfigError::ZeroLeasePeriod => {
                f.write_str("the lease period is zero: leased cells would expire unspent")
            }
            FleetConfigError::Backend => f.write_str(
                "the backend needs at least one call in flight and one connection, and a breaker \
                 configuration the core's breaker accepts",
            ),
            FleetConfigError::BudgetConfig => f.write_str(
                "a retry budget needs a share above zero, a local pool of at least one retry and \
                 a settling interval above zero",
            ),
        }
    }
}

impl std::error::Error for FleetConfigError {}

/// The script's parameters: the config in whole nanoseconds.
///
/// T = ⌈period / count⌉ ns: rounded up, so the fleet never admits faster than the configured
/// rate (by under 1 ns per cell).
///
/// ```
/// use resilix::rate_limit::{Rate, RateLimitConfig};
/// use resilix_redis::script::GcraParams;
///
/// let p = GcraParams::new(&RateLimitConfig::new(Rate::per_second(3)).with_burst(2)).unwrap();
/// assert_eq!(p.emission_ns(), 333_333_334);
/// assert_eq!(p.span_ns(), 666_666_668);
/// assert_eq!(p.early_ns(), 1_000_000_000, "one second, longer than the span");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GcraParams {
    emission_ns: u64,
    burst: u32,
    early_ns: u64,
}

impl GcraParams {
    /// Validates `config` for the script.
    pub fn new(config: &RateLimitConfig) -> Result<GcraParams, FleetConfigError> {
        let count = u128::from(config.rate.count());
        let per = config.rate.period().as_nanos();
        if count == 0 {
            return Err(FleetConfigError::Rate(RateLimitConfigError::ZeroRate));
        }
        if per == 0 {
            return Err(FleetConfigError::Rate(RateLimitConfigError::ZeroPeriod));
        }
        if config.burst == 0 {
            return Err(FleetConfigError::Rate(RateLimitConfigError::ZeroBurst));
        }
        let emission = per.div_ceil(count);
        let span = emission * u128::from(config.burst);
        if span > MAX_SPAN.as_nanos() {
            return Err(FleetConfigError::SpanTooLong);
        }
        let span = span as u64;
        let early = span.max(LAG_ALLOWANCE_NS);
        debug_assert!(span + early <= MAX_SPAN_AND_EARLY_NS);
        Ok(GcraParams {
            emission_ns: emission as u64,
            burst: config.burst,
            early_ns: early,
        })
    }

    /// T, in nanoseconds.
    pub const fn emission_ns(&self) -> u64 {
        self.emission_ns
    }

    /// The burst.
    pub const fn burst(&self) -> u32 {
        self.burst
    }

    /// burst × T, in nanoseconds: the most debt a bucket carries.
    pub const fn span_ns(&self) -> u64 {
        self.emission_ns * self.burst as u64
    }

    /// How far beyond the span a TAT still reads as debt, in nanoseconds.
    pub const fn early_ns(&self) -> u64 {
        self.early_ns
    }
}

/// Whose clock the decision runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerClock {
    /// Redis's `TIME`: the one clock every client of this server shares. The only choice in
    /// production.
    Redis,
    /// An explicit instant (time since the Unix epoch, or any origin), for differential tests
    /// and replays. The key then gets no TTL, since Redis's expiry does not follow this
    /// timeline.
    At(Duration),
}

/// The script, with its SHA-1 computed once.
#[derive(Clone, Debug)]
pub struct GcraScript {
    sha: String,
}

impl Default for GcraScript {
    fn default() -> Self {
        GcraScript::new()
    }
}

impl GcraScript {
    /// The script of [`SOURCE`].
    pub fn new() -> GcraScript {
        GcraScript {
            sha: redis::Script::new(SOURCE).get_hash().to_owned(),
        }
    }

    /// The SHA-1 `EVALSHA` names it by.
    pub fn sha(&self) -> &str {
        &self.sha
    }

    /// One decision of `cells` (1 ≤ cells ≤ burst, checked by the script) on `key`.
    ///
    /// `EVALSHA` first; on `NOSCRIPT`, `EVAL` with the source, which runs the decision and
    /// caches the script in one round trip. `loaded` is set when that fallback ran. No
    /// timeout here: the caller bounds the whole call.
    pub async fn eval<C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
        key: &str,
        params: &GcraParams,
        cells: u32,
        clock: ServerClock,
        loaded: &mut bool,
    ) -> Result<Reply, RedisError> {
        let raw = self
            .run(conn, key, params, cells, clock, None, false, loaded)
            .await?;
        match Decision::from_raw(&raw)? {
            Decision::Decided(reply) => Ok(reply),
            Decision::Expired { .. } => Err(Reply::bad()),
        }
    }

    /// As [`eval`](Self::eval) on Redis's clock, but decided only if the script runs no later
    /// than `deadline` (time since the Unix epoch on the *server's* clock): past it the script
    /// spends nothing and answers [`Decision::Expired`]. A caller that has given up therefore
    /// never spends the bucket, however long its command sat in a queue.
    ///
    /// ```no_run
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use resilix::rate_limit::{Rate, RateLimitConfig};
    /// use resilix_redis::script::{Decision, GcraParams, GcraScript};
    ///
    /// # async fn run(mut conn: redis::aio::MultiplexedConnection) -> redis::RedisResult<()> {
    /// let params = GcraParams::new(&RateLimitConfig::new(Rate::per_second(10))).unwrap();
    /// let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(20);
    /// let mut loaded = false;
    /// match GcraScript::new().eval_before(&mut conn, "k{a}", &params, 1, deadline, &mut loaded).await? {
    ///     Decision::Decided(reply) => println!("admitted: {}", reply.admitted),
    ///     Decision::Expired { server_now } => println!("too late at {server_now:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn eval_before<C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
        key: &str,
        params: &GcraParams,
        cells: u32,
        deadline: Duration,
        loaded: &mut bool,
    ) -> Result<Decision, RedisError> {
        let raw = self
            .run(
                conn,
                key,
                params,
                cells,
                ServerClock::Redis,
                Some(deadline),
                false,
                loaded,
            )
            .await?;
        Decision::from_raw(&raw)
    }

    /// As [`eval_before`](Self::eval_before) for a batch: admits as many of `cells` as fit
    /// (at least one), answering how many and the decision (`admitted` when any were).
    /// `deadline` is optional here (`None`: no deadline). The calls of a batch share one
    /// round trip and one run of the script.
    pub async fn eval_batch<C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
        key: &str,
        params: &GcraParams,
        cells: u32,
        deadline: Option<Duration>,
        loaded: &mut bool,
    ) -> Result<(u32, Decision), RedisError> {
        let mut raw = self
            .run(
                conn,
                key,
                params,
                cells,
                ServerClock::Redis,
                deadline,
                true,
                loaded,
            )
            .await?;
        let admitted = match raw.first_mut() {
            Some(n) if *n >= 1 => {
                let got = u32::try_from(*n).map_err(|_| Reply::bad())?;
                *n = 1;
                got
            }
            _ => 0,
        };
        Ok((admitted, Decision::from_raw(&raw)?))
    }

    #[allow(clippy::too_many_arguments)]
    async fn run<C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
        key: &str,
        params: &GcraParams,
        cells: u32,
        clock: ServerClock,
        deadline: Option<Duration>,
        partial: bool,
        loaded: &mut bool,
    ) -> Result<Vec<i64>, RedisError> {
        let fill = |cmd: &mut redis::Cmd| {
            cmd.arg(1)
                .arg(key)
                .arg(params.emission_ns)
                .arg(params.burst)
                .arg(cells)
                .arg(params.early_ns);
            match clock {
                ServerClock::At(now) => {
                    cmd.arg(now.as_secs()).arg(now.subsec_nanos());
                }
                ServerClock::Redis if deadline.is_some() || partial => {
                    cmd.arg("").arg("");
                }
                ServerClock::Redis => {}
            }
            match deadline {
                Some(d) => {
                    cmd.arg(d.as_secs()).arg(d.subsec_nanos());
                }
                None if partial => {
                    cmd.arg("").arg("");
                }
                None => {}
            }
            if partial {
                cmd.arg("1");
            }
        };
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&self.sha);
        fill(&mut evalsha);
        match evalsha.query_async(conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                *loaded = true;
                let mut eval = redis::cmd("EVAL");
                eval.arg(SOURCE);
                fill(&mut eval);
                eval.query_async(conn).await
            }
            other => other,
        }
    }

    /// Gives back `cells` that an admission on `key` granted and the caller did not use;
    /// `tat` is the TAT that admission left ([`Reply::tat`]). Returns how much debt was
    /// removed (zero when nothing could be given back safely).
    ///
    /// The bucket is never made more permissive than if those cells had not been admitted
    /// (the rule is in [`REFUND_SOURCE`]), so used cells keep the bound of the decision:
    /// at most `burst + W / T` in any window W.
    pub async fn refund<C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
        key: &str,
        params: &GcraParams,
        cells: u32,
        tat: Duration,
    ) -> Result<Duration, RedisError> {
        let removed: i64 = redis::Script::new(REFUND_SOURCE)
            .key(key)
            .arg(params.emission_ns)
            .arg(cells)
            .arg(tat.as_secs())
            .arg(tat.subsec_nanos())
            .invoke_async(conn)
            .await?;
        Ok(Duration::from_nanos(u64::try_from(removed).unwrap_or(0)))
    }
}
