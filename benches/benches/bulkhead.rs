//! Bulkhead: our admit+settle (allowed) and refusal beside tokio's `Semaphore::try_acquire`,
//! the primitive tower's `ConcurrencyLimit` and most hand-rolled bulkheads are built on. Time is
//! injected on our side; the semaphore reads no clock, so the footing is equal.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use tokio::sync::Semaphore;

mod common;
use common::{one_thread, two_threads};

fn admit_settle(b: &Bulkhead, rng: &mut SeededRandom, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * 1_000), rng);
    let permit = black_box(b).admit(&mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

fn refuse(b: &Bulkhead, rng: &mut SeededRandom, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * 1_000), rng);
    black_box(black_box(b).admit(&mut env).is_err());
}

fn ours(c: &mut Criterion) {
    let b = Bulkhead::new(BulkheadConfig::DEFAULT);
    let mut rng = SeededRandom::new(1);
    c.bench_function("bulkhead/resilix/admit+settle/1t", |bench| {
        one_thread(bench, |i| admit_settle(&b, &mut rng, i))
    });
    c.bench_function("bulkhead/resilix/admit+settle/2t", |bench| {
        two_threads(bench, &b, |t| SeededRandom::new(t as u64), admit_settle)
    });
    c.bench_function("bulkhead/resilix/try_admit+drop/1t", |bench| {
        one_thread(bench, |_| {
            drop(black_box(black_box(&b).try_admit().unwrap()))
        })
    });

    let full = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let _holder = full.try_admit().unwrap();
    c.bench_function("bulkhead/resilix/refused/1t", |bench| {
        one_thread(bench, |i| refuse(&full, &mut rng, i))
    });
    c.bench_function("bulkhead/resilix/refused/2t", |bench| {
        two_threads(bench, &full, |t| SeededRandom::new(t as u64), refuse)
    });
}

fn tokio_semaphore(c: &mut Criterion) {
    let sem = Semaphore::new(BulkheadConfig::DEFAULT_MAX_CONCURRENT as usize);
    c.bench_function("bulkhead/tokio-semaphore/try_acquire+drop/1t", |bench| {
        one_thread(bench, |_| {
            drop(black_box(black_box(&sem).try_acquire().unwrap()))
        })
    });
    c.bench_function("bulkhead/tokio-semaphore/try_acquire+drop/2t", |bench| {
        two_threads(
            bench,
            &sem,
            |_| (),
            |s, _, _| drop(black_box(black_box(s).try_acquire().unwrap())),
        )
    });
    let full = Semaphore::new(1);
    let _holder = full.try_acquire().unwrap();
    c.bench_function("bulkhead/tokio-semaphore/refused/1t", |bench| {
        one_thread(bench, |_| {
            black_box(black_box(&full).try_acquire().is_err());
        })
    });
    c.bench_function("bulkhead/tokio-semaphore/refused/2t", |bench| {
        two_threads(
            bench,
            &full,
            |_| (),
            |s, _, _| {
                black_box(black_box(s).try_acquire().is_err());
            },
        )
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = ours, tokio_semaphore
}
criterion_main!(benches);
