//! The floor and the references every other figure is read against: an uncontended atomic
//! `fetch_add` (nothing per op can be cheaper and still be shared), a compare-and-swap loop
//! alone and with two threads on one word (what "contended" costs on this machine), and the
//! clock reads the peers make on every call (std's and tokio's `Instant::now`), which our
//! policies leave to the caller.
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};

mod common;
use common::{one_thread, two_threads};

/// One increment by compare-and-swap, retried until it lands: the shape of every lock-free
/// policy update.
fn cas_increment(word: &AtomicU64) {
    let mut seen = word.load(Ordering::Relaxed);
    while let Err(now) =
        word.compare_exchange_weak(seen, seen + 1, Ordering::AcqRel, Ordering::Relaxed)
    {
        seen = now;
    }
}

fn atomics(c: &mut Criterion) {
    let word = AtomicU64::new(0);
    c.bench_function("floor/fetch_add/1t", |b| {
        one_thread(b, |_| {
            black_box(&word).fetch_add(1, Ordering::Relaxed);
        })
    });
    c.bench_function("floor/fetch_add/2t", |b| {
        two_threads(
            b,
            &word,
            |_| (),
            |w, _, _| {
                black_box(w).fetch_add(1, Ordering::Relaxed);
            },
        )
    });
    c.bench_function("floor/cas/1t", |b| {
        one_thread(b, |_| cas_increment(black_box(&word)))
    });
    c.bench_function("floor/cas/2t", |b| {
        two_threads(b, &word, |_| (), |w, _, _| cas_increment(black_box(w)))
    });
}

fn clocks(c: &mut Criterion) {
    c.bench_function("clock/std-instant-now/1t", |b| {
        one_thread(b, |_| {
            black_box(std::time::Instant::now());
        })
    });
    c.bench_function("clock/tokio-instant-now/1t", |b| {
        one_thread(b, |_| {
            black_box(tokio::time::Instant::now());
        })
    });
    // What every call through resilix-tokio reads twice (at its start and as an attempt
    // settles): tokio's clock, moved onto the process's one timeline.
    c.bench_function("clock/resilix-tokio-now/1t", |b| {
        one_thread(b, |_| {
            black_box(resilix_tokio::now());
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = atomics, clocks
}
criterion_main!(benches);
