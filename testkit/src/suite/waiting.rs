//! Bounded waiting: the limiter's queue zone, the order waiters are served in, and wake-ups
//! passed on.

use core::time::Duration;
use std::sync::Mutex;

use resilix::Error;
use resilix::RejectReason;
use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::Bulkhead;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::call::CallOptions;
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::resilience::{FixedSeeds, Resilience};
use resilix::waiters::{SlotWaiters, WaitTimer, WaiterLock};

use super::{Tolerance, join, latency};

/// The limiter of [`limiter_queue_zone`]: limit 1 and queue factor 2 (one call in flight, one
/// waiting in the zone), one rung (the shedding ladder sheds nothing, so the zone's bound is
/// seen alone), and a wait config of up to 8 waiters waiting at most `max_wait`, FIFO. An
/// adapter builds its `Limiter::with_hook(config, SlotWaiters::new(wait))` from these.
pub fn queue_zone_limiter(max_wait: Duration) -> (LimiterConfig, WaitConfig) {
    let config = LimiterConfig {
        initial_limit: 1,
        min_limit: 1,
        queue_factor: 2.0,
        queue_rungs: 1,
        ..LimiterConfig::gradient2()
    };
    let wait = WaitConfig::new(8, max_wait, WaitOrder::Fifo).expect("a valid wait config");
    (config, wait)
}

fn refused_reason<T, E>(r: &Result<T, Error<T, E>>) -> Option<RejectReason> {
    r.as_ref()
        .err()
        .and_then(|e| e.rejection())
        .map(|r| r.reason())
}

/// Waiting in the adaptive limiter's queue zone: a call beyond the limit waits for an
/// in-flight slot (woken by the limiter's release signal) instead of being refused; a call
/// that finds the zone full is refused on arrival; a waiter gives up after `max_wait`; every
/// place is given back. `limiter` is built from [`queue_zone_limiter`]`(15 × unit)` with the
/// adapter's waiter list.
pub async fn limiter_queue_zone<Tm, const N: usize, Lk>(
    timer: &Tm,
    limiter: &Limiter<SlotWaiters<N, Lk>>,
    unit: Duration,
    tol: Tolerance,
) where
    Tm: WaitTimer + Clone,
    Lk: WaiterLock<N>,
{
    let pipeline = Pipeline::new().limiter(limiter);
    let r = Resilience::with_parts(&pipeline, timer.clone(), FixedSeeds::new(11));
    let work = |took: Duration| {
        move || async move {
            latency(timer, took).await;
            Ok::<(), ()>(())
        }
    };
    let arriving = |after: Duration, took: Duration| {
        let r = &r;
        async move {
            latency(timer, after).await;
            let out = r
                .execute_waiting(limiter, CallOptions::default(), work(took))
                .await;
            (out, timer.now())
        }
    };

    // One slot: the second call waits for the first, then runs.
    let start = timer.now();
    let (a, (b, _)) = join(
        r.execute_waiting(limiter, CallOptions::default(), work(10 * unit)),
        arriving(Duration::ZERO, 10 * unit),
    )
    .await;
    assert_eq!((a, b), (Ok(()), Ok(())));
    tol.assert_elapsed(
        timer.now() - start,
        20 * unit,
        "the waiter ran after the holder",
    );
    assert_eq!((limiter.in_flight(), limiter.waiting()), (0, 0));

    // One in flight and one waiting fill the zone: a third is refused on arrival, although
    // the wait config would let 8 wait.
    let start = timer.now();
    let (a, ((b, _), (c, refused_at))) = join(
        r.execute_waiting(limiter, CallOptions::default(), work(10 * unit)),
        join(arriving(unit, unit), arriving(2 * unit, unit)),
    )
    .await;
    assert_eq!((a, b), (Ok(()), Ok(())));
    assert_eq!(refused_reason(&c), Some(RejectReason::LimiterFull));
    assert!(matches!(c, Err(Error::Refused { attempts: 0, .. })));
    tol.assert_elapsed(
        refused_at - start,
        2 * unit,
        "refused on arrival, not after a wait",
    );

    // A waiter gives up after max_wait (15 units), long before the holder finishes.
    let start = timer.now();
    let (a, (b, gave_up_at)) = join(
        r.execute_waiting(limiter, CallOptions::default(), work(40 * unit)),
        arriving(unit, unit),
    )
    .await;
    assert_eq!(a, Ok(()));
    assert_eq!(refused_reason(&b), Some(RejectReason::LimiterFull));
    tol.assert_elapsed(gave_up_at - start, 16 * unit, "gave up after max_wait");
    assert_eq!(
        (
            limiter.in_flight(),
            limiter.waiting(),
            limiter.hook().waiting()
        ),
        (0, 0, 0),
        "every slot and place given back"
    );
}

