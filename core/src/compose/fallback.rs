//! Fallbacks: what answers a call when the upstream's answer is not available, written once
//! for every adapter.
//!
//! A [`Fallback`] is a static value, the last known good answer kept in a [`KnownGood`] store,
//! or both. An adapter supplies the store's storage (a `Mutex` on std, a critical section on
//! firmware); the logic of when to remember and when to serve is [`Fallback::resolve`]. Every
//! degradation is reported, so it shows in logs and metrics (the essay (docs/design/essay.md): degradation has to be
//! visible).
//!
//! ```
//! use core::cell::RefCell;
//! use resilix::classify::ResultClassifier;
//! use resilix::execute::{Attempted, ExecuteError};
//! use resilix::fallback::{Fallback, KnownGood, Served};
//! use resilix::retry::GiveUpReason;
//!
//! /// A single-threaded store; an adapter's is `Sync`.
//! struct Cell(RefCell<Option<Result<u32, ()>>>);
//! impl KnownGood<Result<u32, ()>> for Cell {
//!     fn set(&self, value: Result<u32, ()>) { *self.0.borrow_mut() = Some(value); }
//!     fn get(&self) -> Option<Result<u32, ()>> { self.0.borrow().clone() }
//! }
//!
//! let store = Cell(RefCell::new(None));
//! let classifier = ResultClassifier::new();
//! let fresh = Fallback::LastKnownGood(&store).resolve(Ok(Ok(3)), &classifier, |_| {});
//! assert_eq!(fresh, Ok(Served::Fresh(Ok(3))));
//! let failed = Err(ExecuteError::GaveUp {
//!     reason: GiveUpReason::AttemptsExhausted { attempts: 3 },
//!     attempts: 3,
//!     last: Attempted::Output(Err(())),
//! });
//! let mut heard = None;
//! let served = Fallback::LastKnownGood(&store).resolve(failed, &classifier, |c| heard = Some(c));
//! assert_eq!(served.unwrap().into_inner(), Ok(3));
//! assert!(heard.is_some(), "the degradation was reported");
//! ```

use crate::classify::Classify;
use crate::execute::ExecuteError;
use crate::observe::Degradation;
use crate::verdict::Verdict;

/// Where the last known good answer is kept. The adapter supplies the storage (its lock);
/// `get` clones out so the lock is held only for the copy.
pub trait KnownGood<T> {
    /// Remembers `value`, replacing what was there.
    fn set(&self, value: T);
    /// The remembered value, if any.
    fn get(&self) -> Option<T>;
}

/// What answers a call when the upstream's answer is not available.
pub enum Fallback<'a, T> {
    /// This value.
    Value(T),
    /// The last success remembered in the store; the error when there is none yet.
    LastKnownGood(&'a dyn KnownGood<T>),
    /// The last success remembered in the store, else this value.
    LastKnownGoodOr(&'a dyn KnownGood<T>, T),
}

impl<T: core::fmt::Debug> core::fmt::Debug for Fallback<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Fallback::Value(v) => f.debug_tuple("Value").field(v).finish(),
            Fallback::LastKnownGood(_) => f.write_str("LastKnownGood"),
            Fallback::LastKnownGoodOr(_, v) => f.debug_tuple("LastKnownGoodOr").field(v).finish(),
        }
    }
}

/// An answer, and whether it came from the upstream or from the fallback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Served<T> {
    /// The upstream's answer.
    Fresh(T),
    /// The fallback's, because of `cause`.
    Fallback {
        /// The answer.
        value: T,
        /// Why the upstream's was not available.
        cause: Degradation,
    },
}

impl<T> Served<T> {
    /// The answer, fresh or not.
    pub fn into_inner(self) -> T {
        match self {
            Served::Fresh(v) | Served::Fallback { value: v, .. } => v,
        }
    }

    /// Why the fallback answered, if it did.
    pub fn degradation(&self) -> Option<Degradation> {
        match self {
            Served::Fresh(_) => None,
            Served::Fallback { cause, .. } => Some(*cause),
        }
    }
}

impl<T: Clone> Fallback<'_, T> {
    /// Serves `result`, or the fallback in its place; `served` hears each degradation (an
    /// adapter reports it as [`crate::observe::Event::FallbackServed`]). A fresh output the
    /// classifier calls a `Success` is remembered in the store, if there is one.
    pub fn resolve<C: Classify<T> + ?Sized>(
        self,
        result: Result<T, ExecuteError<T>>,
        classifier: &C,
        served: impl FnOnce(Degradation),
    ) -> Result<Served<T>, ExecuteError<T>> {
        let (store, default) = match self {
            Fallback::Value(v) => (None, Some(v)),
            Fallback::LastKnownGood(s) => (Some(s), None),
            Fallback::LastKnownGoodOr(s, v) => (Some(s), Some(v)),
        };
        match result {
            Ok(value) => {
                if let Some(store) = store {
                    // Only successes are worth repeating; an answered error (a 404) is not.
                    if classifier.classify(&value) == Verdict::Success {
                        store.set(value.clone());
                    }
                }
                Ok(Served::Fresh(value))
            }
            Err(error) => match store.and_then(|s| s.get()).or(default) {
                Some(value) => {
                    let cause = error.degradation();
                    served(cause);
                    Ok(Served::Fallback { value, cause })
                }
                None => Err(error),
            },
        }
    }
}
