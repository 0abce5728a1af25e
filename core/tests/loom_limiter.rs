//! Loom model: two threads race to admit under a limit of one while a window closes; neither
//! ever sees two calls in flight, and every slot comes back.
#![cfg(loom)]

use core::time::Duration;

use resilix::Verdict;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

#[test]
fn admission_is_exact_under_a_racing_window_close() {
    // Bounded preemptions keep the model under a minute; the close path alone touches seven
    // atomics, and unbounded exploration of two full admit+settle paths runs for many minutes.
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
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let limiter = limiter.clone();
                loom::thread::spawn(move || {
                    let mut rng = SeededRandom::new(t);
                    let mut env = Env::new(Instant::from_secs(2), &mut rng);
                    if let Ok(p) = limiter.admit(&mut env) {
                        assert!(p.in_flight_at_admission() <= p.limit_at_admission());
                        env.now = Instant::from_secs(3);
                        p.settle(&Verdict::Success, &mut env);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(limiter.in_flight(), 0);
        assert!((1..=2).contains(&limiter.limit()));
    });
}
