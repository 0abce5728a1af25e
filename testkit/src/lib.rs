//! Test your own resilience settings, and the behavioural scenarios every resilix adapter
//! must pass, written once.
//!
//! # The kit, for users
//!
//! * [`clock`]: a [`ManualClock`](resilix::time::ManualClock) shared by the pipeline and the
//!   test, a [`VirtualTimer`](clock::VirtualTimer) on it whose sleeps move it, and
//!   [`block_on`](clock::block_on): the synchronous driver.
//! * [`random`]: [`FakeRandom`](random::FakeRandom), the values you script, in order.
//! * [`upstream`]: [`ScriptedUpstream`](upstream::ScriptedUpstream), outcomes and latencies in
//!   order, on any driver's timer (the synchronous one, `resilix_tokio::TokioTimer` on paused
//!   time, `resilix_embassy::EmbassyTimer`).
//! * [`recorder`]: [`Recorder`](recorder::Recorder), every event, with
//!   [`assert_sequence`](recorder::Recorder::assert_sequence),
//!   [`assert_in_order`](recorder::Recorder::assert_in_order) and [`assert_events!`].
//! * [`describe`]: [`Description`](describe::Description), which slots of a built pipeline
//!   hold a policy, with which settings.
//!
//! # The adapter suite
//!
//! Each scenario is an `async fn` generic over the core's [`Timer`]: an adapter's test calls it
//! from inside its own runtime with its own timer (tokio with paused time, async-std and smol
//! with real `async-io` timers, embassy with the `std` driver). Latencies and delays are given in
//! a `unit` the caller picks, so virtual-time runtimes can use round numbers and real timers can
//! keep every sleep to a few milliseconds.
//!
//! [`Tolerance`] says how precise the runtime's time is: exact for virtual time, a bounded
//! lateness for real timers (a real timer never fires early, so lower bounds stay exact).
//!
//! Scenarios: [`retry_timing`], [`jittered_retry_timing`], [`deadline_respected`],
//! [`budget_refusal`], [`breaker_open_half_open`], [`cancel_during_attempt`],
//! [`cancel_during_retry_sleep`], [`fallback`], [`handles_share_one_timeline`]; bounded
//! waiting: [`limiter_queue_zone`], [`served_order`].

// The counting allocator (a `GlobalAlloc`, which cannot be written without `unsafe`) is the
// one exception, allowed on its module alone.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod alloc;
pub mod clock;
pub mod describe;
pub mod random;
pub mod recorder;
pub mod upstream;

use core::future::Future;
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;
use std::future::poll_fn;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use resilix::Error;
use resilix::breaker::{Breaker, CircuitState, Config as BreakerConfig};
use resilix::bulkhead::Bulkhead;
use resilix::bulkhead::wait::{WaitConfig, WaitOrder};
use resilix::call::CallOptions;
use resilix::classify::ResultClassifier;
use resilix::execute::{Attempted, ExecuteError, Timer, execute};
use resilix::fallback::{Fallback, KnownGood};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::{Degradation, Event, Observer};
use resilix::permit::{Detach, Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::resilience::{FixedSeeds, Resilience};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig};
use resilix::retry::{
    AttemptOutcome, Backoff, GiveUpReason, NoRetry, Retry, RetryConfig, RetryDecision, RetryPolicy,
    Strategy, retryable,
};
use resilix::time::{Deadline, Instant};
use resilix::waiters::{SlotWaiters, WaitTimer, WaiterLock};
use resilix::{RejectReason, Rejection, Verdict, VerdictKind};

const CLASSIFIER: ResultClassifier = ResultClassifier::new();

/// How precise a runtime's clock and sleeps are.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// How much later than asked a whole scenario may finish (real timers fire late, never
    /// early). Zero for virtual time.
    pub late: Duration,
}

impl Tolerance {
    /// Virtual time: every instant is exact.
    pub const EXACT: Tolerance = Tolerance {
        late: Duration::ZERO,
    };

    /// Real timers that may fire up to `late` after the instant asked for (summed over a
    /// scenario).
    pub const fn real(late: Duration) -> Tolerance {
        Tolerance { late }
    }

