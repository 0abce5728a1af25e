//! Spec §10, one test per acceptance criterion, so a failure names the promise that broke.
//! Every test drives the real policies on a manual timeline with seeded randomness.

use core::time::Duration;

use resilix::breaker::{Breaker, Config as BreakerConfig};
use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::{CallOptions, Next, Stop};
use resilix::limiter::{Limiter, LimiterConfig};
use resilix::observe::{DurationHistogram, Observer};
use resilix::permit::{Env, Permit, Policy};
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::retry::budget::{RatioBudget, RatioBudgetConfig, TokenBucket, TokenBucketConfig};
use resilix::retry::{Backoff, GiveUpReason, Retry, RetryConfig, Strategy};
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};
use resilix::time::{Deadline, Instant};
use resilix::{RejectReason, Verdict, VerdictKind};

const MS: Duration = Duration::from_millis(1);

/// Drives one logical call to its end against `upstream`, advancing time by `latency` per
/// attempt and jumping to each retry instant. Returns the attempts made and the final outcome.
fn run_call<P: Fn(&mut SeededRandom) -> Verdict>(
    pipeline: &Pipeline<
        impl resilix::retry::RetryPolicy,
        impl Policy,
        impl Policy,
        impl Policy,
        impl Policy,
        impl Policy,
    >,
    env: &mut Env<'_, SeededRandom, impl Observer>,
    options: CallOptions,
    latency: Duration,
    upstream: P,
) -> (u32, Result<Next, Stop>) {
    let mut call = pipeline.call(env.now, options);
    loop {
        let attempt = match call.admit(env) {
            Ok(a) => a,
            Err(stop) => return (call.attempts(), Err(stop)),
        };
        let verdict = upstream(env.rng);
        env.now = env.now + latency;
        match call.settle(attempt, &verdict, env) {
            Next::RetryAt(at) => env.now = at.max(env.now),
            other => return (call.attempts(), Ok(other)),
        }
    }
}

#[test]
fn criterion_1_full_jitter_matches_uniform_below_the_capped_ceiling_and_all_four_strategies_run() {
    let base = 10 * MS;
    let cap = Duration::from_millis(500);
    let mut rng = SeededRandom::new(10);
    let full = Backoff::new(Strategy::FullJitter, base, cap).unwrap();
    for attempt in 1..=7u32 {
        let ceiling = full.ceiling(attempt);
        assert_eq!(
            ceiling,
            cap.min(base * 2u32.pow(attempt)),
            "min(cap, base·2^n)"
        );
        // 100k draws into 20 equal bins: every bin within 5% of 5,000 (the binomial standard
        // deviation is ~69, so 250 is > 3.5σ), and nothing above the ceiling.
        let mut bins = [0u32; 20];
        for _ in 0..100_000 {
            let d = full.delay(attempt, Duration::ZERO, &mut rng);
            assert!(d <= ceiling);
            let bin = (d.as_nanos() * 20 / (ceiling.as_nanos() + 1)) as usize;
            bins[bin] += 1;
        }
        for (i, &n) in bins.iter().enumerate() {
            assert!(
                (4_750..=5_250).contains(&n),
                "attempt {attempt}, bin {i}: {n}"
            );
        }
    }
    // The other three strategies, each within its own formula.
    let expo = Backoff::new(Strategy::Exponential, base, cap).unwrap();
    let equal = Backoff::new(Strategy::EqualJitter, base, cap).unwrap();
    let decorrelated = Backoff::new(Strategy::Decorrelated, base, cap).unwrap();
    let mut previous = decorrelated.first_previous();
    for attempt in 1..=7u32 {
        let ceiling = expo.ceiling(attempt);
        assert_eq!(expo.delay(attempt, Duration::ZERO, &mut rng), ceiling);
        for _ in 0..1_000 {
            let e = equal.delay(attempt, Duration::ZERO, &mut rng);
            assert!(
                e >= ceiling / 2 - Duration::from_nanos(1) && e <= ceiling,
                "equal jitter: {e:?}"
            );
            let d = decorrelated.delay(attempt, previous, &mut rng);
            assert!(
                d >= base && d <= cap && d <= (previous * 3).max(base),
                "decorrelated: {d:?}"
            );
            previous = d;
        }
    }
}

