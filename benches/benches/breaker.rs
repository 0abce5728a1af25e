//! The breaker's two hot paths, with time injected: a closed admit + settle(success), and the
//! refusal of an open circuit (the load-shedding fast path).
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::breaker::{Breaker, CallRing, Config};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

fn closed_success(c: &mut Criterion) {
    let time_based = Breaker::new(Config::DEFAULT).unwrap();
    let count_based: Breaker<CallRing<7>> = Breaker::count_based(Config::DEFAULT, 100).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut now = 0u64;
    c.bench_function("breaker/closed/time-window/admit+settle", |b| {
        b.iter(|| {
            now += 1_000;
            let mut env = Env::new(Instant::from_nanos(now), &mut rng);
            let permit = time_based.admit(&mut env).unwrap();
            permit.settle(black_box(&Verdict::Success), &mut env);
        })
    });
    c.bench_function("breaker/closed/count-window/admit+settle", |b| {
        b.iter(|| {
            now += 1_000;
            let mut env = Env::new(Instant::from_nanos(now), &mut rng);
            let permit = count_based.admit(&mut env).unwrap();
            permit.settle(black_box(&Verdict::Success), &mut env);
        })
    });
}

fn open_refusal(c: &mut Criterion) {
    let config = Config {
        minimum_calls: 1,
        ..Config::DEFAULT
    };
    let breaker = Breaker::new(config).unwrap();
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    breaker
        .admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    let mut now = 0u64;
    c.bench_function("breaker/open/refuse", |b| {
        b.iter(|| {
            // Stay inside the 5 s wait.
            now = (now + 1_000) % 4_000_000_000;
            let mut env = Env::new(Instant::from_nanos(now), &mut rng);
            black_box(breaker.admit(&mut env).is_err())
        })
    });
}

criterion_group!(benches, closed_success, open_refusal);
criterion_main!(benches);
