//! What an adapter needs to offer a bounded wait for a bulkhead slot: the settings, and a
//! fixed-capacity queue of waiters that never allocates.
//!
//! The queue is a plain `&mut self` structure: the adapter keeps it under its own lock (a
//! `std::sync::Mutex` in a tokio adapter, a critical-section mutex on embassy) and drives it
//! with the protocol in the [bulkhead docs](super#waiting-for-a-slot-the-protocol-for-async-adapters).
//! Every operation is a scan of at most `N` entries, which at the sizes a bounded wait queue
//! should have (tens) is cheaper than keeping it sorted.
//!
//! ```
//! use core::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder, WaitQueue};
//! use resilix::time::Instant;
//!
//! let config = WaitConfig::new(2, Duration::from_millis(50), WaitOrder::Fifo).unwrap();
//! let mut queue: WaitQueue<&str, 8> = WaitQueue::new();
//! queue.push("first", Instant::ZERO, &config).unwrap();
//! queue.push("second", Instant::from_millis(10), &config).unwrap();
//! assert!(queue.push("third", Instant::from_millis(20), &config).is_err(), "max 2 waiters");
//! assert_eq!(queue.pop(config.order()), Some("first"));
//! // At 60 ms the second waiter (deadline 60 ms) has waited long enough.
//! assert_eq!(queue.pop_expired(Instant::from_millis(60)), Some("second"));
//! assert!(queue.is_empty());
//! ```

use core::fmt;
use core::time::Duration;

use crate::time::{Deadline, Instant};

/// Which waiter a freed slot goes to.
///
/// ```
/// use resilix::bulkhead::wait::WaitOrder;
///
/// assert_eq!(WaitOrder::default(), WaitOrder::Fifo);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WaitOrder {
    /// Oldest first: fair under a short burst. The default, as resilience4j's
    /// `fairCallHandling = true` and tokio's `Semaphore`.
    #[default]
    Fifo,
    /// Newest first: under sustained overload the oldest waiter's caller has most likely given
    /// up, and the newest is the one still worth serving (Facebook's adaptive LIFO, in the
    /// essay).
    Lifo,
}

/// How long and how many callers may wait for a bulkhead slot.
///
/// The default is no waiting: a full bulkhead refuses at once (resilience4j's
/// `maxWaitDuration = 0`, failsafe-go's `maxWaitTime = 0`). Failing fast is what frees
/// capacity; a wait only helps with bursts shorter than `max_wait`.
///
/// ```
/// use core::time::Duration;
/// use resilix::bulkhead::wait::{WaitConfig, WaitConfigError, WaitOrder};
///
/// assert!(!WaitConfig::default().allows_waiting());
/// let w = WaitConfig::new(16, Duration::from_millis(200), WaitOrder::Lifo).unwrap();
/// assert_eq!((w.max_waiters(), w.order()), (16, WaitOrder::Lifo));
/// assert_eq!(
///     WaitConfig::new(16, Duration::ZERO, WaitOrder::Fifo),
///     Err(WaitConfigError::WaitersWithoutWait)
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WaitConfig {
    max_waiters: u32,
    max_wait: Duration,
    order: WaitOrder,
}

impl WaitConfig {
    /// No waiting: refuse at once when full (resilience4j and failsafe-go defaults).
    pub const NO_WAIT: WaitConfig = WaitConfig {
        max_waiters: 0,
        max_wait: Duration::ZERO,
        order: WaitOrder::Fifo,
    };

    /// Up to `max_waiters` callers wait, each at most `max_wait`, served in `order`.
    ///
    /// Both zero means no waiting ([`Self::NO_WAIT`]). One zero and not the other is refused:
    /// it is a half-configured wait, and silently reading it as "no waiting" would hide the
    /// mistake.
    pub const fn new(
        max_waiters: u32,
        max_wait: Duration,
        order: WaitOrder,
    ) -> Result<Self, WaitConfigError> {
        let no_time = max_wait.is_zero();
        if max_waiters > 0 && no_time {
            return Err(WaitConfigError::WaitersWithoutWait);
        }
        if max_waiters == 0 && !no_time {
            return Err(WaitConfigError::WaitWithoutWaiters);
        }
        Ok(WaitConfig {
            max_waiters,
            max_wait,
            order,
        })
    }

    /// The most callers that may wait at once.
    pub const fn max_waiters(&self) -> u32 {
        self.max_waiters
    }

    /// The longest one caller waits.
    pub const fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Which waiter a freed slot goes to.
    pub const fn order(&self) -> WaitOrder {
        self.order
    }

    /// Whether any caller may wait at all.
    pub const fn allows_waiting(&self) -> bool {
        self.max_waiters > 0
    }
}

impl Default for WaitConfig {
    fn default() -> Self {
        Self::NO_WAIT
    }
}

/// Why a [`WaitConfig`] was refused.
///
/// ```
/// use resilix::bulkhead::wait::WaitConfigError;
///
/// assert!(format!("{}", WaitConfigError::WaitWithoutWaiters).contains("max_waiters"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WaitConfigError {
    /// `max_waiters` is positive but `max_wait` is zero: nobody could wait.
    WaitersWithoutWait,
    /// `max_wait` is positive but `max_waiters` is zero: there is no room to wait in.
    WaitWithoutWaiters,
}

impl fmt::Display for WaitConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitConfigError::WaitersWithoutWait => {
                "bulkhead wait: max_waiters > 0 but max_wait is 0; set a max_wait, or set \
                 max_waiters to 0 to refuse at once"
            }
            WaitConfigError::WaitWithoutWaiters => {
                "bulkhead wait: max_wait > 0 but max_waiters is 0; set max_waiters, or set \
                 max_wait to 0 to refuse at once"
            }
        })
    }
}

