use std::sync::Mutex;

use resilix::Verdict;
use resilix::classify::Classify;
use resilix::execute::ExecuteError;
use resilix::observe::Degradation;

/// The last output a call's classifier called a `Success`, kept for fallbacks.
///
/// One store per thing worth remembering (a config document, a price list), shared by every
/// call that can answer with it. The lock is held only to clone in or out.
///
/// ```
/// use resilix_tokio::LastKnownGood;
///
/// let cache = LastKnownGood::new();
/// assert_eq!(cache.get(), None::<u32>);
/// cache.set(5);
/// assert_eq!(cache.get(), Some(5));
/// ```
#[derive(Debug, Default)]
pub struct LastKnownGood<T> {
    value: Mutex<Option<T>>,
}

impl<T> LastKnownGood<T> {
    /// An empty store.
    pub const fn new() -> Self {
        LastKnownGood {
            value: Mutex::new(None),
        }
    }

    /// Remembers `value`.
    pub fn set(&self, value: T) {
        // A panic while holding this lock can only come from `T`'s own drop; the value is
        // still a whole `Option`, so a poisoned lock is safe to reuse.
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
    }

    /// The remembered value, if any.
    pub fn get(&self) -> Option<T>
    where
        T: Clone,
    {
        self.value.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// What answers a call when the upstream's answer is not available.
#[derive(Debug)]
pub enum Fallback<'a, T> {
    /// This value.
    Value(T),
    /// The last success remembered in the store; the error when there is none yet.
    LastKnownGood(&'a LastKnownGood<T>),
    /// The last success remembered in the store, else this value.
    LastKnownGoodOr(&'a LastKnownGood<T>, T),
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
    /// Serves `result`, or the fallback in its place; `served` hears each degradation.
    pub(crate) fn resolve<C: Classify<T> + ?Sized>(
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
            Err(error) => match store.and_then(LastKnownGood::get).or(default) {
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
