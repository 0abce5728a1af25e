//! Static stability: a reload that fails to read or validate keeps the last good config and
//! says so; one that succeeds keeps every unchanged policy (the same `Arc`, its state),
//! reconfigures in place a bulkhead whose cap changed (its calls in flight kept) and a breaker
//! whose thresholds, waits or probes changed (its state kept), and starts every other changed
//! policy fresh; readers see whole generations while reloads run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use resilix::VerdictKind;
use resilix::breaker::CircuitState;
use resilix::permit::{Env, Policy};
use resilix::random::SeededRandom;
use resilix::retry::budget::RetryBudget;
use resilix::time::Instant;
use resilix_config::{Budget, Change, ChangeKind, Config, Live, Problem, ReloadEvent, Reloader};

const V1: &str = r#"
[budgets.process]
kind = "token-bucket"

[pipelines.payments]
attempt_timeout = "250ms"
[pipelines.payments.retry]
budget = "process"
[pipelines.payments.breaker]
minimum_calls = 10
[pipelines.payments.bulkhead]
max_concurrent = 4

[pipelines.search.bulkhead]
max_concurrent = 2
"#;

fn config(text: &str) -> Config {
    Config::from_toml_str(text).unwrap()
}

fn change(path: &str, kind: ChangeKind) -> Change {
    Change {
        path: path.into(),
        kind,
    }
}

fn env(rng: &mut SeededRandom) -> Env<'_, SeededRandom> {
    Env::new(Instant::from_secs(1), rng)
}

fn balance(live: &Live) -> u32 {
    match &**live.load().budget("process").unwrap() {
        Budget::TokenBucket(b) => b.balance().as_milli(),
        other => panic!("{other:?}"),
    }
}

/// A reload that changes only a bulkhead's cap keeps its in-flight count: lowered below it,
/// the bulkhead admits nobody until those calls drain; and a reload refused elsewhere
/// (another pipeline's invalid table) leaves the live cap as it was.
#[test]
fn a_reload_of_only_a_bulkhead_cap_keeps_its_calls_in_flight() {
    let live = Live::new(config(V1)).unwrap();
    let mut rng = SeededRandom::new(4);
    let bulkhead = live
        .pipeline("payments")
        .unwrap()
        .bulkhead_ref()
        .clone()
        .unwrap();
    let held: Vec<_> = (0..3)
        .map(|_| bulkhead.admit(&mut env(&mut rng)).unwrap())
        .collect();

    // Refused: the cap change in `payments` must not be applied either.
    let bad = V1
        .replace("max_concurrent = 4", "max_concurrent = 2")
        .replace(
            "[pipelines.search.bulkhead]\nmax_concurrent = 2",
            "[pipelines.search.bulkhead]\nmax_concurrent = 0",
        );
    assert!(matches!(
        live.reload(Ok(config(&bad))),
        ReloadEvent::ConfigRejected { .. }
    ));
    assert_eq!(
        bulkhead.max_concurrent(),
        4,
        "a refused reload changed a live cap"
    );

    let lowered = V1.replace("max_concurrent = 4", "max_concurrent = 2");
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&lowered))) else {
        panic!()
    };
    assert!(changes.contains(&change(
        "pipelines.payments.bulkhead",
        ChangeKind::Reconfigured
    )));
    let now = live
        .pipeline("payments")
        .unwrap()
        .bulkhead_ref()
        .clone()
        .unwrap();
    assert!(Arc::ptr_eq(&now, &bulkhead));
    assert_eq!((now.max_concurrent(), now.held()), (2, 3), "in flight kept");
    assert!(now.admit(&mut env(&mut rng)).is_err(), "3 in flight, cap 2");
    let mut held = held;
    held.truncate(1);
    assert!(
        now.admit(&mut env(&mut rng)).is_ok(),
        "drained below the new cap"
    );
}

