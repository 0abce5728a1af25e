use core::fmt;
use core::time::Duration;

use crate::give_up::GiveUpReason;
use crate::rejection::Rejection;
use crate::time::Instant;
use crate::verdict::Verdict;

/// Something a policy, a pipeline or a retry driver did.
///
/// ```
/// use core::time::Duration;
/// use resilix::observe::Event;
/// use resilix::Verdict;
///
/// let e = Event::Executed { verdict: Verdict::Success, duration: Duration::from_millis(12) };
/// assert!(matches!(e, Event::Executed { .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Event {
    /// A policy refused a call (the rejection hook). The call never reached the upstream.
    Rejected {
        /// Which policy, and when it would admit again.
        rejection: Rejection,
    },
    /// A call was admitted, made and settled (the execution hook). Only these feed the
    /// duration histogram.
    Executed {
        /// What the attempt's outcome meant.
        verdict: Verdict,
        /// From admission to settlement.
        duration: Duration,
    },
    /// A circuit breaker changed state.
    CircuitTransition {
        /// The state left.
        from: CircuitState,
        /// The state entered.
        to: CircuitState,
        /// Why.
        cause: TransitionCause,
        /// When, on the caller's timeline.
        at: Instant,
    },
    /// An adaptive limiter changed its concurrency limit.
    LimitChanged {
        /// The previous limit.
        from: u32,
        /// The new limit.
        to: u32,
    },
    /// The retry driver will make another attempt.
    RetryScheduled {
        /// The number of the attempt that will be made (2 for the first retry).
        attempt: u32,
        /// How long the driver waits before it.
        delay: Duration,
        /// The verdict of the attempt that failed.
        after: Verdict,
    },
    /// The retry driver will not try again, and why.
    RetryRefused {
        /// Why the call gave up.
        reason: GiveUpReason,
        /// The verdict of the last attempt.
        after: Verdict,
    },
    /// A fallback answered in place of the upstream: the caller got a degraded answer (the
    /// essay: degradation has to be visible).
    FallbackServed {
        /// Why the upstream's answer was not available.
        cause: Degradation,
    },
    /// Chaos injected into an attempt (`resilix::chaos`): a wait, a fault in place of the
    /// call, or a substituted verdict. The attempt's failure, if any, still reaches
    /// `Executed` as the policies saw it; this event is what tells it apart from a real one.
    ChaosInjected {
        /// What was injected.
        injected: Injected,
    },
    /// A hedge left: a copy of a call still in flight, sent because the call outlived the
    /// hedge delay. Only copies from 2 on are hedges; the original is copy 1.
    HedgeSent {
        /// The copy's number (2 for the first hedge).
        copy: u32,
        /// How long after the call began it left.
        after: Duration,
    },
    /// A hedge was due and not sent (the local cap or the shared budget). The copies in
    /// flight carry on; the call sends no further copy.
    HedgeRefused {
        /// The number the copy would have had.
        copy: u32,
        /// Which limit refused it.
        reason: HedgeRefusal,
    },
    /// A policy in shadow mode would have refused a call, and let it through instead
    /// ([`crate::shadow::Shadow`]). Not a refusal: the call went on to the upstream.
    ShadowRejected {
        /// Which policy would have refused, and when it would have admitted again.
        rejection: Rejection,
    },
    /// A call that sent at least one hedge ended: whose answer the caller got. The other
    /// copies were cancelled.
    HedgeWon {
        /// The copy whose answer was taken (1 = the original, 2 = the first hedge).
        copy: u32,
        /// How many copies were sent, the original included.
        copies: u32,
    },
    /// An operator reset a policy: what it had learned (counts, a limit, a balance, spent
    /// cells) is forgotten and it decides as one built afresh from its config would, keeping
    /// only what is true now (calls in flight). A breaker's controls are reported as
    /// [`Event::CircuitTransition`]s with cause [`TransitionCause::Operator`] instead, so its
    /// state gauge follows them. See `resilix::control` for every policy's controls.
    PolicyReset {
        /// Which kind of policy.
        policy: PolicyKind,
        /// When, on the caller's timeline.
        at: Instant,
    },
    /// A running policy took new settings in place (its `reconfigure`): what it holds (calls
    /// in flight, counts, a limit) is kept, as each policy's `reconfigure` documents, and its
    /// decisions from here on follow the new settings.
    PolicyReconfigured {
        /// Which kind of policy.
        policy: PolicyKind,
        /// When, on the caller's timeline.
        at: Instant,
    },
}

/// The kinds of policy an operator can reset ([`Event::PolicyReset`]) or reconfigure
/// ([`Event::PolicyReconfigured`]).
///
/// ```
/// use resilix::observe::PolicyKind;
///
/// assert_eq!(PolicyKind::RetryBudget.as_str(), "retry-budget");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum PolicyKind {
    /// The adaptive concurrency limiter.
    Limiter,
    /// The client-side throttler.
    Throttler,
    /// A retry budget (token bucket, ratio, or retry circuit breaker).
    RetryBudget,
    /// The rate limiter.
    RateLimiter,
    /// The bulkhead (reconfigured only: it has no reset).
    Bulkhead,
    /// The circuit breaker (reconfigured only: its reset is a transition,
    /// [`Event::CircuitTransition`] with cause `Operator`).
    Breaker,
}

