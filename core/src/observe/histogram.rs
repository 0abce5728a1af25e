//! Duration histogram (being written by the histogram work; this placeholder keeps the crate
//! compiling until it lands).

use core::time::Duration;

/// Placeholder.
#[derive(Debug, Default)]
pub struct DurationHistogram;

impl DurationHistogram {
    /// Placeholder.
    pub fn record(&self, _d: Duration) {}
}