#[test]
fn unchanged_policies_keep_their_state_and_changed_ones_start_fresh() {
    let live = Live::new(config(V1)).unwrap();
    let mut rng = SeededRandom::new(1);
    let before = live.pipeline("payments").unwrap();
    let breaker = before.breaker_ref().clone().unwrap();
    breaker.force_open(&mut env(&mut rng));
    let held = before.bulkhead_ref().clone().unwrap();
    let _slot = held.admit(&mut env(&mut rng)).unwrap();
    let budget = live.load().budget("process").unwrap().clone();
    assert!(budget.try_spend(Instant::from_secs(1), VerdictKind::Transient));
    let spent = balance(&live);

    // Only the bulkhead's table changes.
    let v2 = V1.replace("max_concurrent = 4", "max_concurrent = 8");
    let event = live.reload(Ok(config(&v2)));
    assert_eq!(
        event,
        ReloadEvent::ConfigApplied {
            generation: 1,
            changes: vec![
                change("budgets.process", ChangeKind::Kept),
                change("pipelines.payments.attempt_timeout", ChangeKind::Kept),
                change("pipelines.payments.retry", ChangeKind::Kept),
                change("pipelines.payments.breaker", ChangeKind::Kept),
                change("pipelines.payments.bulkhead", ChangeKind::Reconfigured),
                change("pipelines.search.bulkhead", ChangeKind::Kept),
            ],
        }
    );
    let after = live.pipeline("payments").unwrap();
    let kept = after.breaker_ref().as_ref().unwrap();
    assert!(Arc::ptr_eq(kept, &breaker), "the same breaker");
    assert_eq!(kept.state(), CircuitState::ForcedOpen, "with its state");
    let reconfigured = after.bulkhead_ref().as_ref().unwrap();
    assert!(Arc::ptr_eq(reconfigured, &held), "the same bulkhead");
    assert_eq!(
        (reconfigured.max_concurrent(), reconfigured.held()),
        (8, 1),
        "reconfigured in place: the call in flight still counts"
    );
    assert!(Arc::ptr_eq(live.load().budget("process").unwrap(), &budget));
    assert_eq!(balance(&live), spent, "the budget kept what it spent");
    let retry_budget = after.retry_policy().get().unwrap().budget().get().unwrap();
    assert!(
        Arc::ptr_eq(retry_budget, &budget),
        "the rebuilt retry spends from it"
    );

    // Now the breaker's window changes (its table's other fields would reconfigure it in
    // place): a fresh, closed breaker. The token bucket's capacity changes too, which a
    // bucket takes in place: the same budget, its balance carried over.
    let v3 = v2
        .replace(
            "minimum_calls = 10",
            "minimum_calls = 10\nwindow = { length = \"20s\" }",
        )
        .replace(
            "kind = \"token-bucket\"",
            "kind = \"token-bucket\"\ncapacity = 600",
        );
    let ReloadEvent::ConfigApplied {
        generation,
        changes,
    } = live.reload(Ok(config(&v3)))
    else {
        panic!()
    };
    assert_eq!(generation, 2);
    assert!(changes.contains(&change("pipelines.payments.breaker", ChangeKind::Fresh)));
    assert!(changes.contains(&change("budgets.process", ChangeKind::Reconfigured)));
    let now = live.pipeline("payments").unwrap();
    assert_eq!(
        now.breaker_ref().as_ref().unwrap().state(),
        CircuitState::Closed
    );
    let same_budget = now.retry_policy().get().unwrap().budget().get().unwrap();
    assert!(Arc::ptr_eq(same_budget, &budget));
    assert_eq!(
        balance(&live),
        spent,
        "the balance carried over: under the new capacity, not clamped"
    );
}

#[test]
fn a_bad_reload_keeps_the_last_good_config_and_says_so() {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    let live = Live::new(config(V1))
        .unwrap()
        .with_listener(move |e| log.lock().unwrap().push(e.clone()));
    let good = live.load_full();

    let invalid = V1.replace(
        "minimum_calls = 10",
        "minimum_calls = 10\nhalf_open_probes = 0",
    );
    let syntax = V1.replace("[pipelines.search.bulkhead]", "[pipelines.search.bulkhead");
    let unknown = V1.replace("max_concurrent = 2", "max_concurent = 2");
    let offers = [
        (
            Config::from_toml_str(&invalid),
            "pipelines.payments.breaker.half_open_probes",
        ),
        (Config::from_toml_str(&syntax), ""),
        (
            Config::from_toml_str(&unknown),
            "pipelines.search.bulkhead.max_concurent",
        ),
        (Config::from_path("/nonexistent/resilience.toml"), ""),
    ];
    for (i, (offer, path)) in offers.into_iter().enumerate() {
        match live.reload(offer) {
            ReloadEvent::ConfigRejected {
                error,
                kept_generation,
            } => {
                assert_eq!(error.path(), path);
                assert_eq!(kept_generation, 0);
            }
            other => panic!("{other:?}"),
        }
        assert!(Arc::ptr_eq(&live.load_full(), &good), "nothing swapped");
        let status = live.status();
        assert_eq!(status.generation, 0);
        assert_eq!(status.rejections_since_applied, i as u64 + 1);
        assert_eq!(status.last_rejection.unwrap().path(), path);
    }
    let text = live.status().last_rejection.unwrap().to_string();
    assert!(
        text.contains("cannot read /nonexistent/resilience.toml"),
        "{text}"
    );
    // Traffic still has every pipeline of the last good config.
    assert!(live.pipeline("payments").is_some() && live.pipeline("search").is_some());

    // The next good config clears the degradation.
    let v2 = V1.replace("max_concurrent = 2", "max_concurrent = 3");
    assert!(matches!(
        live.reload(Ok(config(&v2))),
        ReloadEvent::ConfigApplied { generation: 1, .. }
    ));
    let status = live.status();
    assert_eq!((status.generation, status.rejections_since_applied), (1, 0));
    assert!(status.last_rejection.is_none());

    let heard = heard.lock().unwrap();
    assert_eq!(heard.len(), 5, "the listener hears every reload");
    assert!(
        heard[..4]
            .iter()
            .all(|e| matches!(e, ReloadEvent::ConfigRejected { .. }))
    );
}

