//! Chaos: one fault-injection decision, and one call through it in a current-thread tokio
//! runtime, beside tower-resilience's seeded `ChaosLayer` (feature `chaos`).
//!
//! Both sides inject errors into 10% of calls, seeded, and no latency (a benchmark that
//! sleeps measures the timer). Ours: `Chaos::decide` (the pure decision, one draw from the
//! caller's `SeededRandom`) and `resilix_tokio::chaos::attempt` around a ready call;
//! switched off, the decision is one atomic load. tower-resilience's layer wraps a
//! `service_fn` that is ready at once, called through `ready().await` + `call`, its errors
//! made by its `error_fn`. Each sample runs `iters` calls inside one `block_on`.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::chaos::{Chaos, ChaosConfig, Chaotic};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_resilience::chaos::ChaosLayer;

mod common;
use common::{Stamp, one_thread};

const TEN_PERCENT: u32 = 100_000;

fn decision(c: &mut Criterion) {
    let chaos = Chaos::new(ChaosConfig::NONE.with_fault(TEN_PERCENT, Verdict::Transient)).unwrap();
    let mut rng = SeededRandom::new(7);
    c.bench_function("chaos/resilix/decide-off/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i), &mut rng);
            black_box(black_box(&chaos).decide(&mut env));
        })
    });
    chaos.enable();
    c.bench_function("chaos/resilix/decide-10pct-fault/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i), &mut rng);
            black_box(black_box(&chaos).decide(&mut env));
        })
    });
}

fn calls(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let chaos = Chaos::new(ChaosConfig::NONE.with_fault(TEN_PERCENT, Verdict::Transient)).unwrap();
    chaos.enable();
    let mut rng = SeededRandom::new(7);
    c.bench_function("chaos/resilix-tokio/attempt-10pct-fault/call/1t", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Stamp::now();
                for i in 0..iters {
                    let mut env = Env::new(Instant::from_nanos(i), &mut rng);
                    let injection = chaos.decide(&mut env);
                    let out = resilix_tokio::chaos::attempt(injection, || async move {
                        Ok::<u64, std::io::Error>(black_box(i))
                    })
                    .await;
                    black_box(matches!(out, Chaotic::Upstream(Ok(_))));
                }
                start.elapsed()
            })
        })
    });

    let mut service = rt.block_on(async {
        ServiceBuilder::new()
            .layer(
                ChaosLayer::builder()
                    .error_rate(0.1)
                    .error_fn(|_req: &u64| std::io::Error::other("chaos"))
                    .seed(7)
                    .build(),
            )
            .service_fn(|x: u64| async move { Ok::<u64, std::io::Error>(black_box(x)) })
    });
    c.bench_function(
        "chaos/tower-resilience/chaos-layer-10pct-error/call/1t",
        |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Stamp::now();
                    for i in 0..iters {
                        let svc = service.ready().await.unwrap();
                        black_box(svc.call(black_box(i)).await.is_ok());
                    }
                    start.elapsed()
                })
            })
        },
    );
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = decision, calls
}
criterion_main!(benches);
