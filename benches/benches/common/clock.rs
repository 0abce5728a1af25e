//! The shared fake clock: time that advances as a real call's does, read the same way by our
//! policies and by the peers in the same run (issue 20).
//!
//! Injecting `i × step` (what the older benches do) costs nothing and never touches shared
//! memory, which flatters whichever side reads time more often. A real process reads a clock
//! that other threads move: here that clock is one `AtomicU64` of nanoseconds, advanced with
//! one `fetch_add` of `64 × step` every 64 operations (so an operation costs `step` on
//! average: 1 µs for a policy call, 5 µs for a pipeline call) and read with a load by every
//! operation. Both sides do exactly that: the bench loop calls [`AdvancingClock::advance`]
//! with the operation's number, then the policy reads the time, ours through
//! [`AdvancingClock::now`] passed as `now`, governor through its own `Clock` trait
//! ([`GovernorClock`]) over the same atomic. recloser and failsafe cannot be given a clock:
//! they read `std::time::Instant::now()` themselves where they need time (recloser only when
//! open; failsafe on every recorded call), and the benches say so beside their figures.
#![allow(dead_code)] // each bench uses part of this

use std::sync::atomic::{AtomicU64, Ordering};

/// One average operation's worth of time, for a single policy: 1 µs.
pub const POLICY_STEP: u64 = 1_000;
/// One average pipeline call's worth: 5 µs.
pub const PIPELINE_STEP: u64 = 5_000;
/// Where every clock starts: one second in, so no policy sees the timeline's origin.
pub const START: u64 = 1_000_000_000;

/// Nanoseconds in one shared atomic, advanced every 64 operations.
#[derive(Debug)]
pub struct AdvancingClock {
    nanos: AtomicU64,
}

/// The clock every bench in a binary shares, so time never runs backwards from one benchmark
/// to the next.
pub static CLOCK: AdvancingClock = AdvancingClock::new(START);

impl AdvancingClock {
    /// A clock reading `start` nanoseconds.
    pub const fn new(start: u64) -> Self {
        AdvancingClock {
            nanos: AtomicU64::new(start),
        }
    }

    /// Operation `i` has begun: every 64th moves the clock on by 64 operations' worth of
    /// `step` nanoseconds (one `fetch_add`), the others do nothing.
    #[inline]
    pub fn advance(&self, i: u64, step: u64) {
        if i.is_multiple_of(64) {
            self.nanos.fetch_add(64 * step, Ordering::Relaxed);
        }
    }

    /// The time now, in nanoseconds (one load).
    #[inline]
    pub fn nanos(&self) -> u64 {
        self.nanos.load(Ordering::Relaxed)
    }

    /// The time now, as our policies take it.
    #[inline]
    pub fn now(&self) -> resilix::time::Instant {
        resilix::time::Instant::from_nanos(self.nanos())
    }
}

/// governor's view of [`CLOCK`]: its `Clock::now` is the same load ours makes.
#[derive(Clone, Copy, Debug, Default)]
pub struct GovernorClock;

impl governor::clock::Clock for GovernorClock {
    type Instant = governor::nanos::Nanos;

    #[inline]
    fn now(&self) -> governor::nanos::Nanos {
        governor::nanos::Nanos::new(CLOCK.nanos())
    }
}