#[test]
fn an_empty_config_never_replaces_live_pipelines() {
    let live = Live::new(config(V1)).unwrap();
    for empty in ["", "# truncated\n", "[budgets.process]\nkind = \"ratio\"\n"] {
        match live.reload(Config::from_toml_str(empty)) {
            ReloadEvent::ConfigRejected { error, .. } => {
                assert_eq!(error.path(), "pipelines");
                assert_eq!(error.problem(), &Problem::NoPipelines { live: 2 });
                assert!(error.to_string().contains("truncated"), "{error}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(live.pipeline("payments").is_some());
    // Starting from none, an empty config is just empty.
    let none = Live::new(Config::default()).unwrap();
    assert_eq!(
        none.reload(Ok(Config::default())),
        ReloadEvent::ConfigUnchanged { generation: 0 }
    );
}

#[test]
fn an_equal_config_swaps_nothing() {
    let live = Live::new(config(V1)).unwrap();
    let before = live.load_full();
    assert_eq!(
        live.reload(Ok(config(V1))),
        ReloadEvent::ConfigUnchanged { generation: 0 }
    );
    assert!(Arc::ptr_eq(&live.load_full(), &before));
}

#[test]
fn pipelines_and_budgets_added_and_removed_are_reported() {
    let live = Live::new(config(V1)).unwrap();
    let v2 = r#"
        [budgets.other]
        kind = "ratio"
        [pipelines.payments.breaker]
        minimum_calls = 10
        [pipelines.payments.limiter]
        [pipelines.ledger]
    "#;
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(v2))) else {
        panic!()
    };
    assert_eq!(
        changes,
        vec![
            change("budgets.other", ChangeKind::Added),
            change("budgets.process", ChangeKind::Removed),
            change("pipelines.ledger", ChangeKind::Added),
            change("pipelines.payments.attempt_timeout", ChangeKind::Removed),
            change("pipelines.payments.retry", ChangeKind::Removed),
            change("pipelines.payments.breaker", ChangeKind::Kept),
            change("pipelines.payments.limiter", ChangeKind::Added),
            change("pipelines.payments.bulkhead", ChangeKind::Removed),
            change("pipelines.search", ChangeKind::Removed),
        ]
    );
    assert!(live.pipeline("search").is_none());
    assert!(live.load().budget("process").is_none());
}

#[test]
fn the_reloader_offers_a_file_once_per_change_of_its_text() {
    let dir = std::env::temp_dir().join(format!("resilix-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resilience.toml");
    std::fs::write(&file, V1).unwrap();
    let live = Arc::new(Live::from_path(&file).unwrap());
    let mut reloader = Reloader::new(live.clone(), &file);
    assert_eq!(
        reloader.poll(),
        Some(ReloadEvent::ConfigUnchanged { generation: 0 })
    );
    assert_eq!(reloader.poll(), None);
    std::fs::write(
        &file,
        V1.replace("max_concurrent = 2", "max_concurrent = 0"),
    )
    .unwrap();
    assert!(matches!(
        reloader.poll(),
        Some(ReloadEvent::ConfigRejected { .. })
    ));
    assert_eq!(reloader.poll(), None, "a bad file is reported once");
    std::fs::remove_file(&file).unwrap();
    assert!(
        matches!(reloader.poll(), Some(ReloadEvent::ConfigRejected { .. })),
        "gone"
    );
    assert_eq!(reloader.poll(), None);
    std::fs::write(
        &file,
        V1.replace("max_concurrent = 2", "max_concurrent = 6"),
    )
    .unwrap();
    assert!(matches!(
        reloader.poll(),
        Some(ReloadEvent::ConfigApplied { generation: 1, .. })
    ));
    assert_eq!(live.status().rejections_since_applied, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Readers on four threads load the live config in a loop while a writer reloads it 300
/// times: every load is a whole generation (its freshly built breaker matches its own
/// config), and each reader sees generations only go forward. The bulkhead is reconfigured in
/// place, one object shared by every generation: a reader sees its generation's cap or a
/// later one's, never an older one.
#[test]
fn readers_see_whole_generations_in_order_while_reloads_run() {
    let live = Arc::new(Live::new(config(V1)).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let loads = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (live, stop, loads) = (live.clone(), stop.clone(), loads.clone());
            std::thread::spawn(move || {
                let mut last = 0;
                while !stop.load(Ordering::Relaxed) {
                    let now = live.load();
                    assert!(now.generation() >= last, "generations go forward");
                    last = now.generation();
                    let cap = now
                        .get("search")
                        .unwrap()
                        .bulkhead_ref()
                        .as_ref()
                        .unwrap()
                        .max_concurrent();
                    let written = now.config().pipelines["search"]
                        .bulkhead
                        .unwrap()
                        .max_concurrent
                        .unwrap();
                    assert!(
                        cap >= written,
                        "cap {cap} older than generation's {written}"
                    );
                    let payments = now.get("payments").unwrap();
                    let calls = payments
                        .breaker_ref()
                        .as_ref()
                        .unwrap()
                        .config()
                        .minimum_calls;
                    let written = now.config().pipelines["payments"]
                        .breaker
                        .as_ref()
                        .unwrap()
                        .minimum_calls;
                    // Reconfigured in place, as the cap: the breaker of an older generation
                    // is the live one, so it may already hold a later generation's settings,
                    // never an earlier one's.
                    assert!(
                        Some(calls) >= written,
                        "minimum calls {calls} older than generation's {written:?}"
                    );
                    loads.fetch_add(1, Ordering::Relaxed);
                }
                last
            })
        })
        .collect();
    for i in 0..300u32 {
        let text = V1
            .replace("max_concurrent = 2", &format!("max_concurrent = {}", 3 + i))
            .replace("minimum_calls = 10", &format!("minimum_calls = {}", 11 + i));
        assert!(matches!(
            live.reload(Ok(config(&text))),
            ReloadEvent::ConfigApplied { .. }
        ));
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().unwrap() <= 300);
    }
    assert_eq!(live.load().generation(), 300);
    assert!(loads.load(Ordering::Relaxed) > 0);
}

/// A ratio budget whose ratio or floor changes (same window) is the live one, reconfigured:
/// its window's counts are kept, and the new ratio applies to them at once. A changed window
/// cannot change in place: a fresh budget.
#[test]
fn a_reload_of_a_ratio_budget_ratio_keeps_its_window() {
    const R1: &str = r#"
[budgets.process]
kind = "ratio"
max_retry_permille = 100
window = "10s"

[pipelines.payments.retry]
budget = "process"
"#;
    let ratio = |live: &Live| match &**live.load().budget("process").unwrap() {
        Budget::Ratio(_) => Arc::clone(live.load().budget("process").unwrap()),
        other => panic!("{other:?}"),
    };
    let counts = |b: &Budget| match b {
        Budget::Ratio(r) => (r.counts(Instant::from_secs(1)), r.allowance(1_000)),
        other => panic!("{other:?}"),
    };
    let live = Live::new(config(R1)).unwrap();
    let before = ratio(&live);
    before.record_first_attempt(Instant::from_secs(1));
    assert!(before.try_spend(Instant::from_secs(1), VerdictKind::Transient));

    let r2 = R1.replace("max_retry_permille = 100", "max_retry_permille = 300");
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&r2))) else {
        panic!()
    };
    assert!(changes.contains(&change("budgets.process", ChangeKind::Reconfigured)));
    let after = ratio(&live);
    assert!(Arc::ptr_eq(&after, &before), "the same budget");
    assert_eq!(
        counts(&after),
        ((1, 1), 300),
        "counts kept, the new ratio in force"
    );

    let r3 = r2.replace("window = \"10s\"", "window = \"20s\"");
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&r3))) else {
        panic!()
    };
    assert!(changes.contains(&change("budgets.process", ChangeKind::Fresh)));
    let fresh = ratio(&live);
    assert!(!Arc::ptr_eq(&fresh, &before));
    assert_eq!(counts(&fresh), ((0, 0), 300), "a new window starts empty");
}

