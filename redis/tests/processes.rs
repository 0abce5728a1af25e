//! Eight client processes share one quota: this test binary starts itself eight times as
//! children (the ignored `process_child` test, told what to do by its environment), each with
//! its own runtime, connection and limiter, and adds up what they report.
//!
//! * Script path: the fleet admits at most burst + ⌊elapsed / T⌋, elapsed read on Redis's
//!   clock just before the children's shared start instant and after the last one ends.
//!   Exact, and tight: the traffic fills the quota.
//! * Lease path: the fleet granted at most that many cells (exact), every admitted call spent
//!   a granted cell, and the calls admitted between the first and the last admission, W apart,
//!   number at most burst + ⌊(W + period) / T⌋: the documented bound (with W measured on the
//!   host's wall clock, which Redis's `TIME` also reads, plus 1 ms for the children's monotonic
//!   clocks, by which leases expire).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use resilix::rate_limit::{Rate, RateLimitConfig};
use resilix_redis::script::GcraParams;
use resilix_redis::{Admitted, FleetConfig, FleetRateLimiter, LeaseConfig, LeasedRateLimiter};
use resilix_tokio::TokioClock;

const PROCESSES: usize = 8;
/// Each child's traffic lasts this long, from a start instant all children share.
const WINDOW: Duration = Duration::from_millis(500);
const LEASE: LeaseConfig = LeaseConfig::new(10, Duration::from_millis(300));

fn limit() -> RateLimitConfig {
    RateLimitConfig::new(Rate::per_second(200)).with_burst(40)
}

