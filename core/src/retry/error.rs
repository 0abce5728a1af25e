//! Why a retry or backoff configuration is refused: one error type both validate into, kept
//! apart from either so that neither module depends on the other for it.

use core::fmt;

/// Why a retry or backoff configuration was refused.
///
/// ```
/// use resilix::retry::{RetryConfig, Backoff, RetryConfigError};
///
/// assert_eq!(RetryConfig::new(0, Backoff::DEFAULT), Err(RetryConfigError::ZeroAttempts));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RetryConfigError {
    /// `max_attempts` was 0.
    ZeroAttempts,
    /// A backoff `base` of zero.
    ZeroBase,
    /// A backoff `cap` below its `base`.
    CapBelowBase,
}

impl fmt::Display for RetryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RetryConfigError::ZeroAttempts => {
                "max_attempts must be at least 1 (it counts the first attempt; 1 means no retries)"
            }
            RetryConfigError::ZeroBase => {
                "backoff base must be above zero (use Backoff::NONE to retry without delay)"
            }
            RetryConfigError::CapBelowBase => "backoff cap must be at least the base",
        })
    }
}

impl core::error::Error for RetryConfigError {}
