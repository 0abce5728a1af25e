//! The breaker's settings in force, as the words of one [`Settings`](crate::settings) block:
//! every decision reads the block once and passes these words down, so no decision pairs the
//! thresholds of one configuration with the waits or probe counts of another, whatever
//! [`Breaker::reconfigure`](super::Breaker::reconfigure) does meanwhile.
//!
//! Everything a [`Config`] says is here (a breaker keeps no other copy), plus the two timers'
//! lengths in ticks, derived once by the writer instead of on every read, and their bounds:
//! the longest run of any configuration in force so far, how far ahead a stored end can
//! rightly point (so an end written under an earlier, longer wait is still believed). Durations are kept
//! as `u64` nanoseconds in two words, the precision every decision already used
//! (`duration_as_nanos_saturating`); `None` is a value no valid field takes.

use core::time::Duration;

use super::config::{Config, OpenBackoff, SlowCalls};
use crate::time::duration_as_nanos_saturating as nanos;
use crate::time::ticks::TickScale;

/// The number of words in the block.
pub(crate) const WORDS: usize = 15;

// Word 0: four small fields.
const PACKED: usize = 0;
const MINIMUM_CALLS: usize = 1;
/// 0: off (a valid count is at least 1).
const CONSECUTIVE: usize = 2;
/// 0: no backoff (a valid multiplier is at least 100).
const MULTIPLIER: usize = 3;
const SLOWER_THAN: usize = 4;
const OPEN_WAIT: usize = 6;
const MAX_WAIT: usize = 8;
/// 0: no maximum half-open wait (a valid one is not zero).
const HALF_WAIT: usize = 10;
/// The longest open wait of this or any earlier configuration, in ticks of the open timer's
/// scale.
const OPEN_BOUND: usize = 12;
/// The maximum half-open wait in ticks of its scale; 0 when there is none.
const HALF_TICKS: usize = 13;
/// The longest maximum half-open wait of this or any earlier configuration, in those ticks.
const HALF_BOUND: usize = 14;

/// A percentage no valid threshold takes (they are `0..=99`): the threshold is off.
const OFF: u32 = 0xFF;

/// The slow-call rule alone (the packed word that holds its percentage, and its duration):
/// all a success needs, three words of the block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlowRule {
    packed: u32,
    slower_than: u64,
}

impl SlowRule {
    /// The rule's words from a slot of the block, loaded by
    /// [`Settings::read_with`](crate::settings::Settings::read_with) so they are one write's.
    #[inline(always)]
    pub(crate) fn load(slot: &[crate::sync::AtomicU32; WORDS]) -> SlowRule {
        let word = |i: usize| slot[i].load(crate::sync::Ordering::Acquire);
        SlowRule {
            packed: word(PACKED),
            slower_than: word(SLOWER_THAN) as u64 | ((word(SLOWER_THAN + 1) as u64) << 32),
        }
    }

    /// Whether a call `elapsed` nanoseconds long is slow under this rule.
    #[inline(always)]
    pub(crate) const fn is_slow(self, elapsed: u64) -> bool {
        (self.packed >> 8) & 0xFF != OFF && elapsed >= self.slower_than
    }
}

/// One block's words. `Copy`, read once per decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Live(pub(crate) [u32; WORDS]);

