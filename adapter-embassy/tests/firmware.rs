//! The firmware-shaped example, run on the host on simulated time: what the breaker and the
//! fallback did.

mod common;
#[path = "../examples/sensor.rs"]
mod sensor;

use sensor::{FlakySensor, SENSOR_BREAKER, Tally, sensor_task};

#[test]
fn the_sensor_task_rides_out_an_outage() {
    let sensor = FlakySensor::new();
    let tally = Tally::default();
    let fresh = common::run(sensor_task(&sensor, &tally, 20));
    // The sensor is off the bus from 40 to 100 ms. The breaker opens during the outage, so
    // the task stops touching the bus instead of failing read after read; the refused reads
    // are answered from the last good value; a probe after the outage closes it again. Retries
    // with jittered backoff ride out single failures.
    assert!(tally.opened.get() >= 1, "the breaker opened");
    assert!(
        tally.closed.get() >= 1,
        "a probe closed it again after the outage"
    );
    assert!(
        tally.refused.get() >= 1,
        "reads were refused without touching the bus"
    );
    assert!(tally.retries.get() >= 1, "a failed read was retried");
    // Every try (20 first tries and the retries) either used the bus or was refused by the
    // open breaker, never both, never neither.
    assert_eq!(
        sensor.bus_reads() + tally.refused.get(),
        20 + tally.retries.get()
    );
    assert_eq!(
        fresh + tally.fallbacks.get(),
        20,
        "every read got an answer"
    );
    assert!(fresh >= 10, "most reads are fresh: {fresh}");
    assert_eq!(
        SENSOR_BREAKER.state(),
        resilix::breaker::CircuitState::Closed
    );
}