impl core::error::Error for WaitConfigError {}

/// A waiter's place in a [`WaitQueue`], to leave it early ([`WaitQueue::remove`]) when the
/// waiting future is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ticket(u64);

#[derive(Debug)]
struct Waiter<T> {
    // Arrival number: orders FIFO and LIFO. A u64 under `&mut` (not an atomic) never wraps.
    arrival: u64,
    deadline: Deadline,
    item: T,
}

/// A fixed-capacity queue of waiters (`T` is whatever the adapter wakes: a `Waker`, a task
/// id, a signal). It holds at most `min(N, max_waiters)` at once and never allocates.
///
/// ```
/// use core::time::Duration;
/// use resilix::bulkhead::wait::{WaitConfig, WaitOrder, WaitQueue};
/// use resilix::time::Instant;
///
/// let lifo = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Lifo).unwrap();
/// let mut q: WaitQueue<u32, 4> = WaitQueue::new();
/// let t1 = q.push(1, Instant::ZERO, &lifo).unwrap();
/// q.push(2, Instant::ZERO, &lifo).unwrap();
/// q.push(3, Instant::ZERO, &lifo).unwrap();
/// assert_eq!(q.remove(t1), Some(1)); // its future was dropped
/// assert_eq!(q.pop(WaitOrder::Lifo), Some(3));
/// assert_eq!(q.next_deadline().unwrap().instant(), Instant::from_secs(1));
/// ```
#[derive(Debug)]
pub struct WaitQueue<T, const N: usize> {
    entries: [Option<Waiter<T>>; N],
    len: usize,
    arrivals: u64,
}

impl<T, const N: usize> WaitQueue<T, N> {
    /// An empty queue.
    pub const fn new() -> Self {
        WaitQueue {
            entries: [const { None }; N],
            len: 0,
            arrivals: 0,
        }
    }

    /// Joins the queue at `now`, to wait until `now + config.max_wait()` at the latest.
    /// Refused — the item handed back — when `max_waiters` (or `N`) are already waiting:
    /// the caller is then refused with `bulkhead-full`.
    pub fn push(&mut self, item: T, now: Instant, config: &WaitConfig) -> Result<Ticket, T> {
        let limit = N.min(usize::try_from(config.max_waiters()).unwrap_or(usize::MAX));
        if self.len >= limit {
            return Err(item);
        }
        let Some(free) = self.entries.iter_mut().find(|e| e.is_none()) else {
            return Err(item);
        };
        let arrival = self.arrivals;
        self.arrivals += 1;
        *free = Some(Waiter {
            arrival,
            deadline: Deadline::after(now, config.max_wait()),
            item,
        });
        self.len += 1;
        Ok(Ticket(arrival))
    }

    /// Queues again, at the place `ticket` had, a waiter that was popped (woken) and found
    /// the slot taken by a caller that skipped the queue: waking it must not cost it its
    /// turn. Refused, the item handed back, when the queue is full.
    pub(crate) fn rejoin(
        &mut self,
        item: T,
        ticket: Ticket,
        deadline: Deadline,
        config: &WaitConfig,
    ) -> Result<Ticket, T> {
        let limit = N.min(usize::try_from(config.max_waiters()).unwrap_or(usize::MAX));
        if self.len >= limit {
            return Err(item);
        }
        let Some(free) = self.entries.iter_mut().find(|e| e.is_none()) else {
            return Err(item);
        };
        // Arrival numbers are unique and this one left the queue when it was popped, so the
        // order among the others is kept.
        *free = Some(Waiter {
            arrival: ticket.0,
            deadline,
            item,
        });
        self.len += 1;
        Ok(ticket)
    }

    /// Takes the waiter a freed slot goes to: the oldest (FIFO) or the newest (LIFO).
    pub fn pop(&mut self, order: WaitOrder) -> Option<T> {
        let pick = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|w| (i, w.arrival)));
        let index = match order {
            WaitOrder::Fifo => pick.min_by_key(|&(_, a)| a),
            WaitOrder::Lifo => pick.max_by_key(|&(_, a)| a),
        }?
        .0;
        self.take(index)
    }

    /// Takes one waiter whose wait is over at `now` (the earliest deadline first), to be woken
    /// and refused with `bulkhead-full`. Call until `None`.
    pub fn pop_expired(&mut self, now: Instant) -> Option<T> {
        let index = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|w| (i, w.deadline)))
            .filter(|&(_, d)| d.has_passed(now))
            .min_by_key(|&(_, d)| d)?
            .0;
        self.take(index)
    }

    /// Leaves the queue early (the waiting future was dropped). `None` if the waiter was
    /// already popped.
    pub fn remove(&mut self, ticket: Ticket) -> Option<T> {
        let index = self
            .entries
            .iter()
            .position(|e| e.as_ref().is_some_and(|w| w.arrival == ticket.0))?;
        self.take(index)
    }

    /// The earliest deadline among the waiters: when the adapter's timer should next fire.
    pub fn next_deadline(&self) -> Option<Deadline> {
        self.entries
            .iter()
            .filter_map(|e| e.as_ref().map(|w| w.deadline))
            .min()
    }

    /// How many are waiting.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether nobody waits.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn take(&mut self, index: usize) -> Option<T> {
        let waiter = self.entries[index].take()?;
        self.len -= 1;
        Some(waiter.item)
    }
}

impl<T, const N: usize> Default for WaitQueue<T, N> {
    fn default() -> Self {
        Self::new()
    }
}
