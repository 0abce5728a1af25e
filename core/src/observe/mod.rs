//! Observation without pollution: typed events to an observer you supply.
//!
//! Refusals reach only [`Event::Rejected`]; only settled calls reach [`Event::Executed`] and so
//! the duration histogram (docs/design/spec.md §8: shed requests never pollute latency metrics). Policies
//! report their own state changes ([`Event::CircuitTransition`], [`Event::LimitChanged`]) and
//! the retry driver reports its decisions. The no-op observer is `()`.
//!
//! ```
//! use core::cell::Cell;
//! use resilix::observe::{Event, Observer};
//!
//! #[derive(Default)]
//! struct CountRejections(Cell<u32>);
//! impl Observer for CountRejections {
//!     fn on_event(&self, event: &Event) {
//!         if let Event::Rejected { .. } = event {
//!             self.0.set(self.0.get() + 1);
//!         }
//!     }
//! }
//! ```
//!
//! Design notes: docs/design/observe.md

pub mod advice;
mod event;
pub mod histogram;

pub use advice::{AdviceError, COMMENT_FACTOR, TimeoutAdvice, TimeoutFit};
pub use event::{
    CircuitState, Degradation, Event, HedgeRefusal, Injected, PolicyKind, TransitionCause,
};
pub use histogram::DurationHistogram;

/// Receives the typed events of policies, pipelines and retry drivers.
///
/// Called synchronously on the admit/settle path, so an implementation must be cheap and must
/// not block (count, record into a histogram, push into a bounded queue). It takes `&self`:
/// use atomics or cells for state.
pub trait Observer {
    /// One event. The default does nothing.
    fn on_event(&self, event: &Event) {
        let _ = event;
    }
}

/// The no-op observer.
impl Observer for () {}

impl<O: Observer + ?Sized> Observer for &O {
    fn on_event(&self, event: &Event) {
        (**self).on_event(event)
    }
}

/// Both observers see every event, the first first.
impl<A: Observer, B: Observer> Observer for (A, B) {
    fn on_event(&self, event: &Event) {
        self.0.on_event(event);
        self.1.on_event(event);
    }
}
