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
    let call = |took| {
        r.call(CallOptions::default())
            .wait_on(&bulkhead)
            .run(move || work(took))
    };
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
    let call = |took| {
        r.call(CallOptions::default())
            .wait_on(&bulkhead)
            .run(move || work(took))
    };
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

    /// Lock sections in which a woken waiter found no free slot for its wake-up and queued
    /// again at its place: its claimed slot was taken by someone who barged past the claim.
    /// Seen from the list alone: that section, and only that one, gives up one claim and
    /// adds one waiter (a wake-up takes a waiter and adds a claim; a newcomer adds a waiter;
    /// a resolve gives up a claim and may take a waiter for a new one).
    static BARGED: AtomicU32 = AtomicU32::new(0);

    impl WaiterLock<CAPACITY> for Watched {
        const NEW: Self = Watched;
        fn with<R>(&self, f: impl FnOnce(&mut WaiterList<CAPACITY>) -> R) -> R {
            let mut list = list();
            let (len, claims) = (list.len(), list.claims());
            let out = f(&mut list);
            if list.claims() + 1 == claims && list.len() == len + 1 {
                BARGED.fetch_add(1, Ordering::Relaxed);
            }
            out
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

    /// One kind of episode the sampler looks for: how long it lasted at most, and how many
    /// lasted longer than their bound. An episode counts from its first sample and restarts
    /// when the release count moves (a new release: a new slot, and its hook may be the one
    /// pending).
    #[derive(Debug, Default)]
    struct Episodes {
        current: Option<(std::time::Instant, u32)>,
        counted: bool,
        longest: Duration,
        over_bound: u32,
    }

    impl Episodes {
        fn see(&mut self, on: bool, releases: u32, now: std::time::Instant, bound: Duration) {
            match self.current {
                Some((since, seen)) if on && seen == releases => {
                    let d = now - since;
                    self.longest = self.longest.max(d);
                    if d > bound && !self.counted {
                        self.over_bound += 1;
                        self.counted = true;
                    }
                }
                _ if on => {
                    self.counted = false;
                    self.current = Some((now, releases));
                }
                _ => {
                    self.counted = false;
                    self.current = None;
                }
            }
        }
    }

    /// What the sampler saw.
    #[derive(Debug, Default)]
    struct Seen {
        /// Someone queued, and more free slots than wake-ups on their way to one: a waiter
        /// behind a slot that is free and that no wake-up claims.
        unclaimed: Episodes,
        /// Someone queued, and every free slot claimed by a wake-up not yet back: the queue
        /// held behind a woken waiter that has not reached the bulkhead yet.
        claimed: Episodes,
        samples: u64,
        /// The longest the sampler itself went between two samples (it is descheduled too on
        /// a loaded machine): episodes shorter than this may be missed.
        longest_gap: Duration,
    }

    /// Samples, under the waiter lock (the one every wake-up is decided in), the list and the
    /// bulkhead together, every 100 µs, and times two states (see [`Seen`]) against their
    /// bounds.
    fn sample(done: &AtomicBool, bounds: Bounds) -> Seen {
        let mut seen = Seen::default();
        let mut last = std::time::Instant::now();
        while !done.load(Ordering::Acquire) {
            let (queued, free, claims, releases) = {
                let list = list();
                (
                    !list.is_empty(),
                    BULKHEAD.available() as usize,
                    list.claims(),
                    BULKHEAD.releases(),
                )
            };
            let now = std::time::Instant::now();
            seen.samples += 1;
            seen.longest_gap = seen.longest_gap.max(now - last);
            last = now;
            seen.unclaimed
                .see(queued && free > claims, releases, now, bounds.unclaimed);
            seen.claimed.see(
                queued && free > 0 && free <= claims,
                releases,
                now,
                bounds.claimed,
            );
            std::thread::sleep(Duration::from_micros(100));
        }
        seen
    }

    /// How long each state may last.
    ///
    /// `unclaimed` (a waiter behind a free slot no wake-up claims): the state exists only
    /// between a release's slot being freed and its hook taking the waiter lock to wake, a
    /// few instructions on one thread. It lasts longer only if the OS preempts that thread
    /// in between: on a machine four times oversubscribed (8 runnable threads a core on two
    /// cores), Linux's scheduler gives each runnable thread a slice of a few milliseconds,
    /// so a preempted thread waits about 7 × 3 ms ≈ 20 ms for its next turn. 50 ms is that
    /// wait with room to spare; a lost wake-up (the defect) lasts until the waiters' 500 ms
    /// `max_wait`.
    ///
    /// `claimed` (the queue behind a free slot a woken waiter claimed): it lasts from the
    /// wake-up until the woken task is polled and takes the slot (or passes the wake-up on).
    /// Nothing of resilix runs in between: it is tokio's wake-up latency (the woken task
    /// waits in its worker's queue, behind the polls of tasks woken before it; tokio's LIFO
    /// slot is not stolen by the other worker) plus, on a loaded machine, the OS's: that
    /// worker thread must get the CPU back, and the waiter lock, which this sampler may hold
    /// while it is itself preempted. Waiting has no hand-off and no claim expiry, so a woken
    /// waiter that is not scheduled holds the queue behind it for that whole delay, which
    /// only the machine bounds: under `scripts/load-test.sh` (about four times
    /// oversubscribed, two cores) runs measured up to 59 ms, with the sampler's own longest
    /// gap at 32 ms in that run, and 58.9 ms in another with the sampler's gap at only 20 ms
    /// (the woken worker and the sampler are different threads, so one's gap does not bound
    /// the other's). What it guards: a claim never resolved, or a waiter never polled, holds
    /// the queue until the waiters' 500 ms `max_wait`. So the assertion's bound is half that
    /// (250 ms), five times the longest hold seen at four times oversubscription, or twice
    /// the sampler's own longest gap if a run stalls longer; 50 ms stays the nominal bound
    /// the report counts episodes over.
    #[derive(Clone, Copy, Debug)]
    struct Bounds {
        unclaimed: Duration,
        claimed: Duration,
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
        let bounds = Bounds {
            unclaimed: Duration::from_millis(50),
            claimed: Duration::from_millis(50),
        };
        let sampler = {
            let done = done.clone();
            std::thread::spawn(move || sample(&done, bounds))
        };
        let storm_start = std::time::Instant::now();
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
                            r.call(CallOptions::default())
                                .wait_on(&BULKHEAD)
                                .run(|| async move {
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
        let storm_took = storm_start.elapsed();
        let seen = sampler.join().unwrap();
        let barged = BARGED.load(Ordering::Relaxed);
        println!(
            "storm: {} calls in {storm_took:?}; longest behind a free unclaimed slot with no \
             release: {:?} ({} over {:?}); longest behind a free slot claimed by a woken \
             waiter: {:?} ({} over {:?}); claimed slots taken by a barging caller: {barged}; \
             bulkhead-full after a full max wait: {}; {} samples, longest gap between two: {:?}",
            outcomes.load(Ordering::Relaxed),
            seen.unclaimed.longest,
            seen.unclaimed.over_bound,
            bounds.unclaimed,
            seen.claimed.longest,
            seen.claimed.over_bound,
            bounds.claimed,
            full_after_max_wait.load(Ordering::Relaxed),
            seen.samples,
            seen.longest_gap,
        );
        assert_eq!(outcomes.load(Ordering::Relaxed), CALLS);
        assert_eq!(
            seen.unclaimed.over_bound, 0,
            "a waiter sat behind a free slot no wake-up claimed for {:?}",
            seen.unclaimed.longest
        );
        let claimed_bound = (MAX_WAIT / 2).max(2 * seen.longest_gap);
        assert!(
            seen.claimed.longest <= claimed_bound,
            "the queue sat behind a free slot a woken waiter claimed for {:?} (bound {:?}: \
             the sampler itself went {:?} without running)",
            seen.claimed.longest,
            claimed_bound,
            seen.longest_gap
        );
        assert_eq!(barged, 0, "a caller took a slot a woken waiter had claimed");
        assert_eq!((BULKHEAD.held(), BULKHEAD.hook().waiting()), (0, 0));
        assert_eq!(BULKHEAD.hook().claims(), 0, "every wake-up resolved");
    }
}
