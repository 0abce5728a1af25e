//! An observer that records every event, with assertions over what happened in which order.

use std::fmt;
use std::sync::Mutex;

use resilix::chaos::Injected;
use resilix::observe::{CircuitState, Event, Observer};
use resilix::retry::GiveUpReason;
use resilix::{RejectReason, VerdictKind};

/// An event with its details left out, for assertions: what happened, not how long it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`Event::Rejected`] by the policy this reason names.
    Rejected(RejectReason),
    /// [`Event::Executed`] with a verdict of this kind.
    Executed(VerdictKind),
    /// [`Event::CircuitTransition`] into this state.
    Circuit(CircuitState),
    /// [`Event::LimitChanged`] to this limit.
    Limit(u32),
    /// [`Event::RetryScheduled`] for this attempt (2 = the first retry).
    RetryScheduled(u32),
    /// [`Event::RetryRefused`] for this reason.
    RetryRefused(GiveUpReason),
    /// [`Event::FallbackServed`].
    Fallback,
    /// [`Event::ChaosInjected`]: latency.
    ChaosLatency,
    /// [`Event::ChaosInjected`]: a fault of this kind, without a call.
    ChaosFault(VerdictKind),
    /// [`Event::ChaosInjected`]: a verdict of this kind substituted after the call.
    ChaosOutcome(VerdictKind),
    /// An event this version of the kit does not know.
    Other,
}

impl Kind {
    /// The kind of `event`.
    pub fn of(event: &Event) -> Kind {
        match event {
            Event::Rejected { rejection } => Kind::Rejected(rejection.reason()),
            Event::Executed { verdict, .. } => Kind::Executed(verdict.kind()),
            Event::CircuitTransition { to, .. } => Kind::Circuit(*to),
            Event::LimitChanged { to, .. } => Kind::Limit(*to),
            Event::RetryScheduled { attempt, .. } => Kind::RetryScheduled(*attempt),
            Event::RetryRefused { reason, .. } => Kind::RetryRefused(*reason),
            Event::FallbackServed { .. } => Kind::Fallback,
            Event::ChaosInjected { injected } => match injected {
                Injected::Latency(_) => Kind::ChaosLatency,
                Injected::Fault(v) => Kind::ChaosFault(v.kind()),
                Injected::Outcome(v) => Kind::ChaosOutcome(v.kind()),
                _ => Kind::Other,
            },
            _ => Kind::Other,
        }
    }
}

/// Records every event a pipeline, its retry loop and its adapter report. `Sync`, so a future
/// holding `&Recorder` stays `Send`; pass `&recorder` as the observer.
///
/// ```
/// use resilix::observe::{Event, Observer};
/// use resilix::{Verdict, VerdictKind};
/// use resilix_testkit::recorder::{Kind, Recorder};
/// use std::time::Duration;
///
/// let recorder = Recorder::new();
/// recorder.on_event(&Event::Executed { verdict: Verdict::Transient, duration: Duration::ZERO });
/// recorder.on_event(&Event::Executed { verdict: Verdict::Success, duration: Duration::ZERO });
/// recorder.assert_sequence(&[Kind::Executed(VerdictKind::Transient), Kind::Executed(VerdictKind::Success)]);
/// assert_eq!(recorder.count(Kind::Executed(VerdictKind::Success)), 1);
/// ```
#[derive(Debug, Default)]
pub struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    /// An empty recorder.
    pub const fn new() -> Self {
        Recorder(Mutex::new(Vec::new()))
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    /// The kinds of every event so far, in order.
    pub fn kinds(&self) -> Vec<Kind> {
        self.0.lock().unwrap().iter().map(Kind::of).collect()
    }

    /// How many events of `kind`.
    pub fn count(&self, kind: Kind) -> usize {
        self.kinds().into_iter().filter(|k| *k == kind).count()
    }

    /// Forgets everything recorded.
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// Asserts the events so far are exactly `expected`, in order.
    #[track_caller]
    pub fn assert_sequence(&self, expected: &[Kind]) {
        let kinds = self.kinds();
        assert!(
            kinds == expected,
            "events differ\n{}",
            Diff {
                expected,
                actual: &kinds
            }
        );
    }

    /// Asserts `expected` happened in this order, other events allowed between them.
    #[track_caller]
    pub fn assert_in_order(&self, expected: &[Kind]) {
        let kinds = self.kinds();
        let mut want = expected.iter().peekable();
        for k in &kinds {
            if want.peek() == Some(&k) {
                want.next();
            }
        }
        assert!(
            want.peek().is_none(),
            "not found in order: {:?} onwards\n{}",
            want.peek(),
            Diff {
                expected,
                actual: &kinds
            }
        );
    }

    /// Asserts no event of `kind` was recorded.
    #[track_caller]
    pub fn assert_none(&self, kind: Kind) {
        let n = self.count(kind);
        assert!(
            n == 0,
            "{n} events of {kind:?}, expected none: {:?}",
            self.kinds()
        );
    }
}

impl Observer for Recorder {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(*event);
    }
}

/// Two event lists side by side.
struct Diff<'a> {
    expected: &'a [Kind],
    actual: &'a [Kind],
}

impl fmt::Display for Diff<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "   # {:<40} actual", "expected")?;
        for i in 0..self.expected.len().max(self.actual.len()) {
            let e = self
                .expected
                .get(i)
                .map(|k| format!("{k:?}"))
                .unwrap_or_default();
            let a = self
                .actual
                .get(i)
                .map(|k| format!("{k:?}"))
                .unwrap_or_default();
            let mark = if e == a { ' ' } else { '!' };
            writeln!(f, "{mark}{i:>3} {e:<40} {a}")?;
        }
        Ok(())
    }
}

/// Asserts a recorder's events are exactly these kinds, in order:
/// `assert_events!(recorder, [Executed(Transient), RetryScheduled(2), Executed(Success)])`
/// (variants of [`Kind`], verdict kinds of [`VerdictKind`](resilix::VerdictKind) in scope
/// by name).
///
/// ```
/// use resilix::observe::{Event, Observer};
/// use resilix::Verdict;
/// use resilix_testkit::assert_events;
/// use resilix_testkit::recorder::Recorder;
/// use std::time::Duration;
///
/// let recorder = Recorder::new();
/// recorder.on_event(&Event::Executed { verdict: Verdict::Timeout, duration: Duration::ZERO });
/// assert_events!(recorder, [Executed(Timeout)]);
/// ```
#[macro_export]
macro_rules! assert_events {
    ($recorder:expr, [$($kind:ident $(($($arg:tt)*))?),* $(,)?]) => {{
        #[allow(unused_imports)]
        use $crate::recorder::Kind::*;
        #[allow(unused_imports)]
        use ::resilix::VerdictKind::{Answered, Overload, Rejected as RejectedKind, Success, Timeout, Transient, Uncertain};
        $recorder.assert_sequence(&[$($kind $(($($arg)*))?),*]);
    }};
}
