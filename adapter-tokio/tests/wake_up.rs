//! A woken waiter that does not use its wake-up passes it on (issue 13, point 6).
//!
//! Bounded waiting has no hand-off: a release wakes one waiter, which then goes through the
//! whole pipeline. When a policy ahead of the bulkhead (the breaker here) refuses it, the slot
//! stays free, and the wake-up must go to the next waiter; otherwise the next waiter sits
//! behind a free slot until its `max_wait` refuses it with `bulkhead-full`, and every caller
//! arriving meanwhile queues behind it.

use std::time::Duration;

use resilix::Error;
use resilix::RejectReason;
use resilix::breaker::{Breaker, Config};
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix_tokio::{Resilience, SlotWaiters};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

/// What a call ended with, and when (from the start of the test).
#[derive(Debug, PartialEq, Eq)]
enum End {
    Done(Duration),
    Refused(RejectReason, Duration),
}

fn end(out: Result<(), Error<(), ()>>, start: Instant) -> End {
    let at = start.elapsed();
    match out {
        Ok(()) => End::Done(at),
        Err(Error::Refused { rejection, .. }) => End::Refused(rejection.reason(), at),
        other => panic!("unexpected end {other:?} at {at:?}"),
    }
}

async fn work(took: Duration) -> Result<(), ()> {
    sleep(took).await;
    Ok(())
}

