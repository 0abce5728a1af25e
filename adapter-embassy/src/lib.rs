//! Drive resilix's core policies from embassy.
//!
//! `no_std`, no heap. The retry loop is the core's ([`resilix::execute::execute`]); this crate
//! lends it embassy's clock and timers ([`EmbassyTimer`]) and adds [`Resilience`] (a pipeline
//! with its observer and classifier) and fallbacks ([`LastKnownGood`] in a `static`).
//!
//! * [`EmbassyClock`] converts embassy ticks to nanoseconds exactly, never truncating to whole
//!   milliseconds (backon does), and rounds the other way up so a timer never fires early.
//! * Policies live in `static`s; the pipeline borrows them (`&'static Bulkhead`, ...).
//! * **Randomness is yours to supply**: firmware has no entropy at start-up, and a seed shared
//!   by every device would make them all jitter alike. Pass a generator per task to
//!   [`Resilience::execute`]: a hardware RNG through the core's `rand_core` bridges, or a
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
//!     let reading = resilience.execute(&mut rng, CallOptions::default(), read_sensor).await;
//! }
//! ```
#![no_std]

mod fallback;
pub mod wait;

pub use fallback::{Fallback, LastKnownGood, Served};
pub use wait::{BulkheadGate, SlotWaiters};

use core::future::Future;
use core::ops::Deref;

use resilix::bulkhead::Bulkhead;
use resilix::call::CallOptions;
use resilix::classify::{Classify, ResultClassifier};
use resilix::execute::{ExecuteError, Timer, execute, execute_gated};
use resilix::observe::{Event, Observer};
use resilix::permit::Policy;
use resilix::pipeline::Pipeline;
use resilix::random::Random;
use resilix::retry::RetryPolicy;
use resilix::time::{Clock, Instant};

pub use resilix::execute::Attempted;

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

impl Timer for EmbassyTimer {
    type Sleep<'a> = embassy_time::Timer;

    fn now(&self) -> Instant {
        EmbassyClock.now()
    }

    fn sleep_until(&self, at: Instant) -> embassy_time::Timer {
        embassy_time::Timer::at(to_embassy(at))
    }
}

/// A pipeline with its observer and classifier, ready to run calls on embassy.
///
/// `P` is anything that dereferences to a [`Pipeline`]; on firmware, `&pipeline` built in the
/// task from `&'static` policies. See the [crate docs](crate) for an example.
#[derive(Debug)]
pub struct Resilience<P, O = (), C = ResultClassifier> {
    pipeline: P,
    observer: O,
    classifier: C,
}

impl<P> Resilience<P> {
    /// Runs calls through `pipeline`, classifying `Result`s (every `Err` a transient failure),
    /// observing nothing.
    pub const fn new(pipeline: P) -> Self {
        Resilience {
            pipeline,
            observer: (),
            classifier: ResultClassifier::new(),
        }
    }
}

impl<P, O, C> Resilience<P, O, C> {
    /// Reports every event to `observer` (a defmt logger, a counter in a `static`).
    pub fn observer<O2: Observer>(self, observer: O2) -> Resilience<P, O2, C> {
        Resilience {
            pipeline: self.pipeline,
            observer,
            classifier: self.classifier,
        }
    }

    /// Turns each attempt's output into a verdict with `classifier`.
    pub fn classifier<C2>(self, classifier: C2) -> Resilience<P, O, C2> {
        Resilience {
            pipeline: self.pipeline,
            observer: self.observer,
            classifier,
        }
    }
}

impl<P, O, C, Rt, T, B, L, H, Rl> Resilience<P, O, C>
where
    P: Deref<Target = Pipeline<Rt, T, B, L, H, Rl>>,
    Rt: RetryPolicy,
    T: Policy,
    B: Policy,
    L: Policy,
    H: Policy,
    Rl: Policy,
    O: Observer,
{
    /// Runs `operation` (called once per attempt) through the pipeline, drawing jitter and
    /// shedding decisions from `rng`. Returns the output, or the core's typed error. Dropping
    /// the future at any await point gives back every permit and records nothing.
    pub async fn execute<R, F, Fut>(
        &self,
        rng: &mut R,
        options: CallOptions,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        R: Random + ?Sized,
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        execute(
            &*self.pipeline,
            &EmbassyTimer,
            rng,
            &self.observer,
            options,
            &self.classifier,
            operation,
        )
        .await
    }

    /// [`Self::execute`], with each attempt waiting (boundedly) for a slot of `bulkhead`
    /// instead of being refused at once: see [`wait`]. `bulkhead` must be the one in the
    /// pipeline's bulkhead slot.
    pub async fn execute_waiting<const N: usize, R, F, Fut>(
        &self,
        bulkhead: &Bulkhead<SlotWaiters<N>>,
        rng: &mut R,
        options: CallOptions,
        operation: F,
    ) -> Result<Fut::Output, ExecuteError<Fut::Output>>
    where
        R: Random + ?Sized,
        F: FnMut() -> Fut,
        Fut: Future,
        C: Classify<Fut::Output>,
    {
        execute_gated(
            &*self.pipeline,
            &EmbassyTimer,
            rng,
            &self.observer,
            options,
            &self.classifier,
            &BulkheadGate::new(bulkhead),
            operation,
        )
        .await
    }

    /// [`Self::execute`], answered by `fallback` on refusal, give-up or a passed deadline; the
    /// observer hears [`Event::FallbackServed`]. Successes are remembered in a
    /// [`LastKnownGood`] store when one is given.
    pub async fn execute_or<R, F, Fut>(
        &self,
        rng: &mut R,
        options: CallOptions,
        fallback: Fallback<'_, Fut::Output>,
        operation: F,
    ) -> Result<Served<Fut::Output>, ExecuteError<Fut::Output>>
    where
        R: Random + ?Sized,
        F: FnMut() -> Fut,
        Fut: Future,
        Fut::Output: Clone,
        C: Classify<Fut::Output>,
    {
        let result = self.execute(rng, options, operation).await;
        fallback.resolve(result, &self.classifier, |cause| {
            self.observer.on_event(&Event::FallbackServed { cause })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_keeps_sub_millisecond_precision_both_ways() {
        // The std driver ticks at 1 MHz: 1_234 ticks is 1.234 ms, not 1 ms.
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
