//! A real policy and its reference model, driven by the same calls at the same instants.

use core::fmt;
use core::time::Duration;

use resilix::random::Random;
use resilix::rejection::{RejectReason, Rejection};
use resilix::time::Instant;
use resilix::verdict::Verdict;

use std::collections::BTreeMap;

use crate::timeline::Timeline;
use crate::traffic::{Call, Scenario};

/// What a policy (or its model) decided for one arriving call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Admitted: the call runs.
    Admitted,
    /// Refused, with the reason and, where the policy knows it, when it will admit again.
    Refused {
        /// Which refusal.
        reason: RejectReason,
        /// The earliest instant a call may be admitted again, if known.
        retry_at: Option<Instant>,
    },
}

impl Decision {
    /// The decision a real policy's `admit` result stands for.
    pub fn of<P>(result: &Result<P, Rejection>) -> Decision {
        match result {
            Ok(_) => Decision::Admitted,
            Err(r) => Decision::Refused {
                reason: r.reason(),
                retry_at: r.retry_at(),
            },
        }
    }

    /// Whether the call was admitted.
    pub const fn is_admitted(&self) -> bool {
        matches!(self, Decision::Admitted)
    }
}

/// The first disagreement between a real policy and its model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The step of the run (0-based) at which they disagreed.
    pub step: u64,
    /// The instant of that step.
    pub at: Instant,
    /// What differed, in words.
    pub what: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} at {:?} ({:.3} days): {}",
            self.step,
            self.at,
            self.at.as_nanos() as f64 / 86_400e9,
            self.what
        )
    }
}

impl std::error::Error for Mismatch {}

/// A real policy beside its reference model.
///
/// A twin owns (or borrows) one real policy and one model, keeps the real permits of the calls
/// it admitted, and applies every call to both. Open calls are numbered in the order they were
/// admitted, an ended call's number going to the next (keep the permits in a `Vec` and end
/// with `Vec::remove`, not `swap_remove`): [`drive_scenario`] relies on it to end the call it
/// means. Each method answers `Err(description)` on the
/// first difference in a decision or in observable state; the driver adds step and instant.
pub trait Twin {
    /// Calls admitted and not yet ended.
    fn open(&self) -> usize;

    /// A call arrives at `now`: both decide, and must decide alike. Answers the decision.
    fn arrive(&mut self, now: Instant, rng: &mut dyn Random) -> Result<Decision, String>;

    /// Open call `index` (`< self.open()`) ends at `now`, settled with `verdict`, or
    /// cancelled (its permit dropped) when `verdict` is `None`.
    fn end(
        &mut self,
        now: Instant,
        index: usize,
        verdict: Option<Verdict>,
        rng: &mut dyn Random,
    ) -> Result<(), String>;

    /// Compares state that is not a decision (a breaker's state, a limit) at `now`. Called
    /// after every step; the default checks nothing.
    fn check(&mut self, _now: Instant) -> Result<(), String> {
        Ok(())
    }
}

/// How calls end in a run: out of 256, how many of each verdict (the rest cancel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Successes.
    pub success: u8,
    /// Transient failures.
    pub transient: u8,
    /// Timeouts.
    pub timeout: u8,
    /// Overloads (half of them with a Retry-After of up to 10 s).
    pub overload: u8,
    /// Answered (a 4xx).
    pub answered: u8,
}

impl Mix {
    /// Mostly successes, with every other outcome present.
    pub const MOSTLY_HEALTHY: Mix = Mix {
        success: 170,
        transient: 30,
        timeout: 15,
        overload: 15,
        answered: 10,
    };

    /// A verdict drawn from the mix, `None` for a cancelled call.
    pub fn draw(&self, rng: &mut dyn Random) -> Option<Verdict> {
        let mut x = rng.below(256) as u32;
        for (n, v) in [
            (self.success, Verdict::Success),
            (self.transient, Verdict::Transient),
            (self.timeout, Verdict::Timeout),
            (self.overload, Verdict::Overload { retry_after: None }),
            (self.answered, Verdict::Answered),
        ] {
            if x < u32::from(n) {
                if let Verdict::Overload { .. } = v
                    && rng.below(2) == 0
                {
                    let ms = rng.below(10_000);
                    return Some(Verdict::Overload {
                        retry_after: Some(Duration::from_millis(ms)),
                    });
                }
                return Some(v);
            }
            x -= u32::from(n);
        }
        None
    }
}

/// What a differential run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Steps taken.
    pub steps: u64,
    /// Calls admitted by both.
    pub admitted: u64,
    /// Calls refused by both.
    pub refused: u64,
    /// Calls ended (settled or cancelled).
    pub ended: u64,
}

