//! Bulkhead admit+settle, the refused path, and the waiter-facing `try_admit`, with time
//! injected. (tokio's `Semaphore::try_acquire` joins this run in the peers task.)
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

fn bulkhead(c: &mut Criterion) {
    let b = Bulkhead::new(BulkheadConfig::DEFAULT);
    let mut rng = SeededRandom::new(1);
    let mut now = 0u64;
    c.bench_function("bulkhead/admit+settle", |bench| {
        bench.iter(|| {
            now += 1_000;
            let mut env = Env::new(Instant::from_nanos(now), &mut rng);
            let permit = black_box(&b).admit(&mut env).unwrap();
            permit.settle(black_box(&Verdict::Success), &mut env);
        })
    });

    c.bench_function("bulkhead/try_admit+drop", |bench| {
        bench.iter(|| drop(black_box(black_box(&b).try_admit().unwrap())))
    });

    let full = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let _holder = full.try_admit().unwrap();
    c.bench_function("bulkhead/refused", |bench| {
        bench.iter(|| {
            now += 1_000;
            let mut env = Env::new(Instant::from_nanos(now), &mut rng);
            black_box(black_box(&full).admit(&mut env).unwrap_err());
        })
    });
}

criterion_group!(benches, bulkhead);
criterion_main!(benches);
