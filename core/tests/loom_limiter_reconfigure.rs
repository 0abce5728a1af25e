//! Loom model of the limiter's reconfiguration (`core/src/limiter/reconfigure.rs`): a window
//! close that would raise the limit races a reconfiguration that lowers the max to the limit
//! in force. The limit has one writer at a time (the right to close), so under every
//! interleaving the limit ends inside the new bounds: no close computed under the old bounds
//! stores after the reconfiguration. Slots all come back.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_limiter_reconfigure`
#![cfg(loom)]

#[path = "support/loom_limiter.rs"]
mod loom_limiter;

use resilix::limiter::{Limiter, LimiterConfig, LimiterReconfigureError};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;

use loom_limiter::{bounded, call_across_a_close, closing_at_every_settle};

#[test]
fn a_close_racing_a_lowered_max_never_leaves_the_limit_above_it() {
    bounded(|| {
        let config = closing_at_every_settle(2);
        let limiter = loom::sync::Arc::new(Limiter::new(config).unwrap());
        let settler = {
            let limiter = limiter.clone();
            // One call at a limit of one: AIMD grows the limit to 2 at the close.
            loom::thread::spawn(move || call_across_a_close(&limiter, 1, |_| {}))
        };
        let reconfigurer = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || {
                let mut rng = SeededRandom::new(2);
                let mut env = Env::new(Instant::from_secs(2), &mut rng);
                let lowered = LimiterConfig {
                    max_limit: 1,
                    ..config
                };
                loop {
                    match limiter.reconfigure(lowered, &mut env) {
                        Err(LimiterReconfigureError::Busy) => loom::thread::yield_now(),
                        other => break other.unwrap(),
                    }
                }
            })
        };
        settler.join().unwrap();
        reconfigurer.join().unwrap();
        assert_eq!(limiter.in_flight(), 0);
        assert_eq!(
            limiter.limit(),
            1,
            "a close under the old max stored after the change"
        );
    });
}
