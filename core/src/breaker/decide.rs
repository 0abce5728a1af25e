//! The breaker's decisions as pure functions of a small snapshot: the state word, the time as
//! full (widened, 64-bit) tick counts, and the counts. No atomics here; `mod.rs` stores what these return with
//! compare-and-swap, and the tests and fuzzer can drive these directly.

use super::live::Live;
use super::window::Totals;
use super::word::Word;
use crate::observe::{CircuitState, TransitionCause};
use crate::random::Random;

/// A change of state, for the event the winning thread emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transition {
    pub(crate) from: CircuitState,
    pub(crate) to: CircuitState,
    pub(crate) cause: TransitionCause,
}

/// Where the timer of the state read stands at `now`: the open wait in open, the maximum
/// half-open wait in half-open. Ends are full (widened) tick counts of the timer's own scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// No timer runs (or half-open waits on its probes forever).
    Never,
    /// The timer ends at this tick.
    Until(u64),
    /// The timer has run out.
    Over,
}

/// The timer ending at `end`, read at `now` (full tick counts, compared in 64 bits, so no idle
/// gap of any length can alias). A remaining time longer than the longest the timer can run
/// can only come from time going backwards: it reads as over, so a breaker can probe early
/// but never waits longer than its longest wait after it last read the time correctly.
pub(crate) const fn clock(now: u64, end: u64, longest: u64) -> Clock {
    if end > now && end - now <= longest {
        Clock::Until(end)
    } else {
        Clock::Over
    }
}

/// What `admit` should do with the state it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Closed: admit and count the outcome in the window.
    Counted,
    /// Disabled: admit and count nothing.
    Bypass,
    /// Store `next` (compare-and-swap); if that succeeds, the call is a half-open probe of
    /// `next.epoch`.
    Probe {
        next: Word,
        transition: Option<Transition>,
    },
    /// Half-open ran out of time with its probes unsettled: re-open (store `next` with a new
    /// open wait, as for a failed probe) and refuse until the wait ends.
    Expire { next: Word, transition: Transition },
    /// Refuse. `until` is the tick (of the state's timer) at which the breaker next acts by
    /// itself, when known; `None` when it waits on an event (probes, the operator).
    Refuse { until: Option<u64> },
}

pub(crate) const fn admission(word: Word, clock: Clock, probes: u8) -> Admission {
    match word.state {
        CircuitState::Closed => Admission::Counted,
        CircuitState::Disabled => Admission::Bypass,
        CircuitState::ForcedOpen => Admission::Refuse { until: None },
        CircuitState::Open => match clock {
            Clock::Until(end) => Admission::Refuse { until: Some(end) },
            Clock::Over | Clock::Never => {
                // The thread that moves the circuit to half-open takes the first probe in the
                // same swap, so no other thread can slip in between.
                let mut next = word.next(CircuitState::HalfOpen);
                next.in_flight = 1;
                Admission::Probe {
                    next,
                    transition: Some(Transition {
                        from: CircuitState::Open,
                        to: CircuitState::HalfOpen,
                        cause: TransitionCause::WaitElapsed,
                    }),
                }
            }
        },
        CircuitState::HalfOpen => match clock {
            // Checked before the free slots: half-open lasts at most its maximum wait, even
            // with a slot free (a probe that hangs while others succeed blocks closing too).
            Clock::Over => Admission::Expire {
                next: word.next(CircuitState::Open),
                transition: Transition {
                    from: CircuitState::HalfOpen,
                    to: CircuitState::Open,
                    cause: TransitionCause::ProbesFailed,
                },
            },
            _ if word.probes_taken() < probes => {
                let mut next = word;
                next.in_flight += 1;
                Admission::Probe {
                    next,
                    transition: None,
                }
            }
            // Every probe is out: when the circuit admits again depends on when they answer,
            // which nothing here knows (the half-open period's end is only the worst case, a
            // minute by default, while probes answer in milliseconds). No retry-at: a caller
            // that passed the bound on as `Retry-After` would send its own clients away for it.
            Clock::Until(_) | Clock::Never => Admission::Refuse { until: None },
        },
    }
}

