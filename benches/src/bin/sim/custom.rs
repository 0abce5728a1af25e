//! `sim run`: one custom run with every parameter from the command line.

use std::fs;

use resilix::Verdict;
use resilix::permit::Policy;
use resilix::pipeline::Pipeline;
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBudget, TokenBucket, TokenBucketConfig, Unlimited,
};
use resilix::retry::{Backoff, Retry, RetryConfig, Strategy};
use resilix::throttler::{LocalRejections, Throttler, ThrottlerConfig};

use crate::cli::RunOptions;
use crate::engine::{Engine, Workload};
use crate::observer::Tally;
use crate::occ;
use crate::report::{Table, fmt_num};
use crate::upstream::{Capacity, Flaky, Upstream};

fn strategy(s: &str) -> Result<Strategy, String> {
    Ok(match s {
        "none" => Strategy::None,
        "exponential" | "expo" => Strategy::Exponential,
        "full" => Strategy::FullJitter,
        "equal" => Strategy::EqualJitter,
        "decorrelated" | "decorr" => Strategy::Decorrelated,
        _ => {
            return Err(format!(
                "--strategy {s:?}: none, exponential, full, equal, decorrelated"
            ));
        }
    })
}

fn retry_config(o: &RunOptions) -> Result<RetryConfig, String> {
    let backoff =
        Backoff::new(strategy(&o.strategy)?, o.base, o.cap).map_err(|e| format!("{e:?}"))?;
    let attempts = if o.attempts == 0 {
        u32::MAX
    } else {
        o.attempts
    };
    RetryConfig::new(attempts, backoff).map_err(|e| format!("{e:?}"))
}

pub fn run(o: &RunOptions) -> Result<(), String> {
    let config = retry_config(o)?;
    if o.model == "occ" {
        let p = Pipeline::new().retry(Retry::unbudgeted(config));
        let mut t = Table::new(
            "run",
            "OCC runs",
            &["seed", "clients", "calls", "completion ms"],
        );
        for seed in 0..o.seeds {
            let r = occ::run(&p, o.clients, o.net, o.master, seed);
            t.row(vec![
                seed.to_string(),
                o.clients.to_string(),
                r.calls.to_string(),
                fmt_num(r.completion.as_secs_f64() * 1e3),
            ]);
        }
        return emit(o, t);
    }
    match o.budget.as_str() {
        "none" => with_budget(o, config, || Ok(Unlimited)),
        "ratio" => with_budget(o, config, || {
            RatioBudget::<10>::new(RatioBudgetConfig {
                max_retry_permille: o.ratio,
                ..RatioBudgetConfig::DEFAULT
            })
            .map_err(|e| format!("{e:?}"))
        }),
        "brooker" => bucket(o, config, TokenBucketConfig::BROOKER_2022),
        "grpc" => bucket(o, config, TokenBucketConfig::GRPC_A6_EXAMPLE),
        "aws" => bucket(o, config, TokenBucketConfig::AWS_SDK_STANDARD),
        b => Err(format!("--budget {b:?}: none, ratio, brooker, grpc, aws")),
    }
}

fn bucket(o: &RunOptions, config: RetryConfig, c: TokenBucketConfig) -> Result<(), String> {
    with_budget(o, config, || {
        TokenBucket::new(c).map_err(|e| format!("{e:?}"))
    })
}

fn with_budget<B: RetryBudget>(
    o: &RunOptions,
    config: RetryConfig,
    make: impl Fn() -> Result<B, String>,
) -> Result<(), String> {
    let local = match o.throttler.as_str() {
        "off" => None,
        "sre" => Some(LocalRejections::CountAsRequests),
        "failsafe" => Some(LocalRejections::Ignore),
        t => return Err(format!("--throttler {t:?}: off, sre, failsafe")),
    };
    match local {
        None => with_stacks(o, config, &make, || Ok(())),
        Some(local) => with_stacks(o, config, &make, || {
            Throttler::<20>::new(ThrottlerConfig {
                accepts_multiplier: o.k,
                local_rejections: local,
                ..ThrottlerConfig::DEFAULT
            })
            .map_err(|e| format!("{e}"))
        }),
    }
}

fn with_stacks<B: RetryBudget, T: Policy>(
    o: &RunOptions,
    config: RetryConfig,
    make_budget: &impl Fn() -> Result<B, String>,
    make_throttler: impl Fn() -> Result<T, String>,
) -> Result<(), String> {
    let mut stacks = Vec::with_capacity(o.clients);
    for _ in 0..o.clients {
        stacks.push(
            Pipeline::new()
                .retry(Retry::new(config, make_budget()?))
                .throttler(make_throttler()?),
        );
    }
    let w = Workload {
        clients: o.clients,
        rate: o.rate,
        kind: o.client,
        duration: o.duration,
        warmup: o.warmup,
        net: o.net,
        idempotent: false,
        bucket: std::time::Duration::ZERO,
    };
    let mut t = Table::new(
        "run",
        "Custom run (steady state: after --warmup)",
        &[
            "seed",
            "calls",
            "attempts sent",
            "load",
            "accepted",
            "succeeded",
            "failed",
            "refused",
            "success %",
            "mean in flight",
        ],
    );
    for seed in 0..o.seeds {
        let tally = Tally::default();
        let out = match o.model.as_str() {
            "flaky" => go(
                &stacks,
                Flaky {
                    p: o.failure,
                    service: std::time::Duration::ZERO,
                    failure: Verdict::Transient,
                },
                w,
                &tally,
                o.master,
                seed,
            ),
            "capacity" => {
                let (workers, service, queue) = o.capacity;
                go(
                    &stacks,
                    Capacity::new(workers, service, queue),
                    w,
                    &tally,
                    o.master,
                    seed,
                )
            }
            m => return Err(format!("--model {m:?}: flaky, capacity, occ")),
        };
        let c = out.steady;
        t.row(vec![
            seed.to_string(),
            c.calls.to_string(),
            c.sent.to_string(),
            fmt_num(c.sent as f64 / c.calls.max(1) as f64),
            c.accepted.to_string(),
            c.succeeded.to_string(),
            c.failed.to_string(),
            c.refused.to_string(),
            fmt_num(100.0 * c.succeeded as f64 / c.calls.max(1) as f64),
            fmt_num(out.mean_in_flight),
        ]);
    }
    emit(o, t)
}

fn go<S: crate::stack::Stack, U: Upstream>(
    stacks: &[S],
    up: U,
    w: Workload,
    tally: &Tally,
    master: u64,
    seed: u64,
) -> crate::engine::Outcome {
    Engine::new(stacks, up, w, tally).run(master, seed)
}

fn emit(o: &RunOptions, t: Table) -> Result<(), String> {
    println!("{}", t.text());
    fs::create_dir_all(&o.out).map_err(|e| e.to_string())?;
    fs::write(o.out.join("run.csv"), t.csv()).map_err(|e| e.to_string())?;
    let mut json = String::from("[\n");
    for (i, r) in t.rows.iter().enumerate() {
        let fields: Vec<String> = t
            .header
            .iter()
            .zip(r)
            .map(|(h, v)| format!("\"{h}\": \"{v}\""))
            .collect();
        json.push_str(&format!(
            "  {{{}}}{}\n",
            fields.join(", "),
            if i + 1 < t.rows.len() { "," } else { "" }
        ));
    }
    json.push_str("]\n");
    fs::write(o.out.join("run.json"), json).map_err(|e| e.to_string())?;
    println!("written {} and run.json", o.out.join("run.csv").display());
    Ok(())
}
