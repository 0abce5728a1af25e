//! Seeded fault injection: latency, faults and substituted outcomes, each at a rate, behind a
//! master switch a running service can flip, reproducible from a seed.
//!
//! Chaos is the innermost step of an attempt: after every policy has admitted it, before (and
//! around) the call itself, so the policies see injected failures exactly as they would see
//! real ones — a faulted attempt counts in the breaker, the throttler and the retry budget,
//! and is retried — which is what a chaos experiment is for. It is off unless enabled:
//! [`Chaos::new`] starts switched off, and a switched-off `Chaos` draws nothing and injects
//! nothing (one atomic load).
//!
//! Like every policy, chaos takes its randomness from the caller ([`Env::rng`]): with a
//! [`SeededRandom`](crate::random::SeededRandom) the same seed injects into the same attempts
//! on every target (Simmy's injectable randomizer; tower-resilience's seeded `ChaosLayer`).
//! [`Chaos::decide`] is the whole decision; the adapter applies it ([`Injection`]): it sleeps
//! for the latency, skips the call on a fault and replaces the verdict on an outcome, and
//! [`Chaotic`] with [`ChaosClassifier`] carries that through any classifier. Each injection is
//! reported as [`Event::ChaosInjected`], so dashboards can tell injected failures from real
//! ones (the failure itself still reaches `Executed`, as the policies saw it).
//!
//! ```
//! use core::time::Duration;
//! use resilix::chaos::{Chaos, ChaosConfig};
//! use resilix::permit::Env;
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! static CHAOS: Chaos = match Chaos::new(ChaosConfig::NONE.with_fault(250_000, Verdict::Transient)) {
//!     Ok(chaos) => chaos,
//!     Err(_) => panic!("invalid chaos config"),
//! };
//! let mut rng = SeededRandom::new(7);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! assert!(CHAOS.decide(&mut env).is_none(), "off until enabled");
//! CHAOS.enable(); // e.g. from an admin endpoint
//! let faults = (0..1_000).filter(|_| CHAOS.decide(&mut env).fault.is_some()).count();
//! assert!((200..300).contains(&faults), "about a quarter: {faults}");
//! ```
//!
//! Design notes: docs/design/chaos.md

mod config;
mod decide;

pub use config::{ChaosConfig, ChaosConfigError, MILLION};

use core::time::Duration;

use crate::classify::Classify;
use crate::observe::{Event, Observer};
use crate::permit::Env;
use crate::random::Random;
use crate::sync::{AtomicBool, Ordering};
use crate::verdict::Verdict;

/// Fault injection with a master switch. `&self`, lock-free, `Sync`: one per upstream (or per
/// process), in a `static` or an `Arc`.
#[derive(Debug)]
pub struct Chaos {
    config: ChaosConfig,
    enabled: AtomicBool,
}

impl Chaos {
    crate::sync::const_fn_unless_loom! {
        /// Chaos with `config`, switched off. Refuses a rate above one, a `Rejected` verdict
        /// and zero-length latency at a rate above zero.
        pub fn new(config: ChaosConfig) -> Result<Chaos, ChaosConfigError> {
            match config.validate() {
                Ok(()) => Ok(Chaos {
                    config,
                    enabled: AtomicBool::new(false),
                }),
                Err(e) => Err(e),
            }
        }
    }

    /// The config.
    pub const fn config(&self) -> &ChaosConfig {
        &self.config
    }

    /// Switches injection on (the master switch; any thread, any time).
    pub fn enable(&self) {
        self.set_enabled(true);
    }

    /// Switches injection off: from the next decision on, nothing is injected or drawn.
    pub fn disable(&self) {
        self.set_enabled(false);
    }

    /// Sets the master switch.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Release);
    }

    /// Whether injection is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// What to inject into the attempt about to be made, drawn from `env.rng` (nothing when
    /// switched off, without a draw). Reports each injection to `env.observer` as
    /// [`Event::ChaosInjected`].
    pub fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Injection {
        if !self.is_enabled() {
            return Injection::NONE;
        }
        let injection = decide::injection(&self.config, &mut *env.rng);
        if !injection.is_none() {
            report(&injection, env.observer);
        }
        injection
    }
}

#[inline(never)]
fn report<O: Observer + ?Sized>(injection: &Injection, observer: &O) {
    if let Some(delay) = injection.latency {
        observer.on_event(&Event::ChaosInjected {
            injected: Injected::Latency(delay),
        });
    }
    if let Some(verdict) = injection.fault {
        observer.on_event(&Event::ChaosInjected {
            injected: Injected::Fault(verdict),
        });
    }
    if let Some(verdict) = injection.outcome {
        observer.on_event(&Event::ChaosInjected {
            injected: Injected::Outcome(verdict),
        });
    }
}

