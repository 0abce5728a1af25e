//! Reloads that change only the throttler's K and cap, or a token bucket's settings, keep the
//! live policy (the same `Arc`, reported `ChangeKind::Reconfigured`) with its state: the
//! throttler's window of counts, the bucket's balance (clamped to a lowered capacity). Any
//! other change of a throttler (here its window), or a budget's change of kind, builds fresh.

use std::sync::Arc;

use resilix::Verdict;
use resilix::VerdictKind;
use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::retry::budget::{RetryBudget, Tokens};
use resilix::time::Instant;
use resilix_config::{Budget, Change, ChangeKind, Config, Live, ReloadEvent};

fn config(text: &str) -> Config {
    Config::from_toml_str(text).unwrap()
}

fn change(path: &str, kind: ChangeKind) -> Change {
    Change {
        path: path.into(),
        kind,
    }
}

fn changes(live: &Live, text: &str) -> Vec<Change> {
    match live.reload(Ok(config(text))) {
        ReloadEvent::ConfigApplied { changes, .. } => changes,
        other => panic!("{other:?}"),
    }
}

const T1: &str = r#"
[pipelines.api.throttler]
accepts_multiplier = 2.0
max_rejection_rate = 0.9
min_requests = 0
"#;

#[test]
fn a_reload_of_only_k_and_the_cap_keeps_the_throttler_and_its_window() {
    let live = Live::new(config(T1)).unwrap();
    let throttler = live
        .pipeline("api")
        .unwrap()
        .throttler_ref()
        .clone()
        .unwrap();
    let now = Instant::from_secs(1);
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(now, &mut rng);
    for i in 0..100 {
        let verdict = if i < 40 {
            Verdict::Success
        } else {
            Verdict::Transient
        };
        if let Ok(p) = throttler.admit(&mut env) {
            p.settle(&verdict, &mut env);
        }
    }
    let counts = throttler.counts(now);

    let t2 = T1.replace("accepts_multiplier = 2.0", "accepts_multiplier = 3.0");
    assert_eq!(
        changes(&live, &t2),
        vec![change("pipelines.api.throttler", ChangeKind::Reconfigured)]
    );
    let after = live
        .pipeline("api")
        .unwrap()
        .throttler_ref()
        .clone()
        .unwrap();
    assert!(Arc::ptr_eq(&after, &throttler), "the same throttler");
    assert_eq!(after.counts(now), counts, "the window kept");
    let (requests, accepts) = counts;
    assert_eq!(
        after.rejection_probability(now).is_zero(),
        requests <= 3 * accepts,
        "K = 3 in force over {counts:?}"
    );

    // An invalid cap is refused with its path, and nothing changes.
    let bad = T1.replace("max_rejection_rate = 0.9", "max_rejection_rate = 1.0");
    let ReloadEvent::ConfigRejected { error, .. } = live.reload(Ok(config(&bad))) else {
        panic!("an invalid cap must be refused")
    };
    assert_eq!(error.path(), "pipelines.api.throttler.max_rejection_rate");

    // The window cannot change in place: a fresh throttler, its window empty.
    let t3 = t2.replace("min_requests = 0", "min_requests = 0\nwindow = \"60s\"");
    assert_eq!(
        changes(&live, &t3),
        vec![change("pipelines.api.throttler", ChangeKind::Fresh)]
    );
    let fresh = live
        .pipeline("api")
        .unwrap()
        .throttler_ref()
        .clone()
        .unwrap();
    assert!(!Arc::ptr_eq(&fresh, &throttler));
    assert_eq!(fresh.counts(now), (0, 0));
}

const B1: &str = r#"
[budgets.process]
kind = "token-bucket"

[pipelines.payments.retry]
budget = "process"
"#;

fn bucket(live: &Live) -> Arc<Budget> {
    Arc::clone(live.load().budget("process").unwrap())
}

