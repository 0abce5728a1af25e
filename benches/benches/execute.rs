//! The overhead of `resilix_tokio::Resilience::execute` over a bare call: the same operation
//! under `tokio::time::timeout` (what a hand-written call would do) and through a pipeline
//! with an attempt timeout, a bulkhead and no retry. Both run inside one `block_on` per
//! iteration, so the runtime's own cost is common to both.
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::pipeline::Pipeline;
use resilix_tokio::Resilience;

fn execute_overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let timeout = Duration::from_secs(1);
    let mut group = c.benchmark_group("execute");

    group.bench_function("bare/tokio::time::timeout", |b| {
        b.iter(|| {
            rt.block_on(async {
                black_box(
                    tokio::time::timeout(timeout, async { Ok::<u64, ()>(black_box(1)) }).await,
                )
            })
        })
    });

    let bare_pipeline = Pipeline::new();
    let empty = Resilience::new(&bare_pipeline).seed(1);
    group.bench_function("resilix/empty pipeline", |b| {
        b.iter(|| {
            rt.block_on(async {
                black_box(
                    empty
                        .execute(CallOptions::default(), || async {
                            Ok::<u64, ()>(black_box(1))
                        })
                        .await,
                )
            })
        })
    });

    let bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
    let pipeline = Pipeline::new().bulkhead(&bulkhead).attempt_timeout(timeout);
    let guarded = Resilience::new(&pipeline).seed(1);
    group.bench_function("resilix/timeout+bulkhead", |b| {
        b.iter(|| {
            rt.block_on(async {
                black_box(
                    guarded
                        .execute(CallOptions::default(), || async {
                            Ok::<u64, ()>(black_box(1))
                        })
                        .await,
                )
            })
        })
    });
    let entropy = Resilience::new(&pipeline);
    group.bench_function("resilix/timeout+bulkhead, per-thread entropy", |b| {
        b.iter(|| {
            rt.block_on(async {
                black_box(
                    entropy
                        .execute(CallOptions::default(), || async {
                            Ok::<u64, ()>(black_box(1))
                        })
                        .await,
                )
            })
        })
    });
    group.finish();
}

criterion_group!(benches, execute_overhead);
criterion_main!(benches);
