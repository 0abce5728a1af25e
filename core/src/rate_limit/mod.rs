//! Rate limiting: a token bucket (GCRA) in one 32-bit atomic word, and a fixed table of
//! per-key buckets.
//!
//! A [`RateLimiter`] admits at most **burst + rate × elapsed** cells over any span of time,
//! under any concurrency: the bucket is one compare-and-swap on a single word, so no
//! interleaving of callers can spend a cell twice. A refusal is
//! [`RejectReason::RateLimited`] with the instant at which the call would be admitted.
//! [`KeyedRateLimiter`] gives each tenant or contract its own bucket in bounded memory.
//!
//! # A rate limiter does not bound concurrency
//!
//! It bounds how often calls *start*, not how many are in flight. By Little's Law the number
//! in flight is L = λW: hold the arrival rate λ fixed, let the time in system W triple during
//! a degradation, and concurrency triples with it, against the same rate limit. If concurrency
//! is what you care about, reach for a bulkhead or the adaptive limiter (docs/design/spec.md §6). The rate
//! limiter is for quotas you know in advance: per tenant, per contract, an upstream's
//! published limit. It is proactive, and failsafe-go's own guidance is to prefer reactive
//! limiters for overload protection.
//!
//! # Units
//!
//! [`Rate::per_second(50)`](Rate::per_second) is fifty cells a second; [`Rate::new`] takes the
//! count and the period explicitly. The burst is how many cells a full bucket holds
//! (default: one period's worth). Acquiring n cells takes all or none; n above the burst is
//! [`AcquireError::ExceedsBurst`], an error that no amount of waiting fixes.
//!
//! # Precision, idle gaps and time
//!
//! The emission interval T = period / count is held to within 0.1% (1% above 61,000 cells a
//! second), rounded so that the bound burst + rate × elapsed holds exactly in real
//! nanoseconds; [`RateLimitConfigError::RateBeyondResolution`] names the supported range. **No
//! idle gap of any length changes a decision**: a bucket left alone for a second or a year is
//! full when the next call comes. A caller whose clock lags another's (or a small step
//! backwards) is refused with the wait; a larger step backwards refills the bucket rather
//! than refusing for as long as the step, and a jump forward reads as a long idle.
//!
//! Design notes (the state word, the scale, era arithmetic, the one admitted ABA):
//! docs/design/rate-limit.md
//!
//! # Cancellation
//!
//! A cell is spent at admit. A cancelled call (a dropped permit) does not give it back, as in
//! every GCRA: the rate bounds how often calls start, and a refund would let a caller that
//! cancels in a loop exceed it.
//!
//! # Reconfiguration
//!
//! [`RateLimiter::reconfigure`] changes rate and burst through `&self`. The cells in the bucket
//! carry over, capped at the new burst, and the new rate refills from then on; no admission
//! ever mixes the old state with the new configuration.
//!
//! ```
//! use resilix::permit::{Env, Policy};
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
//! use resilix::time::Instant;
//! use resilix::RejectReason;
//!
//! let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(100)).with_burst(1))
//!     .unwrap();
//! let pipeline = Pipeline::new().rate_limit(&limiter);
//! let mut rng = SeededRandom::new(1);
//! let mut env = Env::new(Instant::from_secs(1), &mut rng);
//! let first = pipeline.admit(&mut env, None).unwrap();
//! let refused = pipeline.admit(&mut env, None).err().unwrap();
//! assert_eq!(refused.reason(), RejectReason::RateLimited);
//! assert!(refused.retry_at().unwrap() > env.now);
//! # drop(first);
//! ```

mod gcra;
mod keyed;
mod limiter;
mod rate;

pub use keyed::{ForKey, KeyedRateLimiter};
pub use limiter::{RateLimitPermit, RateLimiter, ReconfigureError};
pub use rate::{Rate, RateLimitConfig, RateLimitConfigError};

use core::fmt;

use crate::rejection::{RejectReason, Rejection};

/// Why an acquisition of n cells failed.
///
/// ```
/// use resilix::rate_limit::{AcquireError, Rate, RateLimitConfig, RateLimiter};
/// use resilix::time::Instant;
///
/// let l = RateLimiter::new(RateLimitConfig::new(Rate::per_second(10))).unwrap();
/// assert_eq!(
///     l.try_acquire_n(Instant::ZERO, 11),
///     Err(AcquireError::ExceedsBurst { requested: 11, burst: 10 })
/// );
/// assert!(l.try_acquire_n(Instant::ZERO, 10).is_ok());
/// assert!(matches!(l.try_acquire_n(Instant::ZERO, 1), Err(AcquireError::Limited(_))));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AcquireError {
    /// Not now: the rejection says when the cells would be admitted.
    Limited(Rejection),
    /// Never: more cells than the bucket holds. Split the request or raise the burst.
    ExceedsBurst {
        /// Cells asked for.
        requested: u32,
        /// The burst in force.
        burst: u32,
    },
}

impl AcquireError {
    /// The refusal this error amounts to: `rate-limited`, with when to come back if the bucket
    /// will ever hold the cells (never, for more cells than the burst).
    ///
    /// ```
    /// use resilix::rate_limit::AcquireError;
    /// use resilix::RejectReason;
    ///
    /// let never = AcquireError::ExceedsBurst { requested: 20, burst: 10 };
    /// assert_eq!(never.rejection().reason(), RejectReason::RateLimited);
    /// assert_eq!(never.rejection().retry_at(), None);
    /// ```
    pub const fn rejection(&self) -> Rejection {
        match self {
            AcquireError::Limited(r) => *r,
            AcquireError::ExceedsBurst { .. } => Rejection::new(RejectReason::RateLimited),
        }
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireError::Limited(r) => fmt::Display::fmt(r, f),
            AcquireError::ExceedsBurst { requested, burst } => write!(
                f,
                "{requested} cells can never be admitted by a bucket of {burst}: split the \
                 request or raise the burst"
            ),
        }
    }
}

impl core::error::Error for AcquireError {}

#[cfg(all(test, not(loom)))]
mod tests;
