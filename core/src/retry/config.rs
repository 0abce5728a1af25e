//! The retry policy's configuration and the errors that refuse a bad one.

use core::time::Duration;

use crate::retry::backoff::Backoff;
pub use crate::retry::error::RetryConfigError;

/// How many attempts a call may make, how long to wait between them, and the longest
/// `Retry-After` worth waiting for.
///
/// ```
/// use core::time::Duration;
/// use resilix::retry::{Backoff, RetryConfig, Strategy, UncertainRetry};
///
/// let config = RetryConfig::new(
///     4,
///     Backoff::new(Strategy::Decorrelated, Duration::from_millis(10), Duration::from_secs(1))?,
/// )?;
/// assert_eq!(config.max_attempts(), 4);
/// assert_eq!(RetryConfig::DEFAULT.max_attempts(), 3); // Google SRE: "up to three attempts"
/// assert_eq!(RetryConfig::DEFAULT.max_retry_after(), Duration::from_secs(300)); // Envoy
/// let patient = config.with_max_retry_after(Duration::from_secs(3_600));
/// assert_eq!(patient.max_retry_after(), Duration::from_secs(3_600));
/// // Spec §3.2: a 500 (`Uncertain`) is retried like any transient failure, even for a POST.
/// assert_eq!(RetryConfig::DEFAULT.uncertain_retry(), UncertainRetry::Always);
/// let careful = config.with_uncertain_retry(UncertainRetry::IdempotentOnly);
/// assert_eq!(careful.uncertain_retry(), UncertainRetry::IdempotentOnly);
/// # Ok::<(), resilix::retry::RetryConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryConfig {
    max_attempts: u32,
    backoff: Backoff,
    /// Whole nanoseconds, saturating (as the backoff stores its own).
    max_retry_after_nanos: u64,
    uncertain_retry: UncertainRetry,
}

/// Whether a failure after which the upstream may have done the work
/// ([`Verdict::Uncertain`](crate::Verdict::Uncertain): HTTP 500, 502, other 5xx) is retried
/// for a call not declared idempotent. Set with [`RetryConfig::with_uncertain_retry`].
///
/// Under the default, [`Always`](Self::Always), **a POST answered 500 is sent again and may
/// run twice** (two orders, two payments) unless the request carries an idempotency key the
/// server deduplicates on. [`IdempotentOnly`](Self::IdempotentOnly) stops that: such a call
/// then gives up with
/// [`GiveUpReason::NotRetryable`](crate::retry::GiveUpReason::NotRetryable)`(Uncertain)`.
/// A timeout is always retried only for an idempotent call, whatever this says: a timed-out
/// attempt is as likely as not still running, where a 5xx usually means it failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum UncertainRetry {
    /// Retried for any call, like `Transient` (the default): the behaviour docs/design/spec.md §3.2
    /// prescribes for transient failures, which a 5xx was before `Uncertain` split from it,
    /// and what most HTTP clients' retry layers do for a 500/502 when told to retry it.
    #[default]
    Always,
    /// Retried only for a call declared idempotent
    /// ([`CallOptions::idempotent`](crate::call::CallOptions::idempotent)), like `Timeout`:
    /// RFC 9110 §9.2.2, "a client SHOULD NOT automatically retry a request with a
    /// non-idempotent method unless it has some means to know that the request semantics are
    /// actually idempotent, regardless of the method, or some means to detect that the original
    /// request was never applied".
    IdempotentOnly,
}

impl UncertainRetry {
    /// Whether an `Uncertain` failure of a call with this `idempotent` flag may be retried.
    ///
    /// ```
    /// use resilix::retry::UncertainRetry;
    ///
    /// assert!(UncertainRetry::Always.permits(false));
    /// assert!(!UncertainRetry::IdempotentOnly.permits(false));
    /// assert!(UncertainRetry::IdempotentOnly.permits(true));
    /// ```
    pub const fn permits(self, idempotent: bool) -> bool {
        match self {
            UncertainRetry::Always => true,
            UncertainRetry::IdempotentOnly => idempotent,
        }
    }
}

impl RetryConfig {
    /// Three attempts counting the first (Google SRE: "a per-request retry budget of up to
    /// three attempts"), with [`Backoff::DEFAULT`] (full jitter, docs/design/spec.md §3.1) and
    /// [`DEFAULT_MAX_RETRY_AFTER`](Self::DEFAULT_MAX_RETRY_AFTER), and
    /// [`UncertainRetry::Always`] (docs/design/spec.md §3.2: transient failures are retried; a POST
    /// answered 500 is sent again).
    pub const DEFAULT: RetryConfig = RetryConfig {
        max_attempts: 3,
        backoff: Backoff::DEFAULT,
        max_retry_after_nanos: 300_000_000_000,
        uncertain_retry: UncertainRetry::Always,
    };