/// What one attempt gets: any combination of a wait before the call, a fault instead of it,
/// and a verdict in place of the call's (never both a fault and an outcome).
///
/// ```
/// use core::time::Duration;
/// use resilix::chaos::{Chaotic, Injection};
/// use resilix::Verdict;
///
/// let injection = Injection { fault: Some(Verdict::Timeout), ..Injection::NONE };
/// // The adapter's part, for an attempt whose call would have answered 200:
/// let attempt = injection.apply(|| 200u16);
/// assert_eq!(attempt, Chaotic::Fault(Verdict::Timeout));
/// assert_eq!(Injection::NONE.apply(|| 200u16), Chaotic::Upstream(200));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Injection {
    /// Wait this long before the call.
    pub latency: Option<Duration>,
    /// Do not make the call; the attempt's verdict is this.
    pub fault: Option<Verdict>,
    /// Make the call, then report this verdict instead of its own.
    pub outcome: Option<Verdict>,
}

impl Injection {
    /// Nothing injected.
    pub const NONE: Injection = Injection {
        latency: None,
        fault: None,
        outcome: None,
    };

    /// Whether nothing is injected.
    pub const fn is_none(&self) -> bool {
        self.latency.is_none() && self.fault.is_none() && self.outcome.is_none()
    }

    /// Applies the fault and outcome to a synchronous call (`call` runs unless faulted); the
    /// latency is the caller's to sleep before calling this (a blocking driver sleeps, an
    /// async one awaits its timer).
    pub fn apply<T>(&self, call: impl FnOnce() -> T) -> Chaotic<T> {
        if let Some(verdict) = self.fault {
            return Chaotic::Fault(verdict);
        }
        let output = call();
        match self.outcome {
            Some(verdict) => Chaotic::Substituted { output, verdict },
            None => Chaotic::Upstream(output),
        }
    }
}

// Defined with the events that report it, below this policy (no upward import).
pub use crate::observe::Injected;

/// One attempt's output under chaos: the call's own, a fault in its place, or the call's
/// output with a substituted verdict.
///
/// ```
/// use resilix::chaos::Chaotic;
/// use resilix::Verdict;
///
/// let answered = Chaotic::Substituted { output: "ok", verdict: Verdict::Transient };
/// assert_eq!(answered.output(), Some(&"ok"));
/// assert_eq!(Chaotic::<&str>::Fault(Verdict::Transient).into_output(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Chaotic<T> {
    /// Nothing injected after the call: its output.
    Upstream(T),
    /// No call was made: the injected verdict.
    Fault(Verdict),
    /// The call's output, reported with `verdict`.
    Substituted {
        /// What the call returned.
        output: T,
        /// The verdict the policies see instead of the output's own.
        verdict: Verdict,
    },
}

impl<T> Chaotic<T> {
    /// The call's output, if a call was made.
    pub fn output(&self) -> Option<&T> {
        match self {
            Chaotic::Upstream(output) | Chaotic::Substituted { output, .. } => Some(output),
            Chaotic::Fault(_) => None,
        }
    }

    /// The call's output, if a call was made.
    pub fn into_output(self) -> Option<T> {
        match self {
            Chaotic::Upstream(output) | Chaotic::Substituted { output, .. } => Some(output),
            Chaotic::Fault(_) => None,
        }
    }

    /// Whether chaos decided this attempt's verdict.
    pub const fn is_injected(&self) -> bool {
        !matches!(self, Chaotic::Upstream(_))
    }
}

/// A classifier for [`Chaotic`] outputs: an injected verdict stands; the call's own output is
/// classified by the inner classifier.
///
/// ```
/// use resilix::chaos::{ChaosClassifier, Chaotic};
/// use resilix::classify::{Classify, ResultClassifier};
/// use resilix::Verdict;
///
/// let c = ChaosClassifier(ResultClassifier::new());
/// assert_eq!(c.classify(&Chaotic::Upstream(Ok::<u8, ()>(1))), Verdict::Success);
/// assert_eq!(c.classify(&Chaotic::<Result<u8, ()>>::Fault(Verdict::Timeout)), Verdict::Timeout);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChaosClassifier<C>(pub C);

impl<T, C: Classify<T>> Classify<Chaotic<T>> for ChaosClassifier<C> {
    fn classify(&self, outcome: &Chaotic<T>) -> Verdict {
        match outcome {
            Chaotic::Upstream(output) => self.0.classify(output),
            Chaotic::Fault(verdict) | Chaotic::Substituted { verdict, .. } => *verdict,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
