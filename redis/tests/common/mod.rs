//! The harness every Redis test shares: the server's URL, a key prefix of its own per test, a
//! connection, and (for fault tests) a private server that a test may kill and restart.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use redis::aio::ConnectionManager;

/// The server's URL, or `None` (and a line saying why the test is skipped) when
/// `RESILIX_REDIS_URL` is unset. `redis/scripts/with-redis.sh` sets it.
pub fn redis_url(test: &str) -> Option<String> {
    match std::env::var("RESILIX_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "SKIPPED {test}: RESILIX_REDIS_URL is unset; run the Redis tests under \
                 redis/scripts/with-redis.sh, which starts a real redis-server and sets it"
            );
            None
        }
    }
}

/// A key prefix no other test (nor another run against the same server) shares.
pub fn prefix(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "test:{}:{}:{}:{test}:",
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A connection manager on `url`.
pub async fn connect(url: &str) -> ConnectionManager {
    let client = redis::Client::open(url).expect("a valid RESILIX_REDIS_URL");
    ConnectionManager::new(client)
        .await
        .expect("the test server answers")
}

/// Redis's clock, as the script reads it.
pub async fn server_time(conn: &mut ConnectionManager) -> Duration {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    Duration::from_secs(s) + Duration::from_micros(us)
}

/// A redis-server of the test's own, on a free loopback port, that the test may kill
/// (SIGKILL, as a crash) and restart on the same port. Stopped when dropped.
pub struct OwnRedis {
    pub port: u16,
    dir: std::path::PathBuf,
    child: Option<Child>,
}

impl OwnRedis {
    pub fn start(test: &str) -> OwnRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!("resilix-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = OwnRedis {
            port,
            dir,
            child: None,
        };
        r.restart();
        r
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server (again) and waits until it answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (redis/scripts/with-redis.sh installs it)");
        self.child = Some(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                let client = redis::Client::open(self.url()).unwrap();
                if let Ok(mut c) = client.get_connection()
                    && redis::cmd("PING").query::<String>(&mut c).is_ok()
                {
                    return;
                }
            }
            // A bounded readiness poll (5 s) of the server's state, not an ordering.
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "the private redis-server did not answer on port {}",
            self.port
        );
    }

    /// SIGSTOP: the server stops answering, connections open (a stalled host, a long fork).
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT after [`pause`](Self::pause).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().expect("running").id();
        let ok = Command::new("kill")
            .arg(sig)
            .arg(pid.to_string())
            .status()
            .expect("kill(1)")
            .success();
        assert!(ok, "kill {sig} {pid}");
    }

    /// SIGKILL: the server dies as in a crash, without closing connections politely.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Admissions at most in any window of `window`: the largest count of `times` (sorted, ns)
/// within `window` of each other.
pub fn max_in_window(times: &[u64], window: Duration) -> u64 {
    let w = window.as_nanos() as u64;
    let (mut best, mut lo) = (0usize, 0usize);
    for hi in 0..times.len() {
        while times[hi] - times[lo] >= w {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best as u64
}

/// The host's own stalls: a thread that sleeps 1 ms at a time and records the longest it
/// overslept, beside a measurement.
pub struct StallSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Duration>>,
}

impl StallSampler {
    pub fn start() -> StallSampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut worst = Duration::ZERO;
            while !s.load(Ordering::Relaxed) {
                let t = std::time::Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                worst = worst.max(t.elapsed().saturating_sub(Duration::from_millis(1)));
            }
            worst
        });
        StallSampler {
            stop,
            thread: Some(thread),
        }
    }

    /// The longest oversleep so far; stops the sampler.
    pub fn finish(mut self) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}