/// Attempts per call under an upstream that refuses with probability `q`, 3 attempts at most.
fn amplification(budget: Option<&RatioBudget>, q: f64) -> f64 {
    let config = RetryConfig::new(3, Backoff::NONE).unwrap();
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let calls = 20_000u32;
    let mut attempts = 0u32;
    for _ in 0..calls {
        let overload = |r: &mut SeededRandom| {
            if r.unit() < q {
                Verdict::Overload { retry_after: None }
            } else {
                Verdict::Success
            }
        };
        let (n, _) = match budget {
            Some(b) => run_call(
                &Pipeline::new().retry(Retry::new(config, b)),
                &mut env,
                CallOptions::default(),
                MS,
                overload,
            ),
            None => run_call(
                &Pipeline::new().retry(Retry::unbudgeted(config)),
                &mut env,
                CallOptions::default(),
                MS,
                overload,
            ),
        };
        attempts += n;
    }
    attempts as f64 / calls as f64
}

#[test]
fn criterion_2_sre_amplification_three_attempts_about_3x_budgeted_about_1_1x() {
    // SRE: "up to three attempts" under 99% rejection is 1 + q + q² = 2.97× the load.
    let unbudgeted = amplification(None, 0.99);
    assert!(
        (unbudgeted - 2.9701).abs() < 0.03,
        "unbudgeted: {unbudgeted}"
    );
    // With the 10% retry budget, SRE's ~1.1×. The window is longer than the run, so the
    // floor of 3 retries per window adds at most 3 / 20,000.
    let config = RatioBudgetConfig {
        window: Duration::from_secs(60),
        ..RatioBudgetConfig::DEFAULT
    };
    let budget: RatioBudget = RatioBudget::new(config).unwrap();
    let budgeted = amplification(Some(&budget), 0.99);
    assert!((1.09..=1.1002).contains(&budgeted), "budgeted: {budgeted}");
}

/// The measured rejection rate of a throttler over a steady stream against independent
/// failures at rate `f`, after one window of warm-up.
fn measured_rejection(config: ThrottlerConfig, f: f64, seed: u64) -> f64 {
    let throttler: Throttler = Throttler::new(config).unwrap();
    let pipeline = Pipeline::new().throttler(&throttler);
    let mut rng = SeededRandom::new(seed);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let (mut offered, mut refused) = (0u32, 0u32);
    // 100 calls a second for 10 minutes; the window is 2 minutes.
    for i in 0..60_000u32 {
        env.now = Instant::from_millis(10 * i as u64);
        let counting = env.now >= Instant::from_secs(120);
        match pipeline.admit(&mut env, None) {
            Ok(attempt) => {
                let verdict = if env.rng.unit() < f {
                    Verdict::Transient
                } else {
                    Verdict::Success
                };
                attempt.settle(&verdict, &mut env);
            }
            Err(r) => {
                assert_eq!(r.reason(), RejectReason::Throttled);
                refused += counting as u32;
            }
        }
        offered += counting as u32;
    }
    refused as f64 / offered as f64
}

#[test]
fn criterion_3_throttler_holds_the_analytic_rejection_rate_within_5_percent_across_a_failure_sweep()
{
    // failsafe-go semantics (local refusals not counted): P = clamp(1 − K(1−f), 0, cap).
    let ignore = ThrottlerConfig {
        local_rejections: LocalRejections::Ignore,
        ..ThrottlerConfig::DEFAULT
    };
    for (i, f) in [0.6f64, 0.7, 0.8, 0.9].into_iter().enumerate() {
        let analytic = (1.0 - 2.0 * (1.0 - f)).clamp(0.0, 0.9);
        let measured = measured_rejection(ignore, f, 30 + i as u64);
        assert!(
            (measured - analytic).abs() <= 0.05 * analytic,
            "f = {f}: measured {measured}, analytic {analytic}"
        );
    }
    // SRE semantics (local refusals counted): nothing shed while K(1−f) ≥ 1; at the cap beyond.
    let sre = ThrottlerConfig::DEFAULT;
    assert_eq!(measured_rejection(sre, 0.3, 40), 0.0);
    let at_cap = measured_rejection(sre, 0.8, 41);
    assert!(
        (at_cap - 0.9).abs() <= 0.05 * 0.9,
        "SRE at f = 0.8: {at_cap}"
    );
}