    /// Asserts `actual` is `expected`, or at most `late` after it.
    #[track_caller]
    pub fn assert_elapsed(&self, actual: Duration, expected: Duration, what: &str) {
        assert!(
            actual >= expected && actual <= expected + self.late,
            "{what}: took {actual:?}, expected {expected:?} (+ at most {:?})",
            self.late
        );
    }
}

/// Records every event (Sync, so futures holding it stay `Send`).
#[derive(Debug, Default)]
pub struct Log(Mutex<Vec<Event>>);

impl Log {
    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

impl Observer for Log {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(*event);
    }
}

/// A policy that counts what reaches it and refuses with `bulkhead-full` on demand: it makes
/// permit linearity observable (admitted = settled + cancelled; held returns to zero).
#[derive(Debug, Default)]
pub struct Counting {
    admitted: AtomicU32,
    settled: AtomicU32,
    cancelled: AtomicU32,
    held: AtomicU32,
    refuse: AtomicBool,
}

/// A snapshot of a [`Counting`] policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Permits handed out.
    pub admitted: u32,
    /// Permits settled with a verdict.
    pub settled: u32,
    /// Permits dropped without a verdict (cancelled).
    pub cancelled: u32,
    /// Permits alive now.
    pub held: u32,
}

impl Counting {
    /// Refuse every admission from now on (or stop refusing).
    pub fn refuse(&self, refuse: bool) {
        self.refuse.store(refuse, Ordering::SeqCst);
    }

    /// What reached it so far.
    pub fn counts(&self) -> Counts {
        Counts {
            admitted: self.admitted.load(Ordering::SeqCst),
            settled: self.settled.load(Ordering::SeqCst),
            cancelled: self.cancelled.load(Ordering::SeqCst),
            held: self.held.load(Ordering::SeqCst),
        }
    }
}

/// The [`Counting`] policy's permit.
#[derive(Debug)]
pub struct CountingPermit<'a> {
    policy: &'a Counting,
    settled: bool,
}

impl Policy for Counting {
    type Permit<'a> = CountingPermit<'a>;
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<CountingPermit<'_>, Rejection> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(Rejection::new(RejectReason::BulkheadFull));
        }
        self.admitted.fetch_add(1, Ordering::SeqCst);
        self.held.fetch_add(1, Ordering::SeqCst);
        Ok(CountingPermit {
            policy: self,
            settled: false,
        })
    }
}

/// A [`CountingPermit`] apart from its policy: still held, and counted as held.
#[derive(Debug)]
pub struct DetachedCounting(());

impl Detach for Counting {
    type Detached = DetachedCounting;

    fn detach(permit: CountingPermit<'_>) -> DetachedCounting {
        // Still held: its drop would count a cancellation and give the hold back.
        core::mem::forget(permit);
        DetachedCounting(())
    }

    fn attach(&self, detached: DetachedCounting) -> CountingPermit<'_> {
        let DetachedCounting(()) = detached;
        CountingPermit {
            policy: self,
            settled: false,
        }
    }
}

impl Permit for CountingPermit<'_> {
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        mut self,
        _verdict: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
        self.settled = true;
        self.policy.settled.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for CountingPermit<'_> {
    fn drop(&mut self) {
        self.policy.held.fetch_sub(1, Ordering::SeqCst);
        if !self.settled {
            self.policy.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Retries what the verdict rule allows after a fixed delay, up to `max` attempts, never past
/// the deadline. A driver-test double: it makes the loop's timing exact and checkable. Jitter
/// and budgets are the real retry policy's ([`jittered_retry_timing`], [`budget_refusal`]).
#[derive(Clone, Copy, Debug)]
pub struct FixedRetry {
    /// Attempts, the first included.
    pub max: u32,
    /// The wait before each retry.
    pub delay: Duration,
}

/// A retrying policy: each attempt gets a clone of the request.
impl<Req: Clone> resilix::call::Replay<Req> for FixedRetry {
    fn next_request(kept: &mut Option<Req>) -> Option<Req> {
        kept.clone()
    }
}

impl RetryPolicy for FixedRetry {
    type State = ();
    fn begin(&self, _now: Instant) {}
    fn decide<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _state: &mut (),
        outcome: &AttemptOutcome,
        env: &mut Env<'_, R, O>,
    ) -> RetryDecision {
        if let Err(d) = retryable(&outcome.verdict, outcome.idempotent) {
            return d;
        }
        if outcome.attempt >= self.max {
            return RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted {
                attempts: outcome.attempt,
            });
        }
        let at = env.now + self.delay;
        if outcome.deadline.is_some_and(|d| d.has_passed(at)) {
            return RetryDecision::GiveUp(GiveUpReason::DeadlineWouldPass);
        }
        RetryDecision::RetryAt(at)
    }
}

