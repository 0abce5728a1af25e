//! Runs one operation `n` times, for counting its instructions under callgrind, which counts
//! deterministically where the wall clock on a shared two-core machine does not:
//!
//! ```text
//! cargo build --release -p resilix-benches --example instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/instructions breaker-closed 1000000
//! ```
//!
//! Per-op instructions are the difference between two runs (say 1,000,000 and 2,000,000 ops)
//! divided by the difference in ops, which cancels the start-up cost. Instructions are not
//! time (a locked read-modify-write costs tens of cycles), so report criterion's medians too.
use std::hint::black_box;
use std::time::Duration;

use resilix::Verdict;
use resilix::breaker::{Breaker, CallRing, Config};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;

/// The same operation as benches/breaker.rs: a closed breaker admits, the call succeeds.
fn admit_settle<P: Policy>(breaker: &P, rng: &mut SeededRandom, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * 1_000), rng);
    let permit = black_box(breaker).admit(&mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

/// As benches/rate_limit.rs: 1,000/s, time moving one emission interval per call.
#[inline(never)]
fn rate_limit_allowed(n: u64) {
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000))).unwrap();
    for i in 0..n {
        let now = Instant::from_nanos(1_000_000_000 + i * 1_000_000);
        let _ = black_box(black_box(&limiter).try_acquire(now));
    }
}

#[inline(never)]
fn rate_limit_refused(n: u64) {
    let limiter =
        RateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
    let frozen = Instant::from_nanos(1_000_000_000);
    limiter.try_acquire(frozen).unwrap();
    for _ in 0..n {
        let _ = black_box(black_box(&limiter).try_acquire(black_box(frozen)));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let subject = args.next().unwrap_or_default();
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut rng = SeededRandom::new(1);
    match subject.as_str() {
        "breaker-closed" => {
            let b = Breaker::new(Config::DEFAULT).unwrap();
            for i in 0..n {
                admit_settle(&b, &mut rng, i);
            }
        }
        "breaker-closed-count" => {
            let config = Config {
                minimum_calls: 100,
                ..Config::DEFAULT
            };
            let b: Breaker<CallRing<7>> = Breaker::count_based(config, 100).unwrap();
            for i in 0..n {
                admit_settle(&b, &mut rng, i);
            }
        }
        "recloser-closed" => {
            let r = recloser::Recloser::custom()
                .error_rate(0.5)
                .closed_len(100)
                .open_wait(Duration::from_secs(3_600))
                .build();
            for _ in 0..n {
                black_box(black_box(&r).call(|| Ok::<(), ()>(())).is_ok());
            }
        }
        "rate-limit-allowed" => rate_limit_allowed(n),
        "rate-limit-refused" => rate_limit_refused(n),
        other => {
            eprintln!(
                "unknown subject {other:?}: breaker-closed, breaker-closed-count, recloser-closed, \
                 rate-limit-allowed, rate-limit-refused"
            );
            std::process::exit(2);
        }
    }
}
