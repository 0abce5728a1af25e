//! The shared behavioural suite on real `async-io` timers, under async-std and under smol.
//! What happens before what is ordered by signals inside the scenarios, never by sleeps;
//! sleeps are a few milliseconds where a duration is what is checked. Lower bounds are exact
//! (timers never fire early), upper bounds allow for a loaded machine.

use std::time::Duration;

use resilix_async_std::{AsyncIoTimer, LastKnownGood};
use resilix_testkit as kit;
use resilix_testkit::Tolerance;

const UNIT: Duration = Duration::from_millis(2);
// Real timers on a machine four times oversubscribed can run a thread hundreds of
// milliseconds late, so the upper bounds here allow a second. They still mean something: a
// skipped retry delay or an early cut-off breaks the exact lower bound, and a call that hangs
// or waits for the wrong thing (a deadline that never fires) breaks this one. The exact upper
// bounds are checked on virtual time (tokio's paused clock, embassy's mock driver).
const LATE: Tolerance = Tolerance::real(Duration::from_secs(1));

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
