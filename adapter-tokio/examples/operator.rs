//! Operating a running service by hand: an axum admin API that forces a breaker open,
//! resets it, resets a throttler and shows every gauge, while traffic flows through the
//! same policies. The program starts its own admin server on 127.0.0.1, runs traffic in the
//! background, flips the breaker through HTTP (reqwest), prints what the traffic saw at each
//! step, and exits by itself.
//!
//! The admin handlers hold the very `Arc`s the pipeline holds: a policy is its own control
//! handle (`resilix::control`). Every control is an event, so the traffic's observer (here a
//! counter of refusals by reason) sees the operator's hand as it sees the upstream's.
//!
//! ```sh
//! cargo run -p resilix-tokio --example operator
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use resilix::breaker::Breaker;
use resilix::call::CallOptions;
use resilix::observe::{Event, Observer};
use resilix::permit::Env;
use resilix::pipeline::Pipeline;
use resilix::random::SeededRandom;
use resilix::throttler::Throttler;
use resilix_tokio::gauges::{Gauge, Gauged};
use resilix_tokio::{Error, Resilience, now, thread_seed};
use tokio::net::TcpListener;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The policies an operator can reach: the same `Arc`s the pipeline holds.
#[derive(Clone)]
struct Admin {
    breaker: Arc<Breaker>,
    throttler: Arc<Throttler>,
    log: Arc<Counts>,
}

/// What the traffic saw: answers, and refusals by reason; operator actions by kind.
#[derive(Default)]
struct Counts {
    served: AtomicU64,
    refused: Mutex<BTreeMap<&'static str, u64>>,
    operator: Mutex<Vec<String>>,
}

impl Observer for Counts {
    fn on_event(&self, event: &Event) {
        match event {
            Event::Rejected { rejection } => {
                *self
                    .refused
                    .lock()
                    .unwrap()
                    .entry(rejection.reason().code())
                    .or_default() += 1
            }
            Event::CircuitTransition {
                from, to, cause, ..
            } => self
                .operator
                .lock()
                .unwrap()
                .push(format!("breaker {from:?} -> {to:?} ({cause:?})")),
            Event::PolicyReset { policy, .. } => self
                .operator
                .lock()
                .unwrap()
                .push(format!("{} reset", policy.as_str())),
            _ => {}
        }
    }
}

/// `POST /admin/breaker/{open|disable|reset}` and `POST /admin/throttler/reset`.
async fn control(
    State(admin): State<Admin>,
    Path((policy, action)): Path<(String, String)>,
) -> StatusCode {
    let mut rng = SeededRandom::new(thread_seed());
    let mut env = Env::new(now(), &mut rng).with_observer(&*admin.log);
    match (policy.as_str(), action.as_str()) {
        ("breaker", "open") => admin.breaker.force_open(&mut env),
        ("breaker", "disable") => admin.breaker.disable(&mut env),
        ("breaker", "reset") => admin.breaker.reset(&mut env),
        ("throttler", "reset") => admin.throttler.reset(&mut env),
        _ => return StatusCode::NOT_FOUND,
    }
    StatusCode::NO_CONTENT
}

/// `GET /admin/gauges`: every gauge, one `name value` line each.
async fn gauges(State(admin): State<Admin>) -> String {
    let mut out = String::new();
    let mut line = |g: Gauge| out.push_str(&format!("{} {}\n", g.name(), g.value()));
    let at = now();
    admin.throttler.gauges(at, &mut line);
    admin.breaker.gauges(at, &mut line);
    out
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let breaker = Arc::new(Breaker::default());
    let throttler = Arc::new(Throttler::with_defaults());
    let log = Arc::new(Counts::default());
    let pipeline = Pipeline::new()
        .throttler(throttler.clone())
        .breaker(breaker.clone());
    let resilience = Arc::new(Resilience::new(pipeline).observer(log.clone()));

    let admin = Admin {
        breaker,
        throttler,
        log: log.clone(),
    };
    let app = Router::new()
        .route("/admin/{policy}/{action}", post(control))
        .route("/admin/gauges", get(gauges))
        .with_state(admin);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    println!("admin API on http://{addr}/admin");

    // Traffic: a call every 2 ms to an upstream that always answers.
    let traffic = {
        let (resilience, log) = (resilience.clone(), log.clone());
        tokio::spawn(async move {
            loop {
                let out = resilience
                    .execute(CallOptions::default(), || async { Ok::<_, ()>(()) })
                    .await;
                if out.is_ok() {
                    log.served.fetch_add(1, Ordering::Relaxed);
                } else if let Err(Error::Upstream { .. }) = out {
                    unreachable!("the upstream always answers");
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };

    let client = reqwest::Client::new();
    let step = |name: &'static str| {
        let (client, log) = (client.clone(), log.clone());
        async move {
            if name != "start" {
                let status = client
                    .post(format!("http://{addr}/admin/{name}"))
                    .send()
                    .await?
                    .status();
                assert_eq!(status, 204, "{name}");
            }
            let before = log.served.load(Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(200)).await;
            let served = log.served.load(Ordering::Relaxed) - before;
            let gauges = client
                .get(format!("http://{addr}/admin/gauges"))
                .send()
                .await?
                .text()
                .await?;
            let refused = log.refused.lock().unwrap().clone();
            println!(
                "after {name:>15}: {served:>3} calls served in 200 ms; refused so far {refused:?}; gauges: {}",
                gauges.trim().replace('\n', ", ")
            );
            Ok::<_, BoxError>(served)
        }
    };
    let flowing = step("start").await?;
    let while_open = step("breaker/open").await?;
    let after_reset = step("breaker/reset").await?;
    step("throttler/reset").await?;
    traffic.abort();
    println!(
        "operator actions, as events: {:?}",
        log.operator.lock().unwrap()
    );
    assert!(
        flowing > 0 && after_reset > 0,
        "traffic flows before and after"
    );
    // At most the one call admitted in the instant before the breaker was forced open.
    assert!(while_open <= 1, "a breaker forced open refuses every call");
    Ok(())
}
