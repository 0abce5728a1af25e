//! `[pipelines.NAME.bulkhead]`: a hard cap on calls in flight.

use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Problem, join};

/// A bulkhead. `max_concurrent` defaults to the core's 25
/// ([`BulkheadConfig::DEFAULT_MAX_CONCURRENT`]). Waiting for a slot is the adapter's
/// business (`resilix_tokio`'s wait options), not the pipeline's, so it is not here.
///
/// ```toml
/// [pipelines.payments.bulkhead]
/// max_concurrent = 25
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkheadSection {
    /// The most calls in flight, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<u32>,
}

impl BulkheadSection {
    /// The bulkhead, validated by the core's constructor.
    ///
    /// ```
    /// use resilix::bulkhead::BulkheadConfig;
    /// use resilix_config::section::BulkheadSection;
    ///
    /// let bulkhead = BulkheadSection::default().build("bulkhead")?;
    /// assert_eq!(bulkhead.max_concurrent(), BulkheadConfig::DEFAULT_MAX_CONCURRENT);
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    pub fn build(&self, path: &str) -> Result<Bulkhead, ConfigError> {
        self.core_config(path).map(Bulkhead::new)
    }

    /// The core's config this table means (absent fields at the core's defaults), validated:
    /// what [`build`](Self::build) builds from, and what a reload hands a running bulkhead's
    /// `reconfigure`.
    ///
    /// ```
    /// use resilix_config::section::BulkheadSection;
    ///
    /// let s = BulkheadSection { max_concurrent: Some(7) };
    /// assert_eq!(s.core_config("bulkhead")?.max_concurrent(), 7);
    /// # Ok::<(), resilix_config::ConfigError>(())
    /// ```
    pub fn core_config(&self, path: &str) -> Result<BulkheadConfig, ConfigError> {
        let max = self
            .max_concurrent
            .unwrap_or(BulkheadConfig::DEFAULT_MAX_CONCURRENT);
        BulkheadConfig::new(max)
            .map_err(|e| ConfigError::new(join(path, "max_concurrent"), Problem::Bulkhead(e)))
    }
}
