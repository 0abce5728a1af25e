//! Keyed retry budgets: a first attempt and a retry asked for (`record_first_attempt` +
//! `try_spend`) through a placed key of a 256-entry table under a shared `RatioBudget` (one
//! and two threads, 64 keys), and a stream of new keys each taking an idle entry; beside what a
//! user builds from tower instead: a `Mutex<HashMap<u64, Arc<TpsBudget>>>` registry of per-key
//! budgets (unbounded, never evicts) in front of one shared `TpsBudget`, the key withdrawn
//! first, then the shared one. tower's budgets read tokio's clock on every call and cannot be
//! given the time; ours take `now` from the caller (see retry.rs for one budget alone).
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::VerdictKind;
use resilix::retry::budget::{KeyedBudget, PER_KEY_DEFAULT, RatioBudget, RetryBudget};
use resilix::time::Instant;
use tower::retry::budget::{Budget, TpsBudget};

mod common;
use common::{one_thread, two_threads};

type Table<'a> = KeyedBudget<256, &'a RatioBudget>;

fn first_and_retry(t: &Table<'_>, key: u64, now: Instant) {
    let view = black_box(t).for_key(black_box(key));
    view.record_first_attempt(now);
    black_box(view.try_spend(now, black_box(VerdictKind::Transient)));
}

fn resilix_keyed(c: &mut Criterion) {
    let shared = RatioBudget::with_defaults();
    let table: Table<'_> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    c.bench_function("keyed-budget/resilix/placed/first+retry/1t", |b| {
        one_thread(b, |i| {
            first_and_retry(&table, i % 64, Instant::from_nanos(i * 1_000))
        })
    });
    c.bench_function("keyed-budget/resilix/placed/first+retry/2t", |b| {
        two_threads(
            b,
            &table,
            |_| (),
            |t, _, i| first_and_retry(t, i % 64, Instant::from_nanos(i * 1_000)),
        )
    });
    // Every call a key never seen, 100 ms apart: a key's window (10 s) has emptied 100 calls
    // later, so after the first 256 free entries each new key takes an idle one.
    let shared = RatioBudget::with_defaults();
    let churn: Table<'_> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    c.bench_function("keyed-budget/resilix/new-key/first+retry/1t", |b| {
        one_thread(b, |i| {
            first_and_retry(
                &churn,
                i.wrapping_mul(0x9E37_79B9),
                Instant::from_millis(i * 100),
            )
        })
    });
}

struct Registry {
    keys: Mutex<HashMap<u64, Arc<TpsBudget>>>,
    shared: TpsBudget,
}

fn registry_call(r: &Registry, key: u64) {
    let own = {
        let mut map = r.keys.lock().unwrap();
        map.entry(key)
            .or_insert_with(|| Arc::new(TpsBudget::new(Duration::from_secs(10), 1, 0.1)))
            .clone()
    };
    own.deposit();
    r.shared.deposit();
    // tower's budgets have no refund: asking the key first is the order that spends nothing
    // from the shared budget on a key's refusal (it may still strand a key's withdrawal).
    black_box(own.withdraw() && r.shared.withdraw());
}

fn tower_registry(c: &mut Criterion) {
    let registry = Registry {
        keys: Mutex::new(HashMap::new()),
        shared: TpsBudget::new(Duration::from_secs(10), 3, 0.1),
    };
    c.bench_function("keyed-budget/tower-registry/placed/first+retry/1t", |b| {
        one_thread(b, |i| registry_call(&registry, black_box(i % 64)))
    });
    c.bench_function("keyed-budget/tower-registry/placed/first+retry/2t", |b| {
        two_threads(
            b,
            &registry,
            |_| (),
            |r, _, i| registry_call(r, black_box(i % 64)),
        )
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = resilix_keyed, tower_registry
}
criterion_main!(benches);
