//! Inbound admission: the decision a server makes per request (admit + settle, and a shed
//! request's refusal) beside what a tower server uses instead, `ConcurrencyLimit` + `LoadShed`,
//! driven per request as axum drives it (clone the service, `poll_ready`, `call`, poll the
//! response future to completion) around an inner service that answers at once. Both sides pay
//! for the slot accounting only: no runtime, no body, no handler work. Time is injected on our
//! side; tower's reads no clock.
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use resilix::Verdict;
use resilix::inbound::{Decision, Inbound, InboundConfig, Priority};
use resilix::permit::{Env, Permit};
use resilix::random::SeededRandom;
use resilix::time::Instant;
use tower::limit::ConcurrencyLimit;
use tower::load_shed::LoadShed;
use tower::{Service, ServiceBuilder, service_fn};

mod common;
use common::{one_thread, two_threads};

/// The limit on both sides: room to spare, so every request is admitted.
const LIMIT: u32 = 64;

fn admit_settle(inbound: &Inbound, rng: &mut SeededRandom, i: u64) {
    let now = Instant::from_nanos(i * 1_000);
    let Decision::Admit(permit) = black_box(inbound).admit(now, Priority::Critical, None) else {
        panic!("room to spare")
    };
    permit.settle(black_box(&Verdict::Success), &mut Env::new(now, rng));
}

fn admit_settle_arc(inbound: &Arc<Inbound>, rng: &mut SeededRandom, i: u64) {
    let now = Instant::from_nanos(i * 1_000);
    let Decision::Admit(permit) =
        Inbound::admit_by(black_box(inbound), now, Priority::Critical, None)
    else {
        panic!("room to spare")
    };
    permit.settle(black_box(&Verdict::Success), &mut Env::new(now, rng));
}

fn refuse(inbound: &Inbound, _: &mut SeededRandom, i: u64) {
    let now = Instant::from_nanos(i * 1_000);
    black_box(matches!(
        black_box(inbound).admit(now, Priority::Sheddable, None),
        Decision::Reject(_)
    ));
}

fn ours(c: &mut Criterion) {
    let inbound = Inbound::new(InboundConfig::fixed(LIMIT)).unwrap();
    let shared = Arc::new(Inbound::new(InboundConfig::fixed(LIMIT)).unwrap());
    let mut rng = SeededRandom::new(1);
    c.bench_function("inbound/resilix/admit+settle/1t", |b| {
        one_thread(b, |i| admit_settle(&inbound, &mut rng, i))
    });
    c.bench_function("inbound/resilix/admit+settle/2t", |b| {
        two_threads(b, &inbound, |t| SeededRandom::new(t as u64), admit_settle)
    });
    c.bench_function("inbound/resilix/admit_by(Arc)+settle/1t", |b| {
        one_thread(b, |i| admit_settle_arc(&shared, &mut rng, i))
    });
    let full = Inbound::new(InboundConfig {
        queue: 0,
        ..InboundConfig::fixed(1)
    })
    .unwrap();
    let _held = full.admit(Instant::ZERO, Priority::Critical, None);
    c.bench_function("inbound/resilix/shed/1t", |b| {
        one_thread(b, |i| refuse(&full, &mut rng, i))
    });
}

type Shed = LoadShed<
    ConcurrencyLimit<
        tower::util::ServiceFn<fn(()) -> std::future::Ready<Result<(), std::convert::Infallible>>>,
    >,
>;

fn answer(_: ()) -> std::future::Ready<Result<(), std::convert::Infallible>> {
    std::future::ready(Ok(()))
}

/// One request through `svc` as axum does it: clone, ready, call, run to completion.
fn tower_request(svc: &Shed) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let mut s = black_box(svc).clone();
    let Poll::Ready(Ok(())) = s.poll_ready(&mut cx) else {
        panic!("load shed is always ready")
    };
    let fut = pin!(s.call(()));
    match fut.poll(&mut cx) {
        Poll::Ready(r) => r.is_ok(),
        Poll::Pending => panic!("the inner service answers at once"),
    }
}

fn tower_limit_shed(c: &mut Criterion) {
    let svc: Shed = ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(LIMIT as usize)
        .service(service_fn(answer as fn(()) -> _));
    c.bench_function(
        "inbound/tower-concurrency-limit+load-shed/request/1t",
        |b| one_thread(b, |_| assert!(tower_request(&svc))),
    );
    c.bench_function(
        "inbound/tower-concurrency-limit+load-shed/request/2t",
        |b| two_threads(b, &svc, |_| (), |s, _, _| assert!(tower_request(s))),
    );
    // Full: one request holds the only permit, so every other is shed.
    let full: Shed = ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(1)
        .service(service_fn(answer as fn(()) -> _));
    let mut holder = full.clone();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(holder.poll_ready(&mut cx).is_ready());
    c.bench_function("inbound/tower-concurrency-limit+load-shed/shed/1t", |b| {
        one_thread(b, |_| assert!(!tower_request(&full)))
    });
    drop(holder);
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = ours, tower_limit_shed
}
criterion_main!(benches);
