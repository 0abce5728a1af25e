//! Experiment 5: retry token counts — gRPC A6 retry throttling and the AWS SDK standard retry
//! quota — with the real `Retry` and `TokenBucket`, driven call by call.

use std::time::Instant as WallClock;

use resilix::Verdict;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::{Random, SeededRandom};
use resilix::retry::budget::{TokenBucket, TokenBucketConfig, Tokens};
use resilix::retry::{Backoff, Retry, RetryConfig};
use resilix::time::Instant;

use super::Ctx;
use crate::report::{Check, Section, Table, fmt_num};

type P<'b> = Pipeline<Retry<&'b TokenBucket>>;

fn pipeline(bucket: &TokenBucket, attempts: u32) -> P<'_> {
    Pipeline::new().retry(Retry::new(
        RetryConfig::new(attempts, Backoff::NONE).expect("valid"),
        bucket,
    ))
}

/// One call whose attempts fail with `fail` while `fails(attempt)`; returns (retries, ok).
fn call(
    p: &P<'_>,
    rng: &mut SeededRandom,
    idempotent: bool,
    mut fails: impl FnMut(u32) -> Option<Verdict>,
) -> (u32, bool) {
    let mut env = Env::new(Instant::ZERO, rng);
    let mut c = p.call(env.now, CallOptions::default().idempotent(idempotent));
    loop {
        let attempt = c.admit(&mut env).expect("nothing refuses");
        let n = c.attempts();
        let v = fails(n).unwrap_or(Verdict::Success);
        match c.settle(attempt, &v, &mut env) {
            Next::RetryAt(at) => env.now = at,
            Next::Done => return (n - 1, true),
            Next::GiveUp(_) => return (n - 1, false),
        }
    }
}

fn always(v: Verdict) -> impl FnMut(u32) -> Option<Verdict> {
    move |_| Some(v)
}

/// Retries granted to a stream of always-failing calls from a fresh bucket.
fn drain(cfg: TokenBucketConfig, attempts: u32, v: Verdict) -> u32 {
    let bucket = TokenBucket::new(cfg).expect("valid");
    let p = pipeline(&bucket, attempts);
    let mut rng = SeededRandom::new(1);
    let mut total = 0;
    for _ in 0..1000 {
        total += call(&p, &mut rng, true, always(v)).0;
    }
    total
}

