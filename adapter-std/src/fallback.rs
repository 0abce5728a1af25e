use std::sync::Mutex;

use resilix::fallback::KnownGood;

/// The last output a call's classifier called a `Success`, kept for fallbacks
/// ([`Fallback::LastKnownGood`](crate::Fallback::LastKnownGood)).
///
/// One store per thing worth remembering (a config document, a price list), shared by every
/// call that can answer with it. The lock is held only to clone in or out.
///
/// ```
/// use resilix_std::LastKnownGood;
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

impl<T: Clone> KnownGood<T> for LastKnownGood<T> {
    fn set(&self, value: T) {
        LastKnownGood::set(self, value)
    }
    fn get(&self) -> Option<T> {
        LastKnownGood::get(self)
    }
}
