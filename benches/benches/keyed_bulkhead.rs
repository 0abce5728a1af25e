//! Keyed bulkheads: try_admit+drop through a placed key of a 256-entry table (one and two
//! threads, 64 keys), and a stream of new keys each taking an idle entry, beside what a user
//! builds from tokio's `Semaphore` per key (a `Mutex<HashMap<u64, Arc<Semaphore>>>` registry:
//! unbounded, never evicts) — the primitive most hand-rolled bulkheads are built on.
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::bulkhead::{BulkheadConfig, KeyedBulkhead};
use tokio::sync::Semaphore;

mod common;
use common::{one_thread, two_threads};

fn admit_release(t: &KeyedBulkhead<256>, key: u64) {
    let permit = black_box(t).try_admit(black_box(key)).unwrap();
    drop(black_box(permit));
}

fn resilix_keyed(c: &mut Criterion) {
    let table: KeyedBulkhead<256> = KeyedBulkhead::new(BulkheadConfig::DEFAULT);
    c.bench_function("keyed-bulkhead/resilix/placed/admit+release/1t", |b| {
        one_thread(b, |i| admit_release(&table, i % 64))
    });
    c.bench_function("keyed-bulkhead/resilix/placed/admit+release/2t", |b| {
        two_threads(b, &table, |_| (), |t, _, i| admit_release(t, i % 64))
    });
    // Every call a key never seen: it takes an idle (nothing in flight) entry.
    let churn: KeyedBulkhead<256> = KeyedBulkhead::new(BulkheadConfig::DEFAULT);
    c.bench_function("keyed-bulkhead/resilix/new-key/admit+release/1t", |b| {
        one_thread(b, |i| admit_release(&churn, i.wrapping_mul(0x9E37_79B9)))
    });
}

type Registry = Mutex<HashMap<u64, Arc<Semaphore>>>;

fn registry_call(r: &Registry, key: u64) {
    let semaphore = {
        let mut map = r.lock().unwrap();
        map.entry(key)
            .or_insert_with(|| Arc::new(Semaphore::new(25)))
            .clone()
    };
    let permit = semaphore.try_acquire().unwrap();
    drop(black_box(permit));
}

fn semaphore_registry(c: &mut Criterion) {
    let registry: Registry = Mutex::new(HashMap::new());
    c.bench_function(
        "keyed-bulkhead/semaphore-registry/placed/admit+release/1t",
        |b| one_thread(b, |i| registry_call(&registry, black_box(i % 64))),
    );
    c.bench_function(
        "keyed-bulkhead/semaphore-registry/placed/admit+release/2t",
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
    targets = resilix_keyed, semaphore_registry
}
criterion_main!(benches);