#[test]
fn criterion_4_one_shared_budget_caps_retries_across_three_independent_pipelines() {
    // AWS SDK quota: 500 tokens, 5 per retry, so exactly 100 retries in all, whoever asks.
    let budget = TokenBucket::new(TokenBucketConfig::AWS_SDK_STANDARD).unwrap();
    let config = RetryConfig::new(3, Backoff::NONE).unwrap();
    let pipelines = [
        Pipeline::new().retry(Retry::new(config, &budget)),
        Pipeline::new().retry(Retry::new(config, &budget)),
        Pipeline::new().retry(Retry::new(config, &budget)),
    ];
    let mut rng = SeededRandom::new(4);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let (mut retries, mut budget_refusals) = (0u32, 0u32);
    for round in 0..200 {
        let pipeline = &pipelines[round % 3];
        let (attempts, outcome) = run_call(pipeline, &mut env, CallOptions::default(), MS, |_| {
            Verdict::Transient
        });
        retries += attempts - 1;
        if outcome == Ok(Next::GiveUp(GiveUpReason::BudgetExceeded)) {
            budget_refusals += 1;
        }
    }
    assert_eq!(
        retries, 100,
        "the shared budget, not each pipeline, bounds the retries"
    );
    assert!(
        budget_refusals > 100,
        "later failures are refused by the budget: {budget_refusals}"
    );
    // Without the shared budget the same traffic retries 2× per call.
    let free = Pipeline::new().retry(Retry::unbudgeted(config));
    let (attempts, _) = run_call(&free, &mut env, CallOptions::default(), MS, |_| {
        Verdict::Transient
    });
    assert_eq!(attempts, 3);
}

#[test]
fn criterion_5_answered_is_never_retried_and_rejected_is_never_retried() {
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::DEFAULT));
    let mut rng = SeededRandom::new(5);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let (attempts, outcome) = run_call(&pipeline, &mut env, CallOptions::default(), MS, |_| {
        Verdict::Answered
    });
    assert_eq!((attempts, outcome), (1, Ok(Next::Done)));
    let nested = Verdict::Rejected(RejectReason::BulkheadFull);
    let (attempts, outcome) = run_call(
        &pipeline,
        &mut env,
        CallOptions::default().idempotent(true),
        MS,
        |_| nested,
    );
    assert_eq!(
        (attempts, outcome),
        (
            1,
            Ok(Next::GiveUp(GiveUpReason::NotRetryable(
                VerdictKind::Rejected
            )))
        )
    );
    // And a refusal by our own policy ends the call without a retry.
    let bulkhead: Bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let held = bulkhead.admit(&mut env).unwrap();
    let guarded = Pipeline::new()
        .retry(Retry::unbudgeted(RetryConfig::DEFAULT))
        .bulkhead(&bulkhead);
    let (attempts, outcome) = run_call(&guarded, &mut env, CallOptions::default(), MS, |_| {
        Verdict::Success
    });
    assert_eq!(attempts, 0);
    assert!(matches!(outcome, Err(Stop::Refused(r)) if r.reason() == RejectReason::BulkheadFull));
    drop(held);
}

#[test]
fn criterion_6_a_retry_delay_counts_against_the_deadline() {
    // Exponential from 100 ms: the first retry waits min(cap, 100 ms · 2^1) = 200 ms.
    let backoff = Backoff::new(Strategy::Exponential, 100 * MS, Duration::from_secs(10)).unwrap();
    let pipeline = Pipeline::new().retry(Retry::unbudgeted(RetryConfig::new(3, backoff).unwrap()));
    let mut rng = SeededRandom::new(6);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    // 10 ms attempt + 200 ms delay would start at 210 ms: past a 150 ms deadline.
    let tight = CallOptions::default().deadline(Deadline::at(Instant::from_millis(150)));
    let (attempts, outcome) = run_call(&pipeline, &mut env, tight, 10 * MS, |_| Verdict::Transient);
    assert_eq!(
        (attempts, outcome),
        (1, Ok(Next::GiveUp(GiveUpReason::DeadlineWouldPass)))
    );
    // With room for it, the same failure is retried 200 ms later.
    let mut env = Env::new(Instant::ZERO, env.rng);
    let roomy = CallOptions::default().deadline(Deadline::at(Instant::from_secs(1)));
    let mut call = pipeline.call(env.now, roomy);
    let attempt = call.admit(&mut env).unwrap();
    env.now = Instant::from_millis(10);
    assert_eq!(
        call.settle(attempt, &Verdict::Transient, &mut env),
        Next::RetryAt(Instant::from_millis(210))
    );
}

