//! admit + settle on the adaptive limiter, with windows closing as they would in service (1 ms
//! calls, so a 1 s window closes every thousand iterations), on one thread and two threads on
//! one limiter; and the refusal of a full limiter. No peer: the Rust adaptive limiters
//! (congestion-limiter, tower-acc) are async-only and take a tokio lock in their algorithms.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

mod common;
use common::{one_thread, two_threads};

const CALL_NANOS: u64 = 1_000_000;

fn admit_settle(limiter: &Limiter, rng: &mut SeededRandom, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * CALL_NANOS), rng);
    let permit = black_box(limiter).admit(&mut env).unwrap();
    env.now = Instant::from_nanos((i + 1) * CALL_NANOS);
    permit.settle(black_box(&Verdict::Success), &mut env);
}

fn limiter(c: &mut Criterion) {
    for (name, config) in [
        ("gradient2", LimiterConfig::gradient2()),
        ("vegas", LimiterConfig::vegas()),
        ("aimd", LimiterConfig::aimd()),
    ] {
        let limiter = Limiter::new(config).unwrap();
        let mut rng = SeededRandom::new(1);
        c.bench_function(&format!("limiter/resilix/{name}/admit+settle/1t"), |b| {
            one_thread(b, |i| admit_settle(&limiter, &mut rng, i))
        });
    }
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    c.bench_function("limiter/resilix/gradient2/admit+settle/2t", |b| {
        two_threads(b, &limiter, |t| SeededRandom::new(t as u64), admit_settle)
    });

    let full = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let _held: Vec<_> = std::iter::from_fn(|| full.admit(&mut env).ok()).collect();
    let mut rng = SeededRandom::new(2);
    c.bench_function("limiter/resilix/refused/1t", |b| {
        one_thread(b, |_| {
            let mut env = Env::new(Instant::ZERO, &mut rng);
            black_box(black_box(&full).admit(&mut env).is_err());
        })
    });
    c.bench_function("limiter/resilix/refused/2t", |b| {
        two_threads(
            b,
            &full,
            |t| SeededRandom::new(t as u64),
            |l, rng, _| {
                let mut env = Env::new(Instant::ZERO, rng);
                black_box(black_box(l).admit(&mut env).is_err());
            },
        )
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = limiter
}
criterion_main!(benches);
