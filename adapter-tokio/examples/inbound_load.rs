//! The inbound load harness (issue 36): resilix's inbound layer beside tower's
//! `ConcurrencyLimit` + `LoadShed` and a plain server, on loopback, under an open-loop load.
//!
//! The handler has a real capacity of `--capacity` requests in flight (a semaphore; more wait
//! in its FIFO) around `--work-ms` of work (a tokio sleep, so about 1.3 ms more). Its capacity
//! in requests a second is measured first, closed loop. Then, for each load (`--loads`, × that
//! capacity) and each build (`--builds`), a fresh server in its own thread and runtime takes
//! open-loop arrivals (evenly spaced, or `--arrivals poisson`) for `--secs` from a client in
//! another: each request carries its deadline
//! in `x-request-timeout-ms` (`--deadline-ms`) and a criticality (`--mix none`: no header, as
//! most clients send; `--mix sre`: 10/15/35/40 % CRITICAL_PLUS/CRITICAL/SHEDDABLE_PLUS/
//! SHEDDABLE), and the client gives up at the deadline. Reported per run: goodput (200s within
//! the deadline, per second), accepted latency p50/p99, the shed share and the shed answers'
//! latency p50/p99, the share with no answer in time, the share lost (not served in time), and
//! for the adaptive build the limit it settled at (median of the second half of the run).
//!
//! `--converge` instead runs `adaptive()` at `--loads` × capacity for handlers of 2, 4, 64 and
//! 1,000 slots (work scaled so each serves about 600 requests a second) and reports where the
//! limit settled and the accepted p50 against the service time.
//!
//! ```sh
//! scripts/inbound-load.sh                 # the full table: 20 s per run, 1×, 3×, 10×
//! scripts/inbound-load.sh --quick         # CI: 2 s per run
//! scripts/inbound-load.sh --converge      # adaptive() against capacities 2, 4, 64, 1000
//! ```

use std::sync::{Arc, Mutex};
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

#[derive(Clone, Debug)]
struct Opts {
    secs: f64,
    loads: Vec<f64>,
    builds: Vec<String>,
    capacity: usize,
    work: Duration,
    deadline: Duration,
    sre_mix: bool,
    poisson: bool,
    converge: bool,
    check: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        secs: 20.0,
        loads: vec![1.0, 3.0, 10.0],
        builds: ["plain", "tower", "fixed", "adaptive"]
            .map(String::from)
            .to_vec(),
        capacity: 2,
        work: Duration::from_millis(2),
        deadline: Duration::from_millis(100),
        sre_mix: false,
        poisson: false,
        converge: false,
        check: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).cloned().unwrap_or_default();
        let list = |v: String| v.split(',').map(String::from).collect::<Vec<_>>();
        let num = |v: String| v.parse::<f64>().expect("a number");
        let flag = match args[i].as_str() {
            "--quick" => {
                (o.secs, o.check) = (2.0, true);
                true
            }
            "--converge" => {
                o.converge = true;
                true
            }
            "--check" => {
                o.check = true;
                true
            }
            _ => false,
        };
        if flag {
            i += 1;
            continue;
        }
        match args[i].as_str() {
            "--secs" => o.secs = num(value()),
            "--loads" => o.loads = list(value()).into_iter().map(num).collect(),
            "--builds" => o.builds = list(value()),
            "--capacity" => o.capacity = num(value()) as usize,
            "--work-ms" => o.work = Duration::from_secs_f64(num(value()) / 1e3),
            "--deadline-ms" => o.deadline = Duration::from_secs_f64(num(value()) / 1e3),
            "--mix" => o.sre_mix = value() == "sre",
            "--arrivals" => o.poisson = value() == "poisson",
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    o
}

