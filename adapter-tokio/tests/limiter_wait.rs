//! Waiting in the adaptive limiter's queue zone on paused tokio time: a call beyond the limit
//! waits for an in-flight slot (woken by the limiter's release signal) instead of being
//! refused, and the wait is bounded by the zone (`limit × queue_factor` calls in all), by
//! `max_wait` and by the call's deadline.

use std::time::Duration;

use resilix::Error;
use resilix::RejectReason;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::call::CallOptions;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::pipeline::Pipeline;
use resilix::time::{Clock, Deadline};
use resilix_tokio::{Resilience, SlotWaiters};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

/// Limit 1, and a queue zone of `queue_factor − 1` places; up to 8 waiters by the wait config.
/// One rung: the shedding ladder sheds nothing, so the tests see the zone's bound alone.
fn limiter(queue_factor: f32, max_wait: Duration) -> Limiter<SlotWaiters<8>> {
    let config = LimiterConfig {
        initial_limit: 1,
        min_limit: 1,
        queue_factor,
        queue_rungs: 1,
        ..LimiterConfig::gradient2()
    };
    let wait = WaitConfig::new(8, max_wait, WaitOrder::Fifo).unwrap();
    Limiter::with_hook(config, SlotWaiters::new(wait)).unwrap()
}

async fn work(took: Duration) -> Result<(), ()> {
    tokio::time::sleep(took).await;
    Ok(())
}

fn refused_reason<T, E>(r: Result<T, Error<T, E>>) -> Option<RejectReason> {
    r.err().and_then(|e| e.rejection()).map(|r| r.reason())
}

