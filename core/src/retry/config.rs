//! The retry policy's configuration and the errors that refuse a bad one.

use core::fmt;

use crate::retry::backoff::Backoff;

/// How many attempts a call may make and how long to wait between them.
///
/// ```
/// use core::time::Duration;
/// use resilix::retry::{Backoff, RetryConfig, Strategy};
///
/// let config = RetryConfig::new(
///     4,
///     Backoff::new(Strategy::Decorrelated, Duration::from_millis(10), Duration::from_secs(1))?,
/// )?;
/// assert_eq!(config.max_attempts(), 4);
/// assert_eq!(RetryConfig::DEFAULT.max_attempts(), 3); // Google SRE: "up to three attempts"
/// # Ok::<(), resilix::retry::RetryConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryConfig {
    max_attempts: u32,
    backoff: Backoff,
}

impl RetryConfig {
    /// Three attempts counting the first (Google SRE: "a per-request retry budget of up to
    /// three attempts"), with [`Backoff::DEFAULT`] (full jitter, spec §3.1).
    pub const DEFAULT: RetryConfig = RetryConfig {
        max_attempts: 3,
        backoff: Backoff::DEFAULT,
    };

    /// At most `max_attempts` attempts (the first included), `backoff` between them. Zero
    /// attempts is refused: a call always makes its first attempt; use `1` for no retries.
    pub const fn new(max_attempts: u32, backoff: Backoff) -> Result<Self, RetryConfigError> {
        if max_attempts == 0 {
            return Err(RetryConfigError::ZeroAttempts);
        }
        Ok(RetryConfig {
            max_attempts,
            backoff,
        })
    }

    /// The most attempts a call makes, the first included.
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The delay formula between attempts.
    pub const fn backoff(&self) -> Backoff {
        self.backoff
    }
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig::DEFAULT
    }
}

/// Why a retry or backoff configuration was refused.
///
/// ```
/// use resilix::retry::{RetryConfig, Backoff, RetryConfigError};
///
/// assert_eq!(RetryConfig::new(0, Backoff::DEFAULT), Err(RetryConfigError::ZeroAttempts));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_attempt_is_the_smallest_valid_config() {
        assert_eq!(
            RetryConfig::new(0, Backoff::NONE),
            Err(RetryConfigError::ZeroAttempts)
        );
        assert_eq!(
            RetryConfig::new(1, Backoff::NONE).unwrap().max_attempts(),
            1
        );
        assert_eq!(
            RetryConfig::new(u32::MAX, Backoff::NONE)
                .unwrap()
                .max_attempts(),
            u32::MAX
        );
        assert_eq!(RetryConfig::default(), RetryConfig::DEFAULT);
    }

    #[test]
    fn every_error_says_what_to_do() {
        extern crate std;
        use std::string::ToString;
        for e in [
            RetryConfigError::ZeroAttempts,
            RetryConfigError::ZeroBase,
            RetryConfigError::CapBelowBase,
        ] {
            assert!(e.to_string().contains("must"), "{e:?}");
        }
    }
}