/// The handler: `slots` at once, each `work` long; the rest wait in the semaphore's FIFO.
/// `with_state(())` builds the route (and a layer added after it) once, not per request.
fn handler(slots: usize, work: Duration) -> Router {
    let slots = Arc::new(Semaphore::new(slots));
    Router::new()
        .route(
            "/work",
            get(move || {
                let slots = slots.clone();
                async move {
                    let _slot = slots.acquire().await.expect("never closed");
                    tokio::time::sleep(work).await;
                    "done"
                }
            }),
        )
        .with_state(())
}

/// A build's server, and for resilix its layer (to read the limit).
fn app(build: &str, slots: usize, work: Duration) -> (Router, Option<InboundLayer>) {
    let router = handler(slots, work);
    let inbound = |c: InboundConfig| InboundLayer::new(Inbound::new(c).expect("valid config"));
    match build {
        "plain" => (router, None),
        "tower" => (
            router.layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(|_: tower::BoxError| async {
                        StatusCode::SERVICE_UNAVAILABLE.into_response()
                    }))
                    .load_shed()
                    .concurrency_limit(slots),
            ),
            None,
        ),
        "fixed" => {
            let layer = inbound(InboundConfig::fixed(slots as u32));
            (router.layer(layer.clone()), Some(layer))
        }
        "adaptive" => {
            let layer = inbound(InboundConfig::adaptive());
            (router.layer(layer.clone()), Some(layer))
        }
        other => panic!("unknown build {other}"),
    }
}

/// A server in a thread of its own with a one-thread runtime; answers its address, a stop
/// switch and the limits it sampled every 50 ms (resilix builds).
struct Server {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<Vec<u32>>,
}

fn serve(build: &str, slots: usize, work: Duration) -> Server {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let build = build.to_string();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("loopback");
            tx.send(listener.local_addr().expect("an address"))
                .expect("main waits");
            let (router, layer) = app(&build, slots, work);
            let limits = Arc::new(Mutex::new(Vec::new()));
            let sampler = layer.map(|layer| {
                let limits = limits.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let inbound = layer.inbound();
                        limits.lock().expect("not poisoned").push(inbound.limit());
                        if std::env::var_os("INBOUND_LOAD_DEBUG").is_some() {
                            eprintln!(
                                "limit {} in flight {} waiting {} pressure {:.2} service {:?}",
                                inbound.limit(),
                                inbound.in_flight(),
                                inbound.waiting(),
                                inbound.shed_pressure(resilix::inbound::Priority::Critical),
                                inbound.service_time()
                            );
                        }
                    }
                })
            });
            let server = axum::serve(listener, router).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            tokio::select! {
                _ = server => {}
                _ = tokio::time::sleep(Duration::from_secs(3_600)) => {}
            }
            if let Some(s) = sampler {
                s.abort();
            }
            std::mem::take(&mut *limits.lock().expect("not poisoned"))
        })
    });
    let addr = rx.recv().expect("the server's address");
    Server { addr, stop, thread }
}

/// What one run measured.
#[derive(Default)]
struct Run {
    sent: u64,
    good: Vec<u32>,
    shed: Vec<u32>,
    late: u64,
    limits: Vec<u32>,
}

fn pct(v: &mut [u32], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    f64::from(v[i]) / 1_000.0
}

/// A small seeded generator for the arrivals (xorshift64*).
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

fn criticality(i: u64) -> &'static str {
    match i % 20 {
        0 | 10 => "CRITICAL_PLUS",
        5 | 12 | 15 => "CRITICAL",
        1 | 3 | 6 | 8 | 11 | 13 | 17 => "SHEDDABLE_PLUS",
        _ => "SHEDDABLE",
    }
}