impl PolicyKind {
    /// A stable code for logs and metric labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Limiter => "limiter",
            PolicyKind::Throttler => "throttler",
            PolicyKind::RetryBudget => "retry-budget",
            PolicyKind::RateLimiter => "rate-limiter",
            PolicyKind::Bulkhead => "bulkhead",
            PolicyKind::Breaker => "breaker",
        }
    }
}

/// Why a call was answered by its fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Degradation {
    /// A policy refused the call.
    Refused(Rejection),
    /// Retry gave up on a failing upstream.
    GaveUp(GiveUpReason),
    /// The call's deadline passed before an attempt could start.
    DeadlinePassed,
}

impl Degradation {
    /// Stable kebab-case codes for metric labels and logs: the cause (`refused`, `gave-up`,
    /// `deadline`) and the precise reason within it (the rejection's or give-up's own code).
    ///
    /// ```
    /// use resilix::observe::Degradation;
    /// use resilix::retry::GiveUpReason;
    ///
    /// assert_eq!(Degradation::GaveUp(GiveUpReason::BudgetExceeded).codes(), ("gave-up", "budget-exceeded"));
    /// assert_eq!(Degradation::DeadlinePassed.codes(), ("deadline", "deadline-passed"));
    /// ```
    pub const fn codes(&self) -> (&'static str, &'static str) {
        match self {
            Degradation::Refused(rejection) => ("refused", rejection.reason().code()),
            Degradation::GaveUp(reason) => ("gave-up", reason.as_str()),
            Degradation::DeadlinePassed => ("deadline", "deadline-passed"),
        }
    }
}

/// The states of a circuit breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CircuitState {
    /// Calls flow; outcomes are counted.
    Closed,
    /// Calls are refused until the wait before probing ends.
    Open,
    /// A bounded number of probes is let through to test recovery.
    HalfOpen,
    /// Held open by the operator (isolation) until reset.
    ForcedOpen,
    /// Bypassed by the operator: admits everything, counts nothing.
    Disabled,
}

/// Why a circuit breaker changed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TransitionCause {
    /// The failure rate crossed its threshold with enough calls in the window.
    FailureRate,
    /// The slow-call rate crossed its threshold with enough calls in the window.
    SlowCallRate,
    /// Too many consecutive failures.
    ConsecutiveFailures,
    /// The wait before probing ended.
    WaitElapsed,
    /// Enough half-open probes succeeded.
    ProbesSucceeded,
    /// A half-open probe failed (or too few succeeded).
    ProbesFailed,
    /// The operator forced it open, disabled it, or reset it.
    Operator,
}

impl TransitionCause {
    /// A stable kebab-case code, one per variant, for metric labels and logs.
    ///
    /// ```
    /// use resilix::observe::TransitionCause;
    ///
    /// assert_eq!(TransitionCause::ProbesFailed.as_str(), "probes-failed");
    /// ```
    pub const fn as_str(&self) -> &'static str {
        match self {
            TransitionCause::FailureRate => "failure-rate",
            TransitionCause::SlowCallRate => "slow-call-rate",
            TransitionCause::ConsecutiveFailures => "consecutive-failures",
            TransitionCause::WaitElapsed => "wait-elapsed",
            TransitionCause::ProbesSucceeded => "probes-succeeded",
            TransitionCause::ProbesFailed => "probes-failed",
            TransitionCause::Operator => "operator",
        }
    }
}

/// Which injection an [`Event::ChaosInjected`] reports (see [`crate::chaos`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Injected {
    /// The attempt waited this long before its call.
    Latency(Duration),
    /// The attempt failed with this verdict without a call.
    Fault(Verdict),
    /// The call was made; its verdict was replaced by this one.
    Outcome(Verdict),
}

/// Why a hedge that was due was not sent. The copies in flight carry on either way.
///
/// ```
/// use resilix::hedge::HedgeRefusal;
///
/// assert!(HedgeRefusal::Budget.to_string().contains("retry budget"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum HedgeRefusal {
    /// The hedge's own cap: hedges already reached `max_extra_load` of the calls plus the
    /// burst.
    LocalCap,
    /// The shared retry budget refused it (retries and hedges together spent it).
    Budget,
}

impl fmt::Display for HedgeRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HedgeRefusal::LocalCap => {
                "hedge not sent: hedges already reached max_extra_load of the calls (the \
                 upstream is slower than its usual tail; raise the load only if it can take it)"
            }
            HedgeRefusal::Budget => {
                "hedge not sent: the shared retry budget is spent (retries and hedges share it; \
                 the upstream is failing or slow)"
            }
        })
    }
}
