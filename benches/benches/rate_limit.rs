//! Rate limiter: one cell allowed, and one refused on an empty bucket, beside governor's
//! direct (not keyed) GCRA limiter; and our per-key table for reference. Time is injected on both sides: governor reads its clock
//! through its `Clock` trait, and `Injected` below answers from a thread-local the loop sets,
//! the same way our caller passes `now` (a thread-local read is about a nanosecond). Allowed
//! calls advance time by one emission interval per call, so every call is admitted.
use std::cell::Cell;
use std::hint::black_box;
use std::num::NonZeroU32;

use criterion::{Criterion, criterion_group, criterion_main};
use governor::clock::Clock;
use governor::nanos::Nanos;
use governor::{Quota, RateLimiter};
use resilix::rate_limit::{KeyedRateLimiter, Rate, RateLimitConfig, RateLimiter as OurRateLimiter};
use resilix::time::Instant;

mod common;
use common::{Refusals, one_thread, two_threads};

thread_local! {
    static NOW: Cell<u64> = const { Cell::new(0) };
}

/// A governor clock whose time the bench loop sets: time injected, as on our side.
#[derive(Clone, Copy, Debug, Default)]
struct Injected;

impl Clock for Injected {
    type Instant = Nanos;
    fn now(&self) -> Nanos {
        Nanos::new(NOW.with(Cell::get))
    }
}

fn set_now(nanos: u64) {
    NOW.with(|n| n.set(nanos));
}

/// 1,000 per second: 1 ms between cells. Two threads each take one cell per iteration, so
/// they advance time by two cells' worth per iteration.
const RATE: u32 = 1_000;
const CELL_NANOS: u64 = 1_000_000;
const START: u64 = 1_000_000_000;

fn ours(c: &mut Criterion) {
    let config = RateLimitConfig::new(Rate::per_second(RATE));
    let limiter = OurRateLimiter::new(config).unwrap();
    let refusals = Refusals::default();
    c.bench_function("rate_limit/resilix/allowed/1t", |b| {
        one_thread(b, |i| {
            let now = Instant::from_nanos(START + i * CELL_NANOS);
            black_box(refusals.note(black_box(&limiter).try_acquire(now)));
        })
    });
    refusals.check("rate_limit/resilix/allowed/1t");
    let limiter = OurRateLimiter::new(config).unwrap();
    c.bench_function("rate_limit/resilix/allowed/2t", |b| {
        two_threads(
            b,
            &limiter,
            |_| (),
            |l, _, i| {
                let now = Instant::from_nanos(START + i * 2 * CELL_NANOS);
                let _ = black_box(black_box(l).try_acquire(now));
            },
        )
    });

    let empty =
        OurRateLimiter::new(RateLimitConfig::new(Rate::per_second(1)).with_burst(1)).unwrap();
    let frozen = Instant::from_nanos(START);
    empty.try_acquire(frozen).unwrap();
    c.bench_function("rate_limit/resilix/refused/1t", |b| {
        one_thread(b, |_| {
            black_box(black_box(&empty).try_acquire(black_box(frozen))).unwrap_err();
        })
    });
    c.bench_function("rate_limit/resilix/refused/2t", |b| {
        two_threads(
            b,
            &empty,
            |_| (),
            |l, _, _| {
                black_box(black_box(l).try_acquire(black_box(frozen))).unwrap_err();
            },
        )
    });

    let table: KeyedRateLimiter<256> = KeyedRateLimiter::new(config).unwrap();
    let refusals = Refusals::default();
    c.bench_function("rate_limit/resilix/keyed-allowed/1t", |b| {
        // 64 keys in turn, each at 1,000/s: every call is allowed.
        one_thread(b, |i| {
            let now = Instant::from_nanos(START + i * (CELL_NANOS / 64));
            black_box(refusals.note(table.try_acquire(black_box(i % 64), now)));
        })
    });
    refusals.check("rate_limit/resilix/keyed-allowed/1t");
}

fn governor(c: &mut Criterion) {
    let quota = Quota::per_second(NonZeroU32::new(RATE).unwrap());
    let limiter = RateLimiter::direct_with_clock(quota, Injected);
    let refusals = Refusals::default();
    c.bench_function("rate_limit/governor/allowed/1t", |b| {
        one_thread(b, |i| {
            set_now(START + i * CELL_NANOS);
            black_box(refusals.note(black_box(&limiter).check()));
        })
    });
    refusals.check("rate_limit/governor/allowed/1t");
    let limiter = RateLimiter::direct_with_clock(quota, Injected);
    c.bench_function("rate_limit/governor/allowed/2t", |b| {
        two_threads(
            b,
            &limiter,
            |_| (),
            |l, _, i| {
                set_now(START + i * 2 * CELL_NANOS);
                // A thread that falls behind the other may find the cell taken: count it
                // either way (the same on our side).
                let _ = black_box(black_box(l).check());
            },
        )
    });

    let empty = RateLimiter::direct_with_clock(
        Quota::per_second(NonZeroU32::new(1).unwrap()).allow_burst(NonZeroU32::new(1).unwrap()),
        Injected,
    );
    set_now(START);
    empty.check().unwrap();
    c.bench_function("rate_limit/governor/refused/1t", |b| {
        one_thread(b, |_| {
            set_now(START);
            black_box(black_box(&empty).check()).unwrap_err();
        })
    });
    c.bench_function("rate_limit/governor/refused/2t", |b| {
        two_threads(
            b,
            &empty,
            |_| set_now(START),
            |l, _, _| {
                black_box(black_box(l).check()).unwrap_err();
            },
        )
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = ours, governor
}
criterion_main!(benches);
