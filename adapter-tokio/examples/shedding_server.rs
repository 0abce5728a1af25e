//! A loopback HTTP server that sheds inbound load with 503 + `Retry-After` instead of queueing
//! it, and a load generator (in the same program) that shows the effect. It exits by itself.
//!
//! Each request's handler runs through a pipeline with a bulkhead (at most 3 handlers at once)
//! and a per-request timeout. A request the bulkhead refuses is answered at once with 503 and
//! a `Retry-After`, so the server's latency for admitted requests stays flat however many
//! arrive (the essay: shedding early is what keeps the work you accept fast).
//!
//! ```sh
//! cargo run -p resilix-tokio --example shedding_server --features http
//! ```

#[path = "support/http1.rs"]
mod http1;

use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use resilix::bulkhead::{Bulkhead, BulkheadConfig};
use resilix::call::CallOptions;
use resilix::execute::ExecuteError;
use resilix::pipeline::Pipeline;
use resilix::time::Clock;
use resilix_tokio::http::retry_after_value;
use resilix_tokio::{Resilience, Static};
use tokio::net::TcpListener;

static HANDLERS: Bulkhead = Bulkhead::new(match BulkheadConfig::new(3) {
    Ok(c) => c,
    Err(_) => panic!("invalid bulkhead config"),
});

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!("shedding server on http://{addr} (3 handlers at once)");

    let pipeline = Pipeline::new()
        // `Static`: this pipeline's calls are spawned on the multi-thread runtime.
        .bulkhead(Static(&HANDLERS))
        .attempt_timeout(Duration::from_millis(500));
    let resilience = Arc::new(Resilience::new(Box::new(pipeline)));
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let resilience = Arc::clone(&resilience);
            tokio::spawn(async move {
                let _ = http1::read_request(&mut stream).await;
                let handled = resilience
                    .execute(CallOptions::default(), || async {
                        // The real work: 100 ms of it.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Ok::<String, ()>("done".to_string())
                    })
                    .await;
                // Owned values only across the write's await.
                let (status, headers, body): (u16, Vec<(&'static str, String)>, String) =
                    match handled {
                        Ok(Ok(body)) => (200, Vec::new(), body),
                        Err(ExecuteError::Refused { rejection, .. }) => {
                            let now = resilience.timer().clock().now();
                            let value = retry_after_value(&rejection, now, Duration::from_secs(1));
                            let value = value.to_str().unwrap_or("1").to_string();
                            (
                                503,
                                vec![("Retry-After", value)],
                                rejection.reason().code().into(),
                            )
                        }
                        Ok(Err(())) | Err(_) => (500, Vec::new(), "failed".into()),
                    };
                let _ = http1::respond(&mut stream, status, &headers, &body).await;
            });
        }
    });

    // Load: three waves of 10 concurrent clients, 250 ms apart.
    for wave in 1..=3 {
        let started = StdInstant::now();
        let mut clients = Vec::new();
        for _ in 0..10 {
            clients.push(tokio::spawn(async move {
                let t = StdInstant::now();
                let r = http1::get(addr, "/work").await;
                (r, t.elapsed())
            }));
        }
        let (mut ok, mut shed) = (0, 0);
        let mut ok_latency = Duration::ZERO;
        let mut shed_latency = Duration::ZERO;
        for c in clients {
            let (response, took) = c.await.expect("client task");
            let response = response?;
            match response.status().as_u16() {
                200 => {
                    ok += 1;
                    ok_latency = ok_latency.max(took);
                }
                503 => {
                    shed += 1;
                    shed_latency = shed_latency.max(took);
                    let after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-")
                        .to_string();
                    if shed == 1 {
                        println!(
                            "  shed example: 503 {:?}, Retry-After: {after}",
                            response.body()
                        );
                    }
                }
                other => println!("  unexpected {other}"),
            }
        }
        println!(
            "wave {wave}: {ok} served (slowest {ok_latency:?}), {shed} shed with 503 (slowest {shed_latency:?}), wave took {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!("bulkhead holds {} slot(s) at the end", HANDLERS.held());
    Ok(())
}
