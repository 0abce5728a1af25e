//! Keyed breakers: admit+settle(success) through a placed key of a 256-entry table (one and
//! two threads, 64 keys), and a stream of new keys each taking an idle entry, beside what a
//! user builds from recloser per key (a `Mutex<HashMap<u64, Arc<Recloser>>>` registry:
//! unbounded, never evicts, resilience4j's registry shape). Time is injected on our side.
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::breaker::{Config, KeyedBreaker};
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::time::Instant;

mod common;
use common::{one_thread, two_threads};

fn admit_settle(t: &KeyedBreaker<256>, rng: &mut SeededRandom, key: u64, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * 1_000), rng);
    let permit = black_box(t).admit(black_box(key), &mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

fn resilix_keyed(c: &mut Criterion) {
    let mut rng = SeededRandom::new(1);
    let table: KeyedBreaker<256> = KeyedBreaker::new(Config::DEFAULT).unwrap();
    c.bench_function("keyed-breaker/resilix/placed/admit+settle/1t", |b| {
        one_thread(b, |i| admit_settle(&table, &mut rng, i % 64, i))
    });
    c.bench_function("keyed-breaker/resilix/placed/admit+settle/2t", |b| {
        two_threads(
            b,
            &table,
            |t| SeededRandom::new(t as u64),
            |t, rng, i| admit_settle(t, rng, i % 64, i),
        )
    });
    // Every call a key never seen: it takes an idle (closed, clean) entry.
    let churn: KeyedBreaker<256> = KeyedBreaker::new(Config::DEFAULT).unwrap();
    c.bench_function("keyed-breaker/resilix/new-key/admit+settle/1t", |b| {
        one_thread(b, |i| {
            admit_settle(&churn, &mut rng, i.wrapping_mul(0x9E37_79B9), i)
        })
    });
}

type Registry = Mutex<HashMap<u64, Arc<recloser::Recloser>>>;

fn registry_call(r: &Registry, key: u64) {
    let breaker = {
        let mut map = r.lock().unwrap();
        map.entry(key)
            .or_insert_with(|| {
                Arc::new(
                    recloser::Recloser::custom()
                        .error_rate(0.5)
                        .closed_len(100)
                        .open_wait(Duration::from_secs(5))
                        .build(),
                )
            })
            .clone()
    };
    black_box(breaker.call(|| Ok::<(), ()>(())).is_ok());
}

fn recloser_registry(c: &mut Criterion) {
    let registry: Registry = Mutex::new(HashMap::new());
    c.bench_function(
        "keyed-breaker/recloser-registry/placed/admit+settle/1t",
        |b| one_thread(b, |i| registry_call(&registry, black_box(i % 64))),
    );
    c.bench_function(
        "keyed-breaker/recloser-registry/placed/admit+settle/2t",
        |b| {
            two_threads(
                b,
                &registry,
                |_| (),
                |r, _, i| registry_call(r, black_box(i % 64)),
            )
        },
    );
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = resilix_keyed, recloser_registry
}
criterion_main!(benches);
