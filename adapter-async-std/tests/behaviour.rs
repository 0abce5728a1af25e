//! The shared behavioural suite on real `async-io` timers, under async-std and under smol.
//! Sleeps are a few milliseconds; lower bounds are exact (timers never fire early), upper
//! bounds allow for a loaded machine.

use std::time::Duration;

use resilix_async_std::{AsyncIoTimer, LastKnownGood};
use resilix_testkit as kit;
use resilix_testkit::Tolerance;

const UNIT: Duration = Duration::from_millis(2);
// Real timers on a shared 2-core machine: generous, but a lost retry delay (20 ms) or a
// missed deadline would still exceed it relative to the exact lower bound.
const LATE: Tolerance = Tolerance::real(Duration::from_millis(150));

macro_rules! suite {
    ($runtime:ident, $run:expr) => {
        mod $runtime {
            use super::*;

            #[test]
            fn retry_timing() {
                $run(kit::retry_timing(&AsyncIoTimer::new(), UNIT, LATE));
            }

            #[test]
            fn jittered_retry_timing() {
                $run(kit::jittered_retry_timing(&AsyncIoTimer::new(), UNIT, LATE));
            }

            #[test]
            fn budget_refusal() {
                $run(kit::budget_refusal(&AsyncIoTimer::new(), UNIT));
            }

            #[test]
            fn deadline_respected() {
                $run(kit::deadline_respected(&AsyncIoTimer::new(), UNIT, LATE));
            }

            #[test]
            fn breaker_open_half_open() {
                $run(kit::breaker_open_half_open(
                    &AsyncIoTimer::new(),
                    UNIT,
                    LATE,
                ));
            }

            #[test]
            fn cancel_during_attempt() {
                $run(kit::cancel_during_attempt(&AsyncIoTimer::new(), UNIT));
            }

            #[test]
            fn cancel_during_retry_sleep() {
                $run(kit::cancel_during_retry_sleep(&AsyncIoTimer::new(), UNIT));
            }

            #[test]
            fn handles_share_one_timeline() {
                $run(kit::handles_share_one_timeline(
                    AsyncIoTimer::new,
                    UNIT,
                    LATE,
                ));
            }

            #[test]
            fn fallback() {
                $run(kit::fallback(&AsyncIoTimer::new(), &LastKnownGood::new()));
            }
        }
    };
}

suite!(async_std_runtime, async_std::task::block_on);
suite!(smol_runtime, smol::block_on);
