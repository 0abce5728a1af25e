//! Drive resilix's core policies from embassy.
//!
//! `no_std`, no heap. The retry loop is the core's ([`resilix::execute::execute`]); this crate
//! lends it embassy's clock and timers ([`EmbassyTimer`]) and adds [`Resilience`] (a pipeline
//! with its observer and classifier) and fallbacks ([`LastKnownGood`] in a `static`).
//!
//! Everything runtime-agnostic is the core's: [`Resilience`] is
//! [`resilix::resilience::Resilience`] on [`EmbassyTimer`], bounded waiting is
//! [`resilix::waiters`] (with a [`SlotWaiters`] list behind a critical section), fallbacks are
//! [`resilix::fallback`]. What this crate adds is what must differ on firmware:
//!
//! * [`EmbassyClock`] converts embassy ticks to nanoseconds exactly, never truncating to whole
//!   milliseconds (backon does), and rounds the other way up so a timer never fires early.
//! * Policies live in `static`s; the pipeline borrows them (`&'static Bulkhead`, ...).
//! * **Randomness is yours to supply**: firmware has no entropy at start-up, and a seed shared
//!   by every device would make them all jitter alike. Pass a generator per task to
//!   `call(options).rng(&mut rng)`: a hardware RNG through the core's `rand_core` bridges, or a
//!   [`SeededRandom`](resilix::random::SeededRandom) seeded from a serial number or a TRNG.
//!
//! ```no_run
//! use core::time::Duration;
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix_embassy::Resilience;
//!
//! static I2C_BUS: Bulkhead = Bulkhead::new(match BulkheadConfig::new(1) {
//!     Ok(c) => c,
//!     Err(_) => panic!("invalid bulkhead config"),
//! });
//!
//! async fn read_sensor() -> Result<u16, ()> { Ok(421) }
//!
//! async fn sensor_task(device_serial: u64) {
//!     let pipeline = Pipeline::new()
//!         .bulkhead(&I2C_BUS)
//!         .attempt_timeout(Duration::from_millis(20));
//!     let resilience = Resilience::new(&pipeline);
//!     let mut rng = SeededRandom::new(device_serial);
//!     let reading = resilience.call(CallOptions::default()).rng(&mut rng).run(read_sensor).await;
//! }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![no_std]

//!
//! Waiting for a slot, with the policy in a `static` (the waiter list is the core's
//! fixed-capacity queue behind a critical section, so it needs no heap):
//!
//! ```no_run
//! use core::time::Duration;
//! use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::call::CallOptions;
//! use resilix::pipeline::Pipeline;
//! use resilix::random::SeededRandom;
//! use resilix_embassy::{Resilience, SlotWaiters};
//!
//! static RADIO: Bulkhead<SlotWaiters<4>> = Bulkhead::with_hook(
//!     match BulkheadConfig::new(1) { Ok(c) => c, Err(_) => panic!() },
//!     SlotWaiters::new(match WaitConfig::new(4, Duration::from_millis(50), WaitOrder::Fifo) {
//!         Ok(c) => c,
//!         Err(_) => panic!(),
//!     }),
//! );
//!
//! async fn send(frame: &[u8]) -> Result<(), ()> { Ok(()) }
//!
//! async fn task(serial: u64) {
//!     let pipeline = Pipeline::new().bulkhead(&RADIO);
//!     let resilience = Resilience::new(&pipeline);
//!     let mut rng = SeededRandom::new(serial);
//!     let sent = resilience
//!         .call(CallOptions::default()).wait_on(&RADIO).rng(&mut rng).run(|| send(b"hello"))
//!         .await;
//! }
//! ```

mod fallback;
mod lock;

pub use fallback::LastKnownGood;
pub use lock::{CsLock, SlotWaiters};

pub use resilix::execute::{Attempted, ExecuteError};
pub use resilix::fallback::{Fallback, Served};
pub use resilix::waiters::WaitGate;

use resilix::execute::Timer;
use resilix::time::{Clock, Instant};
use resilix::waiters::WaitTimer;

/// A [`Clock`] on `embassy_time::Instant` (the timeline starts at boot).
///
/// ```no_run
/// use resilix::time::Clock;
/// use resilix_embassy::EmbassyClock;
/// let now = EmbassyClock.now();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct EmbassyClock;