#[tokio::test(start_paused = true)]
async fn a_call_beyond_the_limit_waits_in_the_queue_zone() {
    let l = limiter(2.0, 100 * MS);
    let pipeline = Pipeline::new().limiter(&l);
    let r = Resilience::new(&pipeline);
    let start = Instant::now();
    let (x, y) = tokio::join!(
        r.call(CallOptions::default())
            .wait_on(&l)
            .run(|| work(30 * MS)),
        r.call(CallOptions::default())
            .wait_on(&l)
            .run(|| work(30 * MS)),
    );
    assert_eq!((x, y), (Ok(()), Ok(())));
    assert_eq!(
        start.elapsed(),
        60 * MS,
        "the second ran when the first gave its slot back"
    );
    assert_eq!((l.in_flight(), l.waiting(), l.hook().waiting()), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn without_waiting_the_same_call_is_refused() {
    let l = limiter(2.0, 100 * MS);
    let pipeline = Pipeline::new().limiter(&l);
    let r = Resilience::new(&pipeline);
    let (x, y) = tokio::join!(
        r.execute(CallOptions::default(), || work(30 * MS)),
        r.execute(CallOptions::default(), || work(30 * MS)),
    );
    assert_eq!(x, Ok(()));
    assert_eq!(refused_reason(y), Some(RejectReason::LimiterFull));
}

#[tokio::test(start_paused = true)]
async fn the_zone_bounds_the_waiters_not_just_the_wait_config() {
    // Limit 1 and queue factor 2: one call in flight, one waiting; the third is refused at
    // once although the wait config would let 8 wait.
    let l = limiter(2.0, Duration::from_secs(1));
    let pipeline = Pipeline::new().limiter(&l);
    let r = Resilience::new(&pipeline);
    let start = Instant::now();
    let third = async {
        tokio::time::sleep(MS).await;
        let out = r
            .call(CallOptions::default())
            .wait_on(&l)
            .run(|| work(MS))
            .await;
        (out, start.elapsed())
    };
    let (a, b, (c, refused_at)) = tokio::join!(
        r.call(CallOptions::default())
            .wait_on(&l)
            .run(|| work(30 * MS)),
        r.call(CallOptions::default())
            .wait_on(&l)
            .run(|| work(30 * MS)),
        third,
    );
    assert_eq!((a, b), (Ok(()), Ok(())));
    assert_eq!(refused_reason(c), Some(RejectReason::LimiterFull));
    assert_eq!(refused_at, MS, "refused on arrival, not after waiting");
    assert_eq!((l.in_flight(), l.waiting(), l.hook().waiting()), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn max_wait_and_the_deadline_end_a_wait_and_give_the_place_back() {
    let l = limiter(3.0, 10 * MS);
    let pipeline = Pipeline::new().limiter(&l);
    let r = Resilience::new(&pipeline);
    let start = Instant::now();
    let deadline = Deadline::after(r.timer().clock().now(), 5 * MS);
    let (r, l) = (&r, &l);
    let waited = |options| async move {
        tokio::time::sleep(MS).await;
        let out = r.call(options).wait_on(l).run(|| work(MS)).await;
        (refused_reason(out), start.elapsed())
    };
    let (first, by_max_wait, by_deadline) = tokio::join!(
        r.call(CallOptions::default())
            .wait_on(l)
            .run(|| work(100 * MS)),
        waited(CallOptions::default()),
        waited(CallOptions::default().deadline(deadline)),
    );
    assert_eq!(first, Ok(()));
    assert_eq!(by_max_wait, (Some(RejectReason::LimiterFull), 11 * MS));
    assert_eq!(by_deadline, (Some(RejectReason::LimiterFull), 5 * MS));
    assert_eq!(
        (l.waiting(), l.hook().waiting()),
        (0, 0),
        "places given back"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_waiter_gives_its_place_back() {
    let l = limiter(2.0, Duration::from_secs(1));
    let pipeline = Pipeline::new().limiter(&l);
    let r = Resilience::new(&pipeline);
    let holder = r
        .call(CallOptions::default())
        .wait_on(&l)
        .run(|| work(50 * MS));
    let waiter = async {
        tokio::time::sleep(MS).await;
        tokio::time::timeout(
            5 * MS,
            r.call(CallOptions::default()).wait_on(&l).run(|| work(MS)),
        )
        .await
    };
    let (held, cancelled) = tokio::join!(holder, waiter);
    assert_eq!(held, Ok(()));
    assert!(cancelled.is_err(), "dropped while waiting");
    assert_eq!((l.in_flight(), l.waiting(), l.hook().waiting()), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn the_shared_queue_zone_scenario() {
    let (config, wait) = resilix_testkit::queue_zone_limiter(15 * MS);
    let l = Limiter::with_hook(config, SlotWaiters::<8>::new(wait)).unwrap();
    let timer = resilix_tokio::TokioTimer::new();
    resilix_testkit::limiter_queue_zone(&timer, &l, resilix_testkit::Tolerance::EXACT).await;
}

/// The limiter's waiters pass an unused wake-up on too (issue 13, point 6): limit 1, two
/// places in the zone. A holds the one slot 0–100 ms; B (1 ms) and C (2 ms) wait; the breaker
/// (ahead of the limiter) is forced open at 50 ms, so A's release wakes B and the breaker
/// refuses B; B's wake-up goes on to C, refused too, at 100 ms. After the reset at 101 ms, D
/// (150 ms) goes at once. With the wake-up lost, C would sit behind the free slot until its
/// max wait (`limiter-full` at 1.002 s).
#[tokio::test(start_paused = true)]
async fn a_waiter_refused_by_the_breaker_passes_its_wake_up_on() {
    use resilix::breaker::{Breaker, Config};
    use resilix::permit::Env;
    use resilix::random::SeededRandom;
    use tokio::time::sleep;

    let l = limiter(3.0, Duration::from_secs(1));
    let breaker = Breaker::new(Config::DEFAULT).unwrap();
    let pipeline = Pipeline::new().breaker(&breaker).limiter(&l);
    let r = Resilience::new(&pipeline).seed(3);
    let start = Instant::now();
    let call = |after: Duration, took: Duration| {
        let r = &r;
        let l = &l;
        async move {
            sleep(after).await;
            let out = r
                .call(CallOptions::default())
                .wait_on(l)
                .run(move || work(took))
                .await;
            (refused_reason(out), start.elapsed())
        }
    };
    let (a, b, c, d, ()) = tokio::join!(
        call(Duration::ZERO, 100 * MS),
        call(MS, MS),
        call(2 * MS, MS),
        call(150 * MS, 10 * MS),
        async {
            let mut rng = SeededRandom::new(4);
            let at = resilix::time::Instant::ZERO; // forced states ignore the instant
            sleep(50 * MS).await;
            assert_eq!(l.hook().waiting(), 2, "B and C wait in the zone");
            breaker.force_open(&mut Env::new(at, &mut rng));
            sleep(51 * MS).await;
            breaker.reset(&mut Env::new(at, &mut rng));
        },
    );
    assert_eq!(a, (None, 100 * MS));
    assert_eq!(b, (Some(RejectReason::CircuitOpen), 100 * MS));
    assert_eq!(
        c,
        (Some(RejectReason::CircuitOpen), 100 * MS),
        "C got B's wake-up"
    );
    assert_eq!(d, (None, 160 * MS), "D went at once");
    assert_eq!(
        (
            l.in_flight(),
            l.waiting(),
            l.hook().waiting(),
            l.hook().claims()
        ),
        (0, 0, 0, 0)
    );
}