/// Runs `steps` steps of `twin` on `timeline`: at each step time moves on by one random gap,
/// then either a call arrives or an open call ends (with a verdict from `mix`, or cancelled),
/// each with even odds while calls are open, and at most `max_open` calls are open at once.
/// Stops at the first [`Mismatch`].
pub fn drive<T: Twin + ?Sized>(
    twin: &mut T,
    timeline: &mut Timeline,
    rng: &mut dyn Random,
    steps: u64,
    mix: Mix,
    max_open: usize,
) -> Result<Report, Mismatch> {
    let mut report = Report::default();
    for step in 0..steps {
        let now = timeline.advance(&mut &mut *rng);
        let fail = |what: String| Mismatch {
            step,
            at: now,
            what,
        };
        let open = twin.open();
        if open > 0 && (open >= max_open || rng.below(2) == 0) {
            let index = rng.below(open as u64) as usize;
            let verdict = mix.draw(rng);
            twin.end(now, index, verdict, rng).map_err(fail)?;
            report.ended += 1;
        } else {
            match twin.arrive(now, rng).map_err(fail)? {
                Decision::Admitted => report.admitted += 1,
                Decision::Refused { .. } => report.refused += 1,
            }
        }
        twin.check(now).map_err(fail)?;
        report.steps += 1;
    }
    Ok(report)
}

/// Runs `twin` through every call of `scenario` (a simulated day or week, see
/// [`crate::traffic`]): each call arrives at its instant; an admitted one ends `duration`
/// later with its verdict (or is cancelled). At an instant where calls both end and arrive,
/// the ends come first (a slot freed at `t` is free for an arrival at `t`), earliest admitted
/// first. `rng` is the policies' randomness; the scenario's comes from its own seed. Each
/// arrival and each end is one step; stops at the first [`Mismatch`], and also if the twin's
/// count of open calls strays from the scenario's.
pub fn drive_scenario<T: Twin + ?Sized>(
    twin: &mut T,
    scenario: &Scenario,
    rng: &mut dyn Random,
) -> Result<Report, Mismatch> {
    drive_scenario_with(twin, scenario, rng, |_, _| {})
}

/// [`drive_scenario`], telling `decided` each call and the decision both sides made on it
/// (to count refusals by [`Phase`](crate::traffic::Phase): a refusal at night, after an idle
/// stretch, is the kind issue 13 is about).
pub fn drive_scenario_with<T: Twin + ?Sized>(
    twin: &mut T,
    scenario: &Scenario,
    rng: &mut dyn Random,
    mut decided: impl FnMut(&Call, Decision),
) -> Result<Report, Mismatch> {
    let mut report = Report::default();
    // Pending ends by (instant, call number): a priority queue with stable ties.
    let mut ends: BTreeMap<(Instant, u64), Option<Verdict>> = BTreeMap::new();
    // The open calls' numbers in admission order: the twin's indices.
    let mut open: Vec<u64> = Vec::new();
    let mut calls = scenario.calls().peekable();
    let mut number = 0u64;
    for step in 0.. {
        let next_end = ends.first_key_value().map(|(k, _)| k.0);
        let next_call = calls.peek().map(|c| c.at);
        let now = match (next_end, next_call) {
            (None, None) => break,
            (Some(e), Some(a)) => e.min(a),
            (Some(t), None) | (None, Some(t)) => t,
        };
        let fail = |what: String| Mismatch {
            step,
            at: now,
            what,
        };
        if next_end == Some(now) {
            let ((_, id), verdict) = ends.pop_first().expect("an end is pending");
            let index = open
                .iter()
                .position(|&o| o == id)
                .expect("an ending call is open");
            open.remove(index);
            twin.end(now, index, verdict, rng).map_err(fail)?;
            report.ended += 1;
        } else {
            let call = calls.next().expect("a call is next");
            let decision = twin.arrive(now, rng).map_err(fail)?;
            decided(&call, decision);
            match decision {
                Decision::Admitted => {
                    report.admitted += 1;
                    open.push(number);
                    ends.insert((now.saturating_add(call.duration), number), call.verdict);
                }
                Decision::Refused { .. } => report.refused += 1,
            }
            number += 1;
        }
        if twin.open() != open.len() {
            return Err(fail(format!(
                "the twin holds {} open calls, the scenario {}",
                twin.open(),
                open.len()
            )));
        }
        twin.check(now).map_err(fail)?;
        report.steps += 1;
    }
    Ok(report)
}

/// Compares two decisions, with a description of the difference.
pub fn same(real: Decision, model: Decision) -> Result<Decision, String> {
    if real == model {
        Ok(real)
    } else {
        Err(format!("real {real:?}, model {model:?}"))
    }
}