/// A limiter whose bounds alone change is the live one: its calls in flight are kept and its
/// limit is clamped into the new bounds in the same step. Any other change (here its
/// `max_window`) builds a fresh limiter.
#[test]
fn a_reload_of_only_a_limiter_s_bounds_keeps_it_and_clamps_its_limit() {
    const L1: &str = r#"
[pipelines.api.limiter]
algorithm = "aimd"
initial_limit = 10
min_limit = 2
max_limit = 50
"#;
    let live = Live::new(config(L1)).unwrap();
    let limiter = live.pipeline("api").unwrap().limiter_ref().clone().unwrap();
    let mut rng = SeededRandom::new(5);
    let held: Vec<_> = (0..6)
        .map(|_| limiter.admit(&mut env(&mut rng)).unwrap())
        .collect();

    let l2 = L1.replace("max_limit = 50", "max_limit = 10");
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&l2))) else {
        panic!()
    };
    assert_eq!(
        changes,
        vec![change("pipelines.api.limiter", ChangeKind::Reconfigured)]
    );
    let now = live.pipeline("api").unwrap().limiter_ref().clone().unwrap();
    assert!(Arc::ptr_eq(&now, &limiter), "the same limiter");
    assert_eq!((now.limit(), now.in_flight()), (10, 6));
    let l3 = l2
        .replace("initial_limit = 10", "initial_limit = 8\nmax_limit = 8")
        .replace("max_limit = 10", "");
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&l3))) else {
        panic!()
    };
    assert_eq!(
        changes,
        vec![change("pipelines.api.limiter", ChangeKind::Fresh)],
        "initial_limit changed"
    );
    drop(held);
    let l4 = format!("{l3}max_window = \"3s\"\n");
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&l4))) else {
        panic!()
    };
    assert_eq!(
        changes,
        vec![change("pipelines.api.limiter", ChangeKind::Fresh)]
    );
}