fn balance(b: &Budget) -> Tokens {
    match b {
        Budget::TokenBucket(t) => t.balance(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reload_of_a_token_bucket_keeps_its_balance_clamped_to_a_lower_capacity() {
    let live = Live::new(config(B1)).unwrap();
    let before = bucket(&live);
    for _ in 0..10 {
        assert!(before.try_spend(Instant::ZERO, VerdictKind::Transient));
    }
    assert_eq!(balance(&before), Tokens::whole(450));

    // Cheaper retries: the same bucket, the balance kept.
    let b2 = B1.replace(
        "kind = \"token-bucket\"",
        "kind = \"token-bucket\"\nretry_cost = 2",
    );
    assert!(changes(&live, &b2).contains(&change("budgets.process", ChangeKind::Reconfigured)));
    let after = bucket(&live);
    assert!(Arc::ptr_eq(&after, &before), "the same bucket");
    assert_eq!(balance(&after), Tokens::whole(450));
    assert!(after.try_spend(Instant::ZERO, VerdictKind::Transient));
    assert_eq!(balance(&after), Tokens::whole(448), "the new cost in force");

    // A capacity below the balance: clamped to it.
    let b3 = b2.replace(
        "retry_cost = 2",
        "retry_cost = 2\ncapacity = 100\ninitial = 100",
    );
    assert!(changes(&live, &b3).contains(&change("budgets.process", ChangeKind::Reconfigured)));
    assert!(Arc::ptr_eq(&bucket(&live), &before));
    assert_eq!(balance(&bucket(&live)), Tokens::whole(100));

    // Another kind of budget is another policy.
    let b4 = B1.replace("kind = \"token-bucket\"", "kind = \"ratio\"");
    assert!(changes(&live, &b4).contains(&change("budgets.process", ChangeKind::Fresh)));
    assert!(!Arc::ptr_eq(&bucket(&live), &before));
}

const R1: &str = r#"
[pipelines.api.rate_limit]
count = 10
per = "1s"
"#;

/// A reload that changes the rate limiter's rate keeps the live limiter and the cells it has
/// spent (a fresh one would hand out a full burst again: twice the quota across a reload).
#[test]
fn a_reload_of_a_rate_limit_keeps_the_limiter_and_its_spent_cells() {
    let live = Live::new(config(R1)).unwrap();
    let limiter = live
        .pipeline("api")
        .unwrap()
        .rate_limit_ref()
        .clone()
        .unwrap();
    let now = Instant::from_secs(1);
    for _ in 0..10 {
        limiter.try_acquire(now).unwrap();
    }
    assert_eq!(limiter.available(now), 0);

    let r2 = R1.replace("count = 10", "count = 20");
    assert_eq!(
        changes(&live, &r2),
        vec![change("pipelines.api.rate_limit", ChangeKind::Reconfigured)]
    );
    let after = live
        .pipeline("api")
        .unwrap()
        .rate_limit_ref()
        .clone()
        .unwrap();
    assert!(Arc::ptr_eq(&after, &limiter), "the same limiter");
    assert_eq!(after.burst(), 20, "the new burst in force");
    assert!(
        after.available(now) < 20,
        "the spent cells carried over, not a full new bucket: {}",
        after.available(now)
    );

    // An invalid rate is refused at its path, and the live limiter is untouched.
    let bad = R1.replace("count = 10", "count = 0");
    match live.reload(Ok(config(&bad))) {
        ReloadEvent::ConfigRejected { error, .. } => {
            assert!(
                error.to_string().starts_with("pipelines.api.rate_limit"),
                "{error}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        live.pipeline("api")
            .unwrap()
            .rate_limit_ref()
            .as_ref()
            .unwrap()
            .burst(),
        20
    );
}

const RB1: &str = r#"
[budgets.process]
kind = "retry-breaker"
max_failure_permille = 100

[pipelines.api.retry]
budget = "process"
"#;

/// A reload that changes a retry breaker's threshold keeps the live breaker and its window.
#[test]
fn a_reload_of_a_retry_breaker_keeps_its_window() {
    let live = Live::new(config(RB1)).unwrap();
    let before = bucket(&live);
    let now = Instant::from_secs(1);
    for _ in 0..100 {
        before.record_first_attempt(now);
    }
    for _ in 0..20 {
        before.record_unretried_failure(now, VerdictKind::Transient);
    }
    let Budget::RetryBreaker(b) = &*before else {
        panic!("a retry breaker")
    };
    assert!(b.is_tripped(now));
    let b2 = RB1.replace("max_failure_permille = 100", "max_failure_permille = 300");
    assert_eq!(
        changes(&live, &b2),
        vec![
            change("budgets.process", ChangeKind::Reconfigured),
            change("pipelines.api.retry", ChangeKind::Kept),
        ]
    );
    let after = bucket(&live);
    assert!(Arc::ptr_eq(&after, &before), "the same breaker");
    let Budget::RetryBreaker(b) = &*after else {
        panic!("a retry breaker")
    };
    assert_eq!(b.counts(now), (100, 20), "its window kept");
    assert!(!b.is_tripped(now), "judged by the new threshold");
}
