//! admit + settle on the adaptive limiter, with windows closing as they would in service.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

fn admit_settle(c: &mut Criterion) {
    for (name, config) in [
        ("gradient2", LimiterConfig::gradient2()),
        ("vegas", LimiterConfig::vegas()),
        ("aimd", LimiterConfig::aimd()),
    ] {
        let limiter = Limiter::new(config).unwrap();
        let mut rng = SeededRandom::new(1);
        let mut now = 0u64;
        c.bench_function(&format!("limiter/{name}/admit+settle"), |b| {
            b.iter(|| {
                let mut env = Env::new(Instant::from_nanos(now), &mut rng);
                let permit = limiter.admit(&mut env).unwrap();
                now += 1_000_000; // 1 ms calls: a 1 s window closes every 1000 iterations
                env.now = Instant::from_nanos(now);
                permit.settle(black_box(&Verdict::Success), &mut env);
            })
        });
    }
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let _full: Vec<_> = (0..20).map(|_| limiter.admit(&mut env).unwrap()).collect();
    c.bench_function("limiter/refuse", |b| {
        b.iter(|| black_box(limiter.admit(&mut env).is_err()))
    });
}

criterion_group!(benches, admit_settle);
criterion_main!(benches);
