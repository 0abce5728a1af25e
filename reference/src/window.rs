//! The bucketed window of the windowed policies (throttler, ratio budget, retry breaker),
//! plainly: two counters per bucket period in a map keyed by the full `u64` period number,
//! summed over the last `B` periods. Bucketed exactly as `core/src/mechanism/window.rs` documents its
//! meaning (`window / B` rounded up to a nanosecond; the current period included), so the
//! models built on it decide identically. Time is assumed never to go backwards.

use core::time::Duration;
use std::collections::BTreeMap;

use resilix::time::Instant;

/// Two counts per bucket period, over the last `buckets` periods.
#[derive(Clone, Debug)]
pub(crate) struct Periods {
    /// `window / B`, rounded up.
    bucket_nanos: u64,
    buckets: u64,
    /// Full period number → the two counts.
    periods: BTreeMap<u64, (u64, u64)>,
}

impl Periods {
    pub(crate) fn new(window: Duration, buckets: usize) -> Periods {
        let buckets = buckets as u64;
        Periods {
            bucket_nanos: window
                .as_nanos()
                .div_ceil(u128::from(buckets))
                .min(u128::from(u64::MAX)) as u64,
            buckets,
            periods: BTreeMap::new(),
        }
    }

    fn period(&self, now: Instant) -> u64 {
        now.as_nanos() / self.bucket_nanos
    }

    /// Both counts summed over the periods the window holds at `now`.
    pub(crate) fn totals(&self, now: Instant) -> (u64, u64) {
        let current = self.period(now);
        let oldest = current.saturating_sub(self.buckets - 1);
        self.periods
            .range(oldest..=current)
            .fold((0, 0), |(a, b), (_, (da, db))| (a + da, b + db))
    }

    /// Adds to `now`'s period, and forgets what can never be counted again.
    pub(crate) fn add(&mut self, now: Instant, a: u64, b: u64) {
        let period = self.period(now);
        let e = self.periods.entry(period).or_insert((0, 0));
        e.0 += a;
        e.1 += b;
        let oldest = period.saturating_sub(self.buckets - 1);
        while let Some((&p, _)) = self.periods.first_key_value() {
            if p >= oldest {
                break;
            }
            self.periods.remove(&p);
        }
    }
}
