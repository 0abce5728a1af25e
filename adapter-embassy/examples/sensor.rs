//! Firmware-shaped: a task reading a flaky I2C sensor through retry (jittered backoff), a
//! circuit breaker, a per-read timeout and a last-known-good fallback, with every policy in a
//! `static` and no heap.
//!
//! On the host it runs on simulated time (embassy-time's mock driver, advanced by the tests'
//! executor, `tests/common/mod.rs`), so it finishes at once and does the same every run; on a
//! board the same `sensor_task` is an `#[embassy_executor::task]` and `read_i2c` talks to the
//! bus. `tests/firmware.rs` runs it and checks what it did.
//!
//! ```sh
//! cargo run -p resilix-embassy --example sensor
//! ```

use core::cell::Cell;
use core::time::Duration;

use resilix::breaker::{Breaker, CallRing, CircuitState, Config};
use resilix::call::CallOptions;
use resilix::observe::{Event, Observer};
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
use resilix_embassy::{Fallback, LastKnownGood, Resilience, Served};

/// Opens when more than half of the last 4 reads failed; probes again after 30 ms.
pub static SENSOR_BREAKER: Breaker<CallRing<1>> = match Breaker::count_based(
    Config {
        minimum_calls: 4,
        open_wait: Duration::from_millis(30),
        open_jitter_percent: 0,
        ..Config::DEFAULT
    },
    4,
) {
    Ok(b) => b,
    Err(_) => panic!("invalid breaker config"),
};

/// Up to 3 tries per reading, 2 to 8 ms apart with full jitter.
pub static SENSOR_RETRY: Retry = Retry::unbudgeted(
    match RetryConfig::new(
        3,
        match Backoff::new(
            Strategy::FullJitter,
            Duration::from_millis(2),
            Duration::from_millis(8),
        ) {
            Ok(b) => b,
            Err(_) => panic!("invalid backoff"),
        },
    ) {
        Ok(c) => c,
        Err(_) => panic!("invalid retry config"),
    },
);

/// The last good reading, served while the sensor is unreachable.
pub static LAST_READING: LastKnownGood<Result<u16, BusError>> = LastKnownGood::new();

/// What the bus can fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusError {
    /// The sensor did not acknowledge its address.
    Nack,
}

/// A sensor that works, drops off the bus from 40 ms to 100 ms after its first read (a brown-out),
/// then recovers.
pub struct FlakySensor {
    reads: Cell<u32>,
    first_read: Cell<Option<embassy_time::Instant>>,
}

impl Default for FlakySensor {
    fn default() -> Self {
        Self::new()
    }
}

impl FlakySensor {
    /// A sensor that has not been read yet.
    pub const fn new() -> Self {
        FlakySensor {
            reads: Cell::new(0),
            first_read: Cell::new(None),
        }
    }

    /// How many times the bus was actually used.
    pub fn bus_reads(&self) -> u32 {
        self.reads.get()
    }

    /// One I2C transaction: 1 ms on the bus.
    pub async fn read_i2c(&self) -> Result<u16, BusError> {
        let n = self.reads.get() + 1;
        self.reads.set(n);
        let now = embassy_time::Instant::now();
        let first = self.first_read.get().unwrap_or(now);
        self.first_read.set(Some(first));
        let since = now - first;
        embassy_time::Timer::after(embassy_time::Duration::from_millis(1)).await;
        if (40..100).contains(&since.as_millis()) {
            Err(BusError::Nack)
        } else {
            Ok(400 + n as u16)
        }
    }
}

/// Counts what the policies did (a firmware would bump counters or defmt-log).
#[derive(Default)]
pub struct Tally {
    /// Reads the breaker refused without touching the bus.
    pub refused: Cell<u32>,
    /// Retries made after a failed read.
    pub retries: Cell<u32>,
    /// Readings served from the last known good value.
    pub fallbacks: Cell<u32>,
    /// Breaker transitions seen, in order.
    pub opened: Cell<u32>,
    /// Times the breaker closed again after a probe.
    pub closed: Cell<u32>,
}

impl Observer for Tally {
    fn on_event(&self, event: &Event) {
        match event {
            Event::Rejected { .. } => self.refused.set(self.refused.get() + 1),
            Event::FallbackServed { .. } => self.fallbacks.set(self.fallbacks.get() + 1),
            Event::RetryScheduled { .. } => self.retries.set(self.retries.get() + 1),
            Event::CircuitTransition { to, .. } => match to {
                CircuitState::Open => self.opened.set(self.opened.get() + 1),
                CircuitState::Closed => self.closed.set(self.closed.get() + 1),
                _ => {}
            },
            _ => {}
        }
    }
}

/// The task: `readings` reads, 10 ms apart. Returns how many were fresh.
pub async fn sensor_task(sensor: &FlakySensor, tally: &Tally, readings: u32) -> u32 {
    let pipeline = Pipeline::new()
        .retry(&SENSOR_RETRY)
        .breaker(&SENSOR_BREAKER)
        .attempt_timeout(Duration::from_millis(20));
    let resilience = Resilience::new(&pipeline).observer(tally);
    // A per-device seed (a serial number or a TRNG word on real hardware).
    let mut rng = SeededRandom::new(0x5EED_0001);
    let mut fresh = 0;
    for _ in 0..readings {
        let served = resilience
            .call(CallOptions::default())
            .rng(&mut rng)
            .run_or(Fallback::LastKnownGood(&LAST_READING), || sensor.read_i2c())
            .await;
        match served {
            Ok(Served::Fresh(Ok(value))) => {
                fresh += 1;
                report("fresh", value);
            }
            Ok(Served::Fallback {
                value: Ok(value), ..
            }) => report("last known good", value),
            other => report_failure(&other),
        }
        embassy_time::Timer::after(embassy_time::Duration::from_millis(10)).await;
    }
    fresh
}

fn report(what: &str, value: u16) {
    #[cfg(not(test))]
    println!("{what:>16}: {value}");
    let _ = (what, value);
}

fn report_failure<T: core::fmt::Debug>(outcome: &T) {
    #[cfg(not(test))]
    println!("{:>16}: {outcome:?}", "no reading");
    let _ = outcome;
}

// `tests/firmware.rs` includes this file and calls `sensor_task` itself, on its own executor.
#[cfg(not(test))]
#[path = "../tests/common/mod.rs"]
mod simulated;

#[cfg(not(test))]
fn main() {
    let sensor = FlakySensor::new();
    let tally = Tally::default();
    let fresh = simulated::run(sensor_task(&sensor, &tally, 20));
    println!(
        "{fresh} fresh of 20; bus used {} times; {} retries; breaker opened {} time(s), closed {} time(s); {} reads refused; {} fallbacks",
        sensor.bus_reads(),
        tally.retries.get(),
        tally.opened.get(),
        tally.closed.get(),
        tally.refused.get(),
        tally.fallbacks.get()
    );
}
