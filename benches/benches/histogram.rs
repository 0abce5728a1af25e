//! `record` into the duration histogram: the cost every settled call pays when the histogram
//! observes a pipeline. One thread; a spread of values so the bucket index is not constant.
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::observe::DurationHistogram;
use resilix::random::{Random, SeededRandom};

fn record(c: &mut Criterion) {
    let h = DurationHistogram::new();
    let mut rng = SeededRandom::new(1);
    // Pre-drawn so the bench measures `record`, not the generator: log-uniform 1 µs..10 s.
    let values: Vec<Duration> = (0..1024)
        .map(|_| Duration::from_nanos(1_000u64 << rng.below(24) | rng.below(1_000)))
        .collect();
    let mut i = 0;
    c.bench_function("histogram/record", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            h.record(black_box(values[i]));
        })
    });
    c.bench_function("histogram/record-same-value", |b| {
        b.iter(|| h.record(black_box(Duration::from_micros(250))))
    });
    c.bench_function("histogram/quantile", |b| {
        b.iter(|| black_box(h.quantile(black_box(0.99))))
    });
}

criterion_group!(benches, record);
criterion_main!(benches);
