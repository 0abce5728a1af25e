//! Keyed throttlers: admit+settle(success) through a placed key of a 256-entry table (one and
//! two threads, 64 keys), and a stream of new keys each taking an idle entry (its window
//! empty), beside the single `Throttler` (throttler.rs has no peer: none was found in Rust),
//! so the figure is the table's own cost: a find and a pin around one throttler's work.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{KeyedThrottler, Throttler, ThrottlerConfig};
use resilix::time::Instant;

mod common;
use common::{one_thread, two_threads};

fn admit_settle(t: &KeyedThrottler<256>, rng: &mut SeededRandom, key: u64, now: Instant) {
    let mut env = Env::new(now, rng);
    let permit = black_box(t).admit(black_box(key), &mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

fn resilix_keyed(c: &mut Criterion) {
    let mut rng = SeededRandom::new(1);
    let table: KeyedThrottler<256> = KeyedThrottler::new(ThrottlerConfig::DEFAULT).unwrap();
    c.bench_function("keyed-throttler/resilix/placed/admit+settle/1t", |b| {
        one_thread(b, |i| {
            admit_settle(&table, &mut rng, i % 64, Instant::from_nanos(i * 1_000))
        })
    });
    c.bench_function("keyed-throttler/resilix/placed/admit+settle/2t", |b| {
        two_threads(
            b,
            &table,
            |t| SeededRandom::new(t as u64),
            |t, rng, i| admit_settle(t, rng, i % 64, Instant::from_nanos(i * 1_000)),
        )
    });
    // Every call a key never seen, each a window (two minutes) after the last: the entry it
    // takes has an empty window, so it is idle.
    let churn: KeyedThrottler<256> = KeyedThrottler::new(ThrottlerConfig::DEFAULT).unwrap();
    c.bench_function("keyed-throttler/resilix/new-key/admit+settle/1t", |b| {
        one_thread(b, |i| {
            // Wrapped well inside u64 nanoseconds; a wrap reads as an empty window too.
            let now = Instant::from_nanos(1 + (i % 100_000_000) * 121_000_000_000);
            admit_settle(&churn, &mut rng, i.wrapping_mul(0x9E37_79B9), now)
        })
    });
}

fn single(c: &mut Criterion) {
    let mut rng = SeededRandom::new(1);
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    c.bench_function("keyed-throttler/resilix-single/admit+settle/1t", |b| {
        one_thread(b, |i| {
            let mut env = Env::new(Instant::from_nanos(i * 1_000), &mut rng);
            let permit = black_box(&throttler).admit(&mut env).unwrap();
            permit.settle(black_box(&Verdict::Success), &mut env);
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = resilix_keyed, single
}
criterion_main!(benches);