/// Generous timeouts and `Deny`: a backend failure can only admit less. Children report
/// failures and the parent requires none.
fn config(prefix: &str) -> FleetConfig {
    FleetConfig::new("processes", limit())
        .with_prefix(prefix)
        .with_backend_timeout(Duration::from_secs(2))
        .on_backend_error(resilix_redis::OnBackendError::Deny)
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Sleeps until the wall clock reads `at` (ns since the epoch).
async fn until_wall(at: u64) {
    let now = wall_ns();
    if at > now {
        tokio::time::sleep(Duration::from_nanos(at - now)).await;
    }
}

/// The child side: runs only when a test below starts this binary with `RESILIX_PROCESS_CHILD`
/// set, and prints one line of counts.
#[test]
#[ignore = "a child process of the tests below"]
fn process_child() {
    let (Ok(mode), Ok(url), Ok(prefix), Ok(start)) = (
        std::env::var("RESILIX_PROCESS_CHILD"),
        std::env::var("RESILIX_REDIS_URL"),
        std::env::var("RESILIX_PROCESS_PREFIX"),
        std::env::var("RESILIX_PROCESS_START"),
    ) else {
        eprintln!("process_child: not started by a test of this file; nothing to do");
        return;
    };
    let start: u64 = start.parse().unwrap();
    let end = start + WINDOW.as_nanos() as u64;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let line = rt.block_on(async {
        match mode.as_str() {
            "script" => {
                let l = FleetRateLimiter::connect(url.as_str(), config(&prefix)).unwrap();
                until_wall(start).await;
                let mut admitted = 0u64;
                while wall_ns() < end {
                    if let Ok(Admitted::Fleet { .. }) = l.acquire().await {
                        admitted += 1;
                    }
                }
                let s = l.stats();
                format!(
                    "admitted={admitted} refused={} failures={}",
                    s.fleet_refused,
                    s.backend_errors + s.backend_timeouts + s.failed_closed
                )
            }
            "lease" => {
                let conn = common::connect(&url).await;
                let l = LeasedRateLimiter::spawn(conn, config(&prefix), LEASE, TokioClock::new())
                    .unwrap();
                // Leasing starts now, before the window: leases taken early are the ones the
                // `period` term of the bound is for.
                until_wall(start).await;
                let (mut admitted, mut first, mut last) = (0u64, u64::MAX, 0u64);
                while wall_ns() < end {
                    if l.try_acquire().is_ok() {
                        let t = wall_ns();
                        admitted += 1;
                        first = first.min(t);
                        last = last.max(t);
                    }
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                let s = l.stats();
                drop(l); // no renewal after the count
                format!(
                    "admitted={admitted} refused={} renewals={} failures={} first={first} last={last}",
                    s.refused, s.renewals, s.renewal_failures
                )
            }
            other => panic!("unknown child mode {other}"),
        }
    });
    println!("RESILIX_PROCESS_CHILD {line}");
}

/// Starts the children in `mode`, calls `at_start` just before their shared start instant,
/// and returns each one's counts, by name.
fn run_children(
    url: &str,
    prefix: &str,
    mode: &str,
    at_start: impl FnOnce(),
) -> Vec<Vec<(String, u64)>> {
    let exe = std::env::current_exe().unwrap();
    // A start far enough ahead for eight processes to be up and connected on a loaded
    // machine; a late child only spends less.
    let start = wall_ns() + 400_000_000;
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(&exe)
                .args(["process_child", "--exact", "--ignored", "--nocapture"])
                .env("RESILIX_PROCESS_CHILD", mode)
                .env("RESILIX_REDIS_URL", url)
                .env("RESILIX_PROCESS_PREFIX", prefix)
                .env("RESILIX_PROCESS_START", start.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let now = wall_ns();
    let early = start.saturating_sub(5_000_000);
    if early > now {
        std::thread::sleep(Duration::from_nanos(early - now));
    }
    at_start();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "child failed: {out:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix("RESILIX_PROCESS_CHILD "))
                .unwrap_or_else(|| panic!("no counts from the child: {text}"));
            line.split_whitespace()
                .map(|w| {
                    let (k, v) = w.split_once('=').unwrap();
                    (k.to_owned(), v.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

fn field(counts: &[(String, u64)], name: &str) -> u64 {
    counts.iter().find(|(k, _)| k == name).unwrap().1
}

/// burst + ⌊elapsed / T⌋: the most GCRA admits over `elapsed`.
fn gcra_bound(elapsed: Duration) -> u64 {
    let p = GcraParams::new(&limit()).unwrap();
    u64::from(p.burst()) + (elapsed.as_nanos() / u128::from(p.emission_ns())) as u64
}

fn server_time(url: &str) -> Duration {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut c).unwrap();
    Duration::from_secs(s) + Duration::from_micros(us)
}

#[test]
fn eight_processes_share_one_quota_exactly() {
    let Some(url) = common::redis_url("eight_processes_share_one_quota_exactly") else {
        return;
    };
    let prefix = common::prefix("processes_script");
    // Read on Redis's clock just before the children's start (they decide nothing earlier)
    // and after the last one has ended: the bound is then within a few cells of the traffic.
    // The start is a wall-clock instant, which a server on this host (the harness's) reads
    // as its `TIME`; against a remote server the 5 ms margin covers only small offsets.
    let mut a = Duration::ZERO;
    let counts = run_children(&url, &prefix, "script", || a = server_time(&url));
    let b = server_time(&url);
    let (mut admitted, mut refused) = (0, 0);
    for c in &counts {
        assert_eq!(field(c, "failures"), 0, "{c:?}");
        assert!(field(c, "admitted") > 0, "every process got some: {c:?}");
        admitted += field(c, "admitted");
        refused += field(c, "refused");
    }
    let max = gcra_bound(b - a);
    eprintln!(
        "{PROCESSES} processes over {:?}: {admitted} admitted, {refused} refused, bound {max}",
        b - a
    );
    assert!(admitted <= max, "{admitted} admitted > {max}");
    assert!(admitted >= 40, "at least the burst");
    assert!(refused > 0, "the quota refused some: the bound was tested");
}

#[test]
fn eight_leasing_processes_stay_within_the_documented_bound() {
    let Some(url) = common::redis_url("eight_leasing_processes_stay_within_the_documented_bound")
    else {
        return;
    };
    let prefix = common::prefix("processes_lease");
    let a = server_time(&url);
    // Leasing starts when the children do, long before the window: `a` is read first.
    let counts = run_children(&url, &prefix, "lease", || {});
    let b = server_time(&url);
    let (mut admitted, mut refused, mut granted) = (0, 0, 0);
    let (mut first, mut last) = (u64::MAX, 0);
    for c in &counts {
        assert_eq!(field(c, "failures"), 0, "{c:?}");
        let n = field(c, "admitted");
        let g = field(c, "renewals") * u64::from(LEASE.cells);
        assert!(n <= g, "a process spent more than it leased: {c:?}");
        if n > 0 {
            first = first.min(field(c, "first"));
            last = last.max(field(c, "last"));
        }
        admitted += n;
        refused += field(c, "refused");
        granted += g;
    }
    let exact = gcra_bound(b - a);
    let window = Duration::from_nanos(last - first);
    let documented = gcra_bound(window + LEASE.period + Duration::from_millis(1));
    eprintln!(
        "{PROCESSES} leasing processes: {granted} granted over {:?} (bound {exact}); \
         {admitted} admitted within {window:?} (bound {documented}), {refused} refused",
        b - a
    );
    assert!(granted <= exact, "the fleet granted {granted} > {exact}");
    assert!(
        admitted <= documented,
        "{admitted} admitted within {window:?} > {documented}"
    );
    assert!(admitted >= 40, "at least a burst's worth was spent");
    assert!(
        refused > 0,
        "demand exceeded the quota: the bound was tested"
    );
}