/// Converts embassy ticks to a resilix instant without losing precision.
///
/// ```
/// use resilix::time::Instant;
/// use resilix_embassy::{from_embassy, to_embassy};
///
/// // 1 MHz ticks on the host: 1_234 ticks is 1.234 ms, not 1 ms.
/// let t = embassy_time::Instant::from_ticks(1_234);
/// assert_eq!(from_embassy(t), Instant::from_micros(1_234));
/// assert_eq!(to_embassy(from_embassy(t)), t);
/// ```
pub const fn from_embassy(t: embassy_time::Instant) -> Instant {
    let ticks = t.as_ticks() as u128;
    let nanos = ticks * 1_000_000_000 / embassy_time::TICK_HZ as u128;
    Instant::from_nanos(if nanos > u64::MAX as u128 {
        u64::MAX
    } else {
        nanos as u64
    })
}

/// Converts a resilix instant to embassy ticks, rounding up so a timer never fires early.
pub const fn to_embassy(t: Instant) -> embassy_time::Instant {
    let nanos = t.as_nanos() as u128;
    let ticks = (nanos * embassy_time::TICK_HZ as u128).div_ceil(1_000_000_000);
    embassy_time::Instant::from_ticks(if ticks > u64::MAX as u128 {
        u64::MAX
    } else {
        ticks as u64
    })
}

impl Clock for EmbassyClock {
    fn now(&self) -> Instant {
        from_embassy(embassy_time::Instant::now())
    }
}

/// The core's [`Timer`] on embassy: [`EmbassyClock`] and `embassy_time::Timer::at`.
///
/// ```no_run
/// use resilix::execute::Timer;
/// use resilix_embassy::EmbassyTimer;
///
/// # async fn f() {
/// let at = EmbassyTimer.now() + core::time::Duration::from_micros(250);
/// EmbassyTimer.sleep_until(at).await; // sub-millisecond precision is kept
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct EmbassyTimer;

/// Every `Ok` a success, every `Err` transient: an HTTP client's responses need a classifier
/// that reads them.
impl resilix::resilience::DefaultClassifier for EmbassyTimer {
    type Classifier = resilix::classify::ResultClassifier;
}

impl Timer for EmbassyTimer {
    type Sleep<'a> = embassy_time::Timer;

    fn now(&self) -> Instant {
        EmbassyClock.now()
    }

    fn sleep_until(&self, at: Instant) -> embassy_time::Timer {
        embassy_time::Timer::at(to_embassy(at))
    }
}

/// A waiter's sleep: an embassy timer owns its expiry already.
impl WaitTimer for EmbassyTimer {
    type OwnedSleep = embassy_time::Timer;

    fn sleep_owned(&self, at: Instant) -> embassy_time::Timer {
        self.sleep_until(at)
    }
}

/// A pipeline with its observer and classifier, ready to run calls on embassy: the core's
/// [`resilix::resilience::Resilience`] on [`EmbassyTimer`], with no seed source (`()`), so
/// each call takes a generator (`call(options).rng(&mut rng)`, then `run`, `run_or`, or a
/// wait first); or give it one with `.seeds(FixedSeeds::new(serial))`.
///
/// `P` is anything that dereferences to a [`Pipeline`](resilix::pipeline::Pipeline); on
/// firmware, `&pipeline` built in the task from `&'static` policies. See the
/// [crate docs](crate) for an example.
pub type Resilience<P, O = (), C = resilix::classify::ResultClassifier> =
    resilix::resilience::Resilience<P, EmbassyTimer, (), O, C>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_keeps_sub_millisecond_precision_both_ways() {
        // The host driver ticks at 1 MHz: 1_234 ticks is 1.234 ms, not 1 ms.
        let t = embassy_time::Instant::from_ticks(1_234);
        let ours = from_embassy(t);
        assert_eq!(ours, Instant::from_micros(1_234));
        assert_eq!(to_embassy(ours), t);
        // Rounding up: 1 ns past a tick becomes the next tick.
        assert_eq!(to_embassy(Instant::from_nanos(1_234_001)).as_ticks(), 1_235);
        // The ends saturate instead of wrapping.
        assert_eq!(to_embassy(Instant::MAX).as_ticks(), (u64::MAX / 1_000) + 1);
    }

    #[test]
    fn clock_reads_the_driver() {
        let a = EmbassyClock.now();
        let b = EmbassyClock.now();
        assert!(b >= a);
    }
}
