//! An axum server that protects its own capacity with resilix's inbound layer, measured for
//! real on loopback against the two shapes people usually reach for.
//!
//! The handler has a fixed capacity: a semaphore of `N` = 4 around 25 ms of work, so it serves
//! at most 160 requests a second. An open-loop load generator (reqwest; a fixed count of
//! requests at fixed instants, so it stops by itself) sends 1×, 2×, 3× and 4× that. Each
//! request carries a deadline of 250 ms (`x-request-timeout-ms`, and the client gives up
//! then) and a criticality (`x-criticality`): 10 % CRITICAL_PLUS, 15 % CRITICAL, 35 %
//! SHEDDABLE_PLUS, 40 % SHEDDABLE. Three servers, one at a time, fresh for each level:
//!
//! * `fifo`: the handler alone; excess requests wait in the semaphore's FIFO queue, unbounded;
//! * `tower`: tower's `ConcurrencyLimit(N)` + `LoadShed`, excess answered with 503 at once;
//! * `resilix`: [`InboundLayer`] over `InboundConfig::fixed(N)`: priority shares, a bounded
//!   queue with CoDel and adaptive LIFO, deadlines dropped before service.
//!
//! Printed per configuration and level: goodput (answers within their deadline, per second,
//! as a share of capacity) and the share of critical requests served in time.
//!
//! ```sh
//! cargo run --release -p resilix-tokio --example inbound_server --features inbound
//! cargo run --release -p resilix-tokio --example inbound_server --features inbound -- --quick
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use resilix::inbound::{Inbound, InboundConfig};
use resilix_tokio::inbound::InboundLayer;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceBuilder;

/// Handler slots.
const N: usize = 4;
/// Work per request.
const WORK: Duration = Duration::from_millis(25);
/// Each request's deadline.
const DEADLINE: Duration = Duration::from_millis(250);

/// Requests per second the handler can serve.
fn capacity() -> f64 {
    N as f64 / WORK.as_secs_f64()
}

/// The handler: `N` at once, each 25 ms of work. Its queue, when there is one, is the
/// semaphore's (FIFO, unbounded).
///
/// `with_state(())` turns the handler into a route once, so a layer added afterwards is built
/// once too. Without it axum builds a `Router<()>`'s handler routes per request, and with them
/// a per-request `ConcurrencyLimit` whose semaphore limits nothing (resilix's layer is immune:
/// its state lives in the layer, not in what `layer()` builds).
fn handler(slots: Arc<Semaphore>) -> Router {
    Router::new()
        .route(
            "/work",
            get(move || {
                let slots = slots.clone();
                async move {
                    let _slot = slots.acquire().await.expect("never closed");
                    tokio::time::sleep(WORK).await;
                    "done"
                }
            }),
        )
        .with_state(())
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Fifo,
    Tower,
    Resilix,
}

fn app(shape: Shape) -> Router {
    let slots = Arc::new(Semaphore::new(N));
    match shape {
        Shape::Fifo => handler(slots),
        Shape::Tower => handler(slots).layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(|_: tower::BoxError| async {
                    StatusCode::SERVICE_UNAVAILABLE.into_response()
                }))
                .load_shed()
                .concurrency_limit(N),
        ),
        Shape::Resilix => {
            let inbound = Inbound::new(InboundConfig::fixed(N as u32)).expect("valid config");
            handler(slots).layer(InboundLayer::new(inbound))
        }
    }
}

/// The criticality of request `i`: 10 % CRITICAL_PLUS, 15 % CRITICAL, 35 % SHEDDABLE_PLUS,
/// 40 % SHEDDABLE, interleaved evenly.
fn criticality(i: u64) -> (&'static str, bool) {
    match i % 20 {
        0 | 10 => ("CRITICAL_PLUS", true),
        5 | 12 | 15 => ("CRITICAL", true),
        1 | 3 | 6 | 8 | 11 | 13 | 17 => ("SHEDDABLE_PLUS", false),
        _ => ("SHEDDABLE", false),
    }
}

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    good: AtomicU64,
    critical_sent: AtomicU64,
    critical_good: AtomicU64,
    shed: AtomicU64,
    late: AtomicU64,
}

