//! Circuit breaker: a closed breaker's admit+settle(success) and an open breaker's refusal,
//! ours with the default time window and with recloser's 100-call count window, beside recloser (lock-free, epoch-swapped state and a count ring) and failsafe (a mutex;
//! its default policy is a success rate over a time window, so it reads the clock on every
//! recorded call). Time is injected on our side. recloser's closed path reads no clock;
//! failsafe's does (clock/std-instant-now in floor.rs is that cost), and both peers read it on
//! an open breaker's refusal.
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use failsafe::CircuitBreaker as _;
use resilix::Verdict;
use resilix::breaker::{Breaker, CallRing, Config};
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::time::Instant;

mod common;
use common::clock::{CLOCK, POLICY_STEP};
use common::{one_thread, two_threads};

/// A closed breaker admits, the call succeeds, the breaker hears it.
fn admit_settle<P: Policy>(breaker: &P, rng: &mut SeededRandom, i: u64) {
    let mut env = Env::new(Instant::from_nanos(i * 1_000), rng);
    let permit = black_box(breaker).admit(&mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

/// `admit_settle` on the shared advancing clock (`common/clock.rs`), 1 µs per call.
fn admit_settle_clock<P: Policy>(breaker: &P, rng: &mut SeededRandom, i: u64) {
    CLOCK.advance(i, POLICY_STEP);
    let mut env = Env::new(CLOCK.now(), rng);
    let permit = black_box(breaker).admit(&mut env).unwrap();
    permit.settle(black_box(&Verdict::Success), &mut env);
}

/// An open breaker refuses (time stays inside the open wait).
fn refuse<P: Policy>(breaker: &P, rng: &mut SeededRandom, i: u64) {
    let mut env = Env::new(Instant::from_nanos(1_000 + (i % 1_000_000) * 1_000), rng);
    black_box(black_box(breaker).admit(&mut env).is_err());
}

fn resilix_breaker(c: &mut Criterion) {
    let mut rng = SeededRandom::new(1);
    // The default: a 10 s time window in ten buckets.
    let time_based = Breaker::new(Config::DEFAULT).unwrap();
    c.bench_function("breaker/resilix/closed/admit+settle/1t", |b| {
        one_thread(b, |i| admit_settle(&time_based, &mut rng, i))
    });
    c.bench_function("breaker/resilix/closed/admit+settle/2t", |b| {
        two_threads(
            b,
            &time_based,
            |t| SeededRandom::new(t as u64),
            admit_settle,
        )
    });
    c.bench_function("breaker/resilix/closed-clock/admit+settle/1t", |b| {
        one_thread(b, |i| admit_settle_clock(&time_based, &mut rng, i))
    });
    c.bench_function("breaker/resilix/closed-clock/admit+settle/2t", |b| {
        two_threads(
            b,
            &time_based,
            |t| SeededRandom::new(t as u64),
            admit_settle_clock,
        )
    });
    // recloser's shape: the last 100 calls.
    let count_based: Breaker<CallRing<7>> = Breaker::count_based(
        Config {
            minimum_calls: 100,
            ..Config::DEFAULT
        },
        100,
    )
    .unwrap();
    c.bench_function("breaker/resilix/closed-count/admit+settle/1t", |b| {
        one_thread(b, |i| admit_settle(&count_based, &mut rng, i))
    });
    c.bench_function("breaker/resilix/closed-count/admit+settle/2t", |b| {
        two_threads(
            b,
            &count_based,
            |t| SeededRandom::new(t as u64),
            admit_settle,
        )
    });

    let open = Breaker::new(Config {
        minimum_calls: 1,
        open_wait: Duration::from_secs(3_600),
        ..Config::DEFAULT
    })
    .unwrap();
    let mut env = Env::new(Instant::ZERO, &mut rng);
    open.admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    assert!(open.admit(&mut env).is_err(), "the breaker is open");
    c.bench_function("breaker/resilix/open/refused/1t", |b| {
        one_thread(b, |i| refuse(&open, &mut rng, i))
    });
    c.bench_function("breaker/resilix/open/refused/2t", |b| {
        two_threads(b, &open, |t| SeededRandom::new(t as u64), refuse)
    });
}

fn recloser(c: &mut Criterion) {
    // The same shape as our count-window breaker: 100 calls, 50 % failures trips it.
    let closed = recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(100)
        .open_wait(Duration::from_secs(3_600))
        .build();
    c.bench_function("breaker/recloser/closed/admit+settle/1t", |b| {
        one_thread(b, |_| {
            black_box(black_box(&closed).call(|| Ok::<(), ()>(())).is_ok());
        })
    });
    c.bench_function("breaker/recloser/closed/admit+settle/2t", |b| {
        two_threads(
            b,
            &closed,
            |_| (),
            |r, _, _| {
                black_box(black_box(r).call(|| Ok::<(), ()>(())).is_ok());
            },
        )
    });

    let open = recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(2)
        .open_wait(Duration::from_secs(3_600))
        .build();
    for _ in 0..4 {
        let _ = open.call(|| Err::<(), ()>(()));
    }
    assert!(matches!(
        open.call(|| Ok::<(), ()>(())),
        Err(recloser::Error::Rejected)
    ));
    c.bench_function("breaker/recloser/open/refused/1t", |b| {
        one_thread(b, |_| {
            black_box(black_box(&open).call(|| Ok::<(), ()>(())).is_err());
        })
    });
    c.bench_function("breaker/recloser/open/refused/2t", |b| {
        two_threads(
            b,
            &open,
            |_| (),
            |r, _, _| {
                black_box(black_box(r).call(|| Ok::<(), ()>(())).is_err());
            },
        )
    });
}

fn failsafe(c: &mut Criterion) {
    let closed = failsafe::Config::new().build();
    c.bench_function("breaker/failsafe/closed/admit+settle/1t", |b| {
        one_thread(b, |_| {
            black_box(black_box(&closed).call(|| Ok::<(), ()>(())).is_ok());
        })
    });
    c.bench_function("breaker/failsafe/closed/admit+settle/2t", |b| {
        two_threads(
            b,
            &closed,
            |_| (),
            |f, _, _| {
                black_box(black_box(f).call(|| Ok::<(), ()>(())).is_ok());
            },
        )
    });

    let open = failsafe::Config::new().build();
    while open.is_call_permitted() {
        let _ = open.call(|| Err::<(), ()>(()));
    }
    c.bench_function("breaker/failsafe/open/refused/1t", |b| {
        one_thread(b, |_| {
            black_box(black_box(&open).call(|| Ok::<(), ()>(())).is_err());
        })
    });
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = resilix_breaker, recloser, failsafe
}
criterion_main!(benches);
