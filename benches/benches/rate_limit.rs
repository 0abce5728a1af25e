//! Rate limiter: one cell allowed, and one refused on an empty bucket, beside governor's
//! direct (not keyed) GCRA limiter; and our per-key table for reference. Time is injected on both sides: governor reads its clock
//! through its `Clock` trait, and `Injected` below answers from a thread-local the loop sets,
//! the same way our caller passes `now` (a thread-local read is about a nanosecond). Allowed
//! calls advance time by one emission interval per call, so every call is admitted.
//!
//! The `*-clock` benches read the shared advancing clock instead (`common/clock.rs`: one
//! `AtomicU64`, a `fetch_add` every 64 calls, 1 µs per call, a load per call), ours passed as
//! `now` and governor's through its `Clock` trait over the same atomic: the comparison issue 20
//! asks for. Allowed: a million a second with a burst of a million on both sides, so no call
//! is refused within a run; refused: one a day, burst one, spent first.
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
use common::clock::{CLOCK, GovernorClock, POLICY_STEP};
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

const CLOCK_RATE: u32 = 1_000_000;

fn on_the_clock(c: &mut Criterion) {
    let ours = OurRateLimiter::new(
        RateLimitConfig::new(Rate::per_second(CLOCK_RATE)).with_burst(CLOCK_RATE),
    )
    .unwrap();
    let quota = Quota::per_second(NonZeroU32::new(CLOCK_RATE).unwrap())
        .allow_burst(NonZeroU32::new(CLOCK_RATE).unwrap());
    let theirs = RateLimiter::direct_with_clock(quota, GovernorClock);
    let refusals = Refusals::default();
    c.bench_function("rate_limit/resilix/allowed-clock/1t", |b| {
        one_thread(b, |i| {
            CLOCK.advance(i, POLICY_STEP);
            black_box(refusals.note(black_box(&ours).try_acquire(CLOCK.now())));
        })
    });
    refusals.check("rate_limit/resilix/allowed-clock/1t");
    let refusals = Refusals::default();
    c.bench_function("rate_limit/governor/allowed-clock/1t", |b| {
        one_thread(b, |i| {
            CLOCK.advance(i, POLICY_STEP);
            black_box(refusals.note(black_box(&theirs).check()));
        })
    });
    refusals.check("rate_limit/governor/allowed-clock/1t");
    c.bench_function("rate_limit/resilix/allowed-clock/2t", |b| {
        two_threads(
            b,
            &ours,
            |_| (),
            |l, _, i| {
                CLOCK.advance(i, POLICY_STEP);
                let _ = black_box(black_box(l).try_acquire(CLOCK.now()));
            },
        )
    });
    c.bench_function("rate_limit/governor/allowed-clock/2t", |b| {
        two_threads(
            b,
            &theirs,
            |_| (),
            |l, _, i| {
                CLOCK.advance(i, POLICY_STEP);
                let _ = black_box(black_box(l).check());
            },
        )
    });

    let day = core::time::Duration::from_secs(86_400);
    let ours = OurRateLimiter::new(RateLimitConfig::new(Rate::new(1, day)).with_burst(1)).unwrap();
    ours.try_acquire(CLOCK.now()).unwrap();
    let quota = Quota::with_period(day)
        .unwrap()
        .allow_burst(NonZeroU32::new(1).unwrap());
    let theirs = RateLimiter::direct_with_clock(quota, GovernorClock);
    theirs.check().unwrap();
    c.bench_function("rate_limit/resilix/refused-clock/1t", |b| {
        one_thread(b, |i| {
            CLOCK.advance(i, POLICY_STEP);
            black_box(black_box(&ours).try_acquire(CLOCK.now())).unwrap_err();
        })
    });
    c.bench_function("rate_limit/governor/refused-clock/1t", |b| {
        one_thread(b, |i| {
            CLOCK.advance(i, POLICY_STEP);
            black_box(black_box(&theirs).check()).unwrap_err();
        })
    });
    c.bench_function("rate_limit/resilix/refused-clock/2t", |b| {
        two_threads(
            b,
            &ours,
            |_| (),
            |l, _, i| {
                CLOCK.advance(i, POLICY_STEP);
                black_box(black_box(l).try_acquire(CLOCK.now())).unwrap_err();
            },
        )
    });
    c.bench_function("rate_limit/governor/refused-clock/2t", |b| {
        two_threads(
            b,
            &theirs,
            |_| (),
            |l, _, i| {
                CLOCK.advance(i, POLICY_STEP);
                black_box(black_box(l).check()).unwrap_err();
            },
        )
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = ours, governor, on_the_clock
}
criterion_main!(benches);
