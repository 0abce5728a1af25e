//! `record` into the duration histogram: the cost every settled call pays when the histogram
//! observes a pipeline, on one thread and with two threads recording into one histogram. A
//! spread of values so the bucket index is not constant.
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::observe::DurationHistogram;
use resilix::random::{Random, SeededRandom};

mod common;
use common::{one_thread, two_threads};

/// Pre-drawn so the bench measures `record`, not the generator: log-uniform 1 µs..10 s.
fn values() -> Vec<Duration> {
    let mut rng = SeededRandom::new(1);
    (0..1024)
        .map(|_| Duration::from_nanos(1_000u64 << rng.below(24) | rng.below(1_000)))
        .collect()
}

fn record(c: &mut Criterion) {
    let h = DurationHistogram::new();
    let values = values();
    c.bench_function("histogram/resilix/record/1t", |b| {
        one_thread(b, |i| h.record(black_box(values[(i & 1023) as usize])))
    });
    c.bench_function("histogram/resilix/record/2t", |b| {
        two_threads(
            b,
            &h,
            |t| t * 512,
            |h, offset, i| h.record(black_box(values[((i as usize) + *offset) & 1023])),
        )
    });
    c.bench_function("histogram/resilix/record-same-value/1t", |b| {
        one_thread(b, |_| h.record(black_box(Duration::from_micros(250))))
    });
    c.bench_function("histogram/resilix/quantile/1t", |b| {
        one_thread(b, |_| {
            black_box(h.quantile(black_box(0.99)));
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = record
}
criterion_main!(benches);
