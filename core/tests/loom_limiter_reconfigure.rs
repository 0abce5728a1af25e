//! Loom model of the limiter's reconfiguration (`core/src/limiter/reconfigure.rs`): a window
//! close that would raise the limit races a reconfiguration that lowers the max to the limit
//! in force. The limit has one writer at a time (the right to close), so under every
//! interleaving the limit ends inside the new bounds: no close computed under the old bounds
//! stores after the reconfiguration. Slots all come back.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_limiter_reconfigure`
#![cfg(loom)]

use core::time::Duration;

use resilix::Verdict;
use resilix::limiter::{Limiter, LimiterConfig, LimiterReconfigureError};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

#[test]
fn a_close_racing_a_lowered_max_never_leaves_the_limit_above_it() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let config = LimiterConfig {
            min_limit: 1,
            initial_limit: 1,
            max_limit: 2,
            window_samples: 1,
            min_rtt: Duration::ZERO,
            probe_multiplier: 0,
            ..LimiterConfig::aimd()
        };
        let limiter = loom::sync::Arc::new(Limiter::new(config).unwrap());
        let settler = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || {
                let mut rng = SeededRandom::new(1);
                let mut env = Env::new(Instant::from_secs(2), &mut rng);
                // One call at a limit of one: AIMD grows the limit to 2 at the close.
                if let Ok(p) = limiter.admit(&mut env) {
                    env.now = Instant::from_secs(3);
                    p.settle(&Verdict::Success, &mut env);
                }
            })
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