/// Sleeps `d` on `timer`: what a scenario's operation does to take time.
pub async fn latency<Tm: Timer + ?Sized>(timer: &Tm, d: Duration) {
    timer.sleep_until(timer.now() + d).await
}

/// Polls `fut` until `at`, then drops it: a caller that gave up (a dropped future). `None` if
/// it was cancelled.
pub async fn cancel_at<Tm: Timer + ?Sized, F: Future>(
    timer: &Tm,
    fut: F,
    at: Instant,
) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut stop = pin!(timer.sleep_until(at));
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if stop.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Sets a flag when dropped: proves an operation's future was dropped, not leaked.
#[derive(Debug)]
pub struct DropFlag<'a>(pub &'a AtomicBool);

impl Drop for DropFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn retry_delays(events: &[Event]) -> Vec<Duration> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RetryScheduled { delay, .. } => Some(*delay),
            _ => None,
        })
        .collect()
}

/// Retry timing: two failures then a success; each retry waits exactly the policy's delay, and
/// the whole call takes the sum of latencies and delays.
pub async fn retry_timing<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration, tol: Tolerance) {
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 3,
        delay: 10 * unit,
    });
    let mut rng = SeededRandom::new(1);
    let log = Log::default();
    let calls = AtomicU32::new(0);
    let start = timer.now();
    let out = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                latency(timer, 2 * unit).await;
                if n == 3 { Ok(n) } else { Err("reset") }
            }
        },
    )
    .await;
    assert_eq!(out, Ok(Ok(3)));
    tol.assert_elapsed(timer.now() - start, 26 * unit, "2 + 10 + 2 + 10 + 2 units");
    let delays = retry_delays(&log.events());
    assert_eq!(delays, [10 * unit, 10 * unit], "each retry waits the delay");
    let executed = log
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Executed { .. }))
        .count();
    assert_eq!(executed, 3);
}

/// Deadline respected: an attempt slower than the call's deadline is cut off at the deadline
/// (its future dropped), and no retry starts after it, even for an idempotent call.
pub async fn deadline_respected<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration, tol: Tolerance) {
    let pipeline = Pipeline::new().retry(FixedRetry {
        max: 5,
        delay: unit,
    });
    for idempotent in [false, true] {
        let mut rng = SeededRandom::new(2);
        let dropped = AtomicBool::new(false);
        let start = timer.now();
        let options = CallOptions::default()
            .deadline(Deadline::after(start, 10 * unit))
            .idempotent(idempotent);
        let out = execute(
            &pipeline,
            timer,
            &mut rng,
            &(),
            options,
            &CLASSIFIER,
            || {
                let flag = DropFlag(&dropped);
                async move {
                    let _flag = flag;
                    latency(timer, 100 * unit).await;
                    Ok::<(), ()>(())
                }
            },
        )
        .await;
        let err = out.unwrap_err();
        let expected_reason = if idempotent {
            GiveUpReason::DeadlineWouldPass
        } else {
            GiveUpReason::NotRetryable(VerdictKind::Timeout)
        };
        assert_eq!(
            err,
            ExecuteError::GaveUp {
                reason: expected_reason,
                attempts: 1,
                last: Attempted::TimedOut
            }
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the slow attempt was dropped"
        );
        tol.assert_elapsed(timer.now() - start, 10 * unit, "cut off at the deadline");
    }
}

/// Cancellation during an attempt: dropping the call mid-attempt gives the permit back, records
/// no outcome (no settle, no event), and drops the operation's future.
pub async fn cancel_during_attempt<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let gate = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 10 * unit,
        })
        .bulkhead(&gate);
    let mut rng = SeededRandom::new(3);
    let log = Log::default();
    let dropped = AtomicBool::new(false);
    let call = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || {
            let flag = DropFlag(&dropped);
            async move {
                let _flag = flag;
                latency(timer, 20 * unit).await;
                Err::<(), ()>(())
            }
        },
    );
    let out = cancel_at(timer, call, timer.now() + 5 * unit).await;
    assert!(out.is_none(), "cancelled before the attempt finished");
    assert_eq!(
        gate.counts(),
        Counts {
            admitted: 1,
            settled: 0,
            cancelled: 1,
            held: 0
        }
    );
    assert!(dropped.load(Ordering::SeqCst));
    assert!(
        log.events().is_empty(),
        "a cancelled attempt reports nothing"
    );
}