/// A breaker whose thresholds, waits or probe counts alone change is the live one: its state
/// and its window's counts are kept and the new thresholds judge them. A wait its timer cannot
/// hold (5 s to 60 s), or another window, builds a fresh breaker; a refused reload changes
/// nothing.
#[test]
fn a_reload_of_only_a_breaker_s_thresholds_keeps_it_and_its_counts() {
    const B1: &str = r#"
[pipelines.api.breaker]
minimum_calls = 10
open_jitter_percent = 0
"#;
    let live = Live::new(config(B1)).unwrap();
    let breaker = live.pipeline("api").unwrap().breaker_ref().clone().unwrap();
    let mut rng = SeededRandom::new(6);
    let fail = |rng: &mut SeededRandom| {
        let mut env = env(rng);
        let p = breaker.admit(&mut env).unwrap();
        resilix::permit::Permit::settle(p, &resilix::Verdict::Transient, &mut env);
    };
    for _ in 0..5 {
        fail(&mut rng);
    }
    assert_eq!(breaker.state(), CircuitState::Closed, "5 calls, 10 needed");

    // Refused elsewhere: the breaker must not be reconfigured either.
    let bad = format!(
        "{}\n[pipelines.other.bulkhead]\nmax_concurrent = 0\n",
        B1.replace("minimum_calls = 10", "minimum_calls = 5")
    );
    assert!(matches!(
        live.reload(Ok(config(&bad))),
        ReloadEvent::ConfigRejected { .. }
    ));
    assert_eq!(breaker.config().minimum_calls, 10);

    let b2 = B1.replace(
        "minimum_calls = 10",
        "minimum_calls = 5\nhalf_open_probes = 2",
    );
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&b2))) else {
        panic!()
    };
    assert_eq!(
        changes,
        vec![change("pipelines.api.breaker", ChangeKind::Reconfigured)]
    );
    let now = live.pipeline("api").unwrap().breaker_ref().clone().unwrap();
    assert!(Arc::ptr_eq(&now, &breaker), "the same breaker");
    assert_eq!(
        (now.config().minimum_calls, now.config().half_open_probes),
        (5, 2)
    );
    fail(&mut rng);
    assert_eq!(
        now.state(),
        CircuitState::Open,
        "the five failures before the reload count under the new minimum"
    );

    let b3 = b2.replace(
        "open_jitter_percent = 0",
        "open_jitter_percent = 0\nopen_wait = \"60s\"",
    );
    let ReloadEvent::ConfigApplied { changes, .. } = live.reload(Ok(config(&b3))) else {
        panic!()
    };
    assert_eq!(
        changes,
        vec![change("pipelines.api.breaker", ChangeKind::Fresh)],
        "a minute does not fit the timer built for 5 s"
    );
    let fresh = live.pipeline("api").unwrap().breaker_ref().clone().unwrap();
    assert!(!Arc::ptr_eq(&fresh, &breaker));
    assert_eq!(fresh.state(), CircuitState::Closed);
}