#[test]
fn criterion_7_shed_requests_never_appear_in_the_execution_duration_histogram() {
    let histogram = DurationHistogram::new();
    let bulkhead: Bulkhead = Bulkhead::new(BulkheadConfig::new(2).unwrap());
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let pipeline = Pipeline::new().throttler(&throttler).bulkhead(&bulkhead);
    let mut rng = SeededRandom::new(7);
    let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&histogram);
    let (mut settled, mut shed) = (0u64, 0u64);
    let mut in_flight = Vec::new();
    for i in 0..5_000u64 {
        env.now = Instant::from_millis(i);
        match pipeline.admit(&mut env, None) {
            Ok(a) => in_flight.push(a),
            Err(_) => shed += 1,
        }
        // Every third tick the oldest call finishes, failing half the time.
        if i % 3 == 0 && !in_flight.is_empty() {
            let a = in_flight.remove(0);
            let v = if i % 2 == 0 {
                Verdict::Transient
            } else {
                Verdict::Success
            };
            a.settle(&v, &mut env);
            settled += 1;
        }
    }
    assert!(shed > 1_000, "the policies shed: {shed}");
    assert_eq!(
        histogram.count(),
        settled,
        "only settled calls have durations"
    );
}

#[test]
fn criterion_8_all_six_rejection_reasons_are_distinguishable_by_a_caller() {
    let mut rng = SeededRandom::new(8);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let mut seen = Vec::new();

    // circuit-open: 20 failures in the window open the breaker.
    let breaker: Breaker = Breaker::new(BreakerConfig::DEFAULT).unwrap();
    for _ in 0..20 {
        breaker
            .admit(&mut env)
            .unwrap()
            .settle(&Verdict::Transient, &mut env);
    }
    seen.push(breaker.admit(&mut env).err().unwrap());

    // limiter-full: as many in flight as the limit.
    let limiter = Limiter::new(LimiterConfig::gradient2()).unwrap();
    let held: Vec<_> = (0..limiter.limit())
        .map(|_| limiter.admit(&mut env).unwrap())
        .collect();
    seen.push(limiter.admit(&mut env).err().unwrap());
    drop(held);

    // throttled: an upstream accepting nothing.
    let throttler: Throttler = Throttler::new(ThrottlerConfig::DEFAULT).unwrap();
    let throttled = (0..1_000).find_map(|_| match throttler.admit(&mut env) {
        Ok(p) => {
            p.settle(&Verdict::Overload { retry_after: None }, &mut env);
            None
        }
        Err(r) => Some(r),
    });
    seen.push(throttled.expect("a failing upstream is throttled"));

    // bulkhead-full: a cap of one, held.
    let bulkhead: Bulkhead = Bulkhead::new(BulkheadConfig::new(1).unwrap());
    let slot = bulkhead.admit(&mut env).unwrap();
    seen.push(bulkhead.admit(&mut env).err().unwrap());
    drop(slot);

    // rate-limited: a burst of one, spent.
    let rate = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1))).unwrap();
    rate.admit(&mut env)
        .unwrap()
        .settle(&Verdict::Success, &mut env);
    seen.push(rate.admit(&mut env).err().unwrap());

    // budget-exceeded: a spent token bucket refuses the retry.
    let budget = TokenBucket::new(TokenBucketConfig::GRPC_A6_EXAMPLE).unwrap();
    let pipeline = Pipeline::new().retry(Retry::new(
        RetryConfig::new(10, Backoff::NONE).unwrap(),
        &budget,
    ));
    let (_, outcome) = run_call(&pipeline, &mut env, CallOptions::default(), MS, |_| {
        Verdict::Transient
    });
    let Ok(Next::GiveUp(reason)) = outcome else {
        panic!("{outcome:?}")
    };
    seen.push(
        reason
            .as_rejection()
            .expect("a budget refusal is a rejection"),
    );

    let reasons: Vec<RejectReason> = seen.iter().map(|r| r.reason()).collect();
    assert_eq!(
        reasons,
        [
            RejectReason::CircuitOpen,
            RejectReason::LimiterFull,
            RejectReason::Throttled,
            RejectReason::BulkheadFull,
            RejectReason::RateLimited,
            RejectReason::BudgetExceeded,
        ]
    );
    let texts: std::collections::BTreeSet<String> =
        seen.iter().map(|r| r.reason().to_string()).collect();
    assert_eq!(texts.len(), 6, "six distinct messages");
    // The policies that know when they will admit again say so.
    assert!(
        seen[0].retry_at().is_some(),
        "an open breaker names its next probe"
    );
    assert!(
        seen[4].retry_at().is_some(),
        "a rate limiter names its next token"
    );
}
