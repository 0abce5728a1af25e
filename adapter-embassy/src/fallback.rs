use core::cell::RefCell;

use critical_section::Mutex;

use resilix::fallback::KnownGood;

/// The last output a call's classifier called a `Success`, kept for fallbacks
/// ([`Fallback::LastKnownGood`](crate::Fallback::LastKnownGood)), in a `static`.
///
/// Guarded by a critical section, held only to clone in or out: keep `T` small (a reading,
/// a status word).
///
/// ```
/// use resilix_embassy::LastKnownGood;
///
/// static LAST_READING: LastKnownGood<u16> = LastKnownGood::new();
/// assert_eq!(LAST_READING.get(), None);
/// LAST_READING.set(412);
/// assert_eq!(LAST_READING.get(), Some(412));
/// ```
#[derive(Debug)]
pub struct LastKnownGood<T> {
    value: Mutex<RefCell<Option<T>>>,
}

impl<T> Default for LastKnownGood<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> LastKnownGood<T> {
    /// An empty store.
    pub const fn new() -> Self {
        LastKnownGood {
            value: Mutex::new(RefCell::new(None)),
        }
    }

    /// Remembers `value`.
    pub fn set(&self, value: T) {
        critical_section::with(|cs| {
            self.value.borrow(cs).replace(Some(value));
        });
    }

    /// The remembered value, if any.
    pub fn get(&self) -> Option<T>
    where
        T: Clone,
    {
        critical_section::with(|cs| self.value.borrow(cs).borrow().clone())
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
