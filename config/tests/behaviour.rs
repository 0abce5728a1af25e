//! A built pipeline is the real thing: its breaker opens, its retries spend from the shared
//! budget, its empty slots admit everything.

use resilix::RejectReason;
use resilix::Verdict;
use resilix::breaker::CircuitState;
use resilix::call::{CallOptions, Next};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::retry::GiveUpReason;
use resilix::time::Instant;
use resilix_config::{Budget, Config};

const FILE: &str = r#"
    [budgets.process]
    kind = "token-bucket"
    capacity = 2
    initial = 2
    retry_cost = 1
    timeout_retry_cost = 1
    [pipelines.reads.retry]
    max_attempts = 5
    backoff = { base = "1ms", cap = "1ms", jitter = "none" }
    budget = "process"
    [pipelines.writes.retry]
    max_attempts = 5
    backoff = { base = "1ms", cap = "1ms", jitter = "none" }
    budget = "process"
    [pipelines.writes.breaker]
    minimum_calls = 4
    open_jitter_percent = 0
    consecutive_failures = 2
    [pipelines.open]
"#;

#[test]
fn retries_of_two_pipelines_spend_from_one_budget() {
    let pipelines = Config::from_toml_str(FILE).unwrap().build().unwrap();
    let mut rng = SeededRandom::new(5);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    let mut retried = 0;
    for name in ["reads", "writes"] {
        let pipeline = pipelines.get(name).unwrap();
        let mut call = pipeline.call(env.now, CallOptions::default());
        loop {
            let attempt = match call.admit(&mut env) {
                Ok(a) => a,
                Err(stop) => panic!("{name}: {stop:?}"),
            };
            match call.settle(attempt, &Verdict::Transient, &mut env) {
                Next::RetryAt(at) => {
                    retried += 1;
                    env.now = at;
                }
                Next::GiveUp(reason) => {
                    assert_eq!(reason, GiveUpReason::BudgetExceeded, "{name}");
                    break;
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }
    assert_eq!(
        retried, 2,
        "two tokens, one bucket, whichever pipeline spends them"
    );
    match &**pipelines.budget("process").unwrap() {
        Budget::TokenBucket(b) => assert_eq!(b.balance().as_milli(), 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_configured_breaker_opens_and_refuses() {
    let pipelines = Config::from_toml_str(FILE).unwrap().build().unwrap();
    let writes = pipelines.get("writes").unwrap();
    let breaker = writes.breaker_ref().as_deref().unwrap();
    let mut rng = SeededRandom::new(6);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    for _ in 0..2 {
        let attempt = writes.admit(&mut env, None).unwrap();
        attempt.settle(&Verdict::Transient, &mut env);
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    let Err(refused) = writes.admit(&mut env, None) else {
        panic!("an open circuit admits nothing")
    };
    assert_eq!(refused.reason(), RejectReason::CircuitOpen);
    assert_eq!(
        refused.retry_at(),
        Some(Instant::from_secs(6)),
        "the 5 s default wait"
    );
    breaker.reset(&mut env);
    assert!(writes.admit(&mut env, None).is_ok());
    breaker.force_open(&mut env);
    assert_eq!(breaker.state(), CircuitState::ForcedOpen);
}

#[test]
fn a_pipeline_with_no_tables_admits_everything_once() {
    let pipelines = Config::from_toml_str(FILE).unwrap().build().unwrap();
    let open = pipelines.get("open").unwrap();
    let mut rng = SeededRandom::new(7);
    let mut env = Env::new(Instant::ZERO, &mut rng);
    let held: Vec<_> = (0..1000)
        .map(|_| open.admit(&mut env, None).unwrap())
        .collect();
    drop(held);
    let mut call = open.call(env.now, CallOptions::default());
    let attempt = call.admit(&mut env).unwrap();
    assert_eq!(
        call.settle(attempt, &Verdict::Transient, &mut env),
        Next::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 1 }),
        "no retry table: no retries"
    );
}
