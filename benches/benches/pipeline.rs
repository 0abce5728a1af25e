//! admit + settle through the pipeline, with time injected.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::time::Instant;

fn empty_pipeline(c: &mut Criterion) {
    let pipeline = Pipeline::new();
    let mut rng = SeededRandom::new(1);
    let mut now = 0u64;
    c.bench_function("pipeline/empty/admit+settle", |b| {
        b.iter(|| {
            now += 1_000;
            let mut env = Env::new(Instant::from_nanos(now), &mut rng);
            let attempt = pipeline.admit(&mut env, None).unwrap();
            black_box(attempt.settle(black_box(&Verdict::Success), &mut env));
        })
    });
}

criterion_group!(benches, empty_pipeline);
criterion_main!(benches);
