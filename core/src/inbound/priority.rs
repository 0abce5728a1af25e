//! How much a request matters: Google SRE's four criticalities (*Site Reliability
//! Engineering*, ch. 21 "Handling Overload"), which travel with a request downstream.
//!
//! Priority decides only under overload. A server with room admits every request alike; once
//! it is loaded, each criticality may fill a smaller share of the concurrency limit and of the
//! queue ([`Priority::share_of`]), and a freed slot goes to the most critical waiter first.

use core::fmt;

/// A request's criticality, least critical first (so `Ord` reads "more critical is greater").
///
/// ```
/// use resilix::inbound::Priority;
///
/// assert!(Priority::CriticalPlus > Priority::Sheddable);
/// assert_eq!(Priority::parse(b"sheddable_plus"), Some(Priority::SheddablePlus));
/// assert_eq!(Priority::default(), Priority::Critical);
/// assert_eq!(Priority::Critical.name(), "CRITICAL");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Priority {
    /// Traffic that may be dropped first: batch jobs, prefetches, report exports.
    Sheddable,
    /// Traffic whose loss is tolerable for a while: retried later by a person or a job.
    SheddablePlus,
    /// Production traffic a user waits on. The SRE book's default, and ours.
    #[default]
    Critical,
    /// The most important production traffic: failing it has serious user-visible impact
    /// (a checkout, a login).
    CriticalPlus,
}

impl Priority {
    /// Every criticality, most critical first: the order a freed slot serves the queue in.
    pub const ALL: [Priority; 4] = [
        Priority::CriticalPlus,
        Priority::Critical,
        Priority::SheddablePlus,
        Priority::Sheddable,
    ];

    /// The SRE book's name, as it appears in headers (`CRITICAL_PLUS`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Priority::CriticalPlus => "CRITICAL_PLUS",
            Priority::Critical => "CRITICAL",
            Priority::SheddablePlus => "SHEDDABLE_PLUS",
            Priority::Sheddable => "SHEDDABLE",
        }
    }

    /// Reads a name: the SRE spelling in any case, with `_` or `-` (`critical-plus`), or the
    /// digits `0` (CRITICAL_PLUS) to `3` (SHEDDABLE). Anything else is `None`: the caller
    /// picks the default for an unknown value (the SRE book treats it as CRITICAL).
    ///
    /// ```
    /// use resilix::inbound::Priority;
    /// assert_eq!(Priority::parse(b"Critical-Plus"), Some(Priority::CriticalPlus));
    /// assert_eq!(Priority::parse(b"3"), Some(Priority::Sheddable));
    /// assert_eq!(Priority::parse(b"urgent"), None);
    /// ```
    pub fn parse(value: &[u8]) -> Option<Priority> {
        let value = value.trim_ascii();
        if let [d @ b'0'..=b'3'] = value {
            return Some(Priority::ALL[(d - b'0') as usize]);
        }
        Priority::ALL.into_iter().find(|p| {
            let name = p.name().as_bytes();
            name.len() == value.len()
                && name.iter().zip(value).all(|(&n, &v)| {
                    let v = if v == b'-' { b'_' } else { v };
                    n == v.to_ascii_uppercase()
                })
        })
    }

    /// How far below the most critical this is: 0 (CRITICAL_PLUS) to 3 (SHEDDABLE).
    pub const fn rank(self) -> u32 {
        match self {
            Priority::CriticalPlus => 0,
            Priority::Critical => 1,
            Priority::SheddablePlus => 2,
            Priority::Sheddable => 3,
        }
    }

    /// Whether this is production traffic (CRITICAL or CRITICAL_PLUS).
    pub const fn is_critical(self) -> bool {
        matches!(self, Priority::CriticalPlus | Priority::Critical)
    }

    /// How much of `total` (a concurrency limit, a queue's size) this criticality may fill:
    /// `total − ⌊total · reserved · rank / 3⌋`, `reserved` in millionths. With Stripe's 20 %
    /// kept for critical traffic, SHEDDABLE fills 80 %, SHEDDABLE_PLUS 87 %, CRITICAL 94 % and
    /// CRITICAL_PLUS all of it (ours: Stripe's reserve spread evenly over the SRE levels).
    ///
    /// ```
    /// use resilix::inbound::Priority;
    /// let reserved = 200_000; // 20 % in millionths
    /// assert_eq!(Priority::Sheddable.share_of(100, reserved), 80);
    /// assert_eq!(Priority::CriticalPlus.share_of(100, reserved), 100);
    /// ```
    pub const fn share_of(self, total: u32, reserved: u32) -> u32 {
        let kept = (total as u64 * reserved as u64 * self.rank() as u64) / 3_000_000;
        total - kept as u32
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_is_by_importance() {
        for p in Priority::ALL {
            assert_eq!(Priority::parse(p.name().as_bytes()), Some(p));
        }
        assert!(Priority::ALL.windows(2).all(|w| w[0] > w[1]));
        assert_eq!(Priority::parse(b" sheddable "), Some(Priority::Sheddable));
        assert_eq!(Priority::parse(b"CRITICAL_PLUSX"), None);
        assert_eq!(Priority::parse(b""), None);
        assert_eq!(Priority::parse(b"4"), None);
        assert_eq!(Priority::parse(b"0"), Some(Priority::CriticalPlus));
    }

    #[test]
    fn shares_fall_with_rank_and_never_exceed_the_total() {
        for total in [0u32, 1, 2, 5, 20, 1 << 20, u32::MAX] {
            for reserved in [0u32, 1, 200_000, 999_999] {
                let shares = Priority::ALL.map(|p| p.share_of(total, reserved));
                assert_eq!(shares[0], total, "CRITICAL_PLUS fills everything");
                assert!(shares.windows(2).all(|w| w[0] >= w[1]));
                assert!(
                    total == 0 || shares[3] >= 1,
                    "a reserve below 1 keeps a share"
                );
            }
        }
        assert_eq!(Priority::Critical.share_of(100, 200_000), 94);
        assert_eq!(
            Priority::Sheddable.share_of(10, 200_000),
            8,
            "20 % of 10 is 2, exactly"
        );
        assert_eq!(Priority::SheddablePlus.share_of(100, 200_000), 87);
        assert_eq!(
            Priority::Sheddable.share_of(4, 200_000),
            4,
            "a small limit keeps no reserve: the floor of 0.8"
        );
    }
}