/// The order in which calls waiting for `bulkhead`'s one slot are served: a holder `h` first,
/// then `a`, `b`, `c` arriving one `unit` apart while it holds the slot (FIFO serves
/// `h a b c`, LIFO `h c b a`). `bulkhead` has one slot and room for at least 3 waiters
/// waiting at least 20 units.
pub async fn served_order<Tm, const N: usize, Lk>(
    timer: &Tm,
    bulkhead: &Bulkhead<SlotWaiters<N, Lk>>,
    unit: Duration,
) -> Vec<char>
where
    Tm: WaitTimer + Clone,
    Lk: WaiterLock<N>,
{
    let pipeline = Pipeline::new().bulkhead(bulkhead);
    let r = Resilience::with_parts(&pipeline, timer.clone(), FixedSeeds::new(13));
    let served = Mutex::new(Vec::new());
    let call = |name: char, after: Duration| {
        let (r, served) = (&r, &served);
        async move {
            latency(timer, after).await;
            let out = r
                .execute_waiting(bulkhead, CallOptions::default(), || {
                    served.lock().unwrap().push(name);
                    async move {
                        latency(timer, 5 * unit).await;
                        Ok::<(), ()>(())
                    }
                })
                .await;
            assert!(out.is_ok(), "{name} was served");
        }
    };
    join(
        join(call('h', Duration::ZERO), call('a', unit)),
        join(call('b', 2 * unit), call('c', 3 * unit)),
    )
    .await;
    assert_eq!(bulkhead.held(), 0);
    served.into_inner().unwrap()
}

/// A woken waiter refused by another policy passes its wake-up on (issue 13, point 6).
///
/// `bulkhead` has one slot and room for at least 2 waiters waiting at least 100 units. A holds
/// the slot for 10 units; B (at 1 unit) and C (at 2) queue; a breaker ahead of the bulkhead
/// is forced open at 5 units, so A's release at 10 wakes B and the breaker refuses B: B's
/// wake-up goes on to C, refused by the breaker too, at 10 units. The breaker is reset at 30;
/// D, arriving at 40, finds the slot free and nobody queued, and is done at 42. With the
/// wake-up lost, C would wait out its max wait behind the free slot (`bulkhead-full` at 102
/// units), and D behind C.
pub async fn wake_up_passed_on<Tm, const N: usize, Lk>(
    timer: &Tm,
    bulkhead: &Bulkhead<SlotWaiters<N, Lk>>,
    unit: Duration,
    tol: Tolerance,
) where
    Tm: WaitTimer + Clone,
    Lk: WaiterLock<N>,
{
    let breaker = Breaker::new(BreakerConfig::DEFAULT).unwrap();
    let pipeline = Pipeline::new().breaker(&breaker).bulkhead(bulkhead);
    let r = Resilience::with_parts(&pipeline, timer.clone(), FixedSeeds::new(13));
    let start = timer.now();
    let call = |after: u32, took: u32| {
        let r = &r;
        async move {
            latency(timer, after * unit).await;
            let out = r
                .execute_waiting(bulkhead, CallOptions::default(), || async move {
                    latency(timer, took * unit).await;
                    Ok::<(), ()>(())
                })
                .await;
            let reason = out.err().and_then(|e| e.rejection()).map(|r| r.reason());
            (reason, timer.now() - start)
        }
    };
    let operator = async {
        let mut rng = SeededRandom::new(5);
        latency(timer, 5 * unit).await;
        assert_eq!(bulkhead.hook().waiting(), 2, "B and C queue behind A");
        breaker.force_open(&mut Env::new(timer.now(), &mut rng));
        latency(timer, 25 * unit).await;
        breaker.reset(&mut Env::new(timer.now(), &mut rng));
    };
    let ((a, b), ((c, d), ())) = join(
        join(call(0, 10), call(1, 1)),
        join(join(call(2, 1), call(40, 2)), operator),
    )
    .await;
    assert_eq!(a.0, None, "A is served");
    tol.assert_elapsed(a.1, 10 * unit, "A");
    for (name, (reason, at)) in [("B", b), ("C", c)] {
        assert_eq!(
            reason,
            Some(RejectReason::CircuitOpen),
            "{name}: woken at 10 units (C by B's unused wake-up) and refused by the breaker"
        );
        tol.assert_elapsed(at, 10 * unit, name);
    }
    assert_eq!(d.0, None, "D is served");
    tol.assert_elapsed(d.1, 42 * unit, "D, admitted on arrival");
    assert_eq!((bulkhead.held(), bulkhead.hook().waiting()), (0, 0));
    assert_eq!(bulkhead.hook().claims(), 0, "every wake-up resolved");
}