/// A probe of `epoch` settled. `None`: it is late (the breaker moved on) and changes nothing.
pub(crate) const fn probe_settled(
    word: Word,
    epoch: u32,
    succeeded: bool,
    probes: u8,
    probes_to_close: u8,
) -> Option<(Word, Option<Transition>)> {
    if !matches!(word.state, CircuitState::HalfOpen) || word.epoch != epoch || word.in_flight == 0 {
        return None;
    }
    let mut next = word;
    next.in_flight -= 1;
    if succeeded {
        next.successes += 1;
    } else {
        next.failures += 1;
    }
    // Decide as soon as the outcome is certain: enough successes, or too many failures for
    // enough successes to remain possible. Exactly one settle crosses either line per epoch,
    // because successes + failures never exceed the probes admitted.
    match decided(next, probes, probes_to_close) {
        Some(t) => Some((word.next(t.to), Some(t))),
        None => Some((next, None)),
    }
}

/// Whether half-open's outcomes so far decide it under `probes` and `probes_to_close`: enough
/// successes close, too many failures for enough successes to remain possible re-open. A
/// settle decides the moment its outcome crosses a line; a word already past one can only
/// come from a reconfiguration that moved the lines (see `reconfigure.rs`), and the next call
/// to arrive decides it.
pub(crate) const fn decided(word: Word, probes: u8, probes_to_close: u8) -> Option<Transition> {
    if word.successes >= probes_to_close {
        return Some(Transition {
            from: CircuitState::HalfOpen,
            to: CircuitState::Closed,
            cause: TransitionCause::ProbesSucceeded,
        });
    }
    if word.failures > probes - probes_to_close {
        return Some(Transition {
            from: CircuitState::HalfOpen,
            to: CircuitState::Open,
            cause: TransitionCause::ProbesFailed,
        });
    }
    None
}

/// A probe of `epoch` was dropped: its slot is free again. `None` when it is late.
pub(crate) const fn probe_dropped(word: Word, epoch: u32) -> Option<Word> {
    if !matches!(word.state, CircuitState::HalfOpen) || word.epoch != epoch || word.in_flight == 0 {
        return None;
    }
    let mut next = word;
    next.in_flight -= 1;
    Some(next)
}

const fn rate_above(part: u32, percent: u8, calls: u32) -> bool {
    part as u64 * 100 > percent as u64 * calls as u64
}

/// Whether the closed-state counts call for opening, and why. Rates are compared in integers:
/// `part × 100 > threshold × calls`.
pub(crate) const fn trip_cause(
    totals: Totals,
    consecutive_failures: u32,
    live: &Live,
) -> Option<TransitionCause> {
    if totals.calls >= live.minimum_calls() {
        if let Some(p) = live.failure_rate_above_percent()
            && rate_above(totals.failures, p, totals.calls)
        {
            return Some(TransitionCause::FailureRate);
        }
        if let Some(p) = live.slow_above_percent()
            && rate_above(totals.slow, p, totals.calls)
        {
            return Some(TransitionCause::SlowCallRate);
        }
    }
    if let Some(n) = live.consecutive_failures()
        && consecutive_failures >= n
    {
        return Some(TransitionCause::ConsecutiveFailures);
    }
    None
}

/// The open wait in nanoseconds after `reopens` consecutive re-opens: grown, capped, then
/// shortened by the jitter (after the cap, so a fleet at the cap still spreads out).
pub(crate) fn open_wait_nanos<R: Random + ?Sized>(live: &Live, reopens: u32, rng: &mut R) -> u64 {
    let mut wait = live.open_wait_nanos();
    if let Some((multiplier, cap)) = live.backoff() {
        let mut n = 0;
        while n < reopens {
            let grown = percent_of(wait, multiplier as u64).min(cap);
            // A fixed point ends the climb: the cap, a multiplier of 100, or a wait under
            // 100 ns that a small multiplier rounds back to itself (1 ns × 101% is 1 ns). So a
            // streak of four billion re-opens costs no more than the climb, whatever the config.
            if grown == wait {
                break;
            }
            wait = grown;
            n += 1;
        }
        wait = wait.min(cap);
    }
    let spread = percent_of(wait, live.open_jitter_percent() as u64);
    if spread == 0 {
        wait
    } else {
        wait - rng.below(spread.saturating_add(1)).min(spread)
    }
}

/// `⌊value × percent / 100⌋`, saturated at `u64::MAX`, in 64-bit arithmetic: `value = 100q + r`
/// gives `q × percent + ⌊r × percent / 100⌋` exactly. (The 128-bit product this replaces cost
/// the firmware about a kilobyte of 128-bit multiply and divide code.)
fn percent_of(value: u64, percent: u64) -> u64 {
    (value / 100)
        .saturating_mul(percent)
        .saturating_add(value % 100 * percent / 100)
}

#[cfg(all(test, not(loom)))]
mod tests;
