//! The crate's load test: N processes share one fleet quota through `FleetRateLimiter`, each
//! offering calls open-loop at a rate, against a private redis-server that is paused
//! (SIGSTOP) or killed and restarted mid-run; then admissions in every 1 s and 0.1 s window
//! against `FleetConfig::bound`, latency percentiles, what the failure mode did, and the
//! host's own longest stall beside them.
//!
//! ```text
//! cargo run --release -p resilix-redis --example fleet_load -- PROCS RATE SECS FAULT MODE
//! cargo run --release -p resilix-redis --example fleet_load -- 8 5000 6 pause allow
//! ```
//! FAULT is `none`, `pause` (SIGSTOP for 2 s, from 2 s in), `pause5` (the same for 5 s),
//! `kill` (SIGKILL, restarted 2 s later) or `failover` (a replica and Redis Sentinel beside
//! the primary; the primary is killed at 2 s and Sentinel promotes the replica; the clients
//! find the primary through Sentinel); MODE `allow`, `deny` or `local`. Quota 1,000/s, burst
//! 100, backend timeout 20 ms (the defaults otherwise). `redis/scripts/load-matrix.sh` runs
//! every combination.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::{Backend, FleetConfig, FleetRateLimiter, OnBackendError};

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn config(mode: &str, procs: u32) -> FleetConfig {
    let mode = match mode {
        "deny" => OnBackendError::Deny,
        "local" => OnBackendError::Local { nodes: procs },
        _ => OnBackendError::Allow,
    };
    FleetConfig::new(
        "load",
        RateLimitConfig::new(Rate::per_second(1_000)).with_burst(100),
    )
    .with_prefix(format!("load:{}:", std::process::id()))
    .on_backend_error(mode)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.get(1).map(String::as_str) == Some("child") {
        return child(&a[2..]);
    }
    let procs: u32 = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(8);
    let rate: u64 = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let secs: u64 = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(6);
    let fault = a.get(4).cloned().unwrap_or_else(|| "pause".into());
    let mode = a.get(5).cloned().unwrap_or_else(|| "allow".into());
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let port = free();
    let dir = std::env::temp_dir().join(format!("resilix-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server_on = |port: u16, extra: &[String]| {
        Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH")
    };
    let start_server = || server_on(port, &[]);
    let mut server = start_server();
    let mut others = Vec::new();
    let mut url = format!("redis://127.0.0.1:{port}/0");
    if fault == "failover" {
        let (replica, sport) = (free(), free());
        let of = [
            "--replicaof".to_owned(),
            "127.0.0.1".to_owned(),
            port.to_string(),
        ];
        others.push(server_on(replica, &of));
        let conf = dir.join("sentinel.conf");
        let text = format!(
            "port {sport}\nbind 127.0.0.1\nsentinel monitor load 127.0.0.1 {port} 1\n\
             sentinel down-after-milliseconds load 1000\nsentinel failover-timeout load 10000\n"
        );
        std::fs::write(&conf, text).unwrap();
        others.push(
            Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .spawn()
                .expect("redis-server --sentinel"),
        );
        url = format!("sentinel://127.0.0.1:{sport}/load");
        // Until the replica is in sync and Sentinel has seen it: a failover needs a good
        // replica to promote.
        for _ in 0..200 {
            let synced = Command::new("redis-cli")
                .args(["-p", &replica.to_string(), "info", "replication"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("master_link_status:up"))
                .unwrap_or(false);
            let seen = Command::new("redis-cli")
                .args(["-p", &sport.to_string(), "sentinel", "replicas", "load"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains(&replica.to_string()))
                .unwrap_or(false);
            if synced && seen {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let prefix = format!("load:{}:", std::process::id());
    let start = wall_ns() + 1_000_000_000;
    let children: Vec<_> = (0..procs)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "child",
                    &url,
                    &prefix,
                    &rate.to_string(),
                    &start.to_string(),
                ])
                .args([&secs.to_string(), &mode, &procs.to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // The host's own stalls, beside the run.
    let stall = Arc::new(Mutex::new(Duration::ZERO));
    let s2 = stall.clone();
    std::thread::spawn(move || {
        loop {
            let t = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            let over = t.elapsed().saturating_sub(Duration::from_millis(1));
            let mut s = s2.lock().unwrap();
            *s = (*s).max(over);
        }
    });
    let at = |ns: u64| std::thread::sleep(Duration::from_nanos(ns.saturating_sub(wall_ns())));
    // When the server answers again (SIGCONT, restart), on the wall clock.
    let mut back = None;
    if fault != "none" {
        at(start + 2_000_000_000);
        let pid = server.id().to_string();
        if fault.starts_with("pause") {
            let long = if fault == "pause5" { 7 } else { 4 };
            Command::new("kill").args(["-STOP", &pid]).status().unwrap();
            at(start + long * 1_000_000_000);
            Command::new("kill").args(["-CONT", &pid]).status().unwrap();
            back = Some(wall_ns());
        } else if fault == "kill" {
            server.kill().unwrap();
            server.wait().unwrap();
            at(start + 4_000_000_000);
            server = start_server();
            back = Some(wall_ns());
        } else {
            server.kill().unwrap();
            server.wait().unwrap();
        }
    }
    let (mut admitted, mut lat, mut counts) = (Vec::new(), Vec::new(), [0u64; 4]);
    let (mut longest_gap, mut resumed) = (0u64, 0u64);
    for c in children {
        let out = c.stdout.unwrap();
        for line in BufReader::new(out).lines() {
            let line = line.unwrap();
            let mut f = line.split(' ');
            match f.next() {
                Some("a") => admitted.push(f.next().unwrap().parse::<u64>().unwrap()),
                Some("l") => lat.push(f.next().unwrap().parse::<u64>().unwrap()),
                Some("g") => {
                    let from: u64 = f.next().unwrap().parse().unwrap();
                    let to: u64 = f.next().unwrap().parse().unwrap();
                    longest_gap = longest_gap.max(to - from);
                    if let Some(b) = back
                        && from < b
                        && to >= b
                    {
                        resumed = resumed.max(to - b);
                    }
                }
                Some("s") => {
                    for (i, v) in f.enumerate().take(4) {
                        counts[i] += v.parse::<u64>().unwrap();
                    }
                }
                _ => {}
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    for mut o in others {
        let _ = o.kill();
        let _ = o.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
    admitted.sort_unstable();
    lat.sort_unstable();
    let pct = |p: f64| Duration::from_nanos(lat[((lat.len() as f64 - 1.0) * p) as usize]);
    let longest = Duration::from_nanos(*lat.last().unwrap_or(&0));
    let cfg = config(&mode, procs);
    let promotions = u32::from(fault == "failover");
    println!(
        "{procs} processes x {rate}/s for {secs} s, fault {fault}, mode {mode}: {} calls, {} admitted",
        lat.len(),
        admitted.len()
    );
    let mut over = false;
    for w in [Duration::from_secs(1), Duration::from_millis(100)] {
        let got = max_in(&admitted, w);
        over |= got > cfg.bound(procs, w + longest, promotions);
        let bound = cfg.bound(procs, w + longest, promotions);
        let ok = if got <= bound { "within" } else { "OVER" };
        println!(
            "  max in any {w:?}: {got} ({ok} the bound {bound} over {:?})",
            w + longest
        );
    }
    println!(
        "  latency p50 {:?} p99 {:?} p99.9 {:?} max {longest:?}",
        pct(0.5),
        pct(0.99),
        pct(0.999)
    );
    println!(
        "  decided by Redis {}, by the failure mode {} (breaker open {}, no in-flight slot {})",
        counts[0], counts[1], counts[2], counts[3]
    );
    println!(
        "  longest time a process went without a remote decision {:?}{}",
        Duration::from_nanos(longest_gap),
        match back {
            Some(_) => format!(
                "; remote decisions resumed {:?} after the server was back",
                Duration::from_nanos(resumed)
            ),
            None => String::new(),
        }
    );
    println!("  host's longest stall {:?}", *stall.lock().unwrap());
    if over {
        std::process::exit(1);
    }
}

fn max_in(times: &[u64], w: Duration) -> u64 {
    let w = w.as_nanos() as u64;
    let (mut best, mut lo) = (0, 0);
    for hi in 0..times.len() {
        while times[hi] - times[lo] >= w {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best as u64
}

fn child(a: &[String]) {
    let (url, prefix) = (a[0].clone(), a[1].clone());
    let rate: u64 = a[2].parse().unwrap();
    let start: u64 = a[3].parse().unwrap();
    let secs: u64 = a[4].parse().unwrap();
    let procs: u32 = a[6].parse().unwrap();
    let cfg = config(&a[5], procs).with_prefix(prefix);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let l = match url.strip_prefix("sentinel://") {
            Some(rest) => {
                let (addr, service) = rest.split_once('/').unwrap();
                let b = Backend::sentinel(
                    [format!("redis://{addr}")],
                    service,
                    0,
                    cfg.backend_timeout,
                    cfg.connections,
                )
                .unwrap();
                FleetRateLimiter::new(b, cfg).unwrap()
            }
            None => FleetRateLimiter::connect(url.as_str(), cfg).unwrap(),
        };
        // The longest stretch between two replies decided by Redis (wall ns).
        let gap = Arc::new(Mutex::new((0u64, 0u64, 0u64)));
        let g2 = gap.clone();
        let l = Arc::new(l.with_observer(move |e| {
            if let resilix_redis::FleetEvent::Decided { .. } = e {
                let now = wall_ns();
                let mut g = g2.lock().unwrap();
                if g.0 != 0 && now - g.0 > g.2 - g.1 {
                    *g = (now, g.0, now);
                } else {
                    g.0 = now;
                }
            }
        }));
        let rec = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        tokio::time::sleep(Duration::from_nanos(start.saturating_sub(wall_ns()))).await;
        let end = start + secs * 1_000_000_000;
        // Open loop: a tick every ms sends rate/1000 calls (carrying fractions), each its own
        // task, never waiting for the previous ones.
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        let (mut owed, mut tasks) = (0u64, Vec::new());
        while wall_ns() < end {
            tick.tick().await;
            owed += rate;
            while owed >= 1_000 {
                owed -= 1_000;
                let (l, rec) = (l.clone(), rec.clone());
                tasks.push(tokio::spawn(async move {
                    let t0 = std::time::Instant::now();
                    let ok = l.acquire().await.is_ok();
                    let took = t0.elapsed().as_nanos() as u64;
                    let now = wall_ns();
                    let mut r = rec.lock().unwrap();
                    r.1.push(took);
                    if ok {
                        r.0.push(now);
                    }
                }));
            }
            tasks.retain(|t: &tokio::task::JoinHandle<()>| !t.is_finished());
        }
        for t in tasks {
            let _ = t.await;
        }
        let r = rec.lock().unwrap();
        let mut out = String::new();
        for t in &r.0 {
            out.push_str(&format!("a {t}\n"));
        }
        for t in &r.1 {
            out.push_str(&format!("l {t}\n"));
        }
        // The longest stretch between Redis's decisions, or from the last one to the end.
        let g = *gap.lock().unwrap();
        let (from, to) = if end.saturating_sub(g.0) > g.2 - g.1 {
            (g.0.max(start), end)
        } else {
            (g.1, g.2)
        };
        out.push_str(&format!("g {from} {to}\n"));
        let s = l.stats();
        out.push_str(&format!(
            "s {} {} {} {}\n",
            s.fleet_admitted + s.fleet_refused,
            s.fallback_decisions(),
            s.breaker_open,
            s.in_flight_full
        ));
        print!("{out}");
    });
}
