//! Adaptive throttler (Google SRE) admit + settle: healthy (P = 0, no random draw), on one
//! thread and two threads on one throttler, and shedding (a failing upstream: draws and
//! refuses a share). No peer: the only Rust implementation found (google-cloud-gax's
//! `AdaptiveThrottler`) is internal to its crate and sits behind `Arc<Mutex<dyn _>>`; recloser's
//! two-thread figure is the goal's yardstick (breaker.rs).
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;

mod common;
use common::{one_thread, two_threads};

fn step(throttler: &Throttler, rng: &mut SeededRandom, verdict: &Verdict, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * 1_000), rng);
    if let Ok(permit) = black_box(throttler).admit(&mut env) {
        permit.settle(black_box(verdict), &mut env);
    }
}

fn admit_settle(c: &mut Criterion) {
    let healthy: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let mut rng = SeededRandom::new(1);
    c.bench_function("throttler/resilix/healthy/admit+settle/1t", |b| {
        one_thread(b, |i| step(&healthy, &mut rng, &Verdict::Success, i))
    });
    c.bench_function("throttler/resilix/healthy/admit+settle/2t", |b| {
        two_threads(
            b,
            &healthy,
            |t| SeededRandom::new(t as u64),
            |th, rng, i| step(th, rng, &Verdict::Success, i),
        )
    });
    let failing: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    c.bench_function("throttler/resilix/failing/admit+settle/1t", |b| {
        one_thread(b, |i| step(&failing, &mut rng, &Verdict::Transient, i))
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = admit_settle
}
criterion_main!(benches);