pub fn run(ctx: &Ctx) -> Section {
    let started = WallClock::now();
    let mut s = Section::new(
        "quota",
        "gRPC A6 retry throttling and the AWS SDK retry quota",
        "Calls driven one by one through a real pipeline with `Retry` (no backoff) and a real \
         `TokenBucket` preset: `GRPC_A6_EXAMPLE` (maxTokens 10, tokenRatio 0.1) and \
         `AWS_SDK_STANDARD` (500 tokens, retry cost 5, timeout cost 10, +1 per first-try \
         success, refund on retry success). Counts are exact, so tolerances are zero.",
    );
    let transient = Verdict::Transient;
    let grpc = TokenBucketConfig::GRPC_A6_EXAMPLE;
    let aws = TokenBucketConfig::AWS_SDK_STANDARD;

    // G1 drain: 4 retries from a full bucket of 10.
    let g = drain(grpc, 5, transient);
    s.checks.push(Check::abs(
        "G1",
        "gRPC: retries from 10 tokens, all failing",
        g as f64,
        4.0,
        0.0,
    ));

    // G1 recovery: after draining, k successes before the next failure is retried.
    let recover = |k: u32| {
        let bucket = TokenBucket::new(grpc).expect("valid");
        let p = pipeline(&bucket, 5);
        let mut rng = SeededRandom::new(2);
        // One call failing every attempt: 4 retries (9, 8, 7, 6), and the last failure
        // leaves exactly 5.0.
        call(&p, &mut rng, false, always(transient));
        assert_eq!(bucket.balance(), Tokens::whole(5));
        for _ in 0..k {
            call(&p, &mut rng, false, |_| None);
        }
        // One failure, then success: was it retried?
        call(&p, &mut rng, false, |n| (n == 1).then_some(transient)).0
    };
    let first_k = (0..30).find(|&k| recover(k) > 0).unwrap_or(u32::MAX);
    s.checks.push(Check::abs(
        "G1",
        "gRPC: successes needed from 5.0 before the next retry",
        first_k as f64,
        11.0,
        0.0,
    ));

    // G1 equilibrium: with per-attempt failure f and retries, does throttling engage?
    let mut t = Table::new(
        "grpc-equilibrium",
        "gRPC A6 (10, 0.1): share of wanted retries that the bucket refused, 20,000 calls",
        &[
            "failure rate f",
            "retries granted",
            "retries refused",
            "refused share",
            "A6: engages iff f/(1−f) > 0.1",
        ],
    );
    let mut engage = Vec::new();
    for f in [0.02, 0.05, 0.2, 0.4] {
        let bucket = TokenBucket::new(grpc).expect("valid");
        let p = pipeline(&bucket, 2);
        let mut rng = SeededRandom::new(ctx.master ^ 0x6a6);
        let mut draw = SeededRandom::new(ctx.master ^ 0xf417);
        let (mut granted, mut wanted) = (0u64, 0u64);
        for _ in 0..20_000 {
            let (r, _) = call(&p, &mut rng, false, |n| {
                let failed = draw.unit() < f;
                // Two attempts allowed: every failed first attempt wants one retry.
                if n == 1 && failed {
                    wanted += 1;
                }
                failed.then_some(transient)
            });
            granted += u64::from(r);
        }
        let refused = wanted - granted;
        let firsts_failed = wanted;
        let share = refused as f64 / firsts_failed.max(1) as f64;
        let predicted = f / (1.0 - f) > 0.1;
        t.row(vec![
            fmt_num(f),
            granted.to_string(),
            refused.to_string(),
            fmt_num(share),
            if predicted { "engages" } else { "idle" }.into(),
        ]);
        engage.push((f, share, predicted));
    }
    s.tables.push(t);
    for (f, share, predicted) in engage {
        let ok = if predicted { share > 0.5 } else { share < 0.01 };
        s.checks.push(Check::new(
            "G1",
            &format!("gRPC: throttling at f={f}"),
            format!("{:.1}% refused", share * 100.0),
            if predicted {
                "engaged (f > 0.0909)"
            } else {
                "idle (f < 0.0909)"
            }
            .into(),
            if predicted {
                "> 50% refused"
            } else {
                "< 1% refused"
            }
            .into(),
            ok,
        ));
    }

    // W1: AWS SDK quota.
    let a = drain(aws, 3, transient);
    s.checks.push(Check::abs(
        "W1",
        "AWS SDK: retries from 500 tokens, cost 5",
        a as f64,
        100.0,
        0.0,
    ));
    let a = drain(aws, 3, Verdict::Timeout);
    s.checks.push(Check::abs(
        "W1",
        "AWS SDK: retries after timeouts, cost 10",
        a as f64,
        50.0,
        0.0,
    ));
    let c14 = TokenBucketConfig {
        retry_cost: Tokens::whole(14),
        ..aws
    };
    let a = drain(c14, 3, transient);
    s.checks.push(Check::abs(
        "W1",
        "AWS SDK 2026: retries at cost 14",
        a as f64,
        35.0,
        0.0,
    ));
    let refill = |k: u32| {
        let bucket = TokenBucket::new(aws).expect("valid");
        let p = pipeline(&bucket, 3);
        let mut rng = SeededRandom::new(3);
        for _ in 0..100 {
            call(&p, &mut rng, false, always(transient));
        }
        for _ in 0..k {
            call(&p, &mut rng, false, |_| None);
        }
        call(&p, &mut rng, false, always(transient)).0
    };
    s.checks.push(Check::new(
        "W1",
        "AWS SDK: 4 / 5 first-try successes restore retries",
        format!("{} / {}", refill(4), refill(5)),
        "0 / 1".into(),
        "exact".into(),
        refill(4) == 0 && refill(5) == 1,
    ));
    // A successful retry refunds its own cost: a call that fails once and succeeds on the
    // retry spends 5 and gets 5 back, so the balance is where it started (if the refund were
    // missing it would end 5 lower).
    let bucket = TokenBucket::new(aws).expect("valid");
    let p = pipeline(&bucket, 3);
    let mut rng = SeededRandom::new(4);
    let before = bucket.balance();
    let _ = call(&p, &mut rng, false, |n| (n == 1).then_some(transient));
    let after = bucket.balance();
    s.checks.push(Check::new(
        "W1",
        "AWS SDK: a successful retry refunds its cost",
        format!("{} → {} milli-tokens", before.as_milli(), after.as_milli()),
        "balance unchanged".into(),
        "exact".into(),
        before == after,
    ));
    s.seconds = started.elapsed().as_secs_f64();
    s
}
