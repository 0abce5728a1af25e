//! The reload scenario, shared by the example (`main.rs`, real time) and its test
//! (`config/tests/reload_example.rs`, paused time): clients call through the live
//! `payments` pipeline the whole time while the config file is rewritten under them.
//!
//! 1. `v1` is loaded; traffic flows.
//! 2. A good change (the bulkhead's cap): applied in place, calls in flight kept; the
//!    breaker and the budget are kept.
//! 3. An invalid change (`half_open_probes = 0`): rejected with its path; traffic keeps
//!    flowing on the last good config.
//! 4. The breaker is forced open by hand: calls are refused (`circuit-open`).
//! 5. A good change to the breaker's table: a fresh, closed breaker; traffic flows again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use resilix::RejectReason;
use resilix::call::CallOptions;
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix_config::{ChangeKind, Live, ReloadEvent, Reloader};
use resilix_tokio::{Error, Resilience};
use tokio::sync::mpsc;

pub const V1: &str = r#"# resilience.toml, as the service starts
[budgets.process]
kind = "token-bucket"

[pipelines.payments]
attempt_timeout = "1s"
[pipelines.payments.retry]
max_attempts = 3
backoff = { base = "10ms", cap = "100ms", jitter = "full" }
budget = "process"
[pipelines.payments.breaker]
minimum_calls = 20
open_wait = "5s"
[pipelines.payments.bulkhead]
max_concurrent = 4
"#;

/// A good change: a bigger bulkhead.
pub fn v2() -> String {
    V1.replace("max_concurrent = 4", "max_concurrent = 8")
}

/// An invalid change: no probe could ever close the circuit.
pub fn v3() -> String {
    v2().replace(
        "open_wait = \"5s\"",
        "open_wait = \"5s\"\nhalf_open_probes = 0",
    )
}

/// A good change to the breaker's table, of its window: a fresh breaker. (A change of its
/// thresholds, waits or probe counts alone would reconfigure the live one in place, still
/// forced open.)
pub fn v4() -> String {
    v2().replace(
        "open_wait = \"5s\"",
        "open_wait = \"2s\"\nwindow = { length = \"20s\" }",
    )
}

/// How long each phase runs and how the file is watched.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long traffic runs between two changes.
    pub phase: Duration,
    /// How often the watcher polls the file.
    pub poll_every: Duration,
    /// Concurrent clients (at most 4: the checks allow one call per client in flight across
    /// a change, and v1's bulkhead holds 4).
    pub clients: usize,
    /// Where the config file is written.
    pub dir: PathBuf,
}

impl Options {
    /// Seconds: for CI and tests.
    pub fn quick(dir: PathBuf) -> Options {
        Options {
            phase: Duration::from_millis(200),
            poll_every: Duration::from_millis(20),
            clients: 4,
            dir,
        }
    }

    /// Long enough to watch.
    pub fn full(dir: PathBuf) -> Options {
        Options {
            phase: Duration::from_secs(2),
            poll_every: Duration::from_millis(250),
            clients: 4,
            dir,
        }
    }
}

/// What the clients saw in one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Calls answered by the upstream.
    pub served: u64,
    /// Calls refused by the open circuit.
    pub circuit_open: u64,
    /// Any other outcome.
    pub other: u64,
}

/// One step of the scenario, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The first config was loaded.
    Loaded { generation: u64 },
    /// Traffic ran for a phase on this generation.
    Traffic { generation: u64, seen: Traffic },
    /// The file was rewritten and the watcher reloaded it.
    Reloaded(ReloadEvent),
    /// The operator forced the payments breaker open.
    ForcedOpen,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Loaded { generation } => {
                write!(f, "loaded the config file as generation {generation}")
            }
            Step::Traffic { generation, seen } => write!(
                f,
                "  traffic on generation {generation}: {} served, {} refused circuit-open, {} other",
                seen.served, seen.circuit_open, seen.other
            ),
            Step::Reloaded(ReloadEvent::ConfigApplied {
                generation,
                changes,
            }) => {
                write!(f, "reload: ConfigApplied, generation {generation}:")?;
                for c in changes {
                    let kind = match c.kind {
                        ChangeKind::Kept => "unchanged: kept as it is, state intact",
                        ChangeKind::Fresh => "changed: built fresh",
                        ChangeKind::Reconfigured => "changed in place: reconfigured, state intact",
                        ChangeKind::Added => "added",
                        ChangeKind::Removed => "removed",
                    };
                    write!(f, "\n    {}: {kind}", c.path)?;
                }
                Ok(())
            }
            Step::Reloaded(ReloadEvent::ConfigRejected {
                error,
                kept_generation,
            }) => write!(
                f,
                "reload: ConfigRejected: {error}\n    keeping generation {kept_generation}; traffic goes on"
            ),
            Step::Reloaded(other) => write!(f, "reload: {other:?}"),
            Step::ForcedOpen => f.write_str("operator: payments breaker forced open"),
        }
    }
}

