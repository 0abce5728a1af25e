use core::fmt;

/// The bulkhead's one setting: how many calls may be in flight at once.
///
/// Built with [`BulkheadConfig::new`], which refuses a cap of zero, so a config that exists is
/// valid. `new` is a `const fn`: in a `static`, an invalid cap is a compile-time error.
///
/// ```
/// use resilix::bulkhead::{BulkheadConfig, BulkheadConfigError};
///
/// assert_eq!(BulkheadConfig::default().max_concurrent(), 25);
/// assert_eq!(BulkheadConfig::new(8).unwrap().max_concurrent(), 8);
/// assert_eq!(BulkheadConfig::new(0), Err(BulkheadConfigError::ZeroConcurrency));
///
/// // In a `static`: an invalid cap fails the build, not the first call.
/// const CONFIG: BulkheadConfig = match BulkheadConfig::new(4) {
///     Ok(c) => c,
///     Err(_) => panic!("invalid bulkhead config"),
/// };
/// assert_eq!(CONFIG.max_concurrent(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BulkheadConfig {
    max_concurrent: u32,
}

impl BulkheadConfig {
    /// 25 calls in flight: resilience4j's `maxConcurrentCalls` default. A default cap is a
    /// guess in any library; size yours with Little's Law (concurrency = arrival rate ×
    /// latency) at the latency you are willing to tolerate.
    pub const DEFAULT_MAX_CONCURRENT: u32 = 25;

    /// The default config: [`Self::DEFAULT_MAX_CONCURRENT`].
    pub const DEFAULT: BulkheadConfig = BulkheadConfig {
        max_concurrent: Self::DEFAULT_MAX_CONCURRENT,
    };

    /// A cap of `max_concurrent` calls in flight.
    ///
    /// Zero is refused rather than read as "admit nothing": a bulkhead that can never admit
    /// is almost always a unit mistake or an unset variable, and it would turn every call into
    /// `bulkhead-full`, which reads as overload. To switch a dependency off on purpose, force
    /// its breaker open. `u32::MAX` is accepted and means "no cap" in practice.
    pub const fn new(max_concurrent: u32) -> Result<Self, BulkheadConfigError> {
        if max_concurrent == 0 {
            return Err(BulkheadConfigError::ZeroConcurrency);
        }
        Ok(BulkheadConfig { max_concurrent })
    }

    /// The cap.
    pub const fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why a [`BulkheadConfig`] was refused.
///
/// ```
/// use resilix::bulkhead::BulkheadConfigError;
///
/// let text = format!("{}", BulkheadConfigError::ZeroConcurrency);
/// assert!(text.contains("at least 1"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BulkheadConfigError {
    /// `max_concurrent` was zero: the bulkhead could never admit a call.
    ZeroConcurrency,
}

impl fmt::Display for BulkheadConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BulkheadConfigError::ZeroConcurrency => f.write_str(
                "bulkhead max_concurrent is 0: it must be at least 1 (to refuse every call on \
                 purpose, force the circuit breaker open instead)",
            ),
        }
    }
}

impl core::error::Error for BulkheadConfigError {}
