//! The reload example's scenario on paused time: the same steps, checked by the same rules
//! (`scenario::check`), and the same counts on every run.

#[path = "../examples/reload/scenario.rs"]
#[allow(dead_code)] // the example prints what the test only checks
mod scenario;

use scenario::{Options, Step};

async fn run(name: &str) -> Vec<Step> {
    let dir = std::env::temp_dir().join(format!("resilix-{name}-{}", std::process::id()));
    let steps = scenario::run(Options::quick(dir.clone()), |_| {}).await;
    std::fs::remove_dir_all(&dir).ok();
    steps
}

#[tokio::test(start_paused = true)]
async fn a_good_change_a_rejected_change_and_a_forced_breaker_while_traffic_flows() {
    let steps = run("reload-example-a").await;
    assert_eq!(scenario::check(&steps), Vec::<String>::new(), "{steps:#?}");
    // After the reload the clients take the fresh breaker before admitting: no call is
    // refused by the forced one once the reload is reported.
    let Step::Traffic { seen, .. } = steps[9] else {
        panic!("{steps:#?}")
    };
    assert_eq!(seen.circuit_open, 0, "{seen:?}");
    // Paused time on one thread: the same steps, counts included, on a second run.
    assert_eq!(run("reload-example-b").await, steps);
}