/// Cancellation during the retry sleep: the failed attempt was settled (once), nothing is held,
/// and no further attempt is made.
pub async fn cancel_during_retry_sleep<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let gate = Counting::default();
    let pipeline = Pipeline::new()
        .retry(FixedRetry {
            max: 3,
            delay: 20 * unit,
        })
        .bulkhead(&gate);
    let mut rng = SeededRandom::new(4);
    let log = Log::default();
    let call = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        || async {
            latency(timer, 2 * unit).await;
            Err::<(), ()>(())
        },
    );
    let out = cancel_at(timer, call, timer.now() + 10 * unit).await;
    assert!(out.is_none());
    assert_eq!(
        gate.counts(),
        Counts {
            admitted: 1,
            settled: 1,
            cancelled: 0,
            held: 0
        }
    );
    let events = log.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(
        events[0],
        Event::Executed {
            verdict: Verdict::Transient,
            ..
        }
    ));
    assert!(matches!(
        events[1],
        Event::RetryScheduled { attempt: 2, .. }
    ));
}

/// The pipeline the fallback scenario hands to an adapter: no retry, a gate that can refuse.
pub type GatePipeline<'a> = Pipeline<NoRetry, (), (), (), &'a Counting, ()>;

/// The store every adapter's last-known-good keeps for the [`fallback`] scenario.
pub type Store<'a> = &'a dyn KnownGood<Result<u32, &'static str>>;

/// One call through `pipeline` (reporting to `log`) whose operation returns `result`, through
/// the core's front end on the adapter's `timer`, answered by the adapter's `store`, else
/// `default`. Returns the answer and, if the fallback gave it, why.
async fn serve<Tm: Timer + Clone>(
    timer: &Tm,
    store: Store<'_>,
    pipeline: &GatePipeline<'_>,
    log: &Log,
    result: Result<u32, &'static str>,
    default: u32,
) -> (u32, Option<Degradation>) {
    let resilience =
        Resilience::with_parts(pipeline, timer.clone(), FixedSeeds::new(5)).observer(log);
    let served = resilience
        .execute_or(
            CallOptions::default(),
            Fallback::LastKnownGoodOr(store, Ok(default)),
            || async move { result },
        )
        .await
        .expect("a default is always there");
    let cause = served.degradation();
    (served.into_inner().expect("fallbacks are successes"), cause)
}

/// Fallback: a static value until a good answer was seen, then the last known good; used on
/// refusal and on give-up, never on success, and always visible as an event.
pub async fn fallback<Tm: Timer + Clone>(timer: &Tm, store: Store<'_>) {
    let gate = Counting::default();
    let pipeline: GatePipeline<'_> = Pipeline::new().bulkhead(&gate);
    let log = Log::default();
    let fallbacks = |log: &Log| {
        log.events()
            .iter()
            .filter_map(|e| match e {
                Event::FallbackServed { cause } => Some(*cause),
                _ => None,
            })
            .collect::<Vec<_>>()
    };

    // Nothing good seen yet: a failure is answered by the static default.
    let out = serve(timer, store, &pipeline, &log, Err("down"), 7).await;
    let gave_up = Degradation::GaveUp(GiveUpReason::AttemptsExhausted { attempts: 1 });
    assert_eq!(out, (7, Some(gave_up)));
    assert_eq!(fallbacks(&log), [gave_up]);

    // A fresh answer is served as is and remembered.
    let out = serve(timer, store, &pipeline, &log, Ok(42), 7).await;
    assert_eq!(out, (42, None));
    assert_eq!(fallbacks(&log).len(), 1, "a fresh answer is not a fallback");

    // Refused: the last known good answers, and says why.
    gate.refuse(true);
    let out = serve(timer, store, &pipeline, &log, Ok(99), 7).await;
    let refused = Degradation::Refused(Rejection::new(RejectReason::BulkheadFull));
    assert_eq!(out, (42, Some(refused)));
    gate.refuse(false);

    // Gave up: the last known good again.
    let out = serve(timer, store, &pipeline, &log, Err("down"), 7).await;
    assert_eq!(out, (42, Some(gave_up)));
    assert_eq!(fallbacks(&log), [gave_up, refused, gave_up]);
    assert_eq!(gate.counts().held, 0);
}