#[derive(Default)]
struct Counters {
    served: AtomicU64,
    circuit_open: AtomicU64,
    other: AtomicU64,
}

impl Counters {
    fn read(&self) -> Traffic {
        Traffic {
            served: self.served.load(Ordering::Relaxed),
            circuit_open: self.circuit_open.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
        }
    }
}

/// The upstream the clients call: answers after a millisecond.
async fn upstream(i: u64) -> Result<u64, std::io::Error> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(i)
}

/// Lets traffic run for `length`, and says what the clients saw meanwhile.
async fn measure(live: &Live, counters: &Counters, length: Duration) -> Step {
    let before = counters.read();
    tokio::time::sleep(length).await;
    let after = counters.read();
    let seen = Traffic {
        served: after.served - before.served,
        circuit_open: after.circuit_open - before.circuit_open,
        other: after.other - before.other,
    };
    Step::Traffic {
        generation: live.load().generation(),
        seen,
    }
}

async fn rewrite(
    file: &Path,
    text: &str,
    events: &mut mpsc::UnboundedReceiver<ReloadEvent>,
) -> Step {
    std::fs::write(file, text).expect("the config file is writable");
    let event = events.recv().await.expect("the watcher runs until the end");
    Step::Reloaded(event)
}

/// Runs the scenario, calling `report` with each step as it happens; returns every step.
pub async fn run(options: Options, mut report: impl FnMut(&Step)) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut record = |step: Step, steps: &mut Vec<Step>| {
        report(&step);
        steps.push(step);
    };
    std::fs::create_dir_all(&options.dir).expect("the config directory can be made");
    let file = options.dir.join("resilience.toml");
    std::fs::write(&file, V1).expect("the config file is writable");
    let live = Arc::new(Live::from_path(&file).expect("v1 is valid"));
    record(Step::Loaded { generation: 0 }, &mut steps);

    // The watcher: polls the file and forwards what each reload did.
    let (tx, mut events) = mpsc::unbounded_channel();
    let mut reloader = Reloader::new(live.clone(), &file);
    assert!(matches!(
        reloader.poll(),
        Some(ReloadEvent::ConfigUnchanged { .. })
    ));
    let poll_every = options.poll_every;
    let watcher = tokio::spawn(async move {
        let mut tick = tokio::time::interval(poll_every);
        loop {
            tick.tick().await;
            if let Some(event) = reloader.poll()
                && tx.send(event).is_err()
            {
                return;
            }
        }
    });

    // The clients: every call takes the live pipeline of the moment.
    let counters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..options.clients as u64)
        .map(|client| {
            let (live, counters, stop) = (live.clone(), counters.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(4)).await;
                    i += 1;
                    let pipeline = live.pipeline("payments").expect("payments is configured");
                    let resilience = Resilience::new(pipeline).seed(client << 32 | i);
                    let counter = match resilience
                        .execute(CallOptions::default(), || upstream(i))
                        .await
                    {
                        Ok(_) => &counters.served,
                        Err(Error::Refused { rejection, .. })
                            if rejection.reason() == RejectReason::CircuitOpen =>
                        {
                            &counters.circuit_open
                        }
                        Err(_) => &counters.other,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let phase = || measure(&live, &counters, options.phase);
    record(phase().await, &mut steps);

    let step = rewrite(&file, &v2(), &mut events).await;
    record(step, &mut steps);
    record(phase().await, &mut steps);

    let step = rewrite(&file, &v3(), &mut events).await;
    record(step, &mut steps);
    record(phase().await, &mut steps);

    let payments = live.pipeline("payments").expect("payments is configured");
    let mut rng = SeededRandom::new(0x5eed);
    let mut env = Env::new(resilix_tokio::now(), &mut rng);
    payments
        .breaker_ref()
        .as_ref()
        .expect("payments has a breaker")
        .force_open(&mut env);
    record(Step::ForcedOpen, &mut steps);
    record(phase().await, &mut steps);

    let step = rewrite(&file, &v4(), &mut events).await;
    record(step, &mut steps);
    record(phase().await, &mut steps);

    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.expect("a client never panics");
    }
    watcher.abort();
    steps
}

/// What the steps must be, as a list of what went otherwise (empty: all as expected). The
/// example exits non-zero on any; the test asserts none.
pub fn check(steps: &[Step]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |ok: bool, what: &str, step: Option<&Step>| {
        if !ok {
            problems.push(format!("{what}: {step:?}"));
        }
    };
    if steps.len() != 10 {
        return vec![format!("10 steps expected, got {}: {steps:?}", steps.len())];
    }
    // At most one call per client can be in flight across a change made by hand or by a
    // reload (admitted just before it); every other call sees the change.
    let in_flight = 4;
    let flowing = |s: &Step, generation: u64| {
        matches!(s, Step::Traffic { generation: g, seen }
            if *g == generation && seen.served > 0 && seen.circuit_open == 0 && seen.other == 0)
    };
    fn kinds(s: &Step) -> Vec<(&str, ChangeKind)> {
        match s {
            Step::Reloaded(ReloadEvent::ConfigApplied { changes, .. }) => {
                changes.iter().map(|c| (c.path.as_str(), c.kind)).collect()
            }
            _ => Vec::new(),
        }
    }
    expect(
        steps[0] == Step::Loaded { generation: 0 },
        "v1 loads",
        steps.first(),
    );
    expect(flowing(&steps[1], 0), "traffic flows on v1", steps.get(1));
    expect(
        matches!(
            steps[2],
            Step::Reloaded(ReloadEvent::ConfigApplied { generation: 1, .. })
        ) && kinds(&steps[2])
            == [
                ("budgets.process", ChangeKind::Kept),
                ("pipelines.payments.attempt_timeout", ChangeKind::Kept),
                ("pipelines.payments.retry", ChangeKind::Kept),
                ("pipelines.payments.breaker", ChangeKind::Kept),
                ("pipelines.payments.bulkhead", ChangeKind::Reconfigured),
            ],
        "v2 applies: the bulkhead's cap changed in place, the rest kept",
        steps.get(2),
    );
    expect(flowing(&steps[3], 1), "traffic flows on v2", steps.get(3));
    expect(
        matches!(&steps[4], Step::Reloaded(ReloadEvent::ConfigRejected { error, kept_generation: 1 })
            if error.path() == "pipelines.payments.breaker.half_open_probes"
                && error.to_string().contains("out of range 1..=15")),
        "v3 is rejected with its path and rule",
        steps.get(4),
    );
    expect(
        flowing(&steps[5], 1),
        "traffic keeps flowing on v2",
        steps.get(5),
    );
    expect(
        steps[6] == Step::ForcedOpen,
        "the breaker is forced open",
        steps.get(6),
    );
    expect(
        matches!(steps[7], Step::Traffic { generation: 1, seen }
            if seen.circuit_open > 0 && seen.served <= in_flight && seen.other == 0),
        "calls are refused circuit-open",
        steps.get(7),
    );
    expect(
        matches!(
            steps[8],
            Step::Reloaded(ReloadEvent::ConfigApplied { generation: 2, .. })
        ) && kinds(&steps[8]).contains(&("pipelines.payments.breaker", ChangeKind::Fresh))
            && kinds(&steps[8]).contains(&("pipelines.payments.bulkhead", ChangeKind::Kept)),
        "v4 applies: a fresh breaker",
        steps.get(8),
    );
    expect(
        matches!(steps[9], Step::Traffic { generation: 2, seen }
            if seen.served > 0 && seen.circuit_open <= in_flight && seen.other == 0),
        "traffic flows through the fresh breaker",
        steps.get(9),
    );
    problems
}