const fn split(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

impl Live {
    /// The words of a valid `config` on the given timer scales.
    pub(crate) const fn encode(config: &Config, scale: TickScale, half_scale: TickScale) -> Live {
        let mut w = [0u32; WORDS];
        let failure = match config.failure_rate_above_percent {
            Some(p) => p as u32,
            None => OFF,
        };
        let (slow, slower_than) = match config.slow_calls {
            Some(s) => (s.above_percent as u32, nanos(s.slower_than)),
            None => (OFF, 0),
        };
        w[PACKED] = failure
            | (slow << 8)
            | ((config.open_jitter_percent as u32) << 16)
            | ((config.half_open_probes as u32) << 24)
            | ((config.probes_to_close as u32) << 28);
        w[MINIMUM_CALLS] = config.minimum_calls;
        w[CONSECUTIVE] = match config.consecutive_failures {
            Some(n) => n,
            None => 0,
        };
        let (multiplier, max_wait) = match config.open_backoff {
            Some(b) => (b.multiplier_percent, nanos(b.max_wait)),
            None => (0, 0),
        };
        w[MULTIPLIER] = multiplier;
        (w[SLOWER_THAN], w[SLOWER_THAN + 1]) = split(slower_than);
        (w[OPEN_WAIT], w[OPEN_WAIT + 1]) = split(nanos(config.open_wait));
        (w[MAX_WAIT], w[MAX_WAIT + 1]) = split(max_wait);
        let (half, half_ticks) = match config.max_half_open_wait {
            Some(d) => (nanos(d), half_scale.ticks_in(d)),
            None => (0, 0),
        };
        (w[HALF_WAIT], w[HALF_WAIT + 1]) = split(half);
        w[OPEN_BOUND] = scale.ticks_in(config.longest_open_wait());
        w[HALF_TICKS] = half_ticks;
        w[HALF_BOUND] = half_ticks;
        Live(w)
    }

    /// These words with each timer's bound raised to `before`'s where that is longer: what a
    /// reconfiguration from `before` puts in force.
    pub(crate) const fn after(mut self, before: &Live) -> Live {
        if before.0[OPEN_BOUND] > self.0[OPEN_BOUND] {
            self.0[OPEN_BOUND] = before.0[OPEN_BOUND];
        }
        if before.0[HALF_BOUND] > self.0[HALF_BOUND] {
            self.0[HALF_BOUND] = before.0[HALF_BOUND];
        }
        self
    }

    #[inline(always)]
    const fn wide(&self, at: usize) -> u64 {
        self.0[at] as u64 | ((self.0[at + 1] as u64) << 32)
    }

    #[inline(always)]
    const fn byte(&self, shift: u32) -> u32 {
        (self.0[PACKED] >> shift) & 0xFF
    }

    #[inline(always)]
    pub(crate) const fn failure_rate_above_percent(&self) -> Option<u8> {
        match self.byte(0) {
            OFF => None,
            p => Some(p as u8),
        }
    }

    #[inline(always)]
    pub(crate) const fn slow_above_percent(&self) -> Option<u8> {
        match self.byte(8) {
            OFF => None,
            p => Some(p as u8),
        }
    }

    /// The slow-call duration in nanoseconds; meaningful when a slow-call rate is set.
    #[inline(always)]
    pub(crate) const fn slower_than_nanos(&self) -> u64 {
        self.wide(SLOWER_THAN)
    }

    #[inline(always)]
    pub(crate) const fn slow_rule(&self) -> SlowRule {
        SlowRule {
            packed: self.0[PACKED],
            slower_than: self.wide(SLOWER_THAN),
        }
    }

    #[inline(always)]
    pub(crate) const fn minimum_calls(&self) -> u32 {
        self.0[MINIMUM_CALLS]
    }

    #[inline(always)]
    pub(crate) const fn consecutive_failures(&self) -> Option<u32> {
        match self.0[CONSECUTIVE] {
            0 => None,
            n => Some(n),
        }
    }

    #[inline(always)]
    pub(crate) const fn open_jitter_percent(&self) -> u32 {
        self.byte(16)
    }

    #[inline(always)]
    pub(crate) const fn half_open_probes(&self) -> u8 {
        ((self.0[PACKED] >> 24) & 0xF) as u8
    }

    #[inline(always)]
    pub(crate) const fn probes_to_close(&self) -> u8 {
        (self.0[PACKED] >> 28) as u8
    }

    #[inline(always)]
    pub(crate) const fn open_wait_nanos(&self) -> u64 {
        self.wide(OPEN_WAIT)
    }

    /// `(multiplier_percent, max_wait_nanos)` when the wait grows on re-opens.
    #[inline(always)]
    pub(crate) const fn backoff(&self) -> Option<(u32, u64)> {
        match self.0[MULTIPLIER] {
            0 => None,
            m => Some((m, self.wide(MAX_WAIT))),
        }
    }

    /// The longest open wait of any configuration in force so far, in ticks of the open
    /// timer's scale: the clamp of a new wait (at least this configuration's longest) and
    /// the most an open circuit's remaining wait can rightly be.
    #[inline(always)]
    pub(crate) const fn open_bound(&self) -> u32 {
        self.0[OPEN_BOUND]
    }

    /// The maximum half-open wait in ticks of its scale; 0 when half-open waits forever.
    #[inline(always)]
    pub(crate) const fn half_ticks(&self) -> u32 {
        self.0[HALF_TICKS]
    }

    /// The longest maximum half-open wait of any configuration in force so far, in its
    /// ticks: the most a half-open period's remaining time can rightly be.
    #[inline(always)]
    pub(crate) const fn half_bound(&self) -> u32 {
        self.0[HALF_BOUND]
    }

    /// The configuration these words hold, for [`Breaker::config`](super::Breaker::config).
    pub(crate) const fn config(&self) -> Config {
        Config {
            failure_rate_above_percent: self.failure_rate_above_percent(),
            minimum_calls: self.minimum_calls(),
            slow_calls: match self.slow_above_percent() {
                Some(p) => Some(SlowCalls {
                    slower_than: Duration::from_nanos(self.slower_than_nanos()),
                    above_percent: p,
                }),
                None => None,
            },
            consecutive_failures: self.consecutive_failures(),
            open_wait: Duration::from_nanos(self.open_wait_nanos()),
            open_backoff: match self.backoff() {
                Some((m, max)) => Some(OpenBackoff {
                    multiplier_percent: m,
                    max_wait: Duration::from_nanos(max),
                }),
                None => None,
            },
            open_jitter_percent: self.open_jitter_percent() as u8,
            half_open_probes: self.half_open_probes(),
            probes_to_close: self.probes_to_close(),
            max_half_open_wait: match self.wide(HALF_WAIT) {
                0 => None,
                n => Some(Duration::from_nanos(n)),
            },
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips() {
        let s = TickScale::covering(Duration::from_secs(300));
        let h = TickScale::covering(Duration::from_secs(60));
        let full = Config {
            failure_rate_above_percent: Some(0),
            minimum_calls: u32::MAX,
            slow_calls: Some(SlowCalls {
                slower_than: Duration::from_nanos(u64::MAX),
                above_percent: 99,
            }),
            consecutive_failures: Some(u32::MAX),
            open_wait: Duration::from_nanos(1),
            open_backoff: Some(OpenBackoff {
                multiplier_percent: u32::MAX,
                max_wait: Duration::from_secs(300),
            }),
            open_jitter_percent: 99,
            half_open_probes: 15,
            probes_to_close: 15,
            max_half_open_wait: Some(Duration::from_secs(60)),
        };
        let bare = Config {
            failure_rate_above_percent: None,
            slow_calls: None,
            consecutive_failures: Some(1),
            open_backoff: None,
            max_half_open_wait: None,
            ..Config::DEFAULT
        };
        for c in [full, bare, Config::DEFAULT] {
            assert!(c.validate().is_ok());
            let live = Live::encode(&c, s, h);
            assert_eq!(live.config(), c);
            assert_eq!(live.open_bound(), s.ticks_in(c.longest_open_wait()));
        }
        let (long, short) = (
            Live::encode(&full, s, h),
            Live::encode(&Config::DEFAULT, s, h),
        );
        let after = short.after(&long);
        assert_eq!(
            after.config(),
            Config::DEFAULT,
            "the bounds are not the config"
        );
        assert_eq!(
            (after.open_bound(), after.half_bound()),
            (long.open_bound(), long.half_bound())
        );
        assert_eq!(after.half_ticks(), short.half_ticks());
        assert_eq!(
            long.after(&short),
            long,
            "a longer run raises its own bound"
        );
        assert_eq!(Live::encode(&bare, s, h).half_ticks(), 0);
        assert_eq!(
            Live::encode(&full, s, h).half_ticks(),
            h.ticks_in(Duration::from_secs(60))
        );
    }
}