/// The reproduction, on paused time. Bulkhead of 1, waiting up to 1 s. A holds the
/// slot 0–100 ms; B (1 ms) and C (2 ms) queue; the breaker is forced open at 50 ms; A's
/// release at 100 ms wakes B, which the breaker refuses; the breaker is reset at 101 ms; D
/// arrives at 150 ms. Before the fix C stayed queued behind the free slot until 1.002 s
/// (`bulkhead-full`), and D queued behind C until 1.15 s (`bulkhead-full`). Now B's unused
/// wake-up goes to C at once (refused by the still-open breaker, as it should be), and D,
/// finding the slot free and nobody queued, is admitted on arrival.
#[tokio::test(start_paused = true)]
async fn a_waiter_refused_by_the_breaker_passes_its_wake_up_to_the_next() {
    let wait = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
    let bulkhead: Bulkhead<SlotWaiters<8>> =
        Bulkhead::with_hook(BulkheadConfig::new(1).unwrap(), SlotWaiters::new(wait));
    let breaker = Breaker::new(Config::DEFAULT).unwrap();
    let pipeline = Pipeline::new().breaker(&breaker).bulkhead(&bulkhead);
    let r = Resilience::new(&pipeline).seed(1);
    let call = |took| r.execute_waiting(&bulkhead, CallOptions::default(), move || work(took));
    let start = Instant::now();
    let (a, b, c, d, ()) = tokio::join!(
        async { end(call(100 * MS).await, start) },
        async {
            sleep(MS).await;
            end(call(10 * MS).await, start)
        },
        async {
            sleep(2 * MS).await;
            end(call(10 * MS).await, start)
        },
        async {
            sleep(150 * MS).await;
            end(call(10 * MS).await, start)
        },
        async {
            let mut rng = SeededRandom::new(2);
            sleep(50 * MS).await;
            assert_eq!(bulkhead.hook().waiting(), 2, "B and C queued behind A");
            // The breaker's decision does not depend on the instant here.
            breaker.force_open(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
            sleep(51 * MS).await;
            breaker.reset(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
            assert_eq!(
                (bulkhead.available(), bulkhead.hook().waiting()),
                (1, 0),
                "at 101 ms the slot is free and nobody waits behind it"
            );
        },
    );
    assert_eq!(a, End::Done(100 * MS));
    assert_eq!(b, End::Refused(RejectReason::CircuitOpen, 100 * MS));
    assert_eq!(
        c,
        End::Refused(RejectReason::CircuitOpen, 100 * MS),
        "C got B's wake-up at once (base: bulkhead-full at 1.002 s)"
    );
    assert_eq!(
        d,
        End::Done(160 * MS),
        "D found the slot free and went at once (base: bulkhead-full at 1.15 s)"
    );
    assert_eq!(
        (bulkhead.held(), bulkhead.hook().waiting()),
        (0, 0),
        "nothing left behind"
    );
}

/// Two slots, two unused wake-ups: two holders release at 100 ms and wake B and C; the
/// breaker, opened at 50 ms, refuses both, and each passes its wake-up on, to D and to E
/// (refused too, the breaker is still open); F, arriving at 150 ms after the reset, goes at
/// once. Each wake-up claims one slot: nobody is left behind a free one, and no waiter is
/// woken for a slot another woken waiter is about to take.
#[tokio::test(start_paused = true)]
async fn two_slots_two_unused_wake_ups_both_passed_on() {
    let wait = WaitConfig::new(8, Duration::from_secs(1), WaitOrder::Fifo).unwrap();
    let bulkhead: Bulkhead<SlotWaiters<8>> =
        Bulkhead::with_hook(BulkheadConfig::new(2).unwrap(), SlotWaiters::new(wait));
    let breaker = Breaker::new(Config::DEFAULT).unwrap();
    let pipeline = Pipeline::new().breaker(&breaker).bulkhead(&bulkhead);
    let r = Resilience::new(&pipeline).seed(1);
    let call = |took| r.execute_waiting(&bulkhead, CallOptions::default(), move || work(took));
    let start = Instant::now();
    let at = |ms: u32| async move {
        sleep(ms * MS).await;
    };
    let (h1, h2, b, c, d, e, f, ()) = tokio::join!(
        async { end(call(100 * MS).await, start) },
        async { end(call(100 * MS).await, start) },
        async {
            at(1).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(2).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(3).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(4).await;
            end(call(10 * MS).await, start)
        },
        async {
            at(150).await;
            end(call(10 * MS).await, start)
        },
        async {
            let mut rng = SeededRandom::new(2);
            at(50).await;
            assert_eq!(bulkhead.hook().waiting(), 4);
            breaker.force_open(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
            at(51).await;
            breaker.reset(&mut Env::new(resilix::time::Instant::ZERO, &mut rng));
        },
    );
    assert_eq!((h1, h2), (End::Done(100 * MS), End::Done(100 * MS)));
    for (name, waiter) in [("B", b), ("C", c), ("D", d), ("E", e)] {
        assert_eq!(
            waiter,
            End::Refused(RejectReason::CircuitOpen, 100 * MS),
            "{name}: woken at 100 ms, by a release or a passed-on wake-up"
        );
    }
    assert_eq!(f, End::Done(160 * MS));
    assert_eq!((bulkhead.held(), bulkhead.hook().waiting()), (0, 0));
}

// ---- The storm: many cancelled calls through breaker + bulkhead, on real threads. ----

mod storm {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
    use std::time::Duration;

    use resilix::Error;
    use resilix::RejectReason;
    use resilix::breaker::{Breaker, Config};
    use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
    use resilix::bulkhead::{Bulkhead, BulkheadConfig};
    use resilix::call::CallOptions;
    use resilix::permit::Env;
    use resilix::pipeline::Pipeline;
    use resilix::random::{Random, SeededRandom};
    use resilix::waiters::{SlotWaiters, WaiterList, WaiterLock};
    use resilix_tokio::{Resilience, Static};

    const CAPACITY: usize = 64;
    const MAX_WAIT: Duration = Duration::from_millis(500);
    const CALLS: u32 = 10_000;

    /// The storm's waiter list, in a static the sampler can lock too: it reads the list and
    /// the bulkhead in one lock section, the one every wake-up is decided in.
    static LIST: Mutex<WaiterList<CAPACITY>> = Mutex::new(WaiterList::new());

    fn list() -> MutexGuard<'static, WaiterList<CAPACITY>> {
        LIST.lock().unwrap_or_else(|p| p.into_inner())
    }

    struct Watched;

    impl WaiterLock<CAPACITY> for Watched {
        const NEW: Self = Watched;
        fn with<R>(&self, f: impl FnOnce(&mut WaiterList<CAPACITY>) -> R) -> R {
            f(&mut list())
        }
    }

    static BULKHEAD: Bulkhead<SlotWaiters<CAPACITY, Watched>> = Bulkhead::with_hook(
        // One slot: a slot left free by a lost wake-up then sees no release at all until the
        // waiters behind it give up, so the sampler's episodes are not cut short.
        match BulkheadConfig::new(1) {
            Ok(c) => c,
            Err(_) => panic!("bulkhead config"),
        },
        SlotWaiters::new(match WaitConfig::new(32, MAX_WAIT, WaitOrder::Fifo) {
            Ok(c) => c,
            Err(_) => panic!("wait config"),
        }),
    );
    static BREAKER: LazyLock<Breaker> = LazyLock::new(|| Breaker::new(Config::DEFAULT).unwrap());

    /// What the sampler saw: the longest a waiter sat behind a slot that was free and that no
    /// wake-up claimed, with no release in between (`None`: never).
    #[derive(Debug, Default)]
    struct Stuck {
        longest: Duration,
        episodes_over_bound: u32,
    }

    /// Samples, under the waiter lock, "someone queued, and more free slots than wake-ups on
    /// their way to one". That state is legitimate only between a release freeing its slot
    /// and that release's hook taking the lock to wake (a few instructions). An episode
    /// counts from its first sample, and restarts when the release count moves (a new
    /// release: its hook may be the one pending); so a long episode is a waiter left behind
    /// a free slot that nothing will wake it for.
    fn sample(done: &AtomicBool, bound: Duration) -> Stuck {
        let mut stuck = Stuck::default();
        let mut episode: Option<(std::time::Instant, u32)> = None;
        let mut over = false;
        while !done.load(Ordering::Acquire) {
            let (behind, releases) = {
                let list = list();
                let free = BULKHEAD.available() as usize;
                (
                    !list.is_empty() && free > list.claims(),
                    BULKHEAD.releases(),
                )
            };
            let now = std::time::Instant::now();
            episode = match episode {
                Some((since, seen)) if behind && seen == releases => {
                    let d = now - since;
                    stuck.longest = stuck.longest.max(d);
                    if d > bound && !over {
                        stuck.episodes_over_bound += 1;
                        over = true;
                    }
                    Some((since, seen))
                }
                _ if behind => {
                    over = false;
                    Some((now, releases))
                }
                _ => {
                    over = false;
                    None
                }
            };
            std::thread::sleep(Duration::from_micros(100));
        }
        stuck
    }

    /// 10,000 calls through breaker + bulkhead (1 slot, 32 waiters, 500 ms max wait) on two
    /// worker threads, in waves of 100 a millisecond apart; half are cancelled after 0–3 ms
    /// (a `timeout` dropping the call queued, woken, or mid-attempt), the other half never;
    /// each holds the slot for a few yields or a millisecond, and the breaker is forced open
    /// 2 ms out of every 7, so woken waiters are refused by it. Real time, bounded in count
    /// (10,000 calls) and time (a 60 s cap; it takes well under a second).
    ///
    /// Checked: no waiter sits behind a free slot that no wake-up claims for longer than
    /// 50 ms with no release in between. The state can exist only between a release's slot
    /// being freed and its hook's lock (microseconds; 50 ms allows the OS to preempt that
    /// thread on a loaded machine). Base b41b95d: episodes of hundreds of milliseconds, up
    /// to `max_wait`.
    #[test]
    fn no_waiter_sits_behind_a_free_slot() {
        let done = Arc::new(AtomicBool::new(false));
        let bound = Duration::from_millis(50);
        let sampler = {
            let done = done.clone();
            std::thread::spawn(move || sample(&done, bound))
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let full_after_max_wait = Arc::new(AtomicU32::new(0));
        let outcomes = Arc::new(AtomicU32::new(0));
        runtime.block_on(async {
            let pipeline = Pipeline::new()
                .breaker(Static(&*BREAKER))
                .bulkhead(Static(&BULKHEAD));
            let r = Arc::new(Resilience::new(Box::new(pipeline)).seed(5));
            let storm_over = Arc::new(AtomicBool::new(false));
            let toggler = {
                let storm_over = storm_over.clone();
                tokio::spawn(async move {
                    let mut rng = SeededRandom::new(9);
                    while !storm_over.load(Ordering::Acquire) {
                        // The breaker's forced states do not depend on the instant.
                        let at = resilix::time::Instant::ZERO;
                        BREAKER.force_open(&mut Env::new(at, &mut rng));
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        BREAKER.reset(&mut Env::new(at, &mut rng));
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
            };
            let mut rng = SeededRandom::new(13);
            let mut tasks = Vec::with_capacity(CALLS as usize);
            for wave in 0..CALLS / 100 {
                for _ in 0..100 {
                    // Half are cancelled within 3 ms (queued, woken, or mid-attempt); the
                    // other half wait as long as the bulkhead lets them (never cancelled).
                    let cancel_after = match rng.next_u64() % 6_000 {
                        quick @ 0..3_000 => Duration::from_micros(quick),
                        _ => Duration::from_secs(2),
                    };
                    let hold = rng.next_u64() % 8;
                    let (r, full, outcomes) =
                        (r.clone(), full_after_max_wait.clone(), outcomes.clone());
                    tasks.push(tokio::spawn(async move {
                        let started = std::time::Instant::now();
                        let call =
                            r.execute_waiting(&BULKHEAD, CallOptions::default(), || async move {
                                if hold == 0 {
                                    tokio::time::sleep(Duration::from_millis(1)).await;
                                } else {
                                    for _ in 0..hold {
                                        tokio::task::yield_now().await;
                                    }
                                }
                                Ok::<(), ()>(())
                            });
                        let out = tokio::time::timeout(cancel_after, call).await;
                        outcomes.fetch_add(1, Ordering::Relaxed);
                        if let Ok(Err(Error::Refused { rejection, .. })) = out
                            && rejection.reason() == RejectReason::BulkheadFull
                            && started.elapsed() >= MAX_WAIT
                        {
                            full.fetch_add(1, Ordering::Relaxed);
                        }
                    }));
                }
                if wave % 10 == 9 {
                    // Let some waves drain fully, so idle slots meet queued waiters too.
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let all = async {
                for t in tasks {
                    t.await.unwrap();
                }
            };
            tokio::time::timeout(Duration::from_secs(60), all)
                .await
                .expect("the storm ends within 60 s");
            storm_over.store(true, Ordering::Release);
            toggler.await.unwrap();
        });
        done.store(true, Ordering::Release);
        let stuck = sampler.join().unwrap();
        println!(
            "storm: {} calls; longest behind a free unclaimed slot with no release: {:?}; \
             episodes over {bound:?}: {}; bulkhead-full after a full max wait: {}",
            outcomes.load(Ordering::Relaxed),
            stuck.longest,
            stuck.episodes_over_bound,
            full_after_max_wait.load(Ordering::Relaxed),
        );
        assert_eq!(outcomes.load(Ordering::Relaxed), CALLS);
        assert_eq!(
            stuck.episodes_over_bound, 0,
            "a waiter sat behind a free slot for {:?}",
            stuck.longest
        );
        assert_eq!((BULKHEAD.held(), BULKHEAD.hook().waiting()), (0, 0));
        assert_eq!(BULKHEAD.hook().claims(), 0, "every wake-up resolved");
    }
}