/// One run: `rate` Poisson arrivals a second for `secs` against a fresh `build`.
async fn run(o: &Opts, build: &str, slots: usize, work: Duration, rate: f64) -> Run {
    let server = serve(build, slots, work);
    // The client gives up at the deadline (counted as no answer in time) but lets the answer
    // come on its connection until ten deadlines have passed: cutting the connection at the
    // deadline made every late answer a new TCP connection, and the churn (tens of thousands
    // of sockets in TIME_WAIT) slowed the client more than any server.
    let client = reqwest::Client::builder()
        .timeout(o.deadline * 10)
        .pool_max_idle_per_host(4_096)
        .build()
        .expect("a client");
    let url = format!("http://{}/work", server.addr);
    let out = Arc::new(Mutex::new(Run::default()));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ rate.to_bits());
    let start = tokio::time::Instant::now();
    let end = start + Duration::from_secs_f64(o.secs);
    let mut at = start;
    let mut tasks = Vec::new();
    let mut i = 0u64;
    loop {
        let gap = if o.poisson { -rng.unit().ln() } else { 1.0 };
        at += Duration::from_secs_f64(gap / rate);
        if at >= end {
            break;
        }
        tokio::time::sleep_until(at).await;
        let (client, url, out, deadline) = (client.clone(), url.clone(), out.clone(), o.deadline);
        let mix = o.sre_mix.then(|| criticality(i));
        i += 1;
        tasks.push(tokio::spawn(async move {
            let mut req = client
                .get(&url)
                .header("x-request-timeout-ms", deadline.as_millis().to_string());
            if let Some(c) = mix {
                req = req.header("x-criticality", c);
            }
            let sent = Instant::now();
            let answer = req.send().await;
            let took = sent.elapsed();
            let micros = took.as_micros().min(u128::from(u32::MAX)) as u32;
            let mut out = out.lock().expect("not poisoned");
            out.sent += 1;
            match answer {
                Ok(r) if r.status().is_success() && took <= deadline => out.good.push(micros),
                Ok(r) if r.status() == StatusCode::SERVICE_UNAVAILABLE && took <= deadline => {
                    out.shed.push(micros)
                }
                _ => out.late += 1,
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let _ = server.stop.send(());
    let limits = server.thread.join().expect("the server thread");
    let mut out = std::mem::take(&mut *out.lock().expect("not poisoned"));
    out.limits = limits;
    out
}

/// The handler's capacity in requests a second: `slots` × 4 clients closed loop for a second.
async fn measure_capacity(slots: usize, work: Duration) -> f64 {
    let server = serve("plain", slots, work);
    let client = reqwest::Client::new();
    let url = format!("http://{}/work", server.addr);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..slots * 4 {
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < Duration::from_secs(1) {
                if client.get(&url).send().await.is_ok() {
                    n += 1;
                }
            }
            n
        }));
    }
    let mut n = 0;
    for t in tasks {
        n += t.await.unwrap_or(0);
    }
    let _ = server.stop.send(());
    let _ = server.thread.join();
    n as f64 / start.elapsed().as_secs_f64()
}

fn median_late_half(limits: &[u32]) -> Option<u32> {
    let mut tail = limits[limits.len() / 2..].to_vec();
    tail.sort_unstable();
    tail.get(tail.len() / 2).copied()
}

async fn table(o: &Opts) -> bool {
    let capacity = measure_capacity(o.capacity, o.work).await;
    println!(
        "handler: {} slots × {} ms of work, measured {capacity:.0} req/s; deadline {} ms; \
         criticality {}; {} s per run; {} arrivals",
        o.capacity,
        o.work.as_secs_f64() * 1e3,
        o.deadline.as_millis(),
        if o.sre_mix {
            "10/15/35/40 % CP/C/SP/S"
        } else {
            "none (no header)"
        },
        o.secs,
        if o.poisson {
            "Poisson"
        } else {
            "evenly spaced"
        }
    );
    println!(
        "\n| load | build | goodput/s | accepted p50 / p99 ms | shed | shed answer p50 / p99 ms \
         | no answer in time | lost | limit |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut ok = true;
    for &load in &o.loads {
        let mut tower_goodput = f64::NAN;
        let mut plain_lost = f64::NAN;
        for build in &o.builds {
            let mut r = run(o, build, o.capacity, o.work, load * capacity).await;
            let sent = r.sent.max(1) as f64;
            let goodput = r.good.len() as f64 / o.secs;
            let shed = r.shed.len() as f64 / sent;
            let late = r.late as f64 / sent;
            let lost = 1.0 - r.good.len() as f64 / sent;
            let shed99 = pct(&mut r.shed, 0.99);
            println!(
                "| {load}× | {build} | {goodput:.0} | {:.1} / {:.1} | {:.1}% | {:.1} / {:.1} | \
                 {:.2}% | {:.2}% | {} |",
                pct(&mut r.good, 0.5),
                pct(&mut r.good, 0.99),
                shed * 100.0,
                pct(&mut r.shed, 0.5),
                shed99,
                late * 100.0,
                lost * 100.0,
                median_late_half(&r.limits).map_or("—".into(), |l| l.to_string()),
            );
            match build.as_str() {
                "tower" => tower_goodput = goodput,
                "plain" => plain_lost = lost,
                _ => {
                    // The issue's bar, judged per resilix build. Loose in `--quick` runs.
                    let slack = if o.secs < 5.0 { 0.85 } else { 1.0 };
                    let mut fails = Vec::new();
                    if !(shed99.is_nan() || shed99 <= 10.0 / slack) {
                        fails.push("shed p99 > 10 ms");
                    }
                    if late > 0.001 / slack {
                        fails.push("no answer in time > 0.1%");
                    }
                    if goodput < tower_goodput * slack {
                        fails.push("goodput < tower's");
                    }
                    if load <= 1.0 && lost > plain_lost + 0.005 / slack {
                        fails.push("loses more than FIFO + 0.5 pt");
                    }
                    if !fails.is_empty() {
                        println!("|  | ↑ {} |  |  |  |  |  |  |  |", fails.join("; "));
                        ok = false;
                    }
                }
            }
        }
    }
    ok
}

async fn converge(o: &Opts) {
    println!(
        "adaptive(): where the limit settles (median of the run's second half) against the \
         handler's real capacity; {} s per run at {:?} × capacity",
        o.secs, o.loads
    );
    println!(
        "\n| capacity | work ms | load | secs | limit | within 10% | accepted p50 ms | \
         2 × service ms |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (slots, work_ms) in [(2usize, 2u64), (4, 5), (64, 100), (1_000, 1_000)] {
        let work = Duration::from_millis(work_ms);
        // The service time as served (the sleep's granularity adds about a millisecond).
        let service = work + Duration::from_micros(1_300);
        let rate = slots as f64 / service.as_secs_f64();
        let deadline = (service * 3).max(o.deadline);
        // A 1 s handler needs about 25 service times to settle (see docs/inbound.md).
        let secs = o.secs.max(60.0 * service.as_secs_f64());
        let opts = Opts {
            deadline,
            secs,
            ..o.clone()
        };
        for &load in &o.loads {
            let mut r = run(&opts, "adaptive", slots, work, load * rate).await;
            let limit = median_late_half(&r.limits).unwrap_or(0);
            let off = (f64::from(limit) - slots as f64).abs() / slots as f64;
            println!(
                "| {slots} | {work_ms} | {load}× | {secs:.0} | {limit} | {} | {:.1} | {:.1} |",
                if off <= 0.1 { "yes" } else { "no" },
                pct(&mut r.good, 0.5),
                2.0 * service.as_secs_f64() * 1e3
            );
        }
    }
}

fn main() {
    let o = opts();
    // The client on two threads (the server has its own): one thread fell behind at 10×.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    if o.converge {
        rt.block_on(converge(&o));
        return;
    }
    let ok = rt.block_on(table(&o));
    if o.check && !ok {
        eprintln!("the issue's bar was not met (see ↑ rows)");
        std::process::exit(1);
    }
}
