//! The inbound admission against its plain model (`resilix_reference::inbound`), steered by the
//! fuzzer: the config (fixed or adaptive limit, queue, reserve, CoDel's target and interval from
//! 1 µs to an hour), then every gap (1 ns to ten years, or busy ones), arrival, priority,
//! deadline, verdict and cancellation come from the input (then from a generator seeded by it,
//! `timeline::Bytes`). Panics on the first decision, dispatch or count on which they differ, or
//! if a slot or waiting place is left over.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::inbound::{CapacityConfig, CodelConfig, Inbound, InboundConfig};
use resilix::limiter::LimiterConfig;
use resilix::random::Random;
use resilix::time::Instant;
use resilix_reference::inbound::{InboundTwin, drive_inbound};
use resilix_reference::timeline::{Bytes, Gaps, Timeline};
use resilix_reference::twin::Mix;

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let limit = 1 + rng.below(8) as u32;
    let limiter = if rng.below(2) == 0 {
        InboundConfig::fixed(limit).limiter
    } else {
        LimiterConfig {
            initial_limit: limit,
            min_limit: 1,
            max_limit: 64,
            probe_multiplier: 0,
            min_window: Duration::from_millis(1 + rng.below(100)),
            max_window: Duration::from_millis(200),
            ..LimiterConfig::gradient2()
        }
    };
    let interval = 2 + rng.below(3_600_000_000_000 - 2);
    let interval = if rng.below(2) == 0 { interval % 1_000_000_000 + 2 } else { interval };
    let target = 1 + rng.below(interval - 1);
    // Half with the adaptive capacity under the limiter.
    let capacity = (rng.below(2) == 0).then(|| {
        let min_window = Duration::from_millis(1 + rng.below(100));
        CapacityConfig {
            initial: 1 + rng.below(8) as u32,
            min: 1,
            max: 64,
            min_window,
            max_window: min_window + Duration::from_millis(rng.below(100)),
            window_samples: 1 + rng.below(40) as u32,
        }
    });
    let config = InboundConfig {
        limiter,
        capacity,
        queue: rng.below(17) as u32,
        reserved: rng.below(1000) as f32 / 1000.0,
        codel: CodelConfig {
            target: Duration::from_nanos(target),
            interval: Duration::from_nanos(interval),
        },
        retry_after: Duration::from_millis(rng.below(5_000)),
    };
    let real = Inbound::new(config).expect("a valid config");
    let mut twin = InboundTwin::new(&real, &config);
    let gaps = if rng.below(2) == 0 {
        Gaps::LONG
    } else {
        Gaps::between(Duration::from_nanos(1), Duration::from_millis(1 + rng.below(50)))
    };
    let mut timeline = Timeline::new(Instant::from_nanos(rng.next_u64() >> 8), gaps);
    if let Err(m) = drive_inbound(&mut twin, &mut timeline, &mut rng, 256, Mix::MOSTLY_HEALTHY) {
        panic!("{config:?}: {m}");
    }
    assert_eq!(real.in_flight() as usize, twin.running());
    drop(twin);
    assert_eq!((real.in_flight(), real.waiting()), (0, 0), "a slot or place leaked");
});