/// Runs both futures to completion, concurrently, on the caller's task.
pub async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut ra, mut rb) = (None, None);
    poll_fn(|cx| {
        if ra.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            ra = Some(v);
        }
        if rb.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            rb = Some(v);
        }
        if ra.is_some() && rb.is_some() {
            Poll::Ready((ra.take().unwrap(), rb.take().unwrap()))
        } else {
            Poll::Pending
        }
    })
    .await
}

fn transitions(events: &[Event]) -> Vec<(CircuitState, CircuitState)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CircuitTransition { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

/// Breaker open and half-open, with the real breaker: failures open it; an open circuit
/// refuses at once (the operation never runs) and says when it probes; at that instant one
/// probe goes through while a concurrent call is refused; a probe cancelled mid-flight frees
/// its slot (never stuck half-open); a successful probe closes it.
pub async fn breaker_open_half_open<Tm: Timer + ?Sized>(
    timer: &Tm,
    unit: Duration,
    tol: Tolerance,
) {
    let breaker = Breaker::new(BreakerConfig {
        minimum_calls: 4,
        open_wait: 20 * unit,
        open_jitter_percent: 0,
        ..BreakerConfig::DEFAULT
    })
    .expect("valid breaker config");
    let pipeline = Pipeline::new().breaker(&breaker);
    let mut rng = SeededRandom::new(6);
    let log = Log::default();
    let ran = AtomicU32::new(0);
    let call = |fail: bool, took: Duration, rng: &mut SeededRandom| {
        let ran = &ran;
        let log = &log;
        let pipeline = &pipeline;
        let mut rng = rng.clone();
        async move {
            execute(
                pipeline,
                timer,
                &mut rng,
                log,
                CallOptions::default(),
                &CLASSIFIER,
                || async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    latency(timer, took).await;
                    if fail { Err("down") } else { Ok(()) }
                },
            )
            .await
        }
    };

    for _ in 0..4 {
        assert!(call(true, unit, &mut rng).await.is_err());
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    let opened_at = log
        .events()
        .iter()
        .find_map(|e| match e {
            Event::CircuitTransition {
                to: CircuitState::Open,
                at,
                ..
            } => Some(*at),
            _ => None,
        })
        .expect("the opening was reported");

    // Open: refused at once, the operation never runs, and the refusal says when to probe.
    let refused = call(false, unit, &mut rng).await.unwrap_err();
    let rejection = refused.rejection().expect("refused");
    assert_eq!(rejection.reason(), RejectReason::CircuitOpen);
    assert_eq!(refused.attempts(), 0);
    assert_eq!(ran.load(Ordering::SeqCst), 4);
    let probe_at = rejection
        .retry_at()
        .expect("an open circuit says when it probes");
    // Exact up to the breaker's tick (it stores time as 32-bit ticks on a scale covering the
    // longest wait, 4 ns at the finest): never longer than asked by a tick or more. (The
    // retry-at is the refusal's `now` plus the whole ticks left, so a `now` later within its
    // tick than the opening's reports up to one tick late; real clocks land anywhere in a
    // tick.)
    let tick = Duration::from_nanos(4);
    let wait = probe_at - opened_at;
    assert!(
        wait < 20 * unit + tick && wait + 20 * unit / 1000 >= 20 * unit,
        "the open wait: {wait:?}"
    );

    // Half-open: a probe cancelled mid-flight gives its slot back.
    timer.sleep_until(probe_at).await;
    // A timer may round a wake-up up to its resolution (tokio's wheel: 1 ms), and the retry-at
    // is the start of the breaker's tick, which need not fall on a millisecond.
    let slept = timer.now() - opened_at;
    let resolution = Duration::from_millis(1);
    assert!(
        slept >= wait && slept <= wait + resolution + tol.late,
        "slept until the probe: took {slept:?}, expected {wait:?} (+ at most {:?})",
        resolution + tol.late
    );
    let cancelled = cancel_at(timer, call(false, 10 * unit, &mut rng), timer.now() + unit).await;
    assert!(cancelled.is_none());
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    assert_eq!(
        breaker.probes_in_flight(),
        0,
        "a dropped probe frees its slot"
    );

    // One probe at a time: a call during the probe is refused; the probe's success closes.
    let (probe, during) = join(call(false, 5 * unit, &mut rng), async {
        latency(timer, unit).await;
        call(false, unit, &mut SeededRandom::new(9)).await
    })
    .await;
    assert_eq!(probe, Ok(Ok(())));
    assert_eq!(
        during.unwrap_err().rejection().map(|r| r.reason()),
        Some(RejectReason::CircuitOpen)
    );
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(
        transitions(&log.events()),
        [
            (CircuitState::Closed, CircuitState::Open),
            (CircuitState::Open, CircuitState::HalfOpen),
            (CircuitState::HalfOpen, CircuitState::Closed),
        ]
    );
    // Only settled attempts reach the execution hook: 4 failures and the probe.
    let executed = log
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Executed { .. }))
        .count();
    assert_eq!(executed, 5);
}