    /// The longest upstream `Retry-After` a call waits for by default: 300 s, the default of
    /// Envoy's `rate_limited_retry_back_off.max_interval` ("If a reset header contains an
    /// interval longer than this then it will be discarded"), the one general-purpose proxy
    /// default for exactly this bound.
    ///
    /// What others do: the Stainless-generated SDKs (OpenAI's, Anthropic's) obey a
    /// Retry-After only up to 60 s; the AWS SDKs' 2026 retry behaviour clamps
    /// `x-amz-retry-after` to at most the backoff plus 5 s; gRPC's retry pushback (A6) is
    /// obeyed as sent, with no bound; Polly, resilience4j and failsafe-go leave it to the
    /// user's delay function. Five minutes outlasts the per-minute windows most rate limits
    /// use and every interactive deadline, and a caller that means to wait longer says so.
    ///
    /// Unlike Envoy and those SDKs, a longer Retry-After is not discarded in favour of our own
    /// (much shorter) backoff: the call gives up at once with
    /// [`GiveUpReason::RetryAfterTooLong`](crate::retry::GiveUpReason::RetryAfterTooLong),
    /// because retrying sooner than the upstream asked is the one thing it asked us not to do.
    pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

    /// At most `max_attempts` attempts (the first included), `backoff` between them. Zero
    /// attempts is refused: a call always makes its first attempt; use `1` for no retries.
    pub const fn new(max_attempts: u32, backoff: Backoff) -> Result<Self, RetryConfigError> {
        if max_attempts == 0 {
            return Err(RetryConfigError::ZeroAttempts);
        }
        Ok(RetryConfig {
            max_attempts,
            backoff,
            max_retry_after_nanos: RetryConfig::DEFAULT.max_retry_after_nanos,
            uncertain_retry: RetryConfig::DEFAULT.uncertain_retry,
        })
    }

    /// The same config, waiting for an upstream `Retry-After` of at most `cap`; a longer one
    /// makes the call give up at once with
    /// [`GiveUpReason::RetryAfterTooLong`](crate::retry::GiveUpReason::RetryAfterTooLong).
    ///
    /// Every value has a meaning, so none is refused: `Duration::ZERO` honours only
    /// `Retry-After: 0` (OkHttp's rule for a 503), and `Duration::MAX` waits for any
    /// Retry-After, bounded then only by the call's deadline. A Retry-After exactly equal to
    /// `cap` is honoured. Durations beyond `u64` nanoseconds (584 years) read as that.
    pub const fn with_max_retry_after(self, cap: Duration) -> Self {
        RetryConfig {
            max_retry_after_nanos: crate::time::duration_as_nanos_saturating(cap),
            ..self
        }
    }

    /// The same config, retrying an [`Uncertain`](crate::Verdict::Uncertain) failure (HTTP
    /// 500, 502, other 5xx: the server may have acted) as `uncertain` says.
    /// `UncertainRetry::IdempotentOnly` is the one setting that keeps a POST answered 500
    /// from being sent twice (RFC 9110 §9.2.2); the default is [`UncertainRetry::Always`].
    pub const fn with_uncertain_retry(self, uncertain: UncertainRetry) -> Self {
        RetryConfig {
            uncertain_retry: uncertain,
            ..self
        }
    }

    /// When an `Uncertain` failure is retried ([`UncertainRetry::Always`] unless set).
    pub const fn uncertain_retry(&self) -> UncertainRetry {
        self.uncertain_retry
    }

    /// The most attempts a call makes, the first included.
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The delay formula between attempts.
    pub const fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// The longest upstream `Retry-After` a call waits for
    /// ([`DEFAULT_MAX_RETRY_AFTER`](Self::DEFAULT_MAX_RETRY_AFTER) unless set).
    pub const fn max_retry_after(&self) -> Duration {
        Duration::from_nanos(self.max_retry_after_nanos)
    }
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig::DEFAULT
    }
}

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
    fn the_retry_after_cap_defaults_to_envoys_and_takes_any_value() {
        let c = RetryConfig::new(4, Backoff::NONE).unwrap();
        assert_eq!(c.max_retry_after(), RetryConfig::DEFAULT_MAX_RETRY_AFTER);
        assert_eq!(
            RetryConfig::DEFAULT_MAX_RETRY_AFTER,
            Duration::from_secs(300)
        );
        assert_eq!(
            RetryConfig::DEFAULT.max_retry_after(),
            RetryConfig::DEFAULT_MAX_RETRY_AFTER
        );
        for cap in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_secs(86_400),
        ] {
            let c = c.with_max_retry_after(cap);
            assert_eq!(c.max_retry_after(), cap);
            assert_eq!((c.max_attempts(), c.backoff()), (4, Backoff::NONE));
            assert_eq!(c.uncertain_retry(), UncertainRetry::Always);
        }
        assert_eq!(
            c.with_max_retry_after(Duration::MAX).max_retry_after(),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn uncertain_failures_are_retried_for_any_call_unless_set() {
        let c = RetryConfig::new(4, Backoff::NONE).unwrap();
        assert_eq!(c.uncertain_retry(), UncertainRetry::Always);
        assert_eq!(UncertainRetry::default(), UncertainRetry::Always);
        let careful = c
            .with_max_retry_after(Duration::from_secs(7))
            .with_uncertain_retry(UncertainRetry::IdempotentOnly);
        assert_eq!(careful.uncertain_retry(), UncertainRetry::IdempotentOnly);
        assert_eq!(careful.max_retry_after(), Duration::from_secs(7));
        assert_eq!(
            careful.with_uncertain_retry(UncertainRetry::Always),
            c.with_max_retry_after(Duration::from_secs(7))
        );
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