/// One run: a fresh server of `shape`, `load` × capacity for `length`, open loop.
async fn run(shape: Shape, load: f64, length: Duration) -> (f64, f64, u64) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("an address");
    let server = tokio::spawn(async move { axum::serve(listener, app(shape)).await });
    let client = reqwest::Client::builder()
        .timeout(DEADLINE)
        .pool_max_idle_per_host(1024)
        .build()
        .expect("a client");
    let url = format!("http://{addr}/work");
    let rate = load * capacity();
    let total = (rate * length.as_secs_f64()) as u64;
    let counts = Arc::new(Counts::default());
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for i in 0..total {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
        let (client, url, counts) = (client.clone(), url.clone(), counts.clone());
        tasks.push(tokio::spawn(async move {
            let (name, critical) = criticality(i);
            counts.sent.fetch_add(1, Ordering::Relaxed);
            if critical {
                counts.critical_sent.fetch_add(1, Ordering::Relaxed);
            }
            let sent = Instant::now();
            let answer = client
                .get(&url)
                .header("x-criticality", name)
                .header("x-request-timeout-ms", DEADLINE.as_millis().to_string())
                .send()
                .await;
            match answer {
                Ok(r) if r.status().is_success() && sent.elapsed() <= DEADLINE => {
                    counts.good.fetch_add(1, Ordering::Relaxed);
                    if critical {
                        counts.critical_good.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(r) if r.status() == StatusCode::SERVICE_UNAVAILABLE => {
                    counts.shed.fetch_add(1, Ordering::Relaxed);
                }
                other => {
                    if std::env::var_os("INBOUND_DEBUG").is_some() {
                        eprintln!("{shape:?}: {other:?}");
                    }
                    counts.late.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    server.abort();
    let good = counts.good.load(Ordering::Relaxed) as f64;
    let goodput = good / length.as_secs_f64() / capacity();
    let critical = counts.critical_good.load(Ordering::Relaxed) as f64
        / counts.critical_sent.load(Ordering::Relaxed).max(1) as f64;
    (goodput, critical, counts.shed.load(Ordering::Relaxed))
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (levels, length): (&[f64], _) = if quick {
        (&[1.0, 3.0], Duration::from_millis(1_500))
    } else {
        (&[1.0, 2.0, 3.0, 4.0], Duration::from_secs(6))
    };
    println!(
        "handler: {N} slots × {} ms = {:.0} req/s; deadline {} ms; {} s per run",
        WORK.as_millis(),
        capacity(),
        DEADLINE.as_millis(),
        length.as_secs_f64()
    );
    println!("| load | config | goodput (share of capacity) | critical served in time | 503s |");
    println!("|---|---|---|---|---|");
    let mut at3 = Vec::new();
    for &load in levels {
        for shape in [Shape::Fifo, Shape::Tower, Shape::Resilix] {
            let (goodput, critical, shed) = run(shape, load, length).await;
            println!(
                "| {load:.0}× | {} | {:.2} | {:.1} % | {shed} |",
                format!("{shape:?}").to_lowercase(),
                goodput,
                critical * 100.0
            );
            if load == 3.0 {
                at3.push((shape, goodput, critical));
            }
        }
    }
    // What the example is for: at 3× overload, the inbound layer keeps goodput near capacity
    // and critical requests served, where the unbounded FIFO collapses. Exit non-zero if not,
    // so CI notices (bounds are loose: loopback on a shared machine is noisy).
    let get = |s: Shape| at3.iter().find(|x| x.0 == s).copied();
    if let (Some((_, fifo, _)), Some((_, resilix, critical))) =
        (get(Shape::Fifo), get(Shape::Resilix))
    {
        let ok = resilix >= 0.6 && critical >= 0.8 && resilix > 2.0 * fifo;
        println!(
            "at 3×: resilix goodput {resilix:.2} (≥ 0.60), critical {:.0} % (≥ 80 %), fifo {fifo:.2} (resilix > 2× fifo): {}",
            critical * 100.0,
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            std::process::exit(1);
        }
    }
}
