//! Bounded waiting: the limiter's queue zone, the order waiters are served in, and wake-ups
//! passed on.
//!
//! "B arrives while A holds the slot" is made a fact, not a bet on timing: A's operation fires
//! a signal once it holds the slot and holds it until the scenario fires another; B starts
//! after the first, and the scenario checks the state it expects (who is in flight, who waits)
//! before going on. Waits that must not run out are long on real timers (the adapters pick
//! about a second or more), so a stalled thread cannot make a waiter give up early.

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

use super::{Tolerance, latency};
use crate::signal::{Signal, join, signal_when_pending};

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

/// An operation that fires `holding` once it holds its slot and finishes once `release` is
/// fired.
async fn hold(holding: &Signal, release: &Signal) -> Result<(), ()> {
    holding.fire();
    release.wait().await;
    Ok(())
}

/// An operation that succeeds at once.
async fn quick() -> Result<(), ()> {
    Ok(())
}

fn opts() -> CallOptions {
    CallOptions::default()
}

/// Waiting in the adaptive limiter's queue zone: a call beyond the limit waits for an
/// in-flight slot (woken by the limiter's release signal) instead of being refused; a call
/// that finds the zone full is refused on arrival; a waiter gives up after `max_wait`; every
/// place is given back. `limiter` is built from [`queue_zone_limiter`]`(max_wait)` with the
/// adapter's waiter list: 15 units on virtual time, and on real timers a wait no stall of a
/// loaded machine outlasts (a second), since the first steps must be woken before it ends.
pub async fn limiter_queue_zone<Tm, const N: usize, Lk>(
    timer: &Tm,
    limiter: &Limiter<SlotWaiters<N, Lk>>,
    tol: Tolerance,
) where
    Tm: WaitTimer + Clone,
    Lk: WaiterLock<N>,
{
    let pipeline = Pipeline::new().limiter(limiter);
    let r = Resilience::with_parts(&pipeline, timer.clone(), FixedSeeds::new(11));
    let max_wait = limiter.hook().config().max_wait();
    let state = || (limiter.in_flight(), limiter.hook().waiting());

    // One slot: the second call waits for the first, and runs once the first is done.
    let (holding, release, queued) = (Signal::new(), Signal::new(), Signal::new());
    let ((a, b), ()) = join(
        join(
            r.call(opts())
                .wait_on(limiter)
                .run(|| hold(&holding, &release)),
            async {
                holding.wait().await;
                let waiter = r.call(opts()).wait_on(limiter).run(|| async {
                    assert!(release.is_fired(), "the waiter ran after the holder");
                    Ok::<(), ()>(())
                });
                signal_when_pending(&queued, waiter).await
            },
        ),
        async {
            queued.wait().await;
            assert_eq!(
                state(),
                (1, 1),
                "the second call waits instead of being refused"
            );
            release.fire();
        },
    )
    .await;
    assert_eq!((a, b), (Ok(()), Ok(())));
    assert_eq!((limiter.in_flight(), limiter.waiting()), (0, 0));

    // One in flight and one waiting fill the zone: a third is refused on arrival (its first
    // poll: it never waited), although the wait config would let 8 wait.
    let (holding, release, queued) = (Signal::new(), Signal::new(), Signal::new());
    let third_waited = Signal::new();
    let ((a, b), (c, took)) = join(
        join(
            r.call(opts())
                .wait_on(limiter)
                .run(|| hold(&holding, &release)),
            async {
                holding.wait().await;
                signal_when_pending(&queued, r.call(opts()).wait_on(limiter).run(quick)).await
            },
        ),
        async {
            queued.wait().await;
            assert_eq!(state(), (1, 1), "one in flight, one waiting");
            let arrived = timer.now();
            let third = r.call(opts()).wait_on(limiter).run(quick);
            let c = signal_when_pending(&third_waited, third).await;
            let took = timer.now() - arrived;
            release.fire();
            (c, took)
        },
    )
    .await;
    assert_eq!((a, b), (Ok(()), Ok(())));
    assert_eq!(refused_reason(&c), Some(RejectReason::LimiterFull));
    assert!(matches!(c, Err(Error::Refused { attempts: 0, .. })));
    assert!(
        !third_waited.is_fired(),
        "refused on arrival, not after a wait"
    );
    tol.assert_elapsed(took, Duration::ZERO, "refused on arrival, not after a wait");

    // A waiter gives up after max_wait, while the holder still holds its slot (released only
    // then). Exact below (a timer never fires early); above, exact on virtual time, and on
    // real time a bound that says the waiter did not wait for the release instead.
    let (holding, release) = (Signal::new(), Signal::new());
    let (a, (b, waited)) = join(
        r.call(opts())
            .wait_on(limiter)
            .run(|| hold(&holding, &release)),
        async {
            holding.wait().await;
            let arrived = timer.now();
            let b = r.call(opts()).wait_on(limiter).run(quick).await;
            let waited = timer.now() - arrived;
            release.fire();
            (b, waited)
        },
    )
    .await;
    assert_eq!(a, Ok(()));
    assert_eq!(refused_reason(&b), Some(RejectReason::LimiterFull));
    tol.assert_elapsed(waited, max_wait, "gave up after max_wait");
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
/// then `a`, `b`, `c`, each arriving once the one before is queued, while `h` holds the slot
/// (FIFO serves `h a b c`, LIFO `h c b a`); `h` lets go once all three wait. `bulkhead` has
/// one slot and room for at least 3 waiters, waiting long enough that no stall outlasts it (on
/// real timers, a second or more).
pub async fn served_order<Tm, const N: usize, Lk>(
    timer: &Tm,
    bulkhead: &Bulkhead<SlotWaiters<N, Lk>>,
) -> Vec<char>
where
    Tm: WaitTimer + Clone,
    Lk: WaiterLock<N>,
{
    let pipeline = Pipeline::new().bulkhead(bulkhead);
    let r = Resilience::with_parts(&pipeline, timer.clone(), FixedSeeds::new(13));
    let served = Mutex::new(Vec::new());
    let (holding, release) = (Signal::new(), Signal::new());
    let queued = [Signal::new(), Signal::new(), Signal::new()];
    let holder = async {
        let out = r
            .call(opts())
            .wait_on(bulkhead)
            .run(|| {
                served.lock().unwrap().push('h');
                hold(&holding, &release)
            })
            .await;
        assert!(out.is_ok(), "h was served");
    };
    // The `i`th waiter arrives once `h` holds the slot and the one before it waits, and fires
    // `queued[i]` once it waits.
    let waiter = |name: char, i: usize| {
        let (r, served, queued, holding) = (&r, &served, &queued, &holding);
        async move {
            match i {
                0 => holding.wait().await,
                _ => queued[i - 1].wait().await,
            }
            assert_eq!(bulkhead.hook().waiting(), i, "{name} finds {i} waiting");
            let call = r.call(opts()).wait_on(bulkhead).run(|| {
                served.lock().unwrap().push(name);
                quick()
            });
            let out = signal_when_pending(&queued[i], call).await;
            assert!(out.is_ok(), "{name} was served");
        }
    };
    let operator = async {
        queued[2].wait().await;
        assert_eq!(bulkhead.hook().waiting(), 3, "a, b and c wait");
        release.fire();
    };
    join(
        join(holder, waiter('a', 0)),
        join(join(waiter('b', 1), waiter('c', 2)), operator),
    )
    .await;
    assert_eq!((bulkhead.held(), bulkhead.hook().waiting()), (0, 0));
    served.into_inner().unwrap()
}

/// A woken waiter refused by another policy passes its wake-up on (issue 13, point 6).
///
/// `bulkhead` has one slot and room for at least 2 waiters, waiting long enough that no stall
/// outlasts it (on real timers, a second or more). A holds the slot; B, then C, queue behind
/// it; a breaker ahead of the bulkhead is forced open, and only then does A let go: A's
/// release wakes B and the breaker refuses B, so B's wake-up goes on to C, refused by the
/// breaker too, at once. The breaker is reset; D finds the slot free and nobody queued, and
/// is done 2 units after it arrived. With the wake-up lost, C would wait out its max wait
/// behind the free slot and be refused `bulkhead-full`.
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
    let mut rng = SeededRandom::new(5);
    let (holding, release) = (Signal::new(), Signal::new());
    let (b_queued, c_queued) = (Signal::new(), Signal::new());
    let reason = |out: Result<(), Error<(), ()>>| {
        let reason = out.err().and_then(|e| e.rejection()).map(|r| r.reason());
        (reason, timer.now())
    };
    let work = || async {
        latency(timer, unit).await;
        Ok::<(), ()>(())
    };
    let a = async {
        reason(
            r.call(opts())
                .wait_on(bulkhead)
                .run(|| hold(&holding, &release))
                .await,
        )
    };
    let b = async {
        holding.wait().await;
        reason(signal_when_pending(&b_queued, r.call(opts()).wait_on(bulkhead).run(work)).await)
    };
    let c = async {
        b_queued.wait().await;
        reason(signal_when_pending(&c_queued, r.call(opts()).wait_on(bulkhead).run(work)).await)
    };
    let operator = async {
        c_queued.wait().await;
        assert_eq!(bulkhead.hook().waiting(), 2, "B and C queue behind A");
        breaker.force_open(&mut Env::new(timer.now(), &mut rng));
        let released_at = timer.now();
        release.fire();
        released_at
    };
    let ((a, b), (c, released_at)) = join(join(a, b), join(c, operator)).await;
    assert_eq!(a.0, None, "A is served");
    for (name, (reason, at)) in [("B", b), ("C", c)] {
        assert_eq!(
            reason,
            Some(RejectReason::CircuitOpen),
            "{name}: woken by A's release (C by B's unused wake-up) and refused by the breaker"
        );
        tol.assert_elapsed(at - released_at, Duration::ZERO, name);
    }

    breaker.reset(&mut Env::new(timer.now(), &mut rng));
    let arrived = timer.now();
    let d = r
        .call(opts())
        .wait_on(bulkhead)
        .run(|| async {
            latency(timer, 2 * unit).await;
            Ok::<(), ()>(())
        })
        .await;
    assert_eq!(reason(d).0, None, "D is served");
    tol.assert_elapsed(timer.now() - arrived, 2 * unit, "D, admitted on arrival");
    assert_eq!((bulkhead.held(), bulkhead.hook().waiting()), (0, 0));
    assert_eq!(bulkhead.hook().claims(), 0, "every wake-up resolved");
}
