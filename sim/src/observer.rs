//! What the simulator hears from the real policies: every event the core emits, counted.
//! Single-threaded, so plain `Cell`s behind the observer's `&self`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Duration;

use resilix::RejectReason;
use resilix::observe::{Event, Observer};
use resilix::retry::GiveUpReason;

#[derive(Default)]
pub struct Tally {
    /// Refusals by reason (the rejection hook).
    pub rejected: RefCell<BTreeMap<&'static str, u64>>,
    /// Settled, counted attempts (the execution hook).
    pub executed: Cell<u64>,
    /// The duration of every settled attempt, as the execution hook saw it.
    pub durations: RefCell<Vec<Duration>>,
    pub retries_scheduled: Cell<u64>,
    /// Give-ups by reason (the retry refusal hook), keyed by a stable name.
    pub gave_up: RefCell<BTreeMap<String, u64>>,
    /// Keep every duration (costs memory; only the experiments that inspect them turn it on).
    pub keep_durations: bool,
}

impl Tally {
    pub fn keeping_durations() -> Self {
        Tally {
            keep_durations: true,
            ..Tally::default()
        }
    }

    pub fn rejected(&self, reason: RejectReason) -> u64 {
        self.rejected
            .borrow()
            .get(reason.code())
            .copied()
            .unwrap_or(0)
    }

    pub fn gave_up(&self, key: &str) -> u64 {
        self.gave_up.borrow().get(key).copied().unwrap_or(0)
    }
}

/// A stable key for a give-up reason (the attempt count dropped so they aggregate).
pub fn give_up_key(reason: &GiveUpReason) -> String {
    match reason {
        GiveUpReason::NotRetryable(kind) => format!("not-retryable:{kind}"),
        other => other.as_str().into(),
    }
}

impl Observer for Tally {
    fn on_event(&self, event: &Event) {
        match event {
            Event::Rejected { rejection } => {
                *self
                    .rejected
                    .borrow_mut()
                    .entry(rejection.reason().code())
                    .or_default() += 1;
            }
            Event::Executed { duration, .. } => {
                self.executed.set(self.executed.get() + 1);
                if self.keep_durations {
                    self.durations.borrow_mut().push(*duration);
                }
            }
            Event::RetryScheduled { .. } => {
                self.retries_scheduled.set(self.retries_scheduled.get() + 1)
            }
            Event::RetryRefused { reason, .. } => {
                *self
                    .gave_up
                    .borrow_mut()
                    .entry(give_up_key(reason))
                    .or_default() += 1;
            }
            _ => {}
        }
    }
}
