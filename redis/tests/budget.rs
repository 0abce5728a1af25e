//! The fleet retry budget against a real Redis: retries across 8 nodes never exceed the share
//! of first attempts across them, nodes that only retry live on deposits made elsewhere, and
//! through an outage each node lives on its own.

mod common;

use std::time::Duration;

use common::OwnRedis;
use resilix::RejectReason;
use resilix_redis::{FleetRetryBudget, RetryBudgetConfig};

fn config(prefix: &str) -> RetryBudgetConfig {
    let mut c = RetryBudgetConfig::new("budget");
    c.prefix = prefix.to_owned();
    c.flush_every = Duration::from_millis(10);
    c.backend_timeout = Duration::from_millis(500);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_retries_stay_within_the_share_of_fleet_first_attempts() {
    let Some(url) =
        common::redis_url("fleet_retries_stay_within_the_share_of_fleet_first_attempts")
    else {
        return;
    };
    let prefix = common::prefix("budget8");
    let mut nodes = Vec::new();
    for node in 0..8 {
        let budget = FleetRetryBudget::spawn(common::connect(&url).await, config(&prefix)).unwrap();
        nodes.push(tokio::spawn(async move {
            let t0 = tokio::time::Instant::now();
            while t0.elapsed() < Duration::from_millis(600) {
                // Half the fleet only sends first attempts, half only retries.
                if node < 4 {
                    budget.record_first_attempt();
                } else if let Err(r) = budget.try_retry() {
                    assert_eq!(r.reason(), RejectReason::BudgetExceeded);
                }
                // Pacing, not ordering: the bounds below hold for any mix of calls.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            budget.stats()
        }));
    }
    let (mut firsts, mut retries, mut refused) = (0, 0, 0);
    for n in nodes {
        let s = n.await.unwrap();
        assert_eq!(s.settlement_failures, 0, "{s:?}");
        firsts += s.first_attempts;
        retries += s.retries_admitted;
        refused += s.retries_refused;
    }
    eprintln!("{firsts} first attempts, {retries} retries admitted, {refused} refused");
    assert!(
        retries * 1_000 <= 200 * firsts,
        "{retries} retries > 20% of {firsts}"
    );
    assert!(
        retries > 0,
        "retry-only nodes spent deposits made on other nodes"
    );
    assert!(
        refused > 0,
        "the budget bound: retries wanted more than 20%"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_an_outage_a_node_lives_on_its_own_deposits() {
    if common::redis_url("through_an_outage_a_node_lives_on_its_own_deposits").is_none() {
        return;
    }
    let mut server = OwnRedis::start("budget_outage");
    let mut c = config(&common::prefix("budget_outage"));
    c.backend_timeout = Duration::from_millis(50);
    let budget = FleetRetryBudget::spawn(common::connect(&server.url()).await, c).unwrap();
    server.kill();
    for _ in 0..50 {
        budget.record_first_attempt();
    }
    let t0 = tokio::time::Instant::now();
    let mut admitted = 0;
    for _ in 0..20 {
        if budget.try_retry().is_ok() {
            admitted += 1;
        }
    }
    assert!(
        t0.elapsed() < Duration::from_millis(50),
        "no call waits on Redis"
    );
    // 50 first attempts at 20%: 10 retries, none more (settling could only send some away).
    assert!((1..=10).contains(&admitted), "{admitted}");
    // Waits for the background flush to have failed against the dead server (bounded,
    // generously for a loaded machine), instead of betting a fixed time is enough.
    let t0 = tokio::time::Instant::now();
    while budget.stats().settlement_failures == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no failed settlement while Redis is down: {:?}",
            budget.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.restart();
    let t0 = tokio::time::Instant::now();
    while budget.stats().settlements == 0 {
        for _ in 0..100 {
            budget.record_first_attempt();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no settlement after the restart"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