/// Jittered retry timing, with the real retry policy (full jitter): every delay lies under the
/// exponential ceiling of its attempt, the call takes exactly the latencies plus the delays it
/// reported, and the same seed draws the same delays.
pub async fn jittered_retry_timing<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration, tol: Tolerance) {
    let backoff = Backoff::new(Strategy::FullJitter, 5 * unit, 40 * unit).expect("valid backoff");
    let retry = Retry::unbudgeted(RetryConfig::new(4, backoff).expect("valid retry config"));
    let pipeline = Pipeline::new().retry(&retry);
    let mut delays_of_runs = Vec::new();
    for _ in 0..2 {
        let mut rng = SeededRandom::new(77);
        let log = Log::default();
        let start = timer.now();
        let out = execute(
            &pipeline,
            timer,
            &mut rng,
            &log,
            CallOptions::default(),
            &CLASSIFIER,
            || async {
                latency(timer, unit).await;
                Err::<(), _>("reset")
            },
        )
        .await;
        assert_eq!(
            out.unwrap_err(),
            ExecuteError::GaveUp {
                reason: GiveUpReason::AttemptsExhausted { attempts: 4 },
                attempts: 4,
                last: Attempted::Output(Err("reset"))
            }
        );
        let delays = retry_delays(&log.events());
        assert_eq!(delays.len(), 3);
        for (i, d) in delays.iter().enumerate() {
            let ceiling = backoff.ceiling(i as u32 + 1);
            assert!(*d <= ceiling, "retry {} waited {d:?} > {ceiling:?}", i + 1);
        }
        let total: Duration = delays.iter().sum::<Duration>() + 4 * unit;
        tol.assert_elapsed(timer.now() - start, total, "latencies + reported delays");
        delays_of_runs.push(delays);
    }
    assert_eq!(
        delays_of_runs[0], delays_of_runs[1],
        "same seed, same jitter"
    );
    assert!(
        delays_of_runs[0].windows(2).any(|w| w[0] != w[1]),
        "jitter varies the delays: {:?}",
        delays_of_runs[0]
    );
}

/// Budget refusal, with the real retry policy and gRPC A6's token bucket (10 tokens, retries
/// while the balance stays above 5): an upstream that always fails gets exactly 4 retries,
/// then "would have retried, but the budget said no" — a reason of its own, never collapsed
/// into "attempts exhausted" — and the next call's first attempt still goes out.
pub async fn budget_refusal<Tm: Timer + ?Sized>(timer: &Tm, unit: Duration) {
    let budget = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).expect("valid budget");
    let backoff = Backoff::new(Strategy::Exponential, unit, unit).expect("valid backoff");
    let retry = Retry::new(RetryConfig::new(10, backoff).expect("valid"), &budget);
    let pipeline = Pipeline::new().retry(&retry);
    let mut rng = SeededRandom::new(8);
    let log = Log::default();
    let calls = AtomicU32::new(0);
    let failing = || {
        calls.fetch_add(1, Ordering::SeqCst);
        async {
            latency(timer, unit).await;
            Err::<(), _>("unavailable")
        }
    };
    let first = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        failing,
    )
    .await
    .unwrap_err();
    assert_eq!(
        first,
        ExecuteError::GaveUp {
            reason: GiveUpReason::BudgetExceeded,
            attempts: 5,
            last: Attempted::Output(Err("unavailable"))
        }
    );
    assert!(log.events().contains(&Event::RetryRefused {
        reason: GiveUpReason::BudgetExceeded,
        after: Verdict::Transient
    }));
    // The budget governs retries only: the next call is sent, and not retried.
    let second = execute(
        &pipeline,
        timer,
        &mut rng,
        &log,
        CallOptions::default(),
        &CLASSIFIER,
        failing,
    )
    .await
    .unwrap_err();
    assert_eq!(second.attempts(), 1);
    assert!(matches!(
        second,
        ExecuteError::GaveUp {
            reason: GiveUpReason::BudgetExceeded,
            ..
        }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 6);
}

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

/// Two handles made 60 units apart share one timeline: a timer made late reads the same
/// instant as one made early (it sees the 60 units that passed before it existed), and a
/// burst-1 rate limiter shared by a `Resilience` on each admits one call per interval between
/// them, never one per handle. A refusal's retry-at, on that timeline, is when the limiter
/// admits again. `make` is the adapter's timer constructor.
pub async fn handles_share_one_timeline<Tm: Timer>(
    make: impl Fn() -> Tm,
    unit: Duration,
    tol: Tolerance,
) {
    // One instant for one moment, whenever the handle was made.
    let early = make();
    let t0 = early.now();
    latency(&early, 60 * unit).await;
    let late = make();
    let (a, b, c) = (early.now(), late.now(), early.now());
    assert!(
        a <= b && b <= c,
        "a timer made 60 units later reads another timeline: {a:?}, {b:?}, {c:?}"
    );
    tol.assert_elapsed(c - a, Duration::ZERO, "three reads at one moment");
    tol.assert_elapsed(b - t0, 60 * unit, "the late timer sees the time before it");

    // One rate limiter, one token per 100 units, burst 1, shared by two long-lived handles.
    let interval = 100 * unit;
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::one_every(interval)).with_burst(1))
        .expect("a valid rate limit");
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let first = Resilience::with_parts(&pipeline, make(), FixedSeeds::new(21));
    macro_rules! call {
        ($r:expr) => {
            $r.execute(CallOptions::default(), || async { Ok::<(), ()>(()) })
        };
    }
    // The limiter saw the call at some instant between these two readings (real clocks move).
    let before = first.now();
    assert_eq!(call!(first).await, Ok(()), "a full bucket admits");
    let taken = first.now();
    latency(first.timer(), 60 * unit).await;
    let second = Resilience::with_parts(&pipeline, make(), FixedSeeds::new(22));
    let handles = [&second, &first];
    for i in 0..10 {
        let r = handles[i % 2];
        let err = call!(r)
            .await
            .expect_err("the bucket is empty for 40 more units");
        let rejection = err.rejection().expect("refused by the limiter");
        assert_eq!(rejection.reason(), RejectReason::RateLimited);
        let retry_at = rejection.retry_at().expect("a rate limiter knows when");
        // The token comes back one interval after it was taken (within 0.1 %, the GCRA's
        // tick), wherever the handle that reads it was made.
        let (since_before, since) = (retry_at - before, retry_at - taken);
        assert!(
            since_before >= interval && since <= interval + interval / 1000,
            "handle {i}: admits again {since:?} after the token was taken"
        );
        let wait = r.retry_in(&rejection).expect("a wait");
        assert!(
            wait <= 40 * unit + interval / 1000 && wait + tol.late + unit >= 40 * unit,
            "handle {i}: a wait of {wait:?} for 40 units"
        );
    }
    // At the retry-at, exactly one of the two handles' calls is admitted.
    let retry_at = call!(second)
        .await
        .unwrap_err()
        .rejection()
        .unwrap()
        .retry_at()
        .unwrap();
    second.timer().sleep_until(retry_at).await;
    let mut admitted = 0;
    for i in 0..10 {
        if call!(handles[i % 2]).await.is_ok() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 1, "burst 1: one call between both handles");
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
